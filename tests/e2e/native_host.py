"""A native host as the page sees it (bridge/PROTOCOL.md, "Hosts"), played by the test:
the object each platform puts in the page, and how a host posts to the page and reads
what it was sent; a React Native host that times each message it gets, and what a
person does with the page around it. Used by the bridge, action, stall and haptics tests."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page

from harness.chromium import wait_ready

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


# ---- a host that times what it gets (the haptics tests) -----------------------------------

#: The React Native host, noting when each message reached it (the page's clock).
TIMED_HOST = """window.__toHost = []; window.__hostAt = [];
window.ReactNativeWebView = { postMessage: (t) => { window.__toHost.push(t); window.__hostAt.push(performance.now()); } };"""
#: A first token 500 ms after the request, then 30 tokens over a second.
SLOW = "ttft_ms=500,tps=30,tokens=30"
#: The whole answer at once: first token and done within the 300 ms after Send.
FAST = "ttft_ms=0,prefill_tps=0,tps=1000000,tokens=5"
#: The least time between two pulses (js/page/haptics.js).
PACE_MS = 300


def timed_host(page: Page, gateway_url: str) -> Page:
    """The page under `TIMED_HOST`, loaded from the gateway and ready."""
    page.add_init_script(TIMED_HOST)
    page.goto(gateway_url + "/")
    wait_ready(page)
    return page


def haptics(page: Page) -> list[tuple[str, float]]:
    """Every `haptic` the timed host got: (kind, when)."""
    return page.evaluate("""() => window.__toHost.map((t, i) => [JSON.parse(t), window.__hostAt[i]])
      .filter(([m]) => m.type === 'haptic').map(([m, at]) => [m.kind, at])""")


def wait_haptics(page: Page, n: int) -> list[tuple[str, float]]:
    """Every `haptic` the timed host got, once there are at least `n`."""
    page.wait_for_function("(n) => window.__toHost.filter((t) => JSON.parse(t).type === 'haptic').length >= n", arg=n)
    return haptics(page)


def set_settings(page: Page, request_id: str, **settings: object) -> dict[str, Any]:
    """A host's `settings.set`; what the page says it applied."""
    post(page, {"type": "settings.set", "id": request_id, "settings": settings})
    return host_message(page, "settings.applied", request_id)["settings"]


def ask(page: Page, text: str, state: str = "done") -> None:
    """Send from the page's composer; wait until the answer ended as `state`."""
    n = page.locator(f'.msg[data-role="assistant"][data-state="{state}"]').count()
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")
    page.wait_for_function(
        "([s, n]) => document.querySelectorAll(`.msg[data-role=\"assistant\"][data-state=\"${s}\"]`).length > n",
        arg=[state, n], timeout=60_000)
