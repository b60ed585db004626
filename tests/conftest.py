from __future__ import annotations

from typing import Iterator

import pytest

from tests.servers import gateway


@pytest.fixture(scope="session")
def gateway_url() -> Iterator[str]:
    """A gateway on the built-in model, on a real socket, for the whole session."""
    with gateway("--ttft-ms", "50", "--tps", "200") as url:
        yield url
