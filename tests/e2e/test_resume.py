"""Answers that survive the phone, in real Chromium against a real gateway: a network
lost mid-answer (the link cut by a real proxy, as a phone loses it), a reload, a page
frozen and woken, Stop, and a gateway that died. Each finished answer must equal the
built-in model's uninterrupted answer to the same request, and the gateway must have
seen one POST: the prompt is billed once (bridge/PROTOCOL.md, "Resumable streams")."""

from __future__ import annotations

import re
import socket
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from bench.shaper import shaped_url
from harness.chromium import ANSWER, chat_bodies, send, steer, stored_answers, wait_ready
from harness.servers import gateway, hold_at, release

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(40)]

#: The built-in model's pace. A test that interrupts an answer holds it mid-way (`held`)
#: and lets it go once the interruption is over, so that it is mid-way on any machine
#: whatever its length: 60 tokens, 1.2 s after the release (480 tokens, 12 s, cost each
#: test 11 s more of streaming, and the gateway that dies twice that).
HELD_SIM = "ttft_ms=0,tps=40,tokens=60"
#: Where a held answer waits: after this many chunks, a few words in.
HELD_AFTER = 12
SOME_PAINTED = re.compile(r"^[1-9]\d*$")


def answer(page: Page):
    return page.locator(ANSWER).last


def uninterrupted(gateway_url: str, body: dict[str, Any]) -> str:
    """The built-in model's answer to the page's own request, uninterrupted: it is
    deterministic, so this is what the resumed answer must read, character for character."""
    r = httpx.post(gateway_url + "/v1/chat/completions", headers={"x-firsttoken-sim": HELD_SIM},
                   json={**{k: v for k, v in body.items() if k != "stream_options"}, "stream": False}, timeout=60)
    r.raise_for_status()
    return r.json()["choices"][0]["message"]["content"]


def held(page: Page) -> int:
    """Steer the page's model to `HELD_SIM`, its answer held after `HELD_AFTER` chunks
    until the test calls `release(gateway_url, key)`; the key."""
    stall, key = hold_at(HELD_AFTER)
    steer(page, f"{HELD_SIM},{stall}")
    return key


def mid_answer(page: Page, url: str, prompt: str) -> None:
    """Open the page at `url`, send `prompt` (its answer held: `held`), and return once
    the answer is mid-way: a held answer is mid-way once it shows text."""
    page.goto(url + "/")
    wait_ready(page)
    send(page, prompt)
    expect(answer(page)).to_have_attribute("data-paints", SOME_PAINTED, timeout=30_000)
    # Still on its way (what the test does next is to an answer in flight).
    assert answer(page).get_attribute("data-state") == "streaming"


def resumes(page: Page) -> list[str]:
    """The URLs of the stream resumes the page makes, as it makes them."""
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url) if "/v1/streams/" in r.url and r.url.split("?")[0].endswith("/events") else None)
    return seen


def test_a_network_lost_mid_answer_goes_on_once_the_device_is_back_online(page: Page, gateway_url: str) -> None:
    key = held(page)
    bodies = chat_bodies(page)
    resumed = resumes(page)
    with shaped_url(gateway_url) as (url, link):
        mid_answer(page, url, "a long walk into a tunnel")
        # The phone loses its network: the device says so, and the link is gone.
        page.context.set_offline(True)
        link.cut()
        note = answer(page).locator(".note")
        expect(note).to_contain_text("Offline: the answer goes on on the server")
        assert answer(page).get_attribute("data-state") == "streaming"
        shown = answer(page).locator(".content").inner_text()
        assert shown, "the text so far stays on screen"
        link.restore()
        page.context.set_offline(False)  # `online`: the page asks the core to reconnect
        release(gateway_url, key)
        expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
    assert len(bodies) == 1, "the prompt went once"
    assert resumed and all(re.search(r"[?&]after=[1-9]\d*", u) for u in resumed)
    assert stored_answers(page) == [uninterrupted(gateway_url, bodies[0])]


def test_a_connection_dropped_on_a_working_network_is_resumed_by_itself(page: Page, gateway_url: str) -> None:
    # A Wi-Fi to cellular switch: the connection dies, the device never says offline.
    key = held(page)
    bodies = chat_bodies(page)
    with shaped_url(gateway_url) as (url, link):
        mid_answer(page, url, "switching networks")
        link.cut()
        # Tried at once and refused (the link is still down), then again after a wait.
        expect(answer(page).locator(".note")).to_contain_text("Connection lost: reconnecting in")
        link.restore()
        release(gateway_url, key)
        expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
    assert len(bodies) == 1
    assert stored_answers(page) == [uninterrupted(gateway_url, bodies[0])]


def test_a_reload_mid_answer_takes_the_answer_up_where_it_was(page: Page, gateway_url: str) -> None:
    key = held(page)
    bodies = chat_bodies(page)
    resumed = resumes(page)
    mid_answer(page, gateway_url, "reload me")
    page.reload()
    # The text saved as the page went is there at once, and the rest streams in place.
    expect(answer(page)).to_have_attribute("data-resumed", "true")
    release(gateway_url, key)
    expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
    assert len(bodies) == 1 and len(resumed) == 1
    assert stored_answers(page) == [uninterrupted(gateway_url, bodies[0])]
    expect(page.locator(ANSWER)).to_have_count(1)  # in place: not a second answer


def test_a_page_frozen_mid_answer_reconnects_when_it_wakes(page: Page, gateway_url: str) -> None:
    key = held(page)
    bodies = chat_bodies(page)
    resumed = resumes(page)
    mid_answer(page, gateway_url, "put the phone away")
    cdp = page.context.new_cdp_session(page)
    # As a phone does with a backgrounded WebView (Page Lifecycle: freeze, then resume).
    # Headless Chromium's Page.setWebLifecycleState freezes the page without firing the
    # events (probed), so the test fires them on either side.
    page.evaluate("() => document.dispatchEvent(new Event('freeze'))")
    cdp.send("Page.setWebLifecycleState", {"state": "frozen"})
    cdp.send("Page.setWebLifecycleState", {"state": "active"})
    page.evaluate("() => document.dispatchEvent(new Event('resume'))")
    release(gateway_url, key)
    expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
    assert len(bodies) == 1 and len(resumed) >= 1
    assert stored_answers(page) == [uninterrupted(gateway_url, bodies[0])]


def test_stop_cancels_the_answer_on_the_gateway(page: Page, gateway_url: str) -> None:
    held(page)  # and never let go: Stop ends it
    mid_answer(page, gateway_url, "never mind")
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/cancel")) as cancelled:
        page.get_by_role("button", name="Stop", exact=True).click()
    assert cancelled.value.status == 200 and cancelled.value.json()["status"] == "cancelled"
    expect(answer(page)).to_have_attribute("data-state", "stopped")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_gateway_that_died_mid_answer_leaves_it_interrupted_with_retry_and_nothing_else_lost(page: Page) -> None:
    key = held(page)  # held by the first gateway until it dies
    bodies = chat_bodies(page)
    port = _free_port()
    with gateway("--port", str(port)) as first:
        mid_answer(page, first, "the server restarts")
        first.kill()  # a crash: no graceful end that would let the answer finish first
    # Gone with its streams (kept in its memory); the page keeps trying to reconnect.
    expect(answer(page).locator(".note")).to_contain_text("Connection lost")
    with gateway("--port", str(port)) as second:
        expect(answer(page)).to_have_attribute("data-state", "interrupted", timeout=60_000)
        expect(answer(page).locator(".error")).to_have_text("This answer was interrupted.")
        assert answer(page).locator(".content").inner_text(), "what arrived stays on screen"
        assert len(bodies) == 1, "never sent again by itself"
        # The retry carries the same hold: let it go before it comes (a release counts
        # for the next stall as well as for one held now: gateway/simulator.py Holds).
        release(second, key)
        page.get_by_role("button", name="Retry", exact=True).click()
        expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
        assert len(bodies) == 2 and bodies[1]["messages"] == bodies[0]["messages"]
        assert stored_answers(page) == [uninterrupted(second, bodies[1])]
