"""Haptics through the React-Native-like host in Chromium (issue 46, item 2;
js/page/haptics.js, bridge/PROTOCOL.md "Hosts", `haptic`): a light tick on Send, on the
first token and on done, the error pattern when an answer fails, never two pulses less
than 300 ms apart however many tokens stream, none with the Settings switch off or when
the host said `haptics: false`; a host's `haptics` of the wrong type refused. With no
host, `navigator.vibrate` plays them.

The page's own clock times each message as it is posted (the stand-in host records
`performance.now()`): no sleeps, every step waits for what it waits for."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from harness.chromium import wait_ready
from tests.e2e.native_host import FAST, PACE_MS, SLOW, ask, haptics, host_message, post, set_settings, timed_host, wait_haptics

pytestmark = pytest.mark.e2e

def assert_paced(pulses: list[tuple[str, float]]) -> None:
    gaps = [b[1] - a[1] for a, b in zip(pulses, pulses[1:])]
    assert all(gap >= PACE_MS - 5 for gap in gaps), gaps


@pytest.fixture
def hosted(page: Page, gateway_url: str) -> Page:
    return timed_host(page, gateway_url)


def test_send_first_token_and_done_tick_once_each_however_long_the_stream(hosted: Page) -> None:
    page = hosted
    set_settings(page, "slow", headers={"x-firsttoken-sim": SLOW})
    ask(page, "a slow answer")
    pulses = wait_haptics(page, 3)
    # Thirty tokens streamed; three ticks: Send, the first token, done.
    assert [kind for kind, _ in pulses] == ["light", "light", "light"], pulses
    assert_paced(pulses)


def test_a_fast_answer_never_ticks_twice_within_300_ms_and_still_says_done(hosted: Page) -> None:
    page = hosted
    set_settings(page, "fast", headers={"x-firsttoken-sim": FAST})
    ask(page, "a fast answer")
    pulses = wait_haptics(page, 2)  # done comes after the gap, if it came sooner
    assert 2 <= len(pulses) <= 3 and {kind for kind, _ in pulses} == {"light"}, pulses
    assert_paced(pulses)


def test_a_failed_answer_plays_the_error_pattern(hosted: Page) -> None:
    page = hosted
    set_settings(page, "fail", headers={"x-firsttoken-sim": "status=400"})
    ask(page, "this one fails", state="error")
    pulses = wait_haptics(page, 2)
    assert [kind for kind, _ in pulses] == ["light", "error"], pulses
    assert_paced(pulses)


def test_the_settings_switch_and_the_host_turn_haptics_off(hosted: Page) -> None:
    page = hosted
    set_settings(page, "fast", headers={"x-firsttoken-sim": FAST})
    # The switch shows where haptics exist (a host is here), on by default.
    page.click("#open-settings")
    assert page.is_visible("#haptics") and page.is_checked("#haptics")
    page.uncheck("#haptics")
    page.keyboard.press("Escape")
    ask(page, "quiet, by the person")
    assert haptics(page) == []
    assert page.evaluate("JSON.parse(localStorage.getItem('firsttoken.settings.v1')).haptics") is False

    page.click("#open-settings")
    page.check("#haptics")
    page.keyboard.press("Escape")
    # The host's own switch: off whatever the person's says, until it clears it.
    assert set_settings(page, "off", haptics=False)["haptics"] is False
    ask(page, "quiet, by the host")
    assert haptics(page) == []
    assert "haptics" not in set_settings(page, "clear", haptics=None)
    ask(page, "ticking again")
    assert wait_haptics(page, 2)[0][0] == "light"


@pytest.mark.parametrize("value", ["yes", 1, [], {"on": True}])
def test_a_hosts_haptics_of_the_wrong_type_is_refused(hosted: Page, value: object) -> None:
    page = hosted
    post(page, {"type": "settings.set", "id": "bad", "settings": {"haptics": value}})
    error = host_message(page, "error", "bad")
    assert error["error"]["code"] == "invalid_message" and "haptics" in error["error"]["message"]
    # Nothing was set: haptics still tick.
    set_settings(page, "fast", headers={"x-firsttoken-sim": FAST})
    ask(page, "still ticking")
    assert wait_haptics(page, 2)[0][0] == "light"


def test_without_a_host_navigator_vibrate_plays_them(page: Page, gateway_url: str) -> None:
    # Chromium's vibrate needs a user gesture and a device; a stand-in records the calls.
    page.add_init_script("window.__vibrations = []; navigator.vibrate = (p) => (window.__vibrations.push(p), true);")
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.evaluate("""() => {
      const s = JSON.parse(localStorage.getItem('firsttoken.settings.v1') || '{}');
      localStorage.setItem('firsttoken.settings.v1', JSON.stringify({ ...s, headers: { 'x-firsttoken-sim': 'status=400' } }));
    }""")
    page.reload()
    wait_ready(page)
    ask(page, "vibrate, then fail", state="error")
    page.wait_for_function("() => window.__vibrations.length >= 2")
    assert page.evaluate("window.__vibrations") == [[10], [30, 60, 30]]
    page.click("#open-settings")
    assert page.is_visible("#haptics")
