"""A returning visitor (one browser context: one user's profile, across visits): the
boot, network, compression and service-worker tests share it (with a gateway over a
copy of the tree: harness/servers.py `copy_tree`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from playwright.sync_api import BrowserContext, Page

from harness.chromium import BOOT_TIMEOUT_MS, Console

# Resolves once the named mark exists (at once if it already does); rejects when the
# page reports the opposite outcome (`fail`) or after `timeout` ms.
WAIT_MARK = """([name, fail, timeout]) => new Promise((resolve, reject) => {
  const seen = (list) => {
    const ok = list.getEntriesByName(name)[0];
    if (ok) return resolve(ok.detail ?? ok.startTime), true;
    const bad = fail && list.getEntriesByName(fail)[0];
    if (bad) return reject(new Error(`${fail}: ${JSON.stringify(bad.detail)}`)), true;
    return false;
  };
  if (seen(performance)) return;
  const observer = new PerformanceObserver((list) => { if (seen(list)) observer.disconnect(); });
  observer.observe({ type: 'mark' });
  setTimeout(() => reject(new Error(`no ${name} after ${timeout} ms`)), timeout);
})"""


class Visitor:
    """One browser context (one user's profile) and what its pages printed."""

    def __init__(self, context: BrowserContext, url: str) -> None:
        self.context = context
        self.url = url
        self.console = Console()
        self.first_boot: dict[str, Any] = {}

    @contextmanager
    def visit(self) -> Iterator[Page]:
        """A page on the app, open until the block ends; Python is ready at entry."""
        page = self.context.new_page()
        page.on("console", self.console.on_console)
        page.on("pageerror", self.console.on_error)
        try:
            page.goto(self.url + "/", wait_until="domcontentloaded")
            page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]',
                                   state="attached", timeout=BOOT_TIMEOUT_MS)
            assert page.get_attribute("html", "data-python") == "ready", page.inner_text("#boot")
            yield page
        finally:
            page.close()
        assert not self.console.page_errors, f"uncaught errors in the page: {self.console.page_errors}"
        assert not [m for m in self.console.messages if "Content Security Policy" in m]

    @staticmethod
    def boot(page: Page) -> dict[str, Any]:
        """The `boot` record of this page's `ready`."""
        return page.evaluate(WAIT_MARK, ["firsttoken:python-ready", None, BOOT_TIMEOUT_MS])

    @staticmethod
    def wait_snapshot_stored(page: Page) -> None:
        page.evaluate(WAIT_MARK, ["firsttoken:boot:snapshot.stored", "firsttoken:boot:snapshot.failed", BOOT_TIMEOUT_MS * 2])

    @staticmethod
    def wait_service_worker(page: Page) -> None:
        page.evaluate("() => navigator.serviceWorker.ready.then(() => true)")
