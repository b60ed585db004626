""""Reply ready" through the real GTK host in WebKitGTK (issue 46, item 4;
bridge/PROTOCOL.md "Reply ready, for hosts"): `reply.ready` with the conversation's
title and the answer's first words for an answer done while the page is hidden, none
for one done while it shows. Hidden is played by the document's `visibilityState`
(the host's window stays mapped), with the `visibilitychange` the engine would send.
No sleeps."""

from __future__ import annotations

import pytest

from harness.webkit import of, wait
from harness.gtk import WebKitHost

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(20)]

HIDE = """((h) => {
  Object.defineProperty(document, 'visibilityState', { get: () => (h ? 'hidden' : 'visible'), configurable: true });
  document.dispatchEvent(new Event('visibilitychange'));
  return 1;
})"""
DONE = "document.querySelectorAll('.msg[data-role=\"assistant\"][data-state=\"done\"]').length"


def ask(host: WebKitHost, text: str) -> int:
    start = len(host.messages)
    n = int(host.eval(DONE))
    host.eval(f"(document.getElementById('prompt').value = {text!r}, document.getElementById('composer').requestSubmit(), 1)")
    wait(host, f"{DONE} > {n}")
    host.send({"v": 1, "type": "ping", "id": f"after-{start}"})
    host.wait_for(of(host, f"after-{start}", "pong"), start=start)
    return start


def ready(host: WebKitHost, start: int) -> list[dict]:
    return [m for m in host.messages[start:] if m.get("type") == "reply.ready"]


def test_reply_ready_only_when_hidden(host: WebKitHost) -> None:
    start = ask(host, "watching in webkit")
    assert ready(host, start) == []
    host.eval(f"{HIDE}(true)")
    try:
        start = ask(host, "away from webkit")
        [msg] = ready(host, start)
        assert msg["text"].startswith("You said: away from webkit"), msg
        assert msg["conversation"]["title"] == host.eval("document.getElementById('conversation-title').textContent")
        assert msg["id"].startswith("page:")
    finally:
        host.eval(f"{HIDE}(false)")
    start = ask(host, "back in webkit")
    assert ready(host, start) == []


def test_beside_a_host_the_page_offers_and_shows_no_notification_of_its_own(host: WebKitHost) -> None:
    # The host notifies natively (js/page/notify.js): no offer to allow notifications, no
    # switch, nothing shown by the page; and nothing throws in WebKitGTK, whatever it has
    # of Notification and service workers (the console is checked as the module ends).
    host.eval(f"{HIDE}(true)")
    try:
        start = len(host.messages)
        host.eval("(document.getElementById('prompt').value = 'the host notifies in webkit', document.getElementById('composer').requestSubmit(), 1)")
        msg = host.wait_for(lambda m: m.get("type") == "reply.ready", start=start)
        assert msg["text"].startswith("You said: the host notifies in webkit"), msg
    finally:
        host.eval(f"{HIDE}(false)")
    assert host.eval("String(document.querySelectorAll('.notify-offer').length)") == "0"
    assert host.eval("String(document.documentElement.dataset.notified ?? 'none')") == "none"
    host.eval("(document.getElementById('open-settings').click(), 1)")
    try:
        assert host.eval("String(document.getElementById('notify-field').hidden)") == "true"
    finally:
        host.eval("(document.getElementById('settings').close(), 1)")
