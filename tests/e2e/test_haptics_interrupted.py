"""Haptics when an answer does not end well (issue 46, item 2's edge; js/page/page.js
`settled`, js/page/haptics.js): an answer cut by the server mid-stream or by the network
plays the error pattern; Stop plays nothing, neither the error nor "done".

Through the React-Native-like host of tests/e2e/native_host.py (`timed_host`), which notes every `haptic`
it gets. "Nothing after Stop" is read from the sequence: the next answer's Send tick
comes right after the stopped answer's ticks, with nothing between. No sleeps."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, Route, expect

from tests.e2e.native_host import PACE_MS, SLOW, ask, set_settings, timed_host, wait_haptics

pytestmark = pytest.mark.e2e

CHAT = "**/v1/chat/completions"
ANSWER = '.msg[data-role="assistant"]'


@pytest.fixture
def hosted(page: Page, gateway_url: str) -> Page:
    return timed_host(page, gateway_url)


def test_an_answer_cut_mid_stream_by_the_server_plays_the_error_pattern(hosted: Page) -> None:
    page = hosted
    # The first token 400 ms after Send, past the pace: a first token inside it is dropped
    # by design, and the sequence would depend on the machine's speed.
    set_settings(page, "cut", headers={"x-firsttoken-sim": "ttft_ms=400,tps=50,tokens=40,error_after=3"})
    ask(page, "this one breaks off", state="error")
    pulses = wait_haptics(page, 3)
    # Send, the first token (it came before the error event), then the error.
    assert [kind for kind, _ in pulses] == ["light", "light", "error"], pulses


def test_an_answer_the_network_fails_plays_the_error_pattern(hosted: Page) -> None:
    page = hosted

    def reset(route: Route) -> None:
        route.abort("connectionreset")

    page.context.route(CHAT, reset)
    ask(page, "no route to the server", state="error")
    expect(page.locator(ANSWER).last.locator(".error")).to_contain_text("Could not reach")
    pulses = wait_haptics(page, 2)
    assert [kind for kind, _ in pulses] == ["light", "error"], pulses


def test_stop_plays_neither_the_error_nor_done(hosted: Page) -> None:
    page = hosted
    set_settings(page, "slow", headers={"x-firsttoken-sim": SLOW})
    page.fill("#prompt", "a long one, stopped")
    page.press("#prompt", "Enter")
    wait_haptics(page, 2)  # Send, then the first token: the answer streams
    stop = page.get_by_role("button", name="Stop", exact=True)
    expect(stop).to_be_enabled()
    stop.click()
    expect(page.locator(ANSWER).last).to_have_attribute("data-state", "stopped")

    # A person reads, types and sends the next prompt long after the pace's 300 ms; the
    # test is faster than any thumb, and a Send inside the pace is dropped by design
    # (haptics.js), so it waits on the page's clock until the pace has passed.
    page.wait_for_function(
        """(pace) => { const at = window.__hostAt.filter((_, i) => JSON.parse(window.__toHost[i]).type === 'haptic');
                       return performance.now() - at[at.length - 1] >= pace; }""", arg=PACE_MS)
    before_next = page.evaluate("performance.now()")
    ask(page, "the next one")  # SLOW again: Send, first token and done, three ticks
    pulses = wait_haptics(page, 5)
    assert [kind for kind, _ in pulses] == ["light"] * 5, pulses
    # Two ticks up to Stop, none from Stop itself: the next three are the next answer's.
    assert [at < before_next for _, at in pulses] == [True, True, False, False, False], pulses
