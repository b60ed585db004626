"""A stalled stream in real Chromium: the note while the server is silent, the timeout
that keeps the partial answer, and Retry, which sends the same turn again on a click."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from harness.chromium import ANSWER, chat_bodies, expected_answer, stored_answers, wait_ready
from harness.servers import hold_at
from harness.stored import stored_messages
from tests.e2e.native_host import as_host, host_message, post

pytestmark = pytest.mark.e2e

PROMPT = "wait for me"


def test_a_stall_is_shown_live_then_times_out_keeping_the_text_and_retry_sends_the_turn_again(
    page: Page, gateway_url: str
) -> None:
    # The built-in model sends 5 chunks, then nothing until the test lets it go, which it
    # never does (the page gives up on it); the page says so after 1 s and gives up after
    # 4 s (the advanced settings, no UI).
    stall, _ = hold_at(5)
    settings = {"headers": {"x-firsttoken-sim": f"ttft_ms=0,tps=200,{stall}"},
                "stall_notice_s": 1, "stall_timeout_s": 4}
    page.add_init_script(f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(json.dumps(settings))})")
    as_host(page)  # to unsteer the model before Retry (a host's settings.set)
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", PROMPT)
    page.press("#prompt", "Enter")

    answer = page.locator(ANSWER)
    stall = answer.locator(".stall")
    # Live: the same note, one second later each time, while the text so far stays.
    # Each text is on screen for a second: looked for at every frame (expect's polling
    # slows to once a second, and could step over it).
    for seconds, timeout in ((2, 30_000), (3, 5_000)):
        page.wait_for_function(
            "([at, want]) => document.querySelector(at)?.textContent === want",
            arg=[f"{ANSWER} .stall", f"still waiting for the server, {seconds} s"], polling="raf", timeout=timeout,
        )
    assert answer.locator(".content").inner_text().strip()

    # The limit: the request ends as a timeout; the note goes, the partial answer stays.
    expect(answer).to_have_attribute("data-state", "error", timeout=10_000)
    expect(answer.locator(".error")).to_have_text(re.compile(r"^No answer from the server for 4\.0 s"))
    expect(stall).to_have_count(0)
    full = expected_answer(gateway_url, [{"role": "user", "content": PROMPT}])
    [partial] = stored_answers(page)
    assert partial and full.startswith(partial) and len(partial) < len(full)
    assert answer.locator(".content").inner_text().strip()
    assert len(bodies) == 1  # the core did not send it again by itself

    # Retry: the same turn again, as a new reply in the failed one's place.
    post(page, {"type": "settings.set", "id": "s", "settings": {"headers": {"x-firsttoken-sim": "ttft_ms=0"}}})
    host_message(page, "settings.applied", "s")
    retry = page.get_by_role("button", name="Retry", exact=True)
    expect(retry).to_have_count(1)
    retry.click()
    expect(page.locator(f'{ANSWER}[data-state="done"]')).to_have_count(1, timeout=60_000)
    expect(page.locator(ANSWER)).to_have_count(1)
    expect(page.locator('.msg[data-role="user"]')).to_have_count(1)
    expect(retry).to_have_count(0)
    assert stored_answers(page) == [full]
    assert len(bodies) == 2
    # The same turn, and only it: no second user turn, no failed answer in between.
    assert bodies[1]["messages"] == bodies[0]["messages"]
    assert [m["role"] for m in bodies[1]["messages"]] == ["user"]
    history = stored_messages(page)
    assert [m["role"] for m in history] == ["user", "assistant"] and "incomplete" not in history[1]
