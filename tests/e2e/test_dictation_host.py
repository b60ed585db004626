"""Dictation in Chromium (issue 46, item 1; js/page/dictation.js, bridge/PROTOCOL.md
"Dictation"): through the React-Native-like host's recogniser (`hello {capabilities:
{dictation: true}}`, `composer.dictate`, `composer.dictation`), and through the Web
Speech API. The provisional words show marked as such, the final ones land at the
caret, editable, and nothing is ever sent by dictation: no chat request leaves, no
message appears, until the person presses Send. A refused microphone is said once.

Chromium offline has no working recogniser (its Web Speech API needs Google's servers),
so the Web Speech path is played by a stand-in SpeechRecognition put in the page before
its scripts (add_init_script), which the test drives as the engine would. No sleeps."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from harness.chromium import ANSWER, chat_bodies, wait_ready
from tests.e2e.native_host import as_host, host_message, post

pytestmark = pytest.mark.e2e

#: No recogniser of the browser's own: only the host's can make the button show.
NO_WEB_SPEECH = "delete window.SpeechRecognition; delete window.webkitSpeechRecognition;"

#: A stand-in Web Speech recogniser: records each instance and what the page set on it;
#: the test fires results and errors as the engine would.
FAKE_WEB_SPEECH = """(() => {
  window.__recognitions = [];
  class FakeRecognition extends EventTarget {
    constructor() { super(); this.started = false; this.stopped = false; window.__recognitions.push(this); }
    start() { this.started = true; }
    stop() { this.stopped = true; }
    abort() { this.stopped = true; }
  }
  window.SpeechRecognition = FakeRecognition;
  // The engine's results: a list of {isFinal, 0: {transcript}}, from resultIndex on new.
  window.__hear = (results, resultIndex = 0) => {
    const r = window.__recognitions.at(-1);
    r.onresult?.({ resultIndex, results: results.map(([text, isFinal]) => Object.assign([{ transcript: text }], { isFinal })) });
  };
  window.__fail = (error) => window.__recognitions.at(-1).onerror?.({ error });
})();"""


def sent(page: Page) -> list[dict[str, Any]]:
    return page.evaluate("() => window.__toHost.map((t) => JSON.parse(t))")


def dictates(page: Page) -> list[dict[str, Any]]:
    return [m for m in sent(page) if m["type"] == "composer.dictate"]


def assert_nothing_sent(page: Page, bodies: list[dict]) -> None:
    """No chat left the page: no request to the API, no message in the list, no chat
    event to the host. (A ping answered after everything the host posted: the page has
    acted on it all.)"""
    mark = f"after-{len(sent(page))}"
    post(page, {"type": "ping", "id": mark})
    host_message(page, "pong", mark)
    assert bodies == []
    expect(page.locator('.msg[data-role="user"]')).to_have_count(0)
    assert not [m for m in sent(page) if m["type"].startswith("chat.")]


@pytest.fixture
def hosted(page: Page, gateway_url: str) -> tuple[Page, list[dict]]:
    """The page under a host whose recogniser it may use, no Web Speech of its own."""
    bodies = chat_bodies(page)
    as_host(page)
    page.add_init_script(NO_WEB_SPEECH)
    page.goto(gateway_url + "/")
    wait_ready(page)
    mic = page.locator("#dictate")
    expect(mic).to_be_hidden()  # a host alone is no recogniser: it must say it has one
    post(page, {"type": "hello", "id": "h", "capabilities": {"dictation": True}})
    host_message(page, "ready", "h")
    expect(mic).to_be_visible()
    return page, bodies


def test_the_hosts_recogniser_fills_the_composer_at_the_caret_and_never_sends(hosted: tuple[Page, list[dict]]) -> None:
    page, bodies = hosted
    mic = page.get_by_role("button", name="Dictate")
    expect(mic).to_have_attribute("aria-pressed", "false")
    page.fill("#prompt", "Dear  world")
    page.evaluate("() => document.getElementById('prompt').setSelectionRange(5, 5)")  # after "Dear "
    mic.click()
    expect(mic).to_have_attribute("aria-pressed", "true")
    [start] = dictates(page)
    assert start["on"] is True and start["locale"].split("-")[0] == "en", start

    # Provisional words show as they come, apart from the text and marked as such.
    partial = page.locator("#dictation")
    post(page, {"type": "composer.dictation", "text": "hello", "final": False})
    expect(partial).to_have_text("hello")
    expect(partial).to_have_attribute("data-provisional", "")
    post(page, {"type": "composer.dictation", "text": "hello there", "final": False})
    expect(partial).to_have_text("hello there")
    assert page.input_value("#prompt") == "Dear  world"

    # The final words go at the caret, the provisional line goes.
    post(page, {"type": "composer.dictation", "text": "hello there", "final": True})
    expect(page.locator("#prompt")).to_have_value("Dear hello there world")
    expect(partial).to_be_hidden()
    # Editable like typed text, and counted.
    page.locator("#prompt").press("End")
    page.locator("#prompt").type("!")
    expect(page.locator("#prompt")).to_have_value("Dear hello there world!")

    # Pressed again: the host is told to stop; its last result comes final and stays.
    mic.click()
    expect(mic).to_have_attribute("aria-pressed", "false")
    stop = dictates(page)[-1]
    assert stop["on"] is False and set(stop) == {"v", "type", "on"}, stop
    post(page, {"type": "composer.dictation", "text": "thanks", "final": True, "listening": False})
    expect(page.locator("#prompt")).to_have_value("Dear hello there world! thanks")
    assert_nothing_sent(page, bodies)

    # Only Send sends, and then the dictated words are what goes.
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(ANSWER).last).to_have_attribute("data-state", "done", timeout=60_000)
    assert bodies[-1]["messages"][-1]["content"] == "Dear hello there world! thanks"


def test_a_refused_microphone_is_said_once(hosted: tuple[Page, list[dict]]) -> None:
    page, bodies = hosted
    mic = page.get_by_role("button", name="Dictate")
    note = page.locator("#attach-note")
    page.evaluate("""() => {
      window.__notes = 0;
      new MutationObserver(() => { window.__notes += 1; }).observe(document.getElementById('attach-note'), { childList: true });
    }""")
    for attempt in range(2):
        mic.click()
        expect(mic).to_have_attribute("aria-pressed", "true")
        post(page, {"type": "composer.dictation", "error": "denied"})
        expect(mic).to_have_attribute("aria-pressed", "false")
        if attempt == 0:
            expect(note).to_have_attribute("data-code", "dictation_denied")
            assert "microphone" in note.inner_text()
    assert page.evaluate("window.__notes") == 1
    assert page.input_value("#prompt") == ""
    assert_nothing_sent(page, bodies)


def test_the_locale_follows_the_interface(hosted: tuple[Page, list[dict]]) -> None:
    page, _ = hosted
    post(page, {"type": "settings.set", "id": "zh", "settings": {"locale": "zh-CN"}})
    host_message(page, "settings.applied", "zh")
    mic = page.get_by_role("button", name="语音输入")
    mic.click()
    assert dictates(page)[-1]["locale"] == "zh-CN"
    # Chinese text has no spaces between words: none is added around dictated words.
    post(page, {"type": "composer.dictation", "text": "你好", "final": True, "listening": False})
    expect(page.locator("#prompt")).to_have_value("你好")
    post(page, {"type": "composer.dictation", "text": "世界", "final": True, "listening": False})
    expect(page.locator("#prompt")).to_have_value("你好世界")


@pytest.mark.parametrize("msg", [
    {"text": 42, "final": True},
    {"text": "x" * 20_000, "final": False},
    {"text": "hi", "final": "yes"},
    {"error": "whatever"},
    {"final": True},
])
def test_a_malformed_dictation_is_refused_and_changes_nothing(hosted: tuple[Page, list[dict]], msg: dict) -> None:
    page, bodies = hosted
    post(page, {"type": "composer.dictation", "id": "bad", **msg})
    assert host_message(page, "error", "bad")["error"]["code"] == "invalid_message"
    assert page.input_value("#prompt") == ""
    expect(page.locator("#dictation")).to_be_hidden()
    assert_nothing_sent(page, bodies)


def test_no_recogniser_no_button(page: Page, gateway_url: str) -> None:
    as_host(page)
    page.add_init_script(NO_WEB_SPEECH)
    page.goto(gateway_url + "/")
    wait_ready(page)
    # A host that says it has none: still no button.
    post(page, {"type": "hello", "id": "h", "capabilities": {"dictation": False}})
    host_message(page, "ready", "h")
    expect(page.locator("#dictate")).to_be_hidden()


def test_the_web_speech_api_fills_the_composer_and_never_sends(page: Page, gateway_url: str) -> None:
    bodies = chat_bodies(page)
    page.add_init_script(FAKE_WEB_SPEECH)
    page.goto(gateway_url + "/")
    wait_ready(page)
    mic = page.get_by_role("button", name="Dictate")
    expect(mic).to_be_visible()  # no host: the browser's own recogniser
    mic.click()
    expect(mic).to_have_attribute("aria-pressed", "true")
    rec = page.evaluate("() => { const r = window.__recognitions.at(-1); return { lang: r.lang, continuous: r.continuous, interim: r.interimResults, started: r.started }; }")
    assert rec["lang"].split("-")[0] == "en" and rec == {**rec, "continuous": True, "interim": True, "started": True}

    page.evaluate("() => window.__hear([['what is', false]])")
    expect(page.locator("#dictation")).to_have_text("what is")
    page.evaluate("() => window.__hear([['what is the time', true], ['in Paris', false]])")
    expect(page.locator("#prompt")).to_have_value("what is the time")
    expect(page.locator("#dictation")).to_have_text("in Paris")
    page.evaluate("() => window.__hear([['what is the time', true], ['in Paris', true]], 1)")
    expect(page.locator("#prompt")).to_have_value("what is the time in Paris")
    expect(page.locator("#dictation")).to_be_hidden()

    # Pressed again: stopped, a provisional result kept as said.
    page.evaluate("() => window.__hear([['please', false]], 0)")
    mic.click()
    expect(mic).to_have_attribute("aria-pressed", "false")
    assert page.evaluate("window.__recognitions.at(-1).stopped") is True
    expect(page.locator("#prompt")).to_have_value("what is the time in Paris please")

    # The browser refuses the microphone: said once, whatever the next attempts do.
    for _ in range(2):
        mic.click()
        page.evaluate("() => window.__fail('not-allowed')")
        expect(mic).to_have_attribute("aria-pressed", "false")
    expect(page.locator("#attach-note")).to_have_attribute("data-code", "dictation_denied")
    assert bodies == []
    expect(page.locator('.msg[data-role="user"]')).to_have_count(0)
