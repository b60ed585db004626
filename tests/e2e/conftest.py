"""The Chromium fixtures: real Chromium (Debian's, driven by Playwright) against a real
gateway. The helpers every browser test shares (device profiles, how a user sends, how a
test steers the built-in model, frames and embedders) are in harness/chromium.py."""

from __future__ import annotations

from typing import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from harness.chromium import ARGS, CHROMIUM, DESKTOP, Console, warm_contexts, watched_page
from harness.servers import HEADLESS_SHELL, HEADLESS_SHELL_ARGS

# How long an assertion waits for its effect (Playwright's default is 5 s). `make test`
# runs three test files at once on two cores, where a page's reaction to a click can take
# longer than that; a bound met at once costs nothing, so it is generous.
expect.set_options(timeout=15_000)

# Session scope: one Chromium per worker, so that its warm contexts (below) carry the
# installed app from one test file to the next; per file, every file's first test paid a
# first visit's install, and every file a browser's start. Playwright's sync API leaves
# its event loop marked running in this thread between calls; tests/conftest.py hides it
# from the tests that run asyncio themselves. It is Chromium's headless shell
# (harness/servers.py says why, and which tests run the full browser: `full_chromium`).
@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=HEADLESS_SHELL, args=HEADLESS_SHELL_ARGS)
        with warm_contexts(b):
            yield b
        b.close()


@pytest.fixture(scope="session")
def full_chromium(browser: Browser) -> Iterator[Browser]:
    """The full browser (`/usr/bin/chromium`, its UI layer and incognito's defaults), for
    the tests of what that layer does; started by the worker's Playwright when a test
    first asks for it, with warm contexts of its own (`watched_page` takes either)."""
    b = browser.browser_type.launch(executable_path=CHROMIUM, args=ARGS)
    with warm_contexts(b):
        yield b
    b.close()


@pytest.fixture
def console() -> Console:
    return Console()


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    """A page at desktop size (the same warm context as the tests' `DESKTOP`)."""
    yield from watched_page(browser, console, **DESKTOP)
