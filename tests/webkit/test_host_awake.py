"""The screen kept on while an answer streams, through the real GTK host in WebKitGTK
(issue 46, item 5; js/page/awake.js, bridge/PROTOCOL.md "Screen awake, for hosts"): the
host's `screen.awake {on}` paired on done, Stop, error and reload, none with the host's
`awake: false`, and a wrong-typed `awake` refused.

WebKitGTK has the Screen Wake Lock API and grants it, so the page takes it (the last
test); the others remove the API (`delete Navigator.prototype.wakeLock`, as in a web view
without it) so that the host's path is the one exercised. No sleeps."""

from __future__ import annotations

from typing import Any

import pytest

from harness.gtk import WebKitHost
from harness.webkit import of, wait

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(20)]

SLOW = "ttft_ms=300,tps=20,tokens=20"
LONG = "ttft_ms=0,tps=5,tokens=400"
ANSWERS = "document.querySelectorAll('.msg[data-role=\"assistant\"][data-state=\"{}\"]').length"


def set_settings(host: WebKitHost, request_id: str, **settings: object) -> dict[str, Any]:
    host.send({"v": 1, "type": "settings.set", "id": request_id, "settings": settings})
    return host.wait_for(of(host, request_id, "settings.applied"))["settings"]


def awake(host: WebKitHost, start: int) -> list[bool]:
    return [m["on"] for m in host.messages[start:] if m.get("type") == "screen.awake"]


def wait_awake(host: WebKitHost, start: int, n: int) -> list[bool]:
    host.wait_for(lambda m: len(awake(host, start)) >= n, timeout=60)
    return awake(host, start)


def ask(host: WebKitHost, text: str) -> int:
    start = len(host.messages)
    host.eval("(delete Navigator.prototype.wakeLock, 1)")
    host.eval(f"(document.getElementById('prompt').value = {text!r}, document.getElementById('composer').requestSubmit(), 1)")
    return start


def count(host: WebKitHost, state: str) -> int:
    return int(host.eval(ANSWERS.format(state)))


@pytest.fixture(autouse=True)
def clean_settings(host: WebKitHost):
    yield
    set_settings(host, "clear", headers=None, awake=None)


@pytest.mark.parametrize("sim, end", [(SLOW, "done"), ("status=400", "error")], ids=["done", "error"])
def test_paired_on_the_answers_end(host: WebKitHost, sim: str, end: str) -> None:
    set_settings(host, end, headers={"x-firsttoken-sim": sim})
    before = count(host, end)
    start = ask(host, f"end in {end} in webkit")
    wait(host, f"{ANSWERS.format(end)} > {before}")
    assert wait_awake(host, start, 2) == [True, False]


def test_paired_on_stop(host: WebKitHost) -> None:
    set_settings(host, "long", headers={"x-firsttoken-sim": LONG})
    stopped = count(host, "stopped")
    start = ask(host, "stop me in webkit")
    assert wait_awake(host, start, 1) == [True]
    host.eval("(document.getElementById('prompt').dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true })), 1)")
    wait(host, f"{ANSWERS.format('stopped')} > {stopped}")
    assert wait_awake(host, start, 2) == [True, False]


def test_off_by_the_host_and_a_wrong_type_refused(host: WebKitHost) -> None:
    host.send({"v": 1, "type": "settings.set", "id": "bad", "settings": {"awake": "yes"}})
    error = host.wait_for(of(host, "bad", "error"))
    assert error["error"]["code"] == "invalid_message" and "awake" in error["error"]["message"]
    set_settings(host, "fast", headers={"x-firsttoken-sim": "ttft_ms=0,tps=1000000,tokens=5"})
    assert set_settings(host, "off", awake=False)["awake"] is False
    done = count(host, "done")
    start = ask(host, "no awake in webkit")
    wait(host, f"{ANSWERS.format('done')} > {done}")
    host.send({"v": 1, "type": "ping", "id": "after"})
    host.wait_for(of(host, "after", "pong"))
    assert awake(host, start) == []


def test_paired_on_reload(host: WebKitHost, gateway_url: str) -> None:
    # Last: it reloads the module's page (host settings, memory only, go with it).
    set_settings(host, "long", headers={"x-firsttoken-sim": LONG})
    start = ask(host, "reload me in webkit")
    assert wait_awake(host, start, 1) == [True]
    host.load(gateway_url + "/")
    seen = wait_awake(host, start, 2)
    assert seen[:2] == [True, False], seen
    host.wait_for(lambda m: m.get("type") == "ready", timeout=90, start=start)
    wait(host, "document.documentElement.dataset.python === 'ready'", ms=90_000)
    # The answer resumed after the reload is stopped; whatever came, in pairs.
    host.eval("(document.getElementById('prompt').dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true })), 1)")
    wait(host, "document.getElementById('send').hidden === false")
    host.send({"v": 1, "type": "ping", "id": "after-reload"})
    host.wait_for(of(host, "after-reload", "pong"))
    seen = awake(host, start)
    assert all(on == (i % 2 == 0) for i, on in enumerate(seen)) and not seen[-1], seen


def test_webkits_own_wake_lock_is_taken_and_released(host: WebKitHost) -> None:
    # After the reload above the page has WebKit's Screen Wake Lock API again, which
    # WebKitGTK grants: the page takes it, and asks the host for nothing.
    assert host.eval("typeof navigator.wakeLock") == "object"
    set_settings(host, "slow", headers={"x-firsttoken-sim": SLOW})
    done = count(host, "done")
    start = len(host.messages)
    host.eval("(document.getElementById('prompt').value = 'locked in webkit', document.getElementById('composer').requestSubmit(), 1)")
    wait(host, "document.documentElement.dataset.awake === 'lock'")
    wait(host, f"{ANSWERS.format('done')} > {done}")
    wait(host, "document.documentElement.dataset.awake === 'off'")
    assert awake(host, start) == []
