"""Dictation through the real GTK host in WebKitGTK (issue 46, item 1; js/page/dictation.js,
bridge/PROTOCOL.md "Dictation"): a host that says in its hello that it has a recogniser
gets `composer.dictate {on, locale}` when the microphone is pressed, and what it streams
back (`composer.dictation {text, final}`) fills the composer: provisional words in their
own marked line, final ones at the caret. Nothing is sent: no chat event, no message,
until Send. A refusal is said once; a malformed dictation is refused. No sleeps: a ping
answered after the host's messages says the page has acted on them."""

from __future__ import annotations

from typing import Any

import pytest

from harness.gtk import WebKitHost
from harness.webkit import of, wait

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(20)]

PROMPT = "document.getElementById('prompt')"


def settle(host: WebKitHost, mark: str) -> None:
    """Everything posted before this has been acted on by the page."""
    host.send({"v": 1, "type": "ping", "id": mark})
    host.wait_for(of(host, mark, "pong"))


def dictates(host: WebKitHost, start: int) -> list[dict[str, Any]]:
    return [m for m in host.messages[start:] if m.get("type") == "composer.dictate"]


def nothing_sent(host: WebKitHost, start: int) -> None:
    assert not [m for m in host.messages[start:] if str(m.get("type", "")).startswith("chat.")]
    assert host.eval("document.querySelectorAll('.msg[data-role=\"user\"]').length") == 0


@pytest.fixture(scope="module", autouse=True)
def with_recogniser(host: WebKitHost) -> None:
    host.send({"v": 1, "type": "hello", "id": "caps", "capabilities": {"dictation": True}})
    host.wait_for(of(host, "caps", "ready"))
    wait(host, "!document.getElementById('dictate').hidden")


def test_dictation_fills_the_composer_at_the_caret_and_never_sends(host: WebKitHost) -> None:
    start = len(host.messages)
    host.eval(f"({PROMPT}.value = 'Dear world', {PROMPT}.focus(), {PROMPT}.setSelectionRange(4, 4), 1)")
    host.eval("(document.getElementById('dictate').click(), 1)")
    host.wait_for(lambda m: m.get("type") == "composer.dictate", start=start)
    [on] = dictates(host, start)
    assert on["on"] is True and on["locale"].split("-")[0] == "en", on
    assert host.eval("document.getElementById('dictate').getAttribute('aria-pressed')") == "true"

    host.send({"v": 1, "type": "composer.dictation", "text": "dear", "final": False})
    wait(host, "document.getElementById('dictation').textContent === 'dear'")
    assert host.eval("document.getElementById('dictation').hasAttribute('data-provisional')") is True
    assert host.eval(f"{PROMPT}.value") == "Dear world"
    host.send({"v": 1, "type": "composer.dictation", "text": "dear old", "final": True})
    wait(host, f"{PROMPT}.value === 'Dear dear old world'")
    assert host.eval("document.getElementById('dictation').hidden") is True

    host.eval("(document.getElementById('dictate').click(), 1)")
    host.wait_for(lambda m: m.get("type") == "composer.dictate" and m.get("on") is False, start=start)
    host.send({"v": 1, "type": "composer.dictation", "text": "friend", "final": True, "listening": False})
    wait(host, f"{PROMPT}.value === 'Dear dear old friend world'")
    settle(host, "after-dictation")
    nothing_sent(host, start)
    assert host.eval("document.getElementById('dictate').getAttribute('aria-pressed')") == "false"
    host.eval(f"({PROMPT}.value = '', 1)")


def test_a_refusal_is_said_once_and_a_malformed_dictation_refused(host: WebKitHost) -> None:
    start = len(host.messages)
    host.eval("""(() => {
      window.__notes = 0;
      new MutationObserver(() => { window.__notes += 1; }).observe(document.getElementById('attach-note'), { childList: true });
      return 1;
    })()""")
    for i in range(2):
        host.eval("(document.getElementById('dictate').click(), 1)")
        host.send({"v": 1, "type": "composer.dictation", "error": "denied"})
        settle(host, f"after-denied-{i}")
        assert host.eval("document.getElementById('dictate').getAttribute('aria-pressed')") == "false"
    assert host.eval("document.getElementById('attach-note').dataset.code") == "dictation_denied"
    assert host.eval("window.__notes") == 1

    host.send({"v": 1, "type": "composer.dictation", "id": "bad", "text": "<b>x</b>", "final": "yes"})
    error = host.wait_for(of(host, "bad", "error"))
    assert error["error"]["code"] == "invalid_message" and "final" in error["error"]["message"]
    assert host.eval(f"{PROMPT}.value") == ""
    nothing_sent(host, start)
