"""Haptics through the real GTK host in WebKitGTK (issue 46, item 2; js/page/haptics.js,
bridge/PROTOCOL.md "Hosts", `haptic`): the page's own answer ticks the host on Send, on
the first token and on done, never two pulses less than ~300 ms apart however many
tokens stream; none when the host said `haptics: false` or the person's switch is off; a
host's `haptics` of the wrong type refused.

Times are when the host read each message (its stdout, so a little later than the page
posted it, never earlier than the page's pacing allows by more than the pipe's jitter).
No sleeps: every step waits for the message or the state that says it happened."""

from __future__ import annotations

from typing import Any

import pytest

from harness.webkit import of, wait
from harness.gtk import WebKitHost

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(20)]

SLOW = "ttft_ms=500,tps=30,tokens=30"
#: Host-side receipt times jitter by the pipe; the page paces at 300 ms.
MIN_GAP_S = 0.2


def set_settings(host: WebKitHost, request_id: str, **settings: object) -> dict[str, Any]:
    host.send({"v": 1, "type": "settings.set", "id": request_id, "settings": settings})
    return host.wait_for(of(host, request_id, "settings.applied"))["settings"]


def ask(host: WebKitHost, text: str) -> int:
    """Send from the page's composer, wait for the answer to be done; the index in
    host.messages where it started."""
    start = len(host.messages)
    done = host.eval("document.querySelectorAll('.msg[data-role=\"assistant\"][data-state=\"done\"]').length")
    host.eval(f"(document.getElementById('prompt').value = {text!r}, document.getElementById('composer').requestSubmit(), 1)")
    wait(host, f"document.querySelectorAll('.msg[data-role=\"assistant\"][data-state=\"done\"]').length > {done}")
    return start


def haptics(host: WebKitHost, start: int) -> list[dict[str, Any]]:
    return [m for m in host.messages[start:] if m.get("type") == "haptic"]


@pytest.fixture(autouse=True)
def clean_settings(host: WebKitHost):
    yield
    set_settings(host, "clear", headers=None, haptics=None)


def test_an_answer_ticks_on_send_first_token_and_done_paced(host: WebKitHost) -> None:
    set_settings(host, "slow", headers={"x-firsttoken-sim": SLOW})
    start = ask(host, "a slow answer")
    # Done's tick follows the page's `done` state (or the gap after the last tick).
    host.wait_for(lambda m: len(haptics(host, start)) >= 3 or False, timeout=20)
    pulses = haptics(host, start)
    assert [p["kind"] for p in pulses] == ["light", "light", "light"], pulses
    gaps = [b["_received"] - a["_received"] for a, b in zip(pulses, pulses[1:])]
    assert all(gap >= MIN_GAP_S for gap in gaps), gaps


def test_the_host_and_the_switch_turn_them_off(host: WebKitHost) -> None:
    set_settings(host, "fast", headers={"x-firsttoken-sim": "ttft_ms=0,tps=1000000,tokens=5"})
    assert set_settings(host, "off", haptics=False)["haptics"] is False
    start = ask(host, "quiet, by the host")
    # A ping after the answer: everything the page posted before it has arrived.
    host.send({"v": 1, "type": "ping", "id": "after-host-off"})
    host.wait_for(of(host, "after-host-off", "pong"))
    assert haptics(host, start) == []

    set_settings(host, "on", haptics=None)
    assert host.eval("document.getElementById('haptics-field').hidden") is False  # a host: haptics exist
    host.eval("(() => { const s = document.getElementById('haptics'); s.checked = false; s.dispatchEvent(new Event('change')); return 1; })()")
    try:
        start = ask(host, "quiet, by the person")
        host.send({"v": 1, "type": "ping", "id": "after-switch-off"})
        host.wait_for(of(host, "after-switch-off", "pong"))
        assert haptics(host, start) == []
    finally:
        host.eval("(() => { const s = document.getElementById('haptics'); s.checked = true; s.dispatchEvent(new Event('change')); return 1; })()")


def test_a_hosts_haptics_of_the_wrong_type_is_refused(host: WebKitHost) -> None:
    host.send({"v": 1, "type": "settings.set", "id": "bad", "settings": {"haptics": "off"}})
    error = host.wait_for(of(host, "bad", "error"))
    assert error["error"]["code"] == "invalid_message" and "haptics" in error["error"]["message"]
    assert "haptics" not in set_settings(host, "check")
