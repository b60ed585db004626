from __future__ import annotations

from typing import Iterator

import pytest
from hypothesis import settings

from tests.servers import gateway

# No per-example deadline: `make test` runs test files in parallel on a shared 2-core
# machine, where an example's wall time says nothing about the code. Speed is the
# benchmarks' job (bench/), never a test's.
settings.register_profile("firsttoken", deadline=None)
settings.load_profile("firsttoken")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow suites are marked by where they live: `-m "not e2e"` is the inner loop
    (`make test-fast`), `-m webkit` the WebKitGTK suite alone."""
    for item in items:
        parts = item.path.parts
        if "e2e" in parts or "webkit" in parts:
            item.add_marker(pytest.mark.e2e)
        if "webkit" in parts:
            item.add_marker(pytest.mark.webkit)


@pytest.fixture(scope="session")
def gateway_url() -> Iterator[str]:
    """A gateway on the built-in model, on a real socket, for the whole session."""
    with gateway("--ttft-ms", "50", "--tps", "200") as url:
        yield url


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's redis-server (installed by `make redis`) for the tests that share state
    between gateway processes; started once, on a free port, with a temp dir."""
    from tests.servers import redis_server

    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url
