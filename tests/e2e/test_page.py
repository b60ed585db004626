"""The page in real Chromium against a real gateway: boot, stream, stop, errors."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlparse

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.chromium import (ANSWER, DESKTOP, WASM, Console, Held, chat_bodies, expected_answer, steer, stored_answers,
                              wait_ready, watched_page)
from harness.servers import hold_at
from harness.stored import stored_messages

pytestmark = pytest.mark.e2e


@pytest.fixture
def first_visit(browser: Browser, console: Console) -> Iterator[Page]:
    """A first visit (no service worker yet): a route can hold Python's runtime."""
    yield from watched_page(browser, console, fresh=True, **DESKTOP)


def test_usable_before_python_then_streams_the_reply_in_steps(first_visit: Page, gateway_url: str) -> None:
    page = first_visit
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    prepared: list[bool] = []
    page.on("request", lambda r: prepared.append("x-firsttoken-prepare" in r.headers)
            if r.url.endswith("/v1/chat/completions") else None)
    # Python's runtime held until the input has been tried: on a warm page Python can be
    # up before the test asks (CI saw it on a loaded machine), and "before" went untested.
    runtime = Held(page, WASM)
    page.goto(gateway_url + "/", wait_until="domcontentloaded")
    # Input works at once, before Python is ready: focused, typing lands (a Send now
    # goes through the gateway: tests/e2e/test_early_send.py).
    assert page.evaluate("document.documentElement.dataset.python") == "loading"
    assert page.evaluate("document.activeElement.id") == "prompt"
    page.keyboard.type("hello page")
    assert page.input_value("#prompt") == "hello page"
    assert page.evaluate("document.documentElement.dataset.python") == "loading"
    runtime.release()
    wait_ready(page)
    assert page.input_value("#prompt") == "hello page"  # Python's start kept the draft
    page.keyboard.press("Enter")
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    assert "Waiting for Python" not in page.inner_text(ANSWER)
    assert prepared == [False]  # Python's own request: prepared on the device

    assert stored_answers(page) == [expected_answer(gateway_url, [{"role": "user", "content": "hello page"}])]
    assert page.inner_text(f"{ANSWER} .content").startswith("You said: hello page")
    assert int(page.get_attribute(ANSWER, "data-paints")) > 1  # painted in several steps
    # The reply's metrics line, in the header too, once its last paint is in.
    expect(page.locator("#metrics")).to_contain_text("first byte")
    # Offline by construction: nothing but this origin was asked for anything.
    # (blob: and data: URLs are made inside the page: PyScript starts its worker from one.)
    parsed = [urlparse(u) for u in requests]
    assert {p.scheme for p in parsed} <= {"http", "blob", "data"}
    assert {p.netloc for p in parsed if p.scheme == "http"} == {urlparse(gateway_url).netloc}


def test_stop_halts_a_reply_midway_and_keeps_what_arrived(page: Page, gateway_url: str) -> None:
    # Held after 12 of its 2,000 tokens until Stop ends it (never released): mid-way on
    # any machine, where 80 s of answer once had to outlast a loaded run.
    stall, _ = hold_at(12)
    steer(page, f"ttft_ms=0,tps=25,tokens=2000,{stall}")
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", "a long one please")
    page.click("#send")
    # (Auto-waiting assertion: the page's CSP forbids the eval that wait_for_function needs.)
    expect(page.locator(ANSWER)).to_have_attribute("data-paints", re.compile(r"^[1-9]\d*$"), timeout=30_000)
    page.click("#stop")
    page.wait_for_selector(f'{ANSWER}[data-state="stopped"]', timeout=30_000)
    [partial] = stored_answers(page)
    # The whole answer as steered: what arrived is its start, well short of it.
    body = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "a long one please"}]}
    full = httpx.post(gateway_url + "/v1/chat/completions", headers={"x-firsttoken-sim": "ttft_ms=0,tokens=2000"},
                      json=body, timeout=60).json()["choices"][0]["message"]["content"]
    assert partial and full.startswith(partial) and len(partial) < len(full) // 5
    assert page.inner_text(f"{ANSWER} .error") == "Stopped."
    assert page.is_disabled("#stop")


@pytest.mark.parametrize(
    "sim, prompt, said, partial",
    [("ttft_ms=0,tps=500,error_after=6", "break please", "model reported an error", True),
     ("status=429", "too many", "429", False)],
    ids=["mid-stream", "http-status"],
)
def test_an_error_is_shown_clearly_and_what_arrived_is_kept(
    page: Page, gateway_url: str, sim: str, prompt: str, said: str, partial: bool
) -> None:
    steer(page, sim)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", prompt)
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}[data-state="error"]', timeout=30_000)
    assert said in page.inner_text(f"{ANSWER} .error")
    # What arrived before the error, and only that: the start of the whole answer (an
    # error before any text keeps an empty answer, with its error and Retry).
    [kept] = stored_answers(page)
    full = expected_answer(gateway_url, [{"role": "user", "content": prompt}])
    assert full.startswith(kept) and bool(kept) == partial


def test_conversation_survives_a_reload_before_python_is_ready(page: Page, gateway_url: str) -> None:
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", "remember me")
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    [answer] = stored_answers(page)
    shown = page.inner_text(f"{ANSWER} .content")
    page.reload(wait_until="domcontentloaded")
    # Shown straight from storage, whatever Python is doing. Read as rendered text once
    # the first frame has laid the messages out: a settled message has
    # `content-visibility: auto` (page.css), and until that frame decides it is on
    # screen Chromium's innerText of it is "" (seen once in a full run).
    expect(page.locator('.msg[data-role="user"] .content')).to_have_text("remember me", use_inner_text=True)
    expect(page.locator(f"{ANSWER} .content")).to_have_text(shown, use_inner_text=True)
    wait_ready(page)
    page.fill("#prompt", "and now?")
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}:nth-of-type(4)[data-state="done"]', timeout=60_000)
    second = stored_answers(page)[1]
    # The whole conversation went out again (compressed: the stored answer has table
    # padding and blank lines that compression removes).
    sent = bodies[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[0]["content"] == "remember me" and sent[2]["content"] == "and now?"
    assert sent[1]["content"].split() == answer.split() or len(sent[1]["content"]) < len(answer)
    assert second == expected_answer(gateway_url, sent)


def test_quota_is_shown_and_a_hidden_then_shown_page_sends_nothing_again(page: Page, gateway_url: str) -> None:
    chats: list[str] = []
    page.on("request", lambda r: chats.append(r.method) if r.url.endswith("/v1/chat/completions") else None)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", "quota?")
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    expect(page.locator("#quota")).to_contain_text(re.compile(r"requests \d+/5000 · tokens \d+/2000000"))
    # Backgrounded and brought back, as a phone does with a WebView: nothing is re-sent.
    cdp = page.context.new_cdp_session(page)
    cdp.send("Page.setWebLifecycleState", {"state": "frozen"})
    cdp.send("Page.setWebLifecycleState", {"state": "active"})
    page.fill("#prompt", "after resume")
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}:nth-of-type(4)[data-state="done"]', timeout=60_000)
    assert chats == ["POST", "POST"]


def test_rate_limited_request_is_retried_visibly_then_reported(page: Page, gateway_url: str) -> None:
    chats: list[str] = []
    page.on("request", lambda r: chats.append(r.url) if r.url.endswith("/v1/chat/completions") else None)
    steer(page, "status=429,retry_after=0.4")
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", "rate me")
    page.press("#prompt", "Enter")
    expect(page.locator(f"{ANSWER} .note")).to_contain_text("retrying in", timeout=30_000)
    page.wait_for_selector(f'{ANSWER}[data-state="error"]', timeout=30_000)
    assert "429" in page.inner_text(f"{ANSWER} .error")
    assert len(chats) == 4  # the governor's max_attempts
    expect(page.locator("#quota")).to_contain_text("requests 0/5000")


def test_prompt_is_counted_live_and_compressed_before_sending(page: Page, gateway_url: str) -> None:
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    pretty = 'Fix this:\n\n```json\n{\n    "name": "frame",\n    "sizes": [\n        16,\n        33\n    ]\n}\n```'
    page.fill("#prompt", pretty)
    expect(page.locator("#count")).to_contain_text(re.compile(r"^~?\d+ / 123,904 tokens$"))
    shown = int(page.get_attribute("#count", "data-tokens"))
    assert shown > 10
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    user = page.locator('.msg[data-role="user"]')
    expect(user.locator("details.saved summary")).to_contain_text(re.compile(r"^sent [\d,]+ tokens instead of"))
    assert int(user.get_attribute("data-saved")) > 0
    sent = bodies[0]["messages"][0]["content"]
    assert '{"name":"frame","sizes":[16,33]}' in sent
    # The conversation as shown (markdown) and stored keeps what the user typed.
    assert page.inner_text('.msg[data-role="user"] .content pre code').rstrip("\n") == pretty.split("```json\n")[1].rstrip("`").rstrip("\n")
    assert stored_messages(page)[0]["content"] == pretty


def test_compression_switched_off_sends_the_text_as_typed(page: Page, gateway_url: str) -> None:
    bodies = chat_bodies(page)
    page.add_init_script("localStorage.setItem('firsttoken.settings.v1', JSON.stringify({compress: 'off'}))")
    page.goto(gateway_url + "/")
    wait_ready(page)
    assert page.input_value("#compress") == "off"
    text = "spaced    out\n\n\n\ntext"
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    assert bodies[0]["messages"][0]["content"] == text


def test_the_system_prompt_setting_goes_first_is_counted_and_kept(page: Page, gateway_url: str) -> None:
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", "hello there")
    expect(page.locator("#count")).to_contain_text("tokens")
    without = int(page.get_attribute("#count", "data-tokens"))
    # Long enough (over 256 characters) to be worth a reference to the gateway's copy.
    system = ("You are terse. Answer in one sentence, and name the file you would change. "
              "Prefer the standard library. Never invent an API: say when you are not sure. "
              "Quote error messages exactly. When a test fails, say which assertion and why. "
              "Keep code in fenced blocks with a language, and keep lines under 100 characters.")
    page.get_by_role("button", name="Settings").click()
    page.fill("#system", system)
    page.dispatch_event("#system", "change")
    page.keyboard.press("Escape")
    # The live count now includes the system message.
    expect(page.locator("#count")).not_to_have_attribute("data-tokens", str(without))
    assert int(page.get_attribute("#count", "data-tokens")) > without + 10
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    assert bodies[0]["messages"][0] == {"role": "system", "content": system}
    assert bodies[0]["messages"][1] == {"role": "user", "content": "hello there"}
    # Prepared once and kept by hash: the next time it goes to this gateway as a reference.
    page.fill("#prompt", "and again")
    page.press("#prompt", "Enter")
    expect(page.locator(ANSWER).last).to_have_attribute("data-state", "done", timeout=60_000)
    assert set(bodies[1]["messages"][0]) == {"role", "x_firsttoken_ref"}
    # A setting, not a message: not shown in the conversation, and kept across a reload.
    assert page.locator('.msg[data-role="system"]').count() == 0
    page.reload()
    wait_ready(page)
    expect(page.locator("#system")).to_have_value(system)
    page.fill("#prompt", "after a reload")
    page.press("#prompt", "Enter")
    expect(page.locator(ANSWER).last).to_have_attribute("data-state", "done", timeout=60_000)
    assert bodies[2]["messages"][0]["role"] == "system"
    assert bodies[2]["messages"][-1] == {"role": "user", "content": "after a reload"}


# Installed before the page's scripts: every `chat.done` the page's protocol channel
# delivers carries a wrong `content`. The page must not care: the answer is what the
# deltas assembled (issue 17, item 4).
WRONG_DONE_CONTENT = """
(() => {
  const Native = window.MessageChannel;
  const onmessage = Object.getOwnPropertyDescriptor(MessagePort.prototype, 'onmessage');
  window.MessageChannel = class extends Native {
    constructor() {
      super();
      const port = this.port1;
      Object.defineProperty(port, 'onmessage', {
        get: () => onmessage.get.call(port),
        set: (handler) => onmessage.set.call(port, (event) => {
          let data = event.data;
          if (typeof data === 'string' && data.includes('"chat.done"')) {
            const msg = JSON.parse(data);
            if (msg.type === 'chat.done') {
              msg.content = 'NOT THE ANSWER';
              data = JSON.stringify(msg);
            }
          }
          handler({ data });
        }),
      });
    }
  };
})();
"""


def test_the_answer_is_what_the_deltas_assembled_not_chat_done_content(page: Page, gateway_url: str) -> None:
    page.add_init_script(WRONG_DONE_CONTENT)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", "assemble me")
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    expected = expected_answer(gateway_url, [{"role": "user", "content": "assemble me"}])
    assert stored_answers(page) == [expected]
    assert "NOT THE ANSWER" not in page.inner_text(f"{ANSWER} .content")


def test_the_link_drops_what_is_not_a_protocol_event_and_never_throws(page: Page, gateway_url: str) -> None:
    """The envelope check at the page's end (issue 17, item 3), on a link of its own: Python
    speaks the page's protocol version (2), so a version-1 message from it is dropped too."""
    page.goto(gateway_url + "/", wait_until="domcontentloaded")
    result = page.evaluate(
        """async () => {
          const { PythonLink } = await import('/js/link/python-link.js');
          const link = new PythonLink();
          const seen = [];
          link.addEventListener('message', (e) => seen.push(e.detail));
          const bad = [42, null, undefined, {}, 'not json', '[1]', '"text"', '{"type":"pong"}',
            '{"v":1,"type":"pong"}', '{"v":"1","type":"pong"}', '{"v":2,"type":"eval"}', '{"v":2}',
            '{"v":2,"type":"__proto__"}', '{"v":2,"type":"chat.delta","id":7,"text":"x"}',
            '{"v":2,"type":"chat.done","id":null}'];
          for (const data of bad) link.receive(data);
          link.receive('{"v":2,"type":"pong","t":5}');
          link.receive('{"v":2,"type":"chat.delta","id":"r1","seq":1,"text":"hi"}');
          return { dropped: link.dropped, seen, ready: link.lastReady };
        }"""
    )
    assert result["dropped"] == 15
    assert result["seen"] == [{"v": 2, "type": "pong", "t": 5}, {"v": 2, "type": "chat.delta", "id": "r1", "seq": 1, "text": "hi"}]
    assert result["ready"] is None


def test_a_host_can_drive_the_page_through_its_link(page: Page, gateway_url: str) -> None:
    """The page's link is public (issue 12's host adapters use it): it replays `ready`,
    carries a request sent through it, and tells its events and the page's metrics."""
    page.goto(gateway_url + "/")
    wait_ready(page)
    result = page.evaluate(
        """async () => {
          const { link } = await import('/js/link/python-link.js');
          const events = [];
          const listen = (e) => events.push(e.detail.type);
          link.addEventListener('message', listen);
          const pong = new Promise((resolve) => link.addEventListener('message', (e) => {
            if (e.detail.type === 'pong' && e.detail.id === 'host-1') resolve(e.detail);
          }));
          link.send({ type: 'ping', id: 'host-1' });
          const answer = await pong;
          const metrics = new Promise((resolve) => link.addEventListener('metrics', (e) => resolve(e.detail), { once: true }));
          document.getElementById('prompt').value = 'hello host';
          document.getElementById('send').click();
          const summary = await metrics;
          link.removeEventListener('message', listen);
          return { ready: link.lastReady, pong: answer, events, summary };
        }"""
    )
    assert result["ready"]["type"] == "ready" and result["ready"]["boot"]["ready_ms"] > 0
    assert isinstance(result["pong"]["t"], (int, float))
    assert "chat.delta" in result["events"] and "chat.done" in result["events"]
    assert result["summary"]["chunks"] > 0
