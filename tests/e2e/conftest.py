"""Real Chromium (Debian's, driven by Playwright) against a real gateway."""

from __future__ import annotations

from typing import Iterator

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Frame, Page, sync_playwright

from tests.servers import CHROMIUM, CHROMIUM_ARGS as ARGS  # noqa: F401 - re-exported for tests and benches

#: Python boot in a PyScript worker takes seconds on this machine (FACTS: 5–7 s cold).
BOOT_TIMEOUT_MS = 90_000


# Module scope: Playwright's sync API keeps an event loop running in this thread while it
# is started, which would break later tests that run asyncio themselves.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Console:
    """Everything the page printed; uncaught page errors fail the test."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.page_errors: list[str] = []

    def on_console(self, msg: ConsoleMessage) -> None:
        self.messages.append(f"{msg.type}: {msg.text}")

    def on_error(self, error: Exception) -> None:
        self.page_errors.append(str(error))


@pytest.fixture
def console() -> Console:
    return Console()


def watched_page(browser: Browser, console: Console, **context_options: object) -> Iterator[Page]:
    """A page in a fresh context (`context_options`: a device profile, say) whose console
    is kept; once the test is done, it fails on an uncaught error or a CSP violation."""
    context = browser.new_context(**context_options)
    p = context.new_page()
    p.on("console", console.on_console)
    p.on("pageerror", console.on_error)
    yield p
    context.close()
    # Shown by pytest when the test failed: what the page said, in order.
    print("\n".join(["--- page console ---", *console.messages]))
    assert not console.page_errors, f"uncaught errors in the page: {console.page_errors}"
    violations = [m for m in console.messages if "Content Security Policy" in m]
    assert not violations, f"the page broke its own CSP: {violations}"


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    yield from watched_page(browser, console)


def wait_ready(page: Page) -> None:
    """Wait until Python answered `hello`; fail at once, with the reason, if boot failed."""
    page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]', state="attached", timeout=BOOT_TIMEOUT_MS)
    state = page.get_attribute("html", "data-python")
    assert state == "ready", f"Python did not start: {page.inner_text('#boot')}"


def add_frame(page: Page, src: str) -> None:
    """Append an iframe of `src` to `page` and wait for its load."""
    page.evaluate(
        """(src) => new Promise((resolve) => {
          const frame = document.createElement('iframe');
          frame.src = src;
          frame.addEventListener('load', resolve, { once: true });
          document.body.append(frame);
        })""",
        src,
    )


def frame_of(page: Page, origin: str) -> Frame:
    """The frame of `page` whose document is of `origin`."""
    frame = next((f for f in page.frames if f.url.startswith(origin)), None)
    assert frame is not None, [f.url for f in page.frames]
    return frame
