"""Reasoning between the core and a real gateway over sockets, in each API (issue 48): a
thinking level a model refuses costs one 400 and one retry, then is remembered; the
thinking model's reasoning streams ahead of its answer, and what must go back (a
signature, encrypted content) goes back, and is checked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.socket_transport import run_core

APIS = ("chat_completions", "responses", "anthropic_messages")
FAST = "ttft_ms=0,prefill_tps=0,tps=4000,tokens=20"


def send(request_id: str, url: str, api: str, model: str, messages: list[dict[str, Any]], **settings: Any) -> str:
    return json.dumps({
        "v": 1, "type": "chat.send", "id": request_id, "messages": messages,
        "settings": {"base_url": url + "/v1", "model": model, "api": api,
                     "headers": {"x-firsttoken-sim": FAST + ",think_tokens=12"}, **settings},
    })


def bodies(sent: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in sent if r.method == "POST"]


def reasoning_param(api: str, body: dict[str, Any]) -> Any:
    return {"chat_completions": body.get("reasoning_effort"), "responses": body.get("reasoning"),
            "anthropic_messages": body.get("thinking")}[api]


@pytest.mark.parametrize("api", APIS)
def test_a_refused_level_costs_one_400_and_one_retry_then_is_remembered(gateway_url: str, api: str) -> None:
    sent: list[Any] = []
    question = [{"role": "user", "content": "think about it"}]

    async def script(core, events, wait_for):
        await core.handle(send("a", gateway_url, api, "firsttoken-sim", question, reasoning="low"))
        await core.handle(send("b", gateway_url, api, "firsttoken-sim", question, reasoning="low"))

    events = run_core(gateway_url, script, sent=sent)
    posts = bodies(sent)
    # The first request asked for thinking, was refused with a 400 naming it, and went
    # once more without it; the second request did not ask again: three POSTs, two answers.
    assert len(posts) == 3, [reasoning_param(api, p) for p in posts]
    assert reasoning_param(api, posts[0]) is not None
    assert reasoning_param(api, posts[1]) is None and reasoning_param(api, posts[2]) is None
    assert [e["id"] for e in events if e["type"] == "chat.done"] == ["a", "b"]
    assert not [e for e in events if e["type"] in ("chat.error", "chat.retry")]
    notices = [e for e in events if e["type"] == "notice"]
    assert [(n["id"], n["code"]) for n in notices] == [("a", "reasoning_unsupported")]
    # One answer billed per request: the 400 carries no usage; each answer its own.
    assert all(e["usage"]["completion_tokens"] > 0 for e in events if e["type"] == "chat.done")


@pytest.mark.parametrize("api", APIS)
def test_the_thinking_model_reasons_first_and_what_goes_back_is_checked(gateway_url: str, api: str) -> None:
    sent: list[Any] = []
    first = [{"role": "user", "content": "plan a trip"}]

    async def turn_one(core, events, wait_for):
        await core.handle(send("one", gateway_url, api, "firsttoken-sim-think", first, reasoning="medium"))

    events = run_core(gateway_url, turn_one, sent=sent)
    deltas = [e for e in events if e["type"] == "chat.delta"]
    done = next(e for e in events if e["type"] == "chat.done")
    reasoning = "".join(d.get("reasoning", "") for d in deltas)
    answer = "".join(d["text"] for d in deltas)
    assert reasoning and answer
    # Reasoning streams ahead of the answer, never inside it.
    first_answer = next(i for i, d in enumerate(deltas) if d["text"])
    assert any(d.get("reasoning") for d in deltas[:first_answer])
    assert reasoning not in answer
    replay = done.get("replay")
    if api == "chat_completions":
        assert replay is None  # nothing the API wants back on a turn without tools
        return
    assert replay["api"] == api and replay["model"] == "firsttoken-sim-think" and replay["items"]

    second = [*first, {"role": "assistant", "content": answer, "replay": replay},
              {"role": "user", "content": "and the budget?"}]
    forged = json.loads(json.dumps(replay))
    item = forged["items"][0]
    if api == "responses":
        item["encrypted_content"] = item["encrypted_content"][:-4] + "AAAA"
    else:
        item["signature"] = item["signature"][:-4] + "AAAA"
    forged_turn = [*first, {"role": "assistant", "content": answer, "replay": forged},
                   {"role": "user", "content": "and the budget?"}]
    later: list[Any] = []

    async def turn_two(core, events, wait_for):
        await core.handle(send("two", gateway_url, api, "firsttoken-sim-think", second, reasoning="medium"))
        await core.handle(send("forged", gateway_url, api, "firsttoken-sim-think", forged_turn, reasoning="medium"))

    events = run_core(gateway_url, turn_two, sent=later)
    posts = bodies(later)
    # The second turn carries what the first gave, where the API wants it, and is answered.
    carried = json.dumps(posts[0])
    key = "encrypted_content" if api == "responses" else "signature"
    assert replay["items"][0][key] in carried
    assert [e["id"] for e in events if e["type"] == "chat.done"] == ["two", "forged"]
    # An altered one is refused by the API (a 400), and the core sends the turn once
    # more without it rather than leave the conversation stuck.
    assert len(posts) == 3 and item[key] in json.dumps(posts[1]) and item[key] not in json.dumps(posts[2])
    assert ("forged", "reasoning_replay_dropped") in [(e["id"], e["code"]) for e in events if e["type"] == "notice"]
