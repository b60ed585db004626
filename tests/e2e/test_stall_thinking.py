"""A connected silence in real Chromium (issue 48, item 6): the gateway's `: keep-alive`
comments (`--keepalive-s`, short here) hold the core's timeout off however long the
model is silent, and the stall notice says the model is still thinking, not that the
connection stalled; while the reply's Thinking row counts the seconds, no second notice
at all. The timeout (2 s) is shorter than each silence (the model held until the page
has counted 3 s; 4 s of hidden thinking), so a keep-alive that did not count would end
the request."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from harness.chromium import ANSWER, send, steer, wait_ready
from harness.protocol_spy import PROTOCOL_SPY
from harness.servers import gateway, hold_at, release

pytestmark = pytest.mark.e2e

STALLS = {"stall_notice_s": 1, "stall_timeout_s": 2}

# Every text a stall note ever had, into `window.__stallTexts` (a note lives a second).
STALL_TEXTS = """
window.__stallTexts = [];
new MutationObserver(() => {
  for (const el of document.querySelectorAll('.msg .stall')) {
    const last = window.__stallTexts[window.__stallTexts.length - 1];
    if (el.textContent !== last) window.__stallTexts.push(el.textContent);
  }
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


@pytest.fixture(scope="module")
def kept_alive_url() -> Iterator[str]:
    with gateway("--ttft-ms", "50", "--tps", "200", "--keepalive-s", "0.3") as url:
        yield url


def stalls_said(page: Page) -> list[dict]:
    return [e for e in page.evaluate("window.__ft.events") if e.get("type") == "chat.stall"]


def test_a_silence_mid_answer_behind_keep_alives_reads_still_thinking_and_never_times_out(
    page: Page, kept_alive_url: str
) -> None:
    stall, key = hold_at(5)
    steer(page, f"ttft_ms=0,tps=200,{stall}", **STALLS)
    page.add_init_script(PROTOCOL_SPY)
    page.add_init_script(STALL_TEXTS)
    page.goto(kept_alive_url + "/")
    wait_ready(page)
    send(page, "take your time")
    answer = page.locator(ANSWER)
    # Silent (held) past the 2 s timeout by the page's own count, then let go: the
    # keep-alives held the timeout off for as long as the test kept the model silent.
    expect(answer.locator(".stall")).to_have_text(
        re.compile(r"^Still thinking… the server is connected \(([3-9]|\d\d+) s\)$"), timeout=30_000)
    assert answer.get_attribute("data-state") == "streaming"
    release(kept_alive_url, key)
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    expect(answer.locator(".stall")).to_have_count(0)
    texts = page.evaluate("window.__stallTexts")
    assert texts and all(t.startswith("Still thinking… the server is connected") for t in texts), texts
    assert all(e.get("connected") is True for e in stalls_said(page))


def test_a_model_thinking_silently_shows_its_thinking_row_and_no_second_notice(page: Page, kept_alive_url: str) -> None:
    # Responses without a summary: hidden reasoning, nothing but keep-alives for 4 s.
    steer(page, "think_tokens=200,tps=50,tokens=8", model="firsttoken-sim-think", api="responses",
          reasoning_summary=False, **STALLS)
    page.add_init_script(PROTOCOL_SPY)
    page.add_init_script(STALL_TEXTS)
    page.goto(kept_alive_url + "/")
    wait_ready(page)
    send(page, "think it over")
    answer = page.locator(ANSWER)
    expect(answer.locator(".thinking-time")).to_have_text(re.compile(r"^[2-9] s$"), timeout=30_000)
    expect(answer).to_have_attribute("data-state", "done", timeout=30_000)
    said = stalls_said(page)
    assert said and all(e.get("connected") is True for e in said), said  # the core said it, connected
    assert page.evaluate("window.__stallTexts") == []  # the Thinking row said it alone
    assert answer.locator(".content").inner_text().strip()
