"""The send path in real Chromium, at desktop and Pixel 7 sizes: the message actions
(Copy, Edit, Regenerate, Retry), a conversation still well formed after a failure and a
reload (checked in the requests the page sends), Send becoming Stop and Stop stopping
that answer only, the offline banner and outbox, and a reply cut by a reload."""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

import httpx
import pytest
from playwright.sync_api import Browser, Page, Route, expect

from harness.chromium import (
    ANSWER, DESKTOP, PIXEL_7, Console, chat_bodies, expected_answer, request_json, send, steer, wait_ready, watched_page,
)
from harness.servers import gateway, hold_at, release
from harness.stored import stored_messages
from tests.e2e.native_host import as_host, host_answer, host_message, post

pytestmark = pytest.mark.e2e

USER = '.msg[data-role="user"]'
#: Resolves with the outbox's item count once it holds `n` (looked at after each frame),
#: or rejects after 30 s.
OUTBOX_HOLDS = """(n) => new Promise((resolve, reject) => {
  const end = performance.now() + 30000;
  const look = () => {
    const open = indexedDB.open('firsttoken-outbox');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      if (!db.objectStoreNames.contains('items')) { db.close(); return requestAnimationFrame(look); }
      const count = db.transaction('items').objectStore('items').count();
      count.onsuccess = () => {
        db.close();
        if (count.result >= n) resolve(count.result);
        else if (performance.now() > end) reject(new Error(`the outbox holds ${count.result}, not ${n}`));
        else requestAnimationFrame(look);
      };
    };
  };
  look();
})"""
CHAT = "**/v1/chat/completions"


@pytest.fixture(params=["desktop", "pixel7"])
def device_page(request: pytest.FixtureRequest, browser: Browser, console: Console) -> Iterator[Page]:
    yield from watched_page(browser, console, **(PIXEL_7 if request.param == "pixel7" else DESKTOP))


def button(scope: Any, name: str):
    return scope.get_by_role("button", name=name, exact=True)


def answer(page: Page, n: int):
    """The n-th answer (1-based) in the list."""
    return page.locator(ANSWER).nth(n - 1)


def settled(page: Page, n: int, state: str = "done") -> None:
    """Answer n has ended in `state`, and its latency is measured (once its last paint
    is in): nothing under it changes after that. (A Details toggle of its own used to
    come then and add a line, and a view that follows the end moved everything above
    up by it: clicks on Edit and Retry aimed before then landed a line off in full
    runs. test_shell checks that the answer's height no longer changes.)"""
    expect(answer(page, n)).to_have_attribute("data-state", state, timeout=60_000)
    expect(answer(page, n)).to_have_attribute("data-metrics", re.compile("."), timeout=60_000)


def two_turns(page: Page, gateway_url: str, first: str, second: str) -> list[dict]:
    """Boot the page, ask `first` and then `second`, each answered; the chat bodies the
    page sends, from the first (a list that grows as it sends more)."""
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, first)
    expect(answer(page, 1)).to_have_attribute("data-state", "done", timeout=60_000)
    send(page, second)
    settled(page, 2)
    return bodies


def roles(body: dict) -> list[str]:
    return [m["role"] for m in body["messages"]]


def no_two_user_turns(body: dict) -> bool:
    r = [x for x in roles(body) if x != "system"]
    return all(not (a == b == "user") for a, b in zip(r, r[1:]))


def stored(page: Page) -> list[dict]:
    """The open conversation as kept (IndexedDB, js/page/conversation-store.js)."""
    return stored_messages(page)


# ---- Copy, Edit, Regenerate -----------------------------------------------------------


# Records, in `window.__said`, the copy button's label and the status line the moment
# the message is marked copied (js/page/messages.js `copied` sets all three at once).
SAID_ON_COPY = """(li) => {
  window.__said = null;
  const seen = new MutationObserver(() => {
    if (!li.dataset.copied) return;
    seen.disconnect();
    window.__said = { button: li.querySelector('.msg-actions button.copy').textContent,
                      status: li.querySelector('.copied[role=status]')?.textContent ?? null };
  });
  seen.observe(li, { attributes: true, attributeFilter: ['data-copied'] });
}"""


def test_copy_puts_each_message_text_on_the_clipboard_even_without_the_clipboard_api(
    device_page: Page, gateway_url: str
) -> None:
    page = device_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "copy me")
    settled(page, 1)
    full = expected_answer(gateway_url, [{"role": "user", "content": "copy me"}])

    # Where the answer sits in the conversation (not on screen: tapping Copy on the
    # message above may scroll it into view, and the view then stays there).
    top = answer(page, 1).evaluate("(el) => el.offsetTop")
    # What the message says as the copy lands, kept then: it says it for 2 s, which a
    # loaded machine can spend before a later check looks.
    page.locator(USER).evaluate(SAID_ON_COPY)
    button(page.locator(USER), "Copy").click()
    expect(page.locator(USER)).to_have_attribute("data-copied", "true")
    assert page.evaluate("navigator.clipboard.readText()") == "copy me"
    # Said by the button itself (and to screen readers by a status line), so nothing
    # under it moves.
    assert page.evaluate("window.__said") == {"button": "Copied", "status": "Copied"}
    assert answer(page, 1).evaluate("(el) => el.offsetTop") == top
    # An answer copies as its markdown source, not as the rendering.
    button(answer(page, 1), "Copy").click()
    expect(answer(page, 1)).to_have_attribute("data-copied", "true")
    assert page.evaluate("navigator.clipboard.readText()") == full

    # Where the Clipboard API refuses (a WebView, an insecure context), the old way.
    page.evaluate("""() => { navigator.clipboard.writeText = () => Promise.reject(new DOMException('no', 'NotAllowedError'));
                             document.querySelector('.msg[data-role="user"]').removeAttribute('data-copied'); }""")
    button(page.locator(USER), "Copy").click()
    expect(page.locator(USER)).to_have_attribute("data-copied", "true")
    assert page.evaluate("navigator.clipboard.readText()") == "copy me"


def test_edit_resends_the_prompt_and_replaces_everything_after_it(device_page: Page, gateway_url: str) -> None:
    page = device_page
    bodies = two_turns(page, gateway_url, "first question", "second question")

    first = page.locator(USER).first
    button(first, "Edit").click()
    editor = page.get_by_role("textbox", name="Edit message")
    expect(editor).to_have_value("first question")
    expect(editor).to_be_in_viewport()  # the view stays with the message being edited
    editor.fill("first question, edited")
    button(first, "Save").click()
    expect(page.locator(f'{ANSWER}[data-state="done"]')).to_have_count(1, timeout=60_000)
    expect(page.locator(USER)).to_have_count(1)
    expect(page.locator(f"{USER} .content")).to_have_text("first question, edited")
    assert len(bodies) == 3
    assert bodies[2]["messages"] == [{"role": "user", "content": "first question, edited"}]
    assert [m["content"] for m in stored(page)] == [
        "first question, edited", expected_answer(gateway_url, bodies[2]["messages"])]


def test_regenerate_replaces_that_answer_in_its_place(device_page: Page, gateway_url: str) -> None:
    page = device_page
    bodies = two_turns(page, gateway_url, "one", "two")

    # Wait for the effect of the click, the new request, before waiting for two done
    # answers: two are done already before the click takes effect.
    with page.expect_request(lambda r: r.url.endswith("/v1/chat/completions")):
        button(answer(page, 1), "Regenerate").click()
    expect(page.locator(f'{ANSWER}[data-state="done"]')).to_have_count(2, timeout=60_000)
    assert len(bodies) == 3 and bodies[2]["messages"] == bodies[0]["messages"]
    # The new answer took the old one's place; the turn after it stayed.
    assert [m["role"] for m in stored(page)] == ["user", "assistant", "user", "assistant"]
    assert [m["content"] for m in stored(page)][::2] == ["one", "two"]
    expect(page.locator(".msg .content").nth(2)).to_have_text("two")


# ---- failures, Retry, and a reload after them -------------------------------------------


def fail_with(kind: str):
    """A route handler that fails every chat request as `kind` while `state['fail']`."""
    state = {"fail": True}

    def handle(route: Route) -> None:
        if not state["fail"]:
            route.continue_()
        elif kind == "network":
            route.abort("connectionreset")
        else:
            status = int(kind)
            # `x-should-retry: false`: the governor gives up at once (its retries are
            # tested on their own), so the failure is the page's to show.
            route.fulfill(status=status, headers={"content-type": "application/json", "x-should-retry": "false"},
                          body=json.dumps({"error": {"message": f"injected {status}", "type": "server_error"}}))

    return state, handle


@pytest.mark.parametrize("kind", ["500", "429", "network"])
def test_a_failed_reply_keeps_its_error_and_retry_across_a_reload_and_no_prompt_is_orphaned(
    page: Page, gateway_url: str, kind: str
) -> None:
    bodies = chat_bodies(page)
    state, handle = fail_with(kind)
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "before")
    expect(answer(page, 1)).to_have_attribute("data-state", "done", timeout=60_000)
    page.context.route(CHAT, handle)
    send(page, "this one fails")
    expect(answer(page, 2)).to_have_attribute("data-state", "error", timeout=60_000)
    error = answer(page, 2).locator(".error")
    expect(error).to_contain_text("Could not reach" if kind == "network" else kind)

    page.reload()
    # Kept, as it was: the prompt, its failed answer with the error, and Retry.
    expect(page.locator(USER)).to_have_count(2)
    expect(answer(page, 2)).to_have_attribute("data-state", "error")
    expect(answer(page, 2).locator(".error")).to_contain_text("Could not reach" if kind == "network" else kind)
    expect(button(answer(page, 2), "Retry")).to_be_visible()
    wait_ready(page)

    # The next prompt goes without the failed turn: no two user turns in a row.
    state["fail"] = False
    sent_before = len(bodies)
    send(page, "after")
    settled(page, 3)
    after = bodies[sent_before]
    assert [m["content"] for m in after["messages"] if m["role"] == "user"] == ["before", "after"]
    assert no_two_user_turns(after)

    # Retry: the failed turn again, as it was asked (with what came before it only),
    # its answer in the failed one's place; the turn after it stays.
    button(answer(page, 2), "Retry").click()
    try:
        expect(page.locator(f'{ANSWER}[data-state="done"]')).to_have_count(3, timeout=60_000)
    except AssertionError:
        # (Say where each answer stood, should it fail again.)
        states = page.evaluate(f"() => [...document.querySelectorAll('{ANSWER}')].map((li) => [li.dataset.state, li.innerText.slice(0, 120)])")
        raise AssertionError(f"answers {states}; requests after the reload {len(bodies) - sent_before}") from None
    retried = bodies[sent_before + 1]
    assert roles(retried) == ["user", "assistant", "user"] and retried["messages"][2]["content"] == "this one fails"
    assert len(bodies) == sent_before + 2
    assert [m["content"] for m in stored(page) if m["role"] == "user"] == ["before", "this one fails", "after"]
    assert all(m.get("state") == "done" for m in stored(page) if m["role"] == "assistant")


def test_orphan_prompts_from_an_older_version_are_shown_with_retry_and_not_sent_together(
    page: Page, gateway_url: str
) -> None:
    old = [{"role": "user", "content": "lost one"}, {"role": "user", "content": "lost two"},
           {"role": "user", "content": "answered"}, {"role": "assistant", "content": "yes"}]
    page.add_init_script(
        f"if (!sessionStorage.seeded) {{ sessionStorage.seeded = 1; localStorage.setItem('firsttoken.history.v1', {json.dumps(json.dumps(old))}); }}")
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    expect(page.locator(f'{ANSWER}[data-state="interrupted"]')).to_have_count(2)
    expect(button(page, "Retry")).to_have_count(2)
    wait_ready(page)
    send(page, "next")
    expect(answer(page, 4)).to_have_attribute("data-state", "done", timeout=60_000)
    assert [m["content"] for m in bodies[0]["messages"]] == ["answered", "yes", "next"]


# ---- one answer at a time ------------------------------------------------------------


def test_send_becomes_stop_and_stop_stops_only_that_answer(device_page: Page, gateway_url: str) -> None:
    page = device_page
    steer(page, "ttft_ms=0,tps=30,tokens=2000")
    as_host(page)
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    # A host's own chat streams meanwhile (bridge/page/hosts.js): Stop is not for it. It is
    # held a few tokens in until Stop is done (`hold_at`), so that it is mid-answer as Stop
    # is pressed on any machine; 400 tokens at 20 a second did that by lasting 20 s.
    stall, key = hold_at(5)
    post(page, {"type": "chat.send", "id": "h1", "messages": [{"role": "user", "content": "host asks"}],
                "settings": {"headers": {"x-firsttoken-sim": f"ttft_ms=0,tps=20,tokens=40,{stall}"}}})
    send(page, "a long one")
    expect(answer(page, 1)).to_have_attribute("data-paints", re.compile(r"^([2-9]|\d\d+)$"), timeout=30_000)
    expect(button(page, "Send")).to_have_count(0)
    stop = button(page, "Stop")
    expect(stop).to_be_visible()
    # While it streams, a second prompt does not go (Enter included); the draft waits.
    page.fill("#prompt", "too soon")
    page.press("#prompt", "Enter")
    # (on a touch screen Enter is a new line anyway: js/page/composer.js)
    expect(page.locator("#prompt")).to_have_value(re.compile(r"^too soon\n?$"))
    expect(button(answer(page, 1), "Regenerate")).to_have_count(0)
    expect(button(page.locator(USER), "Edit")).to_be_disabled()

    host_done = "() => window.__toHost.some((t) => { const m = JSON.parse(t); return m.id === 'h1' && m.type === 'chat.done'; })"
    assert page.evaluate(host_done) is False  # still streaming as Stop is pressed
    stop.click()
    expect(answer(page, 1)).to_have_attribute("data-state", "stopped", timeout=30_000)
    expect(button(page, "Send")).to_be_visible()
    expect(button(page, "Stop")).to_have_count(0)
    expect(button(answer(page, 1), "Retry")).to_be_visible()
    # The host's chat was not stopped: let go, it ends with its whole answer.
    release(gateway_url, key)
    host_full = httpx.post(gateway_url + "/v1/chat/completions", headers={"x-firsttoken-sim": "ttft_ms=0,tokens=40"}, timeout=30,
                           json={"model": "firsttoken-sim", "messages": [{"role": "user", "content": "host asks"}]})
    assert host_answer(page, "h1") == host_full.json()["choices"][0]["message"]["content"]
    assert sum(1 for b in bodies if b["messages"][-1]["content"] == "too soon") == 0
    # The draft goes now, with the stopped answer's text as context (at full speed: a
    # host's settings apply to the page's requests too).
    post(page, {"type": "settings.set", "id": "s", "settings": {"headers": {"x-firsttoken-sim": "ttft_ms=0"}}})
    host_message(page, "settings.applied", "s")
    button(page, "Send").click()
    expect(answer(page, 2)).to_have_attribute("data-state", "done", timeout=90_000)
    last = bodies[-1]
    assert roles(last) == ["user", "assistant", "user"] and last["messages"][2]["content"] == "too soon"


# ---- offline and the outbox -------------------------------------------------------------


def test_offline_prompts_wait_in_the_outbox_across_a_reload_and_go_once_in_order_online(
    device_page: Page, gateway_url: str
) -> None:
    page = device_page
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.evaluate("() => navigator.serviceWorker.ready.then(() => true)")  # the page loads offline
    banner = page.get_by_role("status").filter(has_text="offline")
    expect(banner).to_have_count(0)

    page.context.set_offline(True)
    expect(banner).to_be_visible()
    send(page, "sent offline")
    send(page, "and another")
    waiting = page.locator(f'{ANSWER}[data-state="queued"]')
    expect(waiting).to_have_count(2)
    expect(waiting.first).to_contain_text("Waiting for a connection")
    expect(button(page, "Send")).to_be_visible()  # nothing streams: Send stays Send
    # Both are in the outbox before the reload (a reload before a put commits leaves that
    # answer interrupted, with Retry: the page's rule, js/page/outbox.js).
    assert page.evaluate(OUTBOX_HOLDS, 2) == 2

    page.reload()
    wait_ready(page)
    expect(banner).to_be_visible()
    expect(page.locator(f'{ANSWER}[data-state="queued"]')).to_have_count(2)
    assert bodies == []  # nothing tried while offline, not even a retry

    # `online` twice (a flaky radio): each prompt still goes once, in order.
    page.context.set_offline(False)
    page.evaluate("() => { dispatchEvent(new Event('online')); dispatchEvent(new Event('online')); }")
    expect(page.locator(f'{ANSWER}[data-state="done"]')).to_have_count(2, timeout=90_000)
    expect(banner).to_have_count(0)
    assert [b["messages"][-1]["content"] for b in bodies] == ["sent offline", "and another"]
    assert roles(bodies[1]) == ["user", "assistant", "user"]  # the first answer was its context
    # A reload now finds nothing left to send.
    page.reload()
    wait_ready(page)
    send(page, "marker")
    expect(answer(page, 3)).to_have_attribute("data-state", "done", timeout=60_000)
    assert [b["messages"][-1]["content"] for b in bodies] == ["sent offline", "and another", "marker"]


def test_a_queued_prompt_whose_flush_a_reload_cut_is_offered_retry_not_sent_again(page: Page, gateway_url: str) -> None:
    # As a reload between taking the item out of the outbox and sending it leaves it.
    cut = [{"role": "user", "content": "was it sent?", "id": "u1"},
           {"role": "assistant", "content": "", "state": "queued", "id": "a1"}]
    page.add_init_script(
        f"if (!sessionStorage.seeded) {{ sessionStorage.seeded = 1; localStorage.setItem('firsttoken.history.v1', {json.dumps(json.dumps(cut))}); }}")
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    expect(answer(page, 1)).to_have_attribute("data-state", "interrupted")
    wait_ready(page)
    button(answer(page, 1), "Retry").click()
    expect(answer(page, 1)).to_have_attribute("data-state", "done", timeout=60_000)
    assert len(bodies) == 1 and bodies[0]["messages"] == [{"role": "user", "content": "was it sent?"}]


@pytest.mark.parametrize(
    "field, value, said, route",
    [
        # The model changes (the user's Settings here; a host's settings.set alike).
        ("model", "another-model", ["Not sent: this prompt was written for firsttoken-sim"], "/v1/chat/completions"),
        # The same endpoint and model, spoken in another API: the queued prompt would go
        # out as another dialect's body, so the user is asked first, as for a model change.
        ("api", "responses", ["(Chat Completions)", "(Responses)"], "/v1/responses"),
    ],
    ids=["model", "api"],
)
def test_an_outbox_prompt_whose_model_or_api_changed_is_not_sent_without_asking(
    page: Page, gateway_url: str, field: str, value: str, said: list[str], route: str
) -> None:
    posts: list[Any] = []
    page.on("request", lambda r: posts.append(r) if r.method == "POST" and "/v1/" in r.url else None)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.context.set_offline(True)
    expect(page.locator("html")).to_have_attribute("data-online", "false")  # the page knows
    prompt = f"written before the {field} changed"
    send(page, prompt)
    expect(answer(page, 1)).to_have_attribute("data-state", "queued")
    page.evaluate("""([id, value]) => { const f = document.getElementById(id);
                                       f.value = value; f.dispatchEvent(new Event('change')); }""", [field, value])
    page.context.set_offline(False)
    page.evaluate("() => dispatchEvent(new Event('online'))")
    expect(answer(page, 1)).to_have_attribute("data-state", "error")
    for text in said:
        expect(answer(page, 1)).to_contain_text(text)
    assert posts == []
    # Asked, the user says yes: Retry sends it with the settings in force now.
    with page.expect_request(lambda r: r.url.endswith(route)):
        button(answer(page, 1), "Retry").click()
    expect(answer(page, 1)).to_have_attribute("data-state", "done", timeout=60_000)
    [sent] = posts
    body = request_json(sent)
    assert sent.url.endswith(route) and body["model"] == (value if field == "model" else "firsttoken-sim")
    assert json.dumps(body).count(prompt) == 1  # the prompt, once: no second user turn


# ---- a reply cut by the page going away ------------------------------------------------
# From a server that cannot resume its answers (any API but a firsttoken gateway's; here
# the gateway with `--no-resume`). Against one that can, the answer goes on instead:
# tests/e2e/test_resume.py.


@pytest.fixture(scope="module")
def plain_gateway() -> Iterator[str]:
    with gateway("--no-resume", "--ttft-ms", "50", "--tps", "200") as url:
        yield url


def test_a_reply_cut_by_a_reload_comes_back_interrupted_with_retry_and_is_not_sent_again(
    device_page: Page, plain_gateway: str
) -> None:
    page = device_page
    gateway_url = plain_gateway
    steer(page, "ttft_ms=0,tps=30,tokens=2000")
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "cut me off")
    expect(answer(page, 1)).to_have_attribute("data-paints", re.compile(r"^([3-9]|\d\d+)$"), timeout=30_000)
    page.reload()
    # Shown at once, from what was saved as the page went: its text so far, interrupted.
    expect(answer(page, 1)).to_have_attribute("data-state", "interrupted")
    expect(answer(page, 1).locator(".error")).to_have_text("This answer was interrupted.")
    kept = stored(page)[1]["content"]
    full = expected_answer(gateway_url, [{"role": "user", "content": "cut me off"}])
    assert kept and full.startswith(kept) and len(kept) < len(full)
    wait_ready(page)
    assert len(bodies) == 1
    # Retry, on a tap only: the next request is the Retry's, the same turn.
    button(answer(page, 1), "Retry").click()
    expect(answer(page, 1)).to_have_attribute("data-paints", re.compile(r"^\d+$"), timeout=30_000)
    assert len(bodies) == 2 and bodies[1]["messages"] == bodies[0]["messages"]


def test_a_page_suspended_mid_answer_comes_back_with_it_interrupted_and_nothing_sent_again(
    page: Page, plain_gateway: str
) -> None:
    gateway_url = plain_gateway
    steer(page, "ttft_ms=0,tps=30,tokens=2000")
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "suspend me")
    expect(answer(page, 1)).to_have_attribute("data-paints", re.compile(r"^([3-9]|\d\d+)$"), timeout=30_000)
    # As a phone does with a backgrounded WebView (Page Lifecycle: freeze, then resume).
    # The events are dispatched by the test: headless Chromium's
    # Page.setWebLifecycleState freezes the page without firing either (probed).
    page.evaluate("() => { document.dispatchEvent(new Event('freeze')); document.dispatchEvent(new Event('resume')); }")
    expect(answer(page, 1)).to_have_attribute("data-state", "interrupted", timeout=30_000)
    expect(answer(page, 1).locator(".error")).to_have_text("This answer was interrupted.")
    expect(button(answer(page, 1), "Retry")).to_be_visible()
    expect(button(page, "Send")).to_be_visible()
    kept = stored(page)[1]
    assert kept["state"] == "interrupted" and kept["content"]
    assert len(bodies) == 1


def test_a_request_cut_by_going_offline_spends_no_retries_and_waits_in_the_outbox(page: Page, gateway_url: str) -> None:
    bodies = chat_bodies(page)
    state = {"cut": True}

    def handle(route: Route) -> None:
        # The device loses its network as the request is on its way (Chromium's offline
        # emulation leaves requests already out alone, so the cut is ours).
        if state.pop("cut", False):
            page.context.set_offline(True)
            route.abort("internetdisconnected")
        else:
            route.continue_()

    page.goto(gateway_url + "/")
    wait_ready(page)
    page.context.route(CHAT, handle)
    send(page, "going under a bridge")
    # The worker's fetch failed while the device is offline: `offline`, not 4 attempts.
    expect(answer(page, 1)).to_have_attribute("data-state", "queued", timeout=30_000)
    expect(answer(page, 1)).to_contain_text("Waiting for a connection")
    expect(answer(page, 1).locator(".note")).to_have_count(0)  # no "retrying in" note
    assert len(bodies) == 1
    page.context.set_offline(False)
    expect(answer(page, 1)).to_have_attribute("data-state", "done", timeout=60_000)
    assert len(bodies) == 2 and bodies[1]["messages"] == bodies[0]["messages"]
