"""The page in WebKitGTK 6.0 (the engine of iOS's WKWebView), driven through the real
host at bridge/hosts/gtk/ (harness/gtk.py): booting it, waiting on what it posts or on
a state of the page (looked at after each frame, on the page's clock), reading what it
keeps; a first visit's gateway that holds requests until the test lets them go. The
fixtures (Xvfb, a booted host per module) are in tests/webkit/conftest.py."""

from __future__ import annotations

import asyncio
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

from starlette.types import Receive, Scope, Send

from gateway.app import GatewayConfig, create_app
from gateway.simulator import SimParams
from harness.gtk import WebKitHost
from harness.servers import serve_app

#: WebKit's boot is slower than Chromium's, and the machine is shared (FACTS: ~10 s cold).
BOOT_TIMEOUT_S = 120


def assert_clean_console(host: WebKitHost) -> None:
    errors = [c for c in host.console if c["level"] in ("error", "pageerror")]
    assert not errors, f"the page reported errors in WebKit: {errors}"


def boot(host: WebKitHost, timeout: float = BOOT_TIMEOUT_S) -> dict[str, Any]:
    """Wait for `ready` over the bridge and the page's own marker; returns `ready`."""
    ready = host.wait_for(lambda m: m.get("type") == "ready", timeout)
    assert host.eval("document.documentElement.dataset.python") == "ready"
    return ready


def reply(host: WebKitHost, request_id: str, timeout: float = 60) -> dict[str, Any]:
    """The message that ends request `request_id`: chat.done, chat.error or error."""
    return host.wait_for(
        lambda m: m.get("id") == request_id and m.get("type") in ("chat.done", "chat.error", "error"), timeout
    )


def of(host: WebKitHost, request_id: str, kind: str) -> Callable[[dict[str, Any]], bool]:
    return lambda m: m.get("id") == request_id and m.get("type") == kind


# Resolves once `check()` holds, looked at after each frame (no timers), or rejects after
# `ms`: the page's own clock decides, the test only waits for the answer.
WAIT = """(check, ms = 20000) => new Promise((ok, no) => {
  const end = performance.now() + ms;
  const look = () => {
    let value;
    try { value = check(); } catch (e) { value = undefined; }
    if (value) ok(true);
    else if (performance.now() > end) no(new Error('timed out: ' + check));
    else requestAnimationFrame(look);
  };
  look();
})"""


def wait(host: WebKitHost, check: str, ms: int = 20_000) -> object:
    """Wait until the expression `check` holds in the page, looked at after each frame,
    for up to `ms` of the page's clock."""
    return host.eval(f"({WAIT})(() => {check}, {ms})", timeout=ms / 1000 + 40)


def saved(host: WebKitHost) -> object:
    """Wait until the page's conversations are in IndexedDB (an open that answers late
    works in memory until then, with nothing pending) and every write has committed."""
    panel = "document.getElementById('conversations')"
    return wait(host, f"{panel}.dataset.store === 'indexeddb' && {panel}.dataset.pending === '0'")


#: What the page keeps in IndexedDB (js/page/store/db.js): {metas, messages, open}.
READ = """new Promise((ok, no) => {
  const r = indexedDB.open('firsttoken-conversations');
  r.onerror = () => no(r.error);
  r.onsuccess = () => {
    const db = r.result, tx = db.transaction(['conversations', 'messages', 'state']);
    const metas = tx.objectStore('conversations').getAll(), messages = tx.objectStore('messages').getAll();
    const open = tx.objectStore('state').get('open');
    tx.oncomplete = () => { db.close(); ok({ metas: metas.result, messages: messages.result, open: open.result ?? null }); };
  };
})"""


def stored_answers(host: WebKitHost) -> list[str]:
    """The answers of the open conversation as committed to IndexedDB."""
    saved(host)
    store = host.eval(READ)
    messages: list[dict[str, Any]] = next((r["messages"] for r in store["messages"] if r["id"] == store["open"]), [])
    return [m["content"] for m in messages if m["role"] == "assistant"]


@contextmanager
def watched(url: str, display: str) -> Iterator[WebKitHost]:
    """The host on `url` with an ephemeral profile (a first visit: no service worker, no
    stored snapshot); its console printed when done, and any error in it failing the test."""
    with WebKitHost(url, display=display) as h:
        yield h
        print("\n".join(["--- WebKit console ---", *map(str, h.console)]))
        assert_clean_console(h)


class HoldingGateway:
    """The gateway, in this process (the built-in model, quick), for a test that holds
    some of its requests until it lets them go: a subclass's `__call__` awaits `hold()`
    for each request it holds, which a pool thread ends on `release()` (no polling, no
    timer); `held` counts them. `end()` lets everything through as the test ends."""

    def __init__(self) -> None:
        self.app = create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=200), snapshot_measure_link=False))
        self.released = threading.Event()
        self.held = 0

    async def hold(self) -> None:
        """Waits until `release()` (or `end()`), counted in `held`."""
        self.held += 1
        await asyncio.to_thread(self.released.wait)

    def release(self) -> None:
        self.released.set()

    def end(self) -> None:
        """Lets every held request go: a held request must not outlive the test."""
        self.release()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


Holding = TypeVar("Holding", bound=HoldingGateway)


def serving(gateway: Holding) -> Iterator[tuple[str, Holding]]:
    """`gateway` served on a local port: (its URL, it), ended however the test ends; a
    fixture's body is `yield from serving(...)`."""
    try:
        with serve_app(gateway) as url:
            yield url, gateway
    finally:
        gateway.end()
