from __future__ import annotations

from typing import Iterator

import pytest
from hypothesis import settings

from tests.servers import ROOT, gateway

# No per-example deadline: `make test` runs test files in parallel on a shared 2-core
# machine, where an example's wall time says nothing about the code. Speed is the
# benchmarks' job (bench/), never a test's.
settings.register_profile("firsttoken", deadline=None)
settings.load_profile("firsttoken")


#: The longest test files, longest first (seconds each took in a full `make test` on
#: this 2-core machine, 2026-12-03). `make test` hands whole files to its workers in
#: collection order (`--dist loadfile --no-loadscope-reorder`): started first, the long
#: ones end with the rest instead of running alone at the end (xdist's own order puts
#: the files with the most tests first, so the bench smoke, two tests and 220 s, came
#: last). Longest first is the classic greedy bound for scheduling on parallel workers.
LONGEST_FIRST = (
    "tests/e2e/test_actions.py",  # 379
    "tests/e2e/test_shell.py",  # 361
    "tests/e2e/test_boot.py",  # 293
    "tests/e2e/test_conversations.py",  # 268
    "tests/e2e/test_tokens_page.py",  # 251
    "tests/e2e/test_bench_report.py",  # 224
    "tests/e2e/test_images_page.py",  # 206
    "tests/e2e/test_dialects_page.py",  # 149
)


def _run_order(item: pytest.Item) -> tuple[int, int]:
    """The long files above, then the other browser suites, the gateway's, the rest."""
    path = item.path.relative_to(ROOT).as_posix()
    if path in LONGEST_FIRST:
        return 0, LONGEST_FIRST.index(path)
    parts = item.path.parts
    return (1 if "e2e" in parts or "webkit" in parts else 2 if "gateway" in parts else 3), 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow suites are marked by where they live: `-m "not e2e"` is the inner loop
    (`make test-fast`), `-m webkit` the WebKitGTK suite alone. Files are ordered for
    the workers (`LONGEST_FIRST`); a file's own tests keep their order (a stable sort)."""
    for item in items:
        parts = item.path.parts
        if "e2e" in parts or "webkit" in parts:
            item.add_marker(pytest.mark.e2e)
        if "webkit" in parts:
            item.add_marker(pytest.mark.webkit)
    items.sort(key=_run_order)


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
