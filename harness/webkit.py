"""The page in WebKitGTK 6.0 (the engine of iOS's WKWebView), driven through the real
host at bridge/hosts/gtk/ (harness/gtk.py): booting it, waiting on what it posts or on
a state of the page (looked at after each frame, on the page's clock), reading what it
keeps. The fixtures (Xvfb, a booted host per module) are in tests/webkit/conftest.py."""

from __future__ import annotations

from typing import Any, Callable

from harness.gtk import WebKitHost

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
