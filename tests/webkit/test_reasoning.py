"""A reasoning model's reply in WebKitGTK (the engine of iOS's WKWebView), through the
real GTK host (issue 48): the host sets the Thinking level and receives reasoning on
its own chat; the page's own reply shows "Thinking… N s" before any byte, streams the
reasoning collapsed, opens it on a tap, keeps it open, and says "Thought for N s"; an
answer cut while thinking offers "Continue with more room", which works."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from harness.gtk import WebKitHost, Xvfb
from harness.servers import hold_at, release
from harness.webkit import READ, assert_clean_console, boot, of, reply, saved, wait

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(60)]

THINK = "firsttoken-sim-think"
ANSWER = "[...document.querySelectorAll('.msg[data-role=\"assistant\"]')].at(-1)"
ROW = f"{ANSWER}?.querySelector('.thinking')"


def set_settings(host: WebKitHost, request_id: str, **settings: object) -> dict:
    host.send({"type": "settings.set", "id": request_id, "settings": settings})
    return host.wait_for(of(host, request_id, "settings.applied"))


def send(host: WebKitHost, text: str) -> None:
    host.eval(f"(() => {{ const p = document.getElementById('prompt'); p.value = {json.dumps(text)};"
              " document.getElementById('send').click(); return true; })()")


def test_a_host_sets_the_thinking_level_and_receives_reasoning_on_its_chat(host: WebKitHost) -> None:
    applied = set_settings(host, "t1", model=THINK, reasoning="low", headers={"x-firsttoken-sim": "think_tokens=20,tokens=5"})
    assert applied["settings"]["reasoning"] == "low"
    # The composer's control shows the app's default where the conversation has none.
    assert wait(host, "document.getElementById('thinking').getAttribute('aria-label') === 'Thinking: Auto (Low)'")
    start = len(host.messages)
    host.send({"v": 1, "type": "chat.send", "id": "think1", "messages": [{"role": "user", "content": "think for me"}]})
    done = reply(host, "think1")
    assert done["type"] == "chat.done", done
    deltas = [m for m in host.messages[start:] if m.get("id") == "think1" and m.get("type") == "chat.delta"]
    reasoning = "".join(d.get("reasoning", "") for d in deltas)
    assert reasoning.startswith("Let me think about"), deltas[:3]
    assert "Let me think" not in "".join(d["text"] for d in deltas)  # answer text is answer only
    # A level the page does not know is refused, with its reason.
    host.send({"type": "settings.set", "id": "t2", "settings": {"reasoning": "max"}})
    error = host.wait_for(lambda m: m.get("id") == "t2" and m.get("type") == "error")
    assert "settings.reasoning" in error["error"]["message"]
    set_settings(host, "t3", model=None, reasoning=None, headers=None)
    assert wait(host, "document.getElementById('thinking').getAttribute('aria-label') === 'Thinking: Auto'")


def test_the_thinking_row_shows_before_any_byte_and_reasoning_opens_on_a_tap(host: WebKitHost) -> None:
    saved(host)
    # A plain model slow to its first byte: "Thinking… N s", then the answer in its place.
    set_settings(host, "w1", headers={"x-firsttoken-sim": "ttft_ms=2500,tokens=3"})
    send(host, "anyone there?")
    assert wait(host, f"{ROW}?.dataset.phase === 'waiting' && !{ANSWER}.dataset.paints")
    assert host.eval(f"{ROW}.querySelector('.thinking-time').getAttribute('aria-hidden')") == "true"
    assert wait(host, f"{ANSWER}.dataset.state === 'done'", ms=60_000)
    assert host.eval(f"{ROW} === null")

    # The thinking model: collapsed with a live preview, opened by a tap, kept open.
    set_settings(host, "w2", model=THINK, headers={"x-firsttoken-sim": "think_tokens=120,tps=40,tokens=3"})
    send(host, "think first")
    assert wait(host, f"{ROW}?.dataset.phase === 'reasoning' && {ROW}.querySelector('.thinking-preview').textContent.length > 0")
    assert host.eval(f"{ROW}.querySelector('.thinking-body').hidden") is True
    height = host.eval(f"{ROW}.querySelector('.thinking-toggle').getBoundingClientRect().height")
    assert 0 < height <= 48  # one line
    host.eval(f"{ROW}.querySelector('.thinking-toggle').click()")
    assert wait(host, f"{ROW}.querySelector('.thinking-body').textContent.includes('Let me think about')")
    assert host.eval(f"{ROW}.querySelector('.thinking-toggle').getAttribute('aria-expanded')") == "true"
    assert wait(host, f"{ANSWER}.dataset.state === 'done'", ms=60_000)
    assert host.eval(f"{ROW}.dataset.phase") == "done"
    assert host.eval(f"/^Thought for \\d+ s$/.test({ROW}.querySelector('.thinking-toggle').textContent)")
    assert host.eval(f"{ROW}.querySelector('.thinking-body').hidden") is False  # never closed by itself
    assert host.eval(f"{ROW}.querySelector('.thinking-body').getBoundingClientRect().height <= innerHeight * 0.41")
    assert saved(host)
    kept = host.eval(READ)
    answers = [m for c in kept["messages"] for m in c["messages"] if m["role"] == "assistant" and m.get("reasoning")]
    assert answers and answers[-1]["reasoning"].startswith("Let me think about") and answers[-1]["reasoning_ms"] > 0
    set_settings(host, "w3", model=None, headers=None)


def test_an_answer_cut_while_thinking_offers_continue_with_more_room(host: WebKitHost) -> None:
    set_settings(host, "c1", model=THINK, max_tokens=50, headers={"x-firsttoken-sim": "think_tokens=80,tps=400,tokens=12"})
    send(host, "too little room")
    assert wait(host, f"{ANSWER}?.dataset.state === 'done' && !!{ANSWER}.querySelector('.error.cut')", ms=60_000)
    assert host.eval(f"{ROW}.dataset.phase") == "done"
    assert "whole budget thinking" in host.eval(f"{ANSWER}.querySelector('.error').textContent")
    host.eval(f"{ANSWER}.querySelector('button.continue-with-more-room').click()")
    assert wait(host, f"{ANSWER}.dataset.state === 'done' && {ANSWER}.querySelector('.content').textContent.trim().length > 0", ms=60_000)
    assert host.eval(f"{ANSWER}.querySelector('.error') === null")
    set_settings(host, "c2", model=None, max_tokens=None, headers=None)


@pytest.mark.parametrize("api", ["chat_completions", "responses", "anthropic_messages"])
def test_a_web_view_killed_mid_reasoning_resumes_it_intact_in_the_next_one(
        xvfb: Xvfb, gateway_url: str, tmp_path: Path, api: str) -> None:
    # 2 s of thinking, held a few tokens in until the next web view is up: the first is
    # killed mid-reasoning on any machine (the hold makes it so, not the length: 800
    # tokens of thought did the same in 18 s more, waited on after the release).
    stall, key = hold_at(12)
    sim = f"think_tokens=80,tps=40,tokens=10,{stall}"
    settings = json.dumps({"model": THINK, "api": api, "headers": {"x-firsttoken-sim": sim}})
    profile = tmp_path / "profile"
    with WebKitHost(gateway_url + "/", display=xvfb.display, profile=profile) as first:
        boot(first)
        first.eval(f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(settings)})")
        seen = len(first.messages)
        first.load(gateway_url + "/")
        first.wait_for(lambda m: m.get("type") == "ready", 120, start=seen)
        assert saved(first)
        send(first, "a long thought")
        # Mid-reasoning, kept in IndexedDB with its stream: then the OS kills the app.
        assert wait(first, f"{ROW}?.dataset.phase === 'reasoning' && +({ANSWER}.dataset.paints || 0) >= 1")
        assert saved(first)
        [kept] = [m for c in first.eval(READ)["messages"] for m in c["messages"] if m["role"] == "assistant"]
        # Its stream is kept (what is painted is saved as the page goes away, which a
        # killed process never does: then the stream is read again from the event kept).
        assert kept["state"] == "streaming" and isinstance(kept["stream"]["id"], str) and not kept["content"], kept
        first.proc.kill()
        first.proc.wait()

    with WebKitHost(gateway_url + "/", display=xvfb.display, profile=profile) as second:
        boot(second)
        assert wait(second, f"{ANSWER}?.dataset.resumed === 'true'", ms=40_000)
        release(gateway_url, key)
        # Its thinking row is there at once (with what was saved of its reasoning, if
        # anything was: else "Thinking…" until the stream brings it again); then it goes on.
        assert second.eval(f"{ROW}.dataset.phase") in ("waiting", "reasoning", "done")
        assert wait(second, f"{ANSWER}.dataset.state === 'done'", ms=90_000)
        assert second.eval(f"{ROW}.dataset.phase") == "done"
        saved(second)
        [done] = [m for c in second.eval(READ)["messages"] for m in c["messages"] if m["role"] == "assistant"]
        assert done["reasoning"].startswith(kept.get("reasoning") or ""), "the stored reasoning, continued"
        assert done["reasoning"].count("Let me think about") == 1 and done["content"]
        if api == "chat_completions":  # deterministic: exactly the uninterrupted message
            body = {"model": THINK, "messages": [{"role": "user", "content": "a long thought"}], "stream": False}
            full = httpx.post(gateway_url + "/v1/chat/completions", headers={"x-firsttoken-sim": sim}, json=body, timeout=60)
            message = full.json()["choices"][0]["message"]
            assert (done["reasoning"], done["content"]) == (message["reasoning_content"], message["content"])
        assert_clean_console(second)
