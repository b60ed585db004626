"""The page speaking each API dialect (Settings, "API") in real Chromium, to the
gateway's built-in model, which answers the same prompt with the same text on all
three routes: the request goes to the dialect's route, the answer streams whole, the
composer's count says whether it is exact, a long system prompt goes as a cache
reference the second time, Stop and an error mid-answer keep the text so far; and the
choice is kept, shown and sent as the user left it (issue 25)."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterator

import pytest
from playwright.sync_api import Browser, Page, Request, expect

from harness.chromium import (
    ANSWER, DESKTOP, PIECE, PIXEL_7, Console, expected_answer, request_json, send, steer, stored_answers, wait_ready,
    watched_page,
)
from tests.e2e.native_host import as_host, host_answer, host_message, post

pytestmark = pytest.mark.e2e

ROUTES = {"chat_completions": "/v1/chat/completions", "responses": "/v1/responses", "anthropic_messages": "/v1/messages"}
#: Where each dialect carries the leading system text, once the gateway is known to take references.
LEAD: dict[str, Callable[[dict], Any]] = {
    "chat_completions": lambda body: body["messages"][0],
    "responses": lambda body: body["input"][0],
    "anthropic_messages": lambda body: body["system"][0] if isinstance(body["system"], list) else body["system"],
}
#: Long enough to go by reference (256 characters or more); no trailing space, as the page trims it.
SYSTEM = " ".join(["You answer in the voice of a patient librarian."] * 30)
FAST = "ttft_ms=0,tps=2000"
#: (the API chosen, the model): a Claude model's counts are estimates, as are those of
#: a dialect whose chat format is not verified (Responses); Chat Completions' are exact.
CASES = {
    "chat_completions": ("firsttoken-sim", True),
    "responses": ("firsttoken-sim", False),
    "anthropic_messages": ("claude-sonnet-4-5", False),
}


def is_chat(api: str) -> Callable[[Request], bool]:
    return lambda r: r.method == "POST" and r.url.endswith(ROUTES[api])


def chats(page: Page) -> list[Request]:
    """The chat requests the page sends from now on, to any of the three routes."""
    sent: list[Request] = []
    page.on("request", lambda r: sent.append(r) if r.method == "POST" and r.url.endswith(tuple(ROUTES.values())) else None)
    return sent


def choose(page: Page, *, api: str | None = None, model: str | None = None) -> None:
    """The user opens Settings, picks the API and types the model, and closes it."""
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_role("dialog", name="Settings")
    expect(dialog).to_be_visible()
    if model is not None:
        dialog.get_by_label("Model", exact=True).fill(model)
        dialog.get_by_label("Model", exact=True).dispatch_event("change")
    if api is not None:
        dialog.get_by_label("API", exact=True).select_option(api)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


def counted(page: Page, draft: str) -> dict[str, str]:
    """The user types `draft`; once the composer's count of it is in, what it shows."""
    page.fill("#prompt", draft)
    page.wait_for_function("() => { const c = document.getElementById('count');"
                           " return !('pending' in c.dataset) && Boolean(c.dataset.tokens); }")
    count = page.locator("#count")
    return {"text": count.inner_text(), "exact": count.get_attribute("data-exact") or ""}


def answer_of(page: Page, n: int) -> str:
    """The `n`th answer (from 0) as the page kept it, once it is done."""
    expect(page.locator(ANSWER).nth(n)).to_have_attribute("data-state", "done", timeout=60_000)
    return stored_answers(page)[n]


@pytest.fixture
def phone_or_desktop(request: pytest.FixtureRequest, browser: Browser, console: Console) -> Iterator[Page]:
    yield from watched_page(browser, console, **request.param)


# ---- each dialect, end to end ------------------------------------------------------------


@pytest.mark.parametrize("api", list(CASES))
def test_each_api_streams_the_answer_counts_honestly_and_refers_to_the_system_prompt(
    page: Page, gateway_url: str, api: str
) -> None:
    model, exact = CASES[api]
    steer(page, FAST, compress="off", system=SYSTEM)
    sent = chats(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    choose(page, api=api, model=model)

    # The count: exact where the core says so, else shown as an estimate, never as exact.
    count = counted(page, f"hello over {api}")
    if exact:
        assert count["exact"] == "true" and re.fullmatch(r"[\d,]+ / [\d,]+ tokens", count["text"]), count
    else:
        assert count["exact"] == "false" and re.fullmatch(r"≈ [\d,]+ / [\d,]+ tokens", count["text"]), count

    with page.expect_request(is_chat(api)) as first:
        page.get_by_role("button", name="Send", exact=True).click()
    body = request_json(first.value)
    assert body["model"] == model and body["stream"] is True
    first_messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"hello over {api}"}]
    answer = answer_of(page, 0)
    assert answer == expected_answer(gateway_url, first_messages)
    if api == "anthropic_messages":
        # Said once, under the answer: Claude's counts are estimates.
        expect(page.locator(f'{ANSWER} .notice[data-code="tokens_estimated"]')).to_contain_text("estimates")

    # The second send: the system prompt goes as a reference, where the dialect keeps it.
    with page.expect_request(is_chat(api)) as second:
        send(page, "and again")
    answer_of(page, 1)
    bodies = [request_json(r) for r in sent]
    assert [r.url for r in sent] == [gateway_url + ROUTES[api]] * 2
    assert bodies[1] == request_json(second.value)
    assert SYSTEM in json.dumps(bodies[0], ensure_ascii=False)
    assert SYSTEM not in json.dumps(bodies[1], ensure_ascii=False)
    lead = LEAD[api](bodies[1])
    assert isinstance(lead, dict) and lead.get("x_firsttoken_ref", "").startswith("sha256:"), lead


@pytest.mark.parametrize("api", list(CASES))
def test_an_error_mid_answer_then_stop_keep_the_text_so_far_in_each_api(page: Page, gateway_url: str, api: str) -> None:
    model, _ = CASES[api]
    # Five pieces, then the dialect's own error event (Chat Completions' error chunk,
    # Responses' `error`, Messages' `error`).
    steer(page, f"{FAST},error_after=5", compress="off")
    sent = chats(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    choose(page, api=api, model=model)
    send(page, "fail halfway")
    answer = page.locator(ANSWER).first
    expect(answer).to_have_attribute("data-state", "error", timeout=60_000)
    expect(answer.locator(".error")).to_be_visible()
    expect(answer.get_by_role("button", name="Retry", exact=True)).to_be_visible()
    full = expected_answer(gateway_url, [{"role": "user", "content": "fail halfway"}])
    assert stored_answers(page) == ["".join(PIECE.findall(full)[:5])]
    assert answer.locator(".content").inner_text().strip()
    assert [r.url for r in sent] == [gateway_url + ROUTES[api]]  # text had come: not sent again

    # Slow now (the next load's settings), and the user stops the answer once text shows.
    steer(page, "ttft_ms=0,tps=10,tokens=5000", compress="off")
    page.reload()
    wait_ready(page)
    choose(page, api=api, model=model)
    send(page, "stop me")
    slow = page.locator(ANSWER).nth(1)
    expect(slow.locator(".content")).not_to_have_text("", timeout=60_000)
    page.get_by_role("button", name="Stop", exact=True).click()
    expect(slow).to_have_attribute("data-state", "stopped", timeout=30_000)
    partial = stored_answers(page)[1]
    whole = expected_answer(gateway_url, [{"role": "user", "content": "fail halfway"},
                                          {"role": "assistant", "content": stored_answers(page)[0]},
                                          {"role": "user", "content": "stop me"}])
    assert partial and whole.startswith(partial) and len(partial) < len(whole)
    expect(slow.locator(".content")).not_to_have_text("")
    assert [r.url for r in sent] == [gateway_url + ROUTES[api]] * 2


# ---- the control: kept, shown, sent --------------------------------------------------------


@pytest.mark.parametrize("phone_or_desktop", [PIXEL_7, DESKTOP], indirect=True, ids=["phone", "desktop"])
def test_the_api_choice_is_kept_across_a_reload_and_automatic_follows_the_model(
    phone_or_desktop: Page, gateway_url: str
) -> None:
    page = phone_or_desktop
    steer(page, FAST, keep_changes=True, compress="off")
    sent = chats(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.get_by_role("button", name="Settings").click()
    select = page.get_by_role("dialog", name="Settings").get_by_label("API", exact=True)
    # Labelled, Automatic by default, and as easy to hit as its neighbours.
    expect(select).to_have_value("")
    expect(page.locator("#api-help")).to_contain_text("Chat Completions (for firsttoken-sim)")
    for control in (select, page.locator("#compress"), page.locator("#model")):
        box = control.bounding_box()
        assert box and box["width"] >= 44 and box["height"] >= 44, box
    assert [o.strip() for o in select.locator("option").all_inner_texts()] == [
        "Automatic (by model)", "Chat Completions", "Responses", "Anthropic Messages"]

    # Automatic: a Claude model speaks Anthropic Messages, and the hint says so.
    page.get_by_label("Model", exact=True).fill("claude-sonnet-4-5")
    page.get_by_label("Model", exact=True).dispatch_event("change")
    expect(page.locator("#api-help")).to_contain_text("Anthropic Messages (for claude-sonnet-4-5)")
    page.keyboard.press("Escape")
    with page.expect_request(is_chat("anthropic_messages")) as auto:
        send(page, "who picks?")
    assert "api" not in request_json(auto.value)
    answer_of(page, 0)

    # A choice is kept, and holds after a reload.
    choose(page, api="responses")
    assert json.loads(page.evaluate("localStorage.getItem('firsttoken.settings.v1')"))["api"] == "responses"
    page.reload()
    wait_ready(page)
    expect(page.locator("#api")).to_have_value("responses")
    with page.expect_request(is_chat("responses")):
        send(page, "still responses?")
    answer_of(page, 1)

    # Automatic again is kept as no value; a stored value this version does not know
    # counts as Automatic.
    choose(page, api="", model="firsttoken-sim")
    assert "api" not in json.loads(page.evaluate("localStorage.getItem('firsttoken.settings.v1')"))
    page.evaluate("""() => {
      const s = JSON.parse(localStorage.getItem('firsttoken.settings.v1'));
      localStorage.setItem('firsttoken.settings.v1', JSON.stringify({ ...s, api: 'gemini' }));
    }""")
    page.reload()
    wait_ready(page)
    expect(page.locator("#api")).to_have_value("")
    with page.expect_request(is_chat("chat_completions")):
        send(page, "and now?")
    answer_of(page, 2)
    assert [r.url.removeprefix(gateway_url) for r in sent] == [
        ROUTES["anthropic_messages"], ROUTES["responses"], ROUTES["chat_completions"]]


def test_the_model_list_sends_the_key_as_the_chosen_api_wants_it(page: Page, gateway_url: str) -> None:
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_role("dialog", name="Settings")
    dialog.get_by_label("API key").fill("sk-user")
    dialog.get_by_label("API key").dispatch_event("change")
    test = dialog.get_by_role("button", name="Test connection")
    result = page.locator("#connection-result")

    def models_request() -> dict[str, str]:
        with page.expect_request(lambda r: r.url == gateway_url + "/v1/models") as listed:
            test.click()
        expect(result).to_contain_text("Connected")
        return listed.value.all_headers()

    headers = models_request()
    assert headers.get("authorization") == "Bearer sk-user" and "x-api-key" not in headers
    dialog.get_by_label("API", exact=True).select_option("anthropic_messages")
    expect(result).to_have_text("")  # the outcome was of the other API's request
    headers = models_request()
    assert "authorization" not in headers, headers
    assert headers.get("x-api-key") == "sk-user" and headers.get("anthropic-version") == "2023-06-01"
    assert headers.get("anthropic-dangerous-direct-browser-access") == "true"
    expect(page.locator("#models option")).not_to_have_count(0)


def test_a_hosts_api_setting_reaches_its_chats_and_the_pages(page: Page, gateway_url: str) -> None:
    as_host(page)
    steer(page, FAST, compress="off")
    sent = chats(page)
    page.goto(gateway_url + "/")
    post(page, {"type": "settings.set", "id": "s", "settings": {"api": "anthropic_messages"}})
    assert host_message(page, "settings.applied", "s")["settings"] == {"api": "anthropic_messages", "api_key": False}
    wait_ready(page)
    hi = [{"role": "user", "content": "hello from the app"}]
    post(page, {"type": "chat.send", "id": "h1", "messages": hi, "settings": {"headers": {"x-firsttoken-sim": FAST}}})
    assert host_answer(page, "h1") == expected_answer(gateway_url, hi)
    with page.expect_request(is_chat("anthropic_messages")):
        send(page, "and from the user")  # the page's own chat: the host's API over the form's Automatic
    answer_of(page, 0)
    # A value the protocol does not name is refused, and nothing changes.
    post(page, {"type": "settings.set", "id": "bad", "settings": {"api": "gemini"}})
    assert host_message(page, "error", "bad")["error"]["code"] == "invalid_message"
    post(page, {"type": "settings.set", "id": "clear", "settings": {"api": None}})
    host_message(page, "settings.applied", "clear")
    with page.expect_request(is_chat("chat_completions")):
        send(page, "back to the model's")
    answer_of(page, 1)
    assert [r.url.removeprefix(gateway_url) for r in sent] == [
        ROUTES["anthropic_messages"], ROUTES["anthropic_messages"], ROUTES["chat_completions"]]
