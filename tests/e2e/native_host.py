"""A native host as the page sees it (bridge/PROTOCOL.md, "Hosts"), played by the test:
the object each platform puts in the page, and how a host posts to the page and reads
what it was sent. Used by the bridge, action and stall tests."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page

# What each native platform puts in the page, as an object whose postMessage(text)
# reaches the app; here it keeps the texts in window.__toHost.
NATIVE = {
    "react-native": "window.ReactNativeWebView = { postMessage: (t) => window.__toHost.push(t) };",
    # addWebMessageListener's object: an EventTarget whose postMessage reaches the app, and
    # on which the app's JsReplyProxy.postMessage fires `message` events.
    "android": "window.firsttokenHost = Object.assign(new EventTarget(), { postMessage: (t) => window.__toHost.push(t) });",
    "android-fallback": "window.FirsttokenAndroid = { postMessage: (t) => window.__toHost.push(t) };",
    "webkit": "window.webkit = { messageHandlers: { firsttoken: { postMessage: (t) => window.__toHost.push(t) } } };",
}


def as_host(page: Page, platform: str = "react-native") -> None:
    page.add_init_script("window.__toHost = [];" + NATIVE[platform])


def post(page: Page, msg: dict[str, Any] | str) -> None:
    """What a native host does: its JsReplyProxy's postMessage on Android, else
    evaluateJavaScript of `window.firsttoken.post`."""
    text = msg if isinstance(msg, str) else json.dumps(msg)
    page.evaluate("""(t) => window.firsttokenHost
      ? window.firsttokenHost.dispatchEvent(new MessageEvent('message', { data: t }))
      : window.firsttoken.post(t)""", text)


def host_message(page: Page, kind: str, request_id: str | None = None, timeout: float = 60_000) -> dict[str, Any]:
    """The first message the page sent the host of that type (and id), waited for."""
    handle = page.wait_for_function(
        """([kind, id]) => window.__toHost.map((t) => JSON.parse(t))
             .find((m) => m.type === kind && (id === null || m.id === id))""",
        arg=[kind, request_id], timeout=timeout,
    )
    return handle.json_value()


def host_answer(page: Page, request_id: str) -> str:
    """The answer a host received for `request_id`: its deltas' text, once `chat.done` came
    (`chat.done` does not repeat the answer: PROTOCOL.md, "The answer crosses once")."""
    host_message(page, "chat.done", request_id)
    return page.evaluate(
        """(id) => window.__toHost.map((t) => JSON.parse(t))
             .filter((m) => m.type === 'chat.delta' && m.id === id).map((m) => m.text).join('')""",
        request_id,
    )
