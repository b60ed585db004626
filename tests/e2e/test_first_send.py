"""Send from the moment the composer shows, in real Chromium (issue 45, item 2): with the
page's own modules held back on purpose (a Playwright route that lets them through only
after the Send's request was seen), a prompt sent on a first visit goes out at once from
the page's first step (js/boot/first-send.js) in each of the three APIs, with
`x-firsttoken-prepare`, and streams into the page; once the modules are in, the page
claims that very request (js/page/early-send.js): one POST, the answer painted, ended
and stored as any other, nothing lost when the page takes over mid-stream."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, Request, expect

from harness.chromium import ANSWER, WASM, Console, Held, steer, stored_answers, watched_page

pytestmark = pytest.mark.e2e

#: The page's own modules (its styles are left alone: they let the composer show).
MODULES = re.compile(r"/js/(page|render|link|images|tokenizer)/.*\.js$|/bridge/page/.*\.js$")
#: The runtime Python cannot start without: held for the whole test, so that nothing
#: here could have come from Python.
PATHS = {"chat_completions": "/v1/chat/completions", "responses": "/v1/responses",
         "anthropic_messages": "/v1/messages"}
CONTENT = f"{ANSWER} .content"


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    yield from watched_page(browser, console, fresh=True)


def posts(page: Page) -> list[Request]:
    seen: list[Request] = []
    page.on("request", lambda r: seen.append(r) if r.method == "POST" and "/v1/" in r.url else None)
    return seen


def send_before_the_modules(page: Page, gateway_url: str, api: str, text: str) -> tuple[Held, Request]:
    """A first visit with the modules held: the prompt sent once the first step is in;
    returns the held modules and the request the Send made."""
    modules = Held(page, MODULES)
    Held(page, WASM)
    page.goto(gateway_url + "/", wait_until="commit")
    page.wait_for_selector("html[data-send-ready]", state="attached")
    page.fill("#prompt", text)
    with page.expect_request(lambda r: r.method == "POST" and r.url.endswith(PATHS[api])) as sent:
        page.get_by_role("button", name="Send", exact=True).click()
    assert modules.held, "the page's modules were not held"
    assert page.get_attribute("html", "data-interactive") is None  # the page is not in yet
    return modules, sent.value


@pytest.mark.parametrize("api", list(PATHS))
def test_a_prompt_sent_before_the_modules_load_streams_and_is_kept_in_each_api(
        page: Page, gateway_url: str, api: str) -> None:
    steer(page, "ttft_ms=0,tps=400", api=api)
    requests = posts(page)
    modules, request = send_before_the_modules(page, gateway_url, api, "Hello from a slow phone")
    assert request.headers.get("x-firsttoken-prepare") == "balanced"
    body = json.loads(request.post_data or "{}")
    field = "input" if api == "responses" else "messages"
    assert body[field] == [{"role": "user", "content": "Hello from a slow phone"}]
    # Streamed into the page by its first step, the page's modules still held.
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "done")
    streamed = page.inner_text(CONTENT)
    assert streamed.strip()
    assert page.get_attribute("html", "data-interactive") is None

    modules.release()
    page.wait_for_selector("html[data-interactive]", state="attached")
    expect(page.locator(ANSWER)).to_have_count(1)
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "done")
    expect(page.locator('.msg[data-role="user"]')).to_have_count(1)
    # One POST, claimed by the page; the answer stored as any other.
    assert len(requests) == 1
    assert stored_answers(page) == [streamed]
    # The core's counts, from the gateway's report: the compression note's line or the
    # reply's figures name the prompt's tokens.
    expect(page.locator("#metrics")).to_contain_text("first byte")


def test_the_page_takes_over_mid_stream_and_loses_nothing(page: Page, gateway_url: str) -> None:
    steer(page, "ttft_ms=0,tps=30,tokens=120")
    requests = posts(page)
    modules, _ = send_before_the_modules(page, gateway_url, "chat_completions", "a long one please")
    # Some of it painted by the first step, not all of it.
    expect(page.locator(CONTENT)).not_to_be_empty()
    assert page.get_attribute(ANSWER, "data-state") == "streaming"
    modules.release()
    page.wait_for_selector("html[data-interactive]", state="attached")
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "done", timeout=30_000)
    assert len(requests) == 1
    # The whole answer, as the built-in model streamed it to this one request.
    [stored] = stored_answers(page)
    response = requests[0].response()
    assert response is not None
    text = "".join(
        (json.loads(line[6:])["choices"] or [{}])[0].get("delta", {}).get("content") or ""
        for line in response.text().splitlines()
        if line.startswith("data: {") and '"choices"' in line)
    assert stored == text and len(stored.split()) >= 60


def test_a_failure_before_the_page_is_in_reads_in_the_reader_s_language(
        browser: Browser, console: Console, gateway_url: str) -> None:
    for page in watched_page(browser, console, fresh=True, locale="zh-CN"):
        page.route("**/v1/chat/completions", lambda route: route.fulfill(
            status=401, content_type="application/json",
            body=json.dumps({"error": {"message": "Incorrect API key provided.", "code": "invalid_api_key"}})))
        modules, _ = send_before_the_modules(page, gateway_url, "chat_completions", "你好")
        expect(page.locator(ANSWER)).to_have_attribute("data-state", "error")
        expect(page.locator(CONTENT)).to_have_text("无法发送：HTTP 401")
        # The page, once in, words it itself, kept with Retry.
        modules.release()
        page.wait_for_selector("html[data-interactive]", state="attached")
        expect(page.get_by_role("button", name=re.compile("重试|Retry"))).to_be_visible()
        expect(page.locator(f"{ANSWER} .error")).to_contain_text("401")
