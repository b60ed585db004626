"""A first visit never waits for Python, in real Chromium: while the runtime's download
is held back on purpose, a prompt goes to the gateway with `x-firsttoken-prepare`
(js/page/early-send.js, gateway/prepare.py), streams, and reads as one sent by Python
does (the built-in model's answer to the prepared prompt, the compression note with the
core's counts); Stop and a server's error keep the text so far; once the runtime is let
through and Python is ready, the next prompt goes through Python (no header)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Request, expect

from firsttoken.notices import Notices
from firsttoken.prepare.preparer import Preparer
from firsttoken.settings import ChatSettings
from harness.chromium import ANSWER, WASM, Console, Held, expected_answer, steer, stored_answers, wait_ready, watched_page

pytestmark = pytest.mark.e2e

#: The runtime Python cannot start without (fetched by the page's prefetch and by the worker).
CHAT = "/v1/chat/completions"
USER = '.msg[data-role="user"]'
# Pretty JSON in a fence: compression (balanced) minifies it, so the prepared prompt,
# and with it the built-in model's answer, differ from the prompt as typed.
PROMPT = 'What is in this?\n```json\n{\n    "name": "firsttoken",\n    "sizes": [1, 2, 3],\n    "ok": true\n}\n```'


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    # A first visit: no service worker, which would answer the runtime past the route.
    yield from watched_page(browser, console, fresh=True)


def chat_requests(page: Page) -> list[Request]:
    requests: list[Request] = []
    page.on("request", lambda r: requests.append(r) if r.url.endswith(CHAT) else None)
    return requests


def prepared(messages: list[dict[str, Any]], level: str = "balanced") -> Any:
    """What the core makes of `messages` on CPython (firsttoken.prepare, the Preparer
    the page's core runs)."""
    preparer = Preparer(clock=lambda: 0.0, notices=Notices())
    coroutine = preparer.prepare(messages, ChatSettings(model="firsttoken-sim", compress=level))
    # In a thread of its own: Playwright's sync API runs an event loop in this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def send(page: Page, text: str) -> None:
    page.fill("#prompt", text)
    page.get_by_role("button", name="Send", exact=True).click()


def test_a_prompt_sent_while_python_downloads_streams_through_the_gateway_then_python_takes_over(
    page: Page, gateway_url: str
) -> None:
    steer(page, "ttft_ms=0,tps=200")
    runtime = Held(page, WASM)
    requests = chat_requests(page)
    page.goto(gateway_url + "/")
    send(page, PROMPT)
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "done", timeout=30_000)
    # Python could not have sent it: its runtime is still held.
    assert page.get_attribute("html", "data-python") == "loading"
    assert runtime.held, "the page never asked for the runtime"

    [early] = requests
    assert early.headers.get("x-firsttoken-prepare") == "balanced"
    assert json.loads(early.post_data or "{}")["messages"] == [{"role": "user", "content": PROMPT}]  # as typed
    done = prepared([{"role": "user", "content": PROMPT}])
    assert done.messages != [{"role": "user", "content": PROMPT}]  # compression changed it
    # The built-in model answered the prepared prompt, painted and stored as usual.
    assert stored_answers(page) == [expected_answer(gateway_url, done.messages)]
    assert page.inner_text(f"{ANSWER} .content").startswith("You said:")
    # The compression note, with the core's counts.
    saved = done.saved[-1]
    assert saved > 0
    note = page.locator(f"{USER} details.saved summary")
    expect(note).to_have_text(re.compile(
        rf"^sent {done.prompt_tokens:,} tokens instead of {done.prompt_tokens + saved:,} \(−\d+%\)$"))
    expect(page.locator(ANSWER)).not_to_contain_text("Waiting for Python")
    expect(page.locator("#metrics")).to_contain_text("first byte")

    # Python comes up; the next prompt is Python's own (no header), and answered too.
    runtime.release()
    wait_ready(page)
    # The last reply's figures stay in the header: the boot's do not cover them.
    expect(page.locator("#metrics")).to_contain_text("first byte")
    send(page, "and now?")
    expect(page.locator(ANSWER)).to_have_count(2)
    expect(page.locator(ANSWER).last).to_have_attribute("data-state", "done", timeout=60_000)
    assert len(requests) == 2
    assert "x-firsttoken-prepare" not in requests[1].headers
    assert len(stored_answers(page)) == 2


def test_stop_on_the_early_path_keeps_the_text_so_far(page: Page, gateway_url: str) -> None:
    steer(page, "ttft_ms=0,tps=25,tokens=2000")
    Held(page, WASM)
    page.goto(gateway_url + "/")
    send(page, "a long one please")
    expect(page.locator(ANSWER)).to_have_attribute("data-paints", re.compile(r"^([3-9]|\d\d+)$"), timeout=30_000)
    expect(page.locator("#stop")).to_be_enabled()
    page.click("#stop")
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "stopped", timeout=30_000)
    assert page.inner_text(f"{ANSWER} .error") == "Stopped."
    [partial] = stored_answers(page)
    full = expected_answer(gateway_url, prepared([{"role": "user", "content": "a long one please"}]).messages)
    assert partial and full.startswith(partial) and len(partial) < len(full)
    assert page.get_attribute("html", "data-python") == "loading"


def test_a_server_error_on_the_early_path_is_typed_and_keeps_the_text(page: Page, gateway_url: str) -> None:
    steer(page, "ttft_ms=0,tps=500,error_after=6")
    Held(page, WASM)
    page.goto(gateway_url + "/")
    send(page, "break please")
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "error", timeout=30_000)
    expect(page.locator(f"{ANSWER} .error")).to_contain_text("model reported an error")
    expect(page.get_by_role("button", name="Retry")).to_be_visible()
    [broken] = stored_answers(page)
    full = expected_answer(gateway_url, prepared([{"role": "user", "content": "break please"}]).messages)
    assert broken and full.startswith(broken) and broken != full
    assert page.get_attribute("html", "data-python") == "loading"


def test_an_http_error_and_a_malformed_stream_on_the_early_path_are_typed(page: Page, gateway_url: str) -> None:
    Held(page, WASM)
    answers = iter([
        {"status": 401, "content_type": "application/json",
         "body": json.dumps({"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}})},
        {"status": 200, "content_type": "text/event-stream",
         "body": 'data: {"choices":[{"index":0,"delta":{"content":"Half an"}}]}\n\ndata: {not json\n\n'},
    ])
    page.route(f"**{CHAT}", lambda route: route.fulfill(**next(answers)))
    page.goto(gateway_url + "/")
    send(page, "who am I?")
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "error", timeout=30_000)
    expect(page.locator(f"{ANSWER} .error")).to_contain_text("401")
    expect(page.locator(f"{ANSWER} .error")).to_contain_text("API key")
    page.get_by_role("button", name="New chat").click()
    send(page, "again")
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "error", timeout=30_000)
    expect(page.locator(f"{ANSWER} .content")).to_have_text("Half an")
    assert stored_answers(page) == ["Half an"]


def test_to_another_origin_a_prompt_sent_early_waits_for_python(page: Page, gateway_url: str) -> None:
    # A third-party API (here: this gateway under another name, another origin) does not
    # take the gateway's header, and the page's origin is not its to trust.
    other = gateway_url.replace("127.0.0.1", "localhost") + "/v1"
    steer(page, "ttft_ms=0,tps=200", base_url=other)
    Held(page, WASM)
    requests = chat_requests(page)
    page.goto(gateway_url + "/")
    send(page, "wait for me")
    expect(page.locator(f"{ANSWER} .note")).to_have_text(re.compile(r"^Waiting for Python"))
    assert requests == []
    assert page.get_attribute("html", "data-python") == "loading"
