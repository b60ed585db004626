"""The screen kept on while an answer streams (issue 46, item 5; js/page/awake.js,
bridge/PROTOCOL.md "Screen awake, for hosts"), in Chromium: the Screen Wake Lock API
taken while the answer streams and released at its end (Chromium's headless shell has
the API; Playwright grants `screen-wake-lock`); with no Wake Lock API, the
React-Native-like host's `screen.awake {on}`, paired on done, Stop, error and reload;
none with the switch off or the host's `awake: false`; a host's `awake` of the wrong
type refused. No sleeps: each step waits for what it waits for."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

from harness.chromium import wait_ready
from tests.e2e.native_host import host_message, post

pytestmark = pytest.mark.e2e

#: The React Native host, its messages kept across a reload (sessionStorage).
KEPT_HOST = """window.__toHost = JSON.parse(sessionStorage.getItem('__toHost') || '[]');
window.ReactNativeWebView = { postMessage: (t) => {
  window.__toHost.push(t); sessionStorage.setItem('__toHost', JSON.stringify(window.__toHost)); } };"""
#: A web view with no Screen Wake Lock API (Android's WebView, older WKWebViews).
NO_WAKE_LOCK = "delete Navigator.prototype.wakeLock;"
SLOW = "ttft_ms=300,tps=20,tokens=20"
LONG = "ttft_ms=0,tps=5,tokens=400"


def awake(page: Page) -> list[bool]:
    return page.evaluate("""() => window.__toHost.map((t) => JSON.parse(t))
      .filter((m) => m.type === 'screen.awake').map((m) => m.on)""")


def wait_awake(page: Page, n: int) -> list[bool]:
    page.wait_for_function("(n) => window.__toHost.filter((t) => JSON.parse(t).type === 'screen.awake').length >= n", arg=n,
                           timeout=60_000)
    return awake(page)


def set_settings(page: Page, request_id: str, **settings: object) -> dict[str, Any]:
    post(page, {"type": "settings.set", "id": request_id, "settings": settings})
    return host_message(page, "settings.applied", request_id)["settings"]


def ask(page: Page, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def ended(page: Page, state: str, n: int = 1) -> None:
    page.wait_for_function(
        "([s, n]) => document.querySelectorAll(`.msg[data-role=\"assistant\"][data-state=\"${s}\"]`).length >= n",
        arg=[state, n], timeout=60_000)


@pytest.fixture
def hosted(page: Page, gateway_url: str) -> Page:
    page.add_init_script(NO_WAKE_LOCK + KEPT_HOST)
    page.goto(gateway_url + "/")
    wait_ready(page)
    return page


def test_the_wake_lock_is_taken_while_streaming_and_released_at_the_end(page: Page, gateway_url: str) -> None:
    page.context.grant_permissions(["screen-wake-lock"])
    page.add_init_script(KEPT_HOST)
    page.goto(gateway_url + "/")
    wait_ready(page)
    set_settings(page, "slow", headers={"x-firsttoken-sim": SLOW})
    ask(page, "keep me awake")
    page.wait_for_selector('html[data-awake="lock"]', state="attached")
    ended(page, "done")
    page.wait_for_selector('html[data-awake="off"]', state="attached")
    # The lock did it: the host was not asked as well.
    assert awake(page) == []


@pytest.mark.parametrize("sim, end", [(SLOW, "done"), ("status=400", "error")], ids=["done", "error"])
def test_the_host_keeps_the_screen_on_paired_on_the_answers_end(hosted: Page, sim: str, end: str) -> None:
    page = hosted
    set_settings(page, end, headers={"x-firsttoken-sim": sim})
    ask(page, f"end in {end}")
    ended(page, end)
    assert wait_awake(page, 2) == [True, False]


def test_paired_on_stop(hosted: Page) -> None:
    page = hosted
    set_settings(page, "long", headers={"x-firsttoken-sim": LONG})
    ask(page, "stop me")
    assert wait_awake(page, 1) == [True]
    page.press("#prompt", "Escape")  # Stop, from the keyboard
    ended(page, "stopped")
    assert wait_awake(page, 2) == [True, False]


def test_paired_on_reload(hosted: Page) -> None:
    page = hosted
    set_settings(page, "long", headers={"x-firsttoken-sim": LONG})
    ask(page, "reload me")
    assert wait_awake(page, 1) == [True]
    page.reload()
    # `off` as the page went; whatever the reloaded page does after, in pairs.
    seen = wait_awake(page, 2)
    assert seen[:2] == [True, False], seen
    assert all(on == (i % 2 == 0) for i, on in enumerate(seen)), seen


def test_the_switch_and_the_host_turn_it_off(hosted: Page) -> None:
    page = hosted
    set_settings(page, "fast", headers={"x-firsttoken-sim": "ttft_ms=0,tps=1000000,tokens=5"})
    page.click("#open-settings")
    assert page.is_visible("#awake") and page.is_checked("#awake")
    page.uncheck("#awake")
    page.keyboard.press("Escape")
    ask(page, "not by the person")
    ended(page, "done")
    page.click("#open-settings")
    page.check("#awake")
    page.keyboard.press("Escape")
    assert set_settings(page, "off", awake=False)["awake"] is False
    ask(page, "not by the host")
    ended(page, "done", 2)
    assert awake(page) == []


@pytest.mark.parametrize("value", ["on", 0, [True]])
def test_a_hosts_awake_of_the_wrong_type_is_refused(hosted: Page, value: object) -> None:
    page = hosted
    post(page, {"type": "settings.set", "id": "bad", "settings": {"awake": value}})
    error = host_message(page, "error", "bad")
    assert error["error"]["code"] == "invalid_message" and "awake" in error["error"]["message"]
