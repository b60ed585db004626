from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import settings

from harness.servers import gateway

# No per-example deadline: `make test` runs test files in parallel on a shared 2-core
# machine, where an example's wall time says nothing about the code. Speed is the
# benchmarks' job (bench/), never a test's.
settings.register_profile("firsttoken", deadline=None)
settings.load_profile("firsttoken")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow suites are marked by where they live: `-m "not e2e"` is the inner loop
    (`make test-fast`), `-m webkit` the WebKitGTK suite alone. Then the files are put
    in the order `make test` hands them to its workers (`longest_first`)."""
    for item in items:
        parts = item.path.parts
        if "e2e" in parts or "webkit" in parts:
            item.add_marker(pytest.mark.e2e)
        if "webkit" in parts:
            item.add_marker(pytest.mark.webkit)
    items[:] = longest_first(items)


def longest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """Test files, the longest expected first; each file's tests in their own order.

    `make test` gives whole files to its workers in this order (`--dist loadfile
    --no-loadscope-reorder`). xdist's own order is by number of tests, which sent the
    files of a few tests that take minutes (a benchmark's smoke run on a shaped link:
    2.5 min, mostly waiting) out last, where they ran alone at the end while the other
    workers had nothing left. Longest first (the LPT rule) lets their waits overlap the
    rest. Expected length: `runs_long(seconds)` files first, longest first (seconds
    as a full run measured them), then the rest by number of tests, as xdist would
    (putting every browser file before the Python ones measured no better: four browser
    files at once made each slower). Every worker collects the same list, so the order
    is the same on all of them, as xdist requires. A full run's seconds per file are in
    build/test-durations.json (below) to set `runs_long` from."""
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::")[0], []).append(item)

    def expected(tests: list[pytest.Item]) -> tuple[float, int]:
        long = tests[0].get_closest_marker("runs_long")
        return (long.args[0] if long else 0.0, len(tests))

    ordered = sorted(by_file.values(), key=expected, reverse=True)
    return [item for tests in ordered for item in tests]


# ---- what each file took -------------------------------------------------------------
# Seconds per test file (its tests' setup, call and teardown), summed where the reports
# arrive: in the controller of an xdist run, which hears every worker's. Written to
# build/test-durations.json and the slowest shown after the run, so that `runs_long`
# above can be set from a full run's figures rather than from a guess.
SPENT: dict[str, float] = {}
DURATIONS = Path(__file__).resolve().parents[1] / "build" / "test-durations.json"


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    file = report.nodeid.split("::")[0]
    SPENT[file] = SPENT.get(file, 0.0) + report.duration


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _is_worker(session.config) or not SPENT:
        return
    DURATIONS.parent.mkdir(parents=True, exist_ok=True)
    longest = sorted(SPENT.items(), key=lambda item: -item[1])
    DURATIONS.write_text(json.dumps({file: round(seconds, 1) for file, seconds in longest}, indent=1) + "\n")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if _is_worker(config) or len(SPENT) < 2:
        return
    longest = sorted(SPENT.items(), key=lambda item: -item[1])[:15]
    terminalreporter.write_sep("=", f"slowest {len(longest)} files (all: {DURATIONS.relative_to(DURATIONS.parents[1])})")
    for file, seconds in longest:
        terminalreporter.write_line(f"{seconds:8.1f}s {file}")


@pytest.fixture(autouse=True)
def no_running_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that does not drive the browser runs with no event loop running in its
    thread, as in a process of its own.

    The browser tests' Playwright (sync API, started once per worker: tests/e2e/conftest.py)
    runs its loop in a greenlet of the main thread, and between its calls that loop is
    still marked running; a later test's `asyncio.run()` would refuse to start
    ("cannot be called from a running event loop"). The mark is taken off for such a
    test and put back after it, for Playwright's next call; a test that uses the browser
    keeps it (Playwright's own calls need it).
    """
    loop = asyncio.events._get_running_loop()
    if loop is None or "browser" in request.fixturenames:
        yield
        return
    asyncio.events._set_running_loop(None)
    try:
        yield
    finally:
        asyncio.events._set_running_loop(loop)


@pytest.fixture(scope="session")
def gateway_url() -> Iterator[str]:
    """A gateway on the built-in model, on a real socket, for the whole session."""
    with gateway("--ttft-ms", "50", "--tps", "200") as url:
        yield url


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's redis-server (installed by `make redis`) for the tests that share state
    between gateway processes; started once, on a free port, with a temp dir."""
    from harness.servers import redis_server

    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url
