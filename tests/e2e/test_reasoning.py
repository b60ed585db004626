"""A reasoning model's reply, in real Chromium against the real gateway's thinking model
(`firsttoken-sim-think`, issue 48): the Thinking row at Send before any byte, reasoning
collapsed with a live preview and opened only by a tap, no layout shift (a
`layout-shift` PerformanceObserver), the reasoning kept (IndexedDB, a reload mid-way,
the export) and never sent back, the Thinking control, and an answer cut while
thinking offered "Continue with more room", which works in one request."""

from __future__ import annotations

import json
import re
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.chromium import ANSWER, WASM, Console, Held, ask, chat_bodies, request_json, send, steer, wait_ready, watched_page
from tests.e2e.test_shell import axe, open_page
from harness.stored import store, stored_messages

pytestmark = [pytest.mark.e2e]

THINK = "firsttoken-sim-think"
ROW = f"{ANSWER} .thinking"

# Every layout shift that no input explains (the Layout Instability API's own rule:
# `hadRecentInput` marks the 500 ms after a tap), with its time and what moved, into
# `window.__shifts` (and, to tell when a shift came, each phase, paint and end). What is
# measured is a reply's whole life from Send, its end and the frames after it included:
# the row, its phases, the answer taking its place, the streaming caret (made anew each
# paint: page.css) and the answer's ending (its actions; skipping turned on only once
# it is no longer the last message: page.css).
SHIFTS = """
window.__shifts = []; window.__ended = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (e.hadRecentInput) continue;
    window.__shifts.push({ t: e.startTime, value: e.value, sources: (e.sources || []).map((s) => [
      s.node?.className ?? s.node?.nodeName ?? '?', JSON.stringify(s.previousRect), JSON.stringify(s.currentRect)]) });
  }
}).observe({ type: 'layout-shift', buffered: true });
window.__phases = [];
new MutationObserver((records) => {
  for (const r of records) {
    if (r.type === 'childList') {
      for (const n of r.removedNodes) if (n.className === 'thinking') window.__phases.push(['removed', performance.now()]);
    } else if (r.attributeName === 'data-phase') window.__phases.push([r.target.dataset.phase, performance.now()]);
    else if (r.attributeName === 'data-paints') window.__phases.push(['paint', performance.now()]);
    else if (r.oldValue === 'streaming' && r.target.dataset.state !== 'streaming') window.__ended.push(performance.now());
  }
}).observe(document, { subtree: true, childList: true, attributeFilter: ['data-state', 'data-phase', 'data-paints'], attributeOldValue: true });
"""


def mark_send(page: Page) -> None:
    """From now on, a reply's shifts count (the page's boot, before, is not this issue's)."""
    page.evaluate("window.__sent = performance.now()")


def layout_shift(page: Page) -> tuple[float, list[dict]]:
    """The layout shift summed from Send to now (a few frames after the reply's end:
    its figures and actions are in), with what moved."""
    page.evaluate("""() => new Promise((ok) => {
      let n = 10; const step = () => (n-- <= 0 ? ok() : requestAnimationFrame(step)); step();
    })""")
    expect(page.locator(ANSWER).last).to_have_attribute("data-metrics", re.compile("."))
    shifts, sent = page.evaluate("[window.__shifts, window.__sent]")
    mine = [s for s in shifts if s["t"] >= sent]
    return sum(s["value"] for s in mine), mine


def answer(page: Page) -> Any:
    return page.locator(ANSWER).last


def reference(gateway_url: str, body: dict[str, Any], sim: str) -> dict[str, Any]:
    """The built-in model's whole message for the page's own request (it is
    deterministic): `content` and `reasoning_content`, what the page must have kept."""
    r = httpx.post(gateway_url + "/v1/chat/completions", headers={"x-firsttoken-sim": sim},
                   json={**{k: v for k, v in body.items() if k != "stream_options"}, "stream": False}, timeout=60)
    r.raise_for_status()
    return r.json()["choices"][0]["message"]


def test_the_thinking_row_shows_at_send_before_any_byte_and_gives_way_to_the_answer(page: Page, gateway_url: str) -> None:
    # A plain model, slow to its first byte: the row is there for any model.
    steer(page, "ttft_ms=2500,tokens=40")
    page.add_init_script(SHIFTS)
    page.goto(gateway_url + "/")
    wait_ready(page)
    mark_send(page)
    send(page, "anyone there?")
    row = page.locator(ROW)
    expect(row).to_have_attribute("data-phase", "waiting")
    expect(row.locator(".thinking-toggle")).to_contain_text("Thinking…")
    # Before any byte: nothing painted yet, and the seconds are not read out.
    assert answer(page).get_attribute("data-paints") is None
    assert row.locator(".thinking-time").get_attribute("aria-hidden") == "true"
    assert row.locator(".thinking-toggle").get_attribute("aria-disabled") == "true"
    expect(page.locator("#status")).to_contain_text("Thinking")
    expect(row.locator(".thinking-time")).to_have_text(re.compile(r"^[1-9]\d* s$"))  # it counts
    expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
    # No reasoning at all: the answer took the row's place.
    expect(page.locator(ROW)).to_have_count(0)
    assert answer(page).locator(".content").inner_text().strip()
    total, shifts = layout_shift(page)
    assert total == 0, shifts


def test_reasoning_streams_collapsed_opens_on_a_tap_and_is_kept_exported_and_never_sent_back(
        page: Page, gateway_url: str, tmp_path: Path) -> None:
    sim = "think_tokens=120,tps=40,tokens=40"
    steer(page, sim, model=THINK)
    page.add_init_script(SHIFTS)
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    mark_send(page)
    send(page, "think first")
    row = page.locator(ROW)
    toggle = row.locator(".thinking-toggle")
    expect(row).to_have_attribute("data-phase", "reasoning")
    # Collapsed, with a one-line live preview of the latest reasoning.
    expect(row.locator(".thinking-preview")).not_to_have_text("")
    expect(row.locator(".thinking-body")).to_be_hidden()
    assert toggle.get_attribute("aria-expanded") == "false"
    box = toggle.bounding_box()
    assert box and box["height"] <= 48  # one line
    expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
    # "Thought for N s", still collapsed (never opened, nor closed, by itself).
    expect(row).to_have_attribute("data-phase", "done")
    expect(toggle).to_have_text(re.compile(r"^Thought for \d+ s$"))
    expect(row.locator(".thinking-body")).to_be_hidden()
    # Nothing moved from Send to the end: the row appeared, filled, turned to "Thought
    # for", and the answer began under it.
    total, shifts = layout_shift(page)
    assert total == 0, shifts
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    body = row.locator(".thinking-body")
    expect(body).to_be_visible()
    expect(body).to_contain_text("Let me think about")
    # Bounded: its own scroll, never more than about 40% of the viewport.
    assert page.evaluate("(el) => el.getBoundingClientRect().height <= innerHeight * 0.41", body.element_handle())
    ref = reference(gateway_url, bodies[0], sim)
    kept = [m for m in stored_messages(page) if m["role"] == "assistant"][0]
    assert kept["reasoning"] == ref["reasoning_content"]
    assert kept["content"] == ref["content"] and ref["reasoning_content"] not in kept["content"]
    assert kept["reasoning_ms"] > 0
    # The Details line gives the first reasoning and the first answer apart.
    metrics = json.loads(answer(page).get_attribute("data-metrics") or "{}")
    assert 0 < metrics["send_to_first_reasoning_paint_ms"] < metrics["send_to_first_answer_paint_ms"]
    expect(answer(page).locator(".reply-metrics")).to_contain_text("reasoning")

    # The export holds it: JSON as kept, Markdown quoted before the answer.
    page.get_by_role("button", name="Actions for think first").click()
    with page.expect_download() as got:
        page.get_by_role("button", name="Export as JSON").click()
    exported_path = Path(got.value.path())
    exported = json.loads(exported_path.read_text(encoding="utf-8"))
    assert exported["messages"][1]["reasoning"] == ref["reasoning_content"]
    page.get_by_role("button", name="Actions for think first").click()
    page.get_by_role("button", name="Actions for think first").click()
    with page.expect_download() as got:
        page.get_by_role("button", name="Export as Markdown").click()
    md = Path(got.value.path()).read_text(encoding="utf-8")
    assert "> *Thought for" in md and ref["reasoning_content"][:60] in md

    # Imported back, it comes back whole: a new conversation, its thinking row and all.
    page.locator(".conv-import-file").set_input_files(str(exported_path))
    expect(page.locator(".conv-import-note")).to_contain_text("Imported")
    expect(page.locator(ANSWER).first.locator(".thinking")).to_have_attribute("data-phase", "done")
    kept_store = store(page)
    assert len(kept_store["metas"]) == 2
    imported = next(r for r in kept_store["messages"] if r["id"] == kept_store["open"])["messages"]
    assert imported[1]["reasoning"] == ref["reasoning_content"] and imported[1]["content"] == ref["content"]

    # The next turn (in the imported conversation) holds no reasoning text.
    ask(page, "and now?")
    assert len(bodies) == 2
    sent = json.dumps(bodies[1])
    assert ref["reasoning_content"][:40] not in sent
    assert [m["content"] for m in bodies[1]["messages"] if m["role"] == "assistant"] == [ref["content"]]

    # After a reload: "Thought for N s", collapsed, and it opens on a tap.
    page.reload()
    wait_ready(page)
    first = page.locator(ANSWER).first.locator(".thinking")
    expect(first).to_have_attribute("data-phase", "done")
    expect(first.locator(".thinking-body")).to_be_hidden()
    first.locator(".thinking-toggle").click()
    expect(first.locator(".thinking-body")).to_contain_text("Let me think about")


CHATS = re.compile(r"/v1/(chat/completions|responses|messages)$")


@pytest.mark.parametrize("api", ["chat_completions", "inline_think_tags", "responses", "anthropic_messages"])
def test_a_reload_mid_reasoning_resumes_with_the_reasoning_intact(page: Page, gateway_url: str, api: str) -> None:
    # `inline_think_tags`: Chat Completions from a server without a reasoning parser, the
    # thinking inside `<think>…</think>` in `content`: the resumed core must go on inside it.
    inline = api == "inline_think_tags"
    sim = "think_tokens=400,tps=40,tokens=20" + (",think_tags=1" if inline else "")
    api = "chat_completions" if inline else api
    steer(page, sim, model=THINK, api=api)
    bodies: list[dict] = []
    page.on("request", lambda r: bodies.append(request_json(r)) if r.method == "POST" and CHATS.search(r.url) else None)
    resumed: list[str] = []
    page.on("request", lambda r: resumed.append(r.url) if "/v1/streams/" in r.url and "/events" in r.url else None)
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "a long thought")
    expect(page.locator(ROW)).to_have_attribute("data-phase", "reasoning")
    expect(page.locator(ROW).locator(".thinking-body")).to_be_hidden()
    # A tap opens it while it streams: what came so far, then what comes.
    page.locator(ROW).locator(".thinking-toggle").click()
    body = page.locator(ROW).locator(".thinking-body")
    expect(body).to_contain_text("Let me think about")
    expect(answer(page)).to_have_attribute("data-paints", re.compile(r"^([3-9]|\d\d+)$"), timeout=30_000)
    assert answer(page).get_attribute("data-state") == "streaming"
    page.reload()
    # The reasoning so far is there at once, and the rest continues it.
    expect(answer(page)).to_have_attribute("data-resumed", "true")
    row = page.locator(ROW)
    expect(row).to_have_attribute("data-phase", "reasoning")
    # Opened while it thinks, it stays open once the answer begins: only a tap closes it.
    row.locator(".thinking-toggle").click()
    expect(row.locator(".thinking-body")).to_contain_text("Let me think about")
    expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
    expect(row).to_have_attribute("data-phase", "done")
    expect(row.locator(".thinking-body")).to_be_visible()
    assert len(bodies) == 1 and len(resumed) == 1, "resumed, not sent again"
    kept = [m for m in stored_messages(page) if m["role"] == "assistant"]
    assert len(kept) == 1 and kept[0]["content"]
    reasoning = kept[0]["reasoning"]
    assert reasoning.startswith("Let me think about") and reasoning.count("Let me think about") == 1
    if api == "chat_completions":
        # The built-in model is deterministic: exactly its uninterrupted reasoning.
        ref = reference(gateway_url, bodies[0], sim)
        if inline:
            inside, _, after = ref["content"].removeprefix("<think>").partition("</think>")
            ref = {"reasoning_content": inside, "content": after.lstrip()}
            assert "<think>" not in kept[0]["content"] and "</think>" not in reasoning
        assert reasoning == ref["reasoning_content"], "nothing lost or doubled"
        assert kept[0]["content"] == ref["content"]


def test_an_answer_cut_while_thinking_offers_continue_with_more_room_which_works_in_one_request(
        page: Page, gateway_url: str) -> None:
    # An output limit of 50 tokens for 80 of thinking: cut before any answer.
    steer(page, "think_tokens=80,tps=400,tokens=12", model=THINK, max_tokens=50)
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "too little room")
    expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
    # Never an empty bubble: what it thought, why there is no answer, and the way on.
    expect(page.locator(ROW)).to_have_attribute("data-phase", "done")
    expect(answer(page).locator(".error")).to_contain_text("spent its whole budget thinking")
    more = answer(page).get_by_role("button", name="Continue with more room")
    expect(answer(page).get_by_role("button", name="Regenerate")).to_have_count(0)
    assert bodies[0]["max_completion_tokens"] == 50
    more.click()
    expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
    expect(answer(page).locator(".content")).not_to_have_text("")
    expect(page.locator(ANSWER)).to_have_count(1)  # the same turn, in place
    assert len(bodies) == 2, "one tap, one request"
    assert bodies[1]["max_completion_tokens"] == 100  # twice what the cut answer spent
    kept = [m for m in stored_messages(page) if m["role"] == "assistant"]
    assert kept[0]["content"] and kept[0]["reasoning"] and "cut" not in kept[0]


def test_the_thinking_control_is_one_tap_to_open_one_to_choose_and_kept_per_conversation(
        page: Page, gateway_url: str) -> None:
    steer(page, "think_tokens=5,tokens=5", model=THINK)
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    control = page.get_by_role("button", name="Thinking: Auto")
    control.click()
    expect(control).to_have_attribute("aria-expanded", "true")
    page.get_by_role("menuitemradio", name=re.compile("^High")).click()
    expect(page.locator("#thinking-menu")).to_be_hidden()
    expect(page.locator("#thinking")).to_have_attribute("aria-label", "Thinking: High")
    ask(page, "think hard")
    assert bodies[0]["reasoning_effort"] == "high"
    meta = store(page)["metas"][0]
    assert meta["reasoning"] == "high"
    # A new chat starts at Auto, and sends no effort.
    page.get_by_role("button", name="New chat").click()
    expect(page.locator("#thinking")).to_have_attribute("aria-label", "Thinking: Auto")
    ask(page, "just answer")
    assert "reasoning_effort" not in bodies[1]
    # The first conversation keeps its own, across a reload.
    page.reload()
    wait_ready(page)
    page.get_by_role("button", name=re.compile("^think hard")).first.click()
    expect(page.locator("#thinking")).to_have_attribute("aria-label", "Thinking: High")


@pytest.fixture
def first_visit(browser: Browser, console: Console) -> Iterator[Page]:
    # A first visit: no service worker, which would answer the runtime past the route.
    yield from watched_page(browser, console, fresh=True)


@pytest.mark.parametrize("sim", ["think_tokens=60,tps=60,tokens=8", "think_tokens=60,tps=60,tokens=8,think_tags=1"])
def test_a_prompt_sent_before_python_is_ready_shows_its_reasoning_too(first_visit: Page, gateway_url: str, sim: str) -> None:
    page = first_visit
    steer(page, sim, model=THINK)
    runtime = Held(page, WASM)
    page.goto(gateway_url + "/")
    send(page, "think early")
    expect(page.locator(ROW)).to_have_attribute("data-phase", "reasoning", timeout=30_000)
    expect(answer(page)).to_have_attribute("data-state", "done", timeout=30_000)
    assert page.get_attribute("html", "data-python") == "loading" and runtime.held  # the gateway's path
    expect(page.locator(ROW)).to_have_attribute("data-phase", "done")
    [kept] = [m for m in stored_messages(page) if m["role"] == "assistant"]
    # `<think>` tags (think_tags=1) never leak into the answer: split as the core does.
    assert kept["reasoning"].startswith("Let me think about") and "<think>" not in kept["content"]
    assert "</think>" not in kept["content"] and kept["content"].startswith("You said:")


def test_what_anthropic_demands_back_goes_back_from_the_stored_replay_and_nothing_else(page: Page, gateway_url: str) -> None:
    # Messages: the signed thinking block is the answer's `replay` (chat.done.replay),
    # kept in IndexedDB; the next turn carries it where Anthropic wants it (the built-in
    # model answers 400 to a turn without its signature, as Anthropic does).
    steer(page, "think_tokens=20,tokens=6", model=THINK, api="anthropic_messages")
    bodies: list[dict] = []
    page.on("request", lambda r: bodies.append(request_json(r)) if r.method == "POST" and r.url.endswith("/v1/messages") else None)
    page.goto(gateway_url + "/")
    wait_ready(page)
    ask(page, "first turn")
    [kept] = [m for m in stored_messages(page) if m["role"] == "assistant"]
    assert kept["replay"]["api"] == "anthropic_messages" and kept["replay"]["model"] == THINK
    assert [i["type"] for i in kept["replay"]["items"]] == ["thinking"] and kept["replay"]["items"][0]["signature"]
    ask(page, "second turn")
    assert len(bodies) == 2
    [assistant] = [m for m in bodies[1]["messages"] if m["role"] == "assistant"]
    blocks = assistant["content"] if isinstance(assistant["content"], list) else []
    assert blocks and blocks[0] == kept["replay"]["items"][0], assistant
    # The reasoning text goes back only inside the signed block the API demands.
    assert json.dumps(bodies[1]).count(kept["reasoning"][:40]) <= 1
    assert page.locator(ANSWER).last.get_attribute("data-state") == "done"


def test_the_early_paths_think_tag_split_is_the_same_wherever_the_stream_is_cut(page: Page, gateway_url: str) -> None:
    # js/page/early-send.js ThinkTags, in the page's own engine: every cut into three
    # pieces gives what the whole gives, and an unclosed tag never loses the answer.
    page.goto(gateway_url + "/")
    out = page.evaluate("""async () => {
      const { ThinkTags } = await import('/js/page/early-send.js');
      const run = (pieces, cut = false) => {
        const t = new ThinkTags(); let r = '', a = '';
        for (const p of pieces) { const o = t.feed(p); r += o.reasoning; a += o.text; }
        const f = t.finish(cut);
        return [r + f.reasoning, a + f.text];
      };
      const whole = '  <think>I ponder </thi and </think think.</think>\\n\\nThe answer <think> stays.';
      const ref = run([whole]);
      for (let i = 0; i <= whole.length; i++) for (let j = i; j <= whole.length; j++) {
        const got = run([whole.slice(0, i), whole.slice(i, j), whole.slice(j)]);
        if (JSON.stringify(got) !== JSON.stringify(ref)) return { cut: [i, j], got, ref };
      }
      return { ref, plain: run(['a plain answer']), stop: run(['<think>unclosed']), cut: run(['<think>unclosed'], true),
               late: run(['Hi <think>x</think>']), near: run(['<thin', 'g>x']) };
    }""")
    assert out["ref"] == ["I ponder </thi and </think think.", "The answer <think> stays."], out
    assert out["plain"] == ["", "a plain answer"]
    assert out["stop"] == ["unclosed", "unclosed"]  # a stop: the reasoning was the answer too
    assert out["cut"] == ["unclosed", ""]  # cut at its limit: it stays reasoning
    assert out["late"] == ["", "Hi <think>x</think>"]  # only at the start
    assert out["near"] == ["", "<thing>x"]


def test_the_summary_switch_in_settings_asks_for_reasoning_summaries_or_none(page: Page, gateway_url: str) -> None:
    steer(page, "think_tokens=10,tokens=5", model=THINK, api="responses")
    bodies: list[dict] = []
    page.on("request", lambda r: bodies.append(request_json(r)) if r.method == "POST" and r.url.endswith("/v1/responses") else None)
    page.goto(gateway_url + "/")
    wait_ready(page)
    ask(page, "summarize your thinking")
    assert bodies[0]["reasoning"]["summary"] == "auto"  # on by default
    expect(page.locator(ANSWER).first.locator(".thinking")).to_have_attribute("data-phase", "done")
    page.get_by_role("button", name="Settings").click()
    switch = page.get_by_role("checkbox", name="Summaries of the model's thinking")
    expect(switch).to_be_checked()
    switch.uncheck()
    page.keyboard.press("Escape")
    ask(page, "now without")
    assert "summary" not in bodies[1].get("reasoning", {}), bodies[1].get("reasoning")
    assert json.loads(page.evaluate("localStorage.getItem('firsttoken.settings.v1')"))["reasoning_summary"] is False


@pytest.mark.parametrize(("device", "theme"), [("phone", "light"), ("desktop", "dark")])
def test_the_thinking_row_panel_and_control_pass_axe(browser: Browser, console: Console, gateway_url: str,
                                                       device: str, theme: str) -> None:
    # The tests' own script goes in (axe-core): the page's CSP would refuse it, rightly.
    for page in open_page(browser, console, device, theme, bypass_csp=True):
        steer(page, "think_tokens=200,tps=40,tokens=20", model=THINK, keep_changes=True)
        page.goto(gateway_url + "/")
        wait_ready(page)
        send(page, "think, then answer")
        row = page.locator(ROW)
        expect(row).to_have_attribute("data-phase", "reasoning")
        found = {"reasoning": axe(page)}
        expect(answer(page)).to_have_attribute("data-state", "done", timeout=60_000)
        row.locator(".thinking-toggle").click()
        expect(row.locator(".thinking-body")).to_be_visible()
        found["open"] = axe(page)
        page.locator("#thinking").click()
        expect(page.get_by_role("menu", name="Thinking")).to_be_visible()
        found["menu"] = axe(page)
        assert all(not v for v in found.values()), json.dumps(found, indent=1)
