"""Asking for reasoning and sending it back: the settings, the model table, each API's
request, the room kept for thinking, replay parts round-tripped through the request
body (same API and model, and not), and the core's one retry without a refused
parameter, remembered."""

from __future__ import annotations

import json
from typing import Any

import pytest

from firsttoken.pacing import DeltaPacer
from firsttoken.protocol import ChatDelta
from firsttoken.replay import FIELD, ITEMS, take_replay
from firsttoken.settings import ChatSettings
from firsttoken.stream.dialects import completion_reserve, request_body
from firsttoken.tokens import budget_for, count_chat
from firsttoken.tokens.models import context_window, reasoning_model, thinking_effort
from tests.unit.fakes import SSE, Canned, CannedTransport, FakeTime, run_core, sent_json
from tests.unit.stream_feed import typed_sse

CHAT, RESPONSES, MESSAGES = "chat_completions", "responses", "anthropic_messages"
BASE = "http://api.test/v1"
USER = [{"role": "user", "content": "hello"}]


def body(api: str, model: str, messages: list[dict[str, Any]] = USER, asks: bool = True, **settings: Any) -> dict:
    s = ChatSettings(model=model, **settings)
    return request_body(take_replay(messages, api, model), s, api, reasoning=asks)


# ---- settings and the table -----------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [("high", "high"), ("off", "off"), ("auto", "auto"),
                                             ("max", "auto"), (3, "auto"), (None, "auto")])
def test_the_reasoning_setting(value: Any, expected: str) -> None:
    assert ChatSettings.from_dict({"reasoning": value}).reasoning == expected


def test_the_summary_setting_is_on_unless_false() -> None:
    assert ChatSettings.from_dict({}).reasoning_summary is True
    assert ChatSettings.from_dict({"reasoning_summary": "no"}).reasoning_summary is True
    assert ChatSettings.from_dict({"reasoning_summary": False}).reasoning_summary is False


@pytest.mark.parametrize("model, family", [
    ("o3", "o-series"), ("o4-mini-2025-04-16", "o-series"), ("gpt-5", "gpt-5"), ("gpt-5.2", "gpt-5.x"),
    ("gpt-5-chat-latest", None), ("gpt-4o", None), ("gpt-oss-120b", "gpt-oss"),
    ("deepseek-v4-pro", "deepseek"), ("deepseek-reasoner", "deepseek"), ("deepseek-chat", None),
    ("deepseek/deepseek-r1", "r1-style"), ("qwq-32b", "r1-style"),
    ("claude-opus-4-7", "claude-adaptive-only"), ("claude-sonnet-5", "claude-adaptive-only"),
    ("claude-sonnet-4-6", "claude-adaptive"), ("claude-sonnet-4-5-20250929", "claude-budget"),
    ("claude-3-7-sonnet-latest", "claude-budget"), ("claude-3-5-haiku", None),
    ("firsttoken-sim-think", "firsttoken-sim-think"), ("firsttoken-sim", None),
])
def test_the_model_table(model: str, family: str | None) -> None:
    info = reasoning_model(model)
    assert (info.family if info else None) == family


def test_the_effort_a_model_thinks_at() -> None:
    assert thinking_effort("o3", "auto") == "medium"
    assert thinking_effort("o3", "off") == "low"  # cannot stop
    assert thinking_effort("gpt-5.1", "off") is None
    assert thinking_effort("gpt-4o", "auto") is None
    assert thinking_effort("gpt-4o", "high") == "high"  # asked: sent, and room kept
    assert thinking_effort("claude-sonnet-4-5", "auto") is None  # thinks only when asked


# ---- what each API is asked ------------------------------------------------------------------


REASONING_KEYS = ("reasoning_effort", "thinking", "reasoning", "include", "output_config")


def asked(b: dict) -> dict:
    return {k: b[k] for k in REASONING_KEYS if k in b}


@pytest.mark.parametrize("model, setting, expected", [
    ("gpt-5.1", "auto", {}),
    ("gpt-5.1", "high", {"reasoning_effort": "high"}),
    ("gpt-5.1", "off", {"reasoning_effort": "none"}),
    ("gpt-5", "off", {"reasoning_effort": "minimal"}),
    ("o3", "off", {"reasoning_effort": "low"}),
    ("gpt-4o", "low", {"reasoning_effort": "low"}),  # a set effort is sent; a refusal is remembered
    ("deepseek-v4-pro", "off", {"thinking": {"type": "disabled"}}),
    ("deepseek-v4-pro", "medium", {"thinking": {"type": "enabled"}, "reasoning_effort": "medium"}),
    ("firsttoken-sim-think", "low", {"reasoning_effort": "low"}),
])
def test_chat_completions(model: str, setting: str, expected: dict) -> None:
    assert asked(body(CHAT, model, reasoning=setting)) == expected


ENCRYPTED = {"include": ["reasoning.encrypted_content"]}


@pytest.mark.parametrize("model, settings, expected", [
    ("o4-mini", {}, {"reasoning": {"summary": "auto"}, **ENCRYPTED}),
    ("o4-mini", {"reasoning_summary": False}, ENCRYPTED),
    ("o4-mini", {"reasoning": "high"}, {"reasoning": {"effort": "high", "summary": "auto"}, **ENCRYPTED}),
    ("gpt-5.1", {"reasoning": "off"}, {"reasoning": {"effort": "none"}}),
    ("o3", {"reasoning": "off"}, {"reasoning": {"effort": "low", "summary": "auto"}, **ENCRYPTED}),
    ("gpt-4o", {}, {}),
    ("gpt-4o", {"reasoning": "medium"}, {"reasoning": {"effort": "medium", "summary": "auto"}, **ENCRYPTED}),
    ("firsttoken-sim-think", {}, {"reasoning": {"summary": "auto"}, **ENCRYPTED}),
])
def test_responses(model: str, settings: dict, expected: dict) -> None:
    b = body(RESPONSES, model, **settings)
    assert asked(b) == expected and b["store"] is False


SUMMARIZED = {"display": "summarized"}


@pytest.mark.parametrize("model, settings, expected, max_tokens", [
    ("claude-opus-4-7", {}, {"thinking": {"type": "adaptive", **SUMMARIZED}}, 4096 + 8192),
    ("claude-opus-4-7", {"reasoning": "off"},
     {"thinking": {"type": "adaptive", **SUMMARIZED}, "output_config": {"effort": "low"}}, 4096 + 2048),
    ("claude-sonnet-4-6", {"reasoning": "high"},
     {"thinking": {"type": "adaptive", **SUMMARIZED}, "output_config": {"effort": "high"}}, 4096 + 24576),
    ("claude-sonnet-4-6", {}, {}, 4096),
    ("claude-sonnet-4-5", {}, {}, 4096),
    ("claude-sonnet-4-5", {"reasoning": "off"}, {"thinking": {"type": "disabled"}}, 4096),
    ("claude-sonnet-4-5", {"reasoning": "medium"},
     {"thinking": {"type": "enabled", "budget_tokens": 8192, **SUMMARIZED}}, 4096 + 8192),
    ("claude-sonnet-4-5", {"reasoning": "low", "reasoning_summary": False},
     {"thinking": {"type": "enabled", "budget_tokens": 2048, "display": "omitted"}}, 4096 + 2048),
    # The user's max_tokens holds thinking and answer; raised so that the budget fits below it.
    ("claude-sonnet-4-5", {"reasoning": "high", "max_tokens": 2000},
     {"thinking": {"type": "enabled", "budget_tokens": 1024, **SUMMARIZED}}, 2048),
    ("claude-sonnet-4-5", {"reasoning": "high", "max_tokens": 64000},
     {"thinking": {"type": "enabled", "budget_tokens": 24576, **SUMMARIZED}}, 64000),
    ("firsttoken-sim-think", {}, {"thinking": {"type": "enabled", "budget_tokens": 8192, **SUMMARIZED}}, 4096 + 8192),
    ("claude-3-5-haiku", {}, {}, 4096),
])
def test_messages(model: str, settings: dict, expected: dict, max_tokens: int) -> None:
    b = body(MESSAGES, model, **settings)
    assert asked(b) == expected and b["max_tokens"] == max_tokens
    if "budget_tokens" in b.get("thinking", {}):
        assert b["max_tokens"] > b["thinking"]["budget_tokens"] >= 1024  # the API's own rule
    assert completion_reserve(ChatSettings(model=model, **settings), MESSAGES) == max_tokens


@pytest.mark.parametrize("api", [CHAT, RESPONSES, MESSAGES])
def test_a_refused_parameter_is_not_asked(api: str) -> None:
    b = body(api, "firsttoken-sim-think", asks=False, reasoning="high")
    assert asked(b) == {}
    if api == MESSAGES:
        assert b["max_tokens"] == 4096 + 24576  # the room is kept all the same: it still thinks


def test_room_is_kept_for_thinking_by_effort() -> None:
    window = context_window("o3")[0]
    assert budget_for(ChatSettings(model="o3"))[0] == window - 4096 - 8192
    assert budget_for(ChatSettings(model="o3", reasoning="high"))[0] == window - 4096 - 24576
    assert budget_for(ChatSettings(model="gpt-5.1", reasoning="off"))[0] == 400_000 - 4096
    assert budget_for(ChatSettings(model="gpt-4o"))[0] == 128_000 - 4096
    assert budget_for(ChatSettings(model="o3", max_tokens=30_000))[0] == window - 30_000  # holds both
    # The governor counts the room a thinking model's reasoning takes when no cap is sent.
    assert completion_reserve(ChatSettings(model="o3"), CHAT) == 8192
    assert completion_reserve(ChatSettings(model="o3", max_tokens=5000), RESPONSES) == 5000
    assert completion_reserve(ChatSettings(model="gpt-4o"), CHAT) == 0
    # A small window keeps at most a quarter for each.
    assert budget_for(ChatSettings(model="o3", context_window=8000, reasoning="high"))[0] == 8000 - 2000 - 2000


# ---- replay, round-tripped ----------------------------------------------------------------------


THINKING = [{"type": "thinking", "thinking": "Let me see.", "signature": "EqQBCkYIB"},
            {"type": "redacted_thinking", "data": "EmwKAhgB"}]
RS = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}],
      "encrypted_content": "gAAAAB"}
DETAILS = {"reasoning_details": [{"type": "reasoning.encrypted", "data": "gAAAAB", "index": 0}]}


def conversation(api: str, model: str, items: list[dict], content: Any = "Yes.") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Is it?"},
        {"role": "assistant", "content": content, FIELD: {"api": api, "model": model, "items": items}},
        {"role": "user", "content": "Why?"},
    ]


def no_private_fields(b: dict) -> None:
    text = json.dumps(b)
    assert f'"{FIELD}"' not in text and ITEMS not in text


def test_anthropic_blocks_go_first_in_their_assistant_turn() -> None:
    b = body(MESSAGES, "claude-sonnet-4-5", conversation(MESSAGES, "claude-sonnet-4-5", THINKING))
    assert b["messages"][1] == {"role": "assistant", "content": [*THINKING, {"type": "text", "text": "Yes."}]}
    no_private_fields(b)


def test_anthropic_blocks_go_before_tool_use_too() -> None:
    call = {"id": "toolu_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [{"role": "user", "content": "Go"},
                {"role": "assistant", "content": None, "tool_calls": [call],
                 FIELD: {"api": MESSAGES, "model": "claude-sonnet-4-5", "items": THINKING[:1]}},
                {"role": "tool", "tool_call_id": "toolu_1", "content": "done"}]
    b = body(MESSAGES, "claude-sonnet-4-5", messages)
    assert [block["type"] for block in b["messages"][1]["content"]] == ["thinking", "tool_use"]


def test_responses_items_go_just_before_their_message() -> None:
    b = body(RESPONSES, "o4-mini", conversation(RESPONSES, "o4-mini", [RS]))
    assert b["input"] == [{"role": "user", "content": "Is it?"}, RS, {"role": "assistant", "content": "Yes."},
                          {"role": "user", "content": "Why?"}]
    no_private_fields(b)


def test_chat_completions_fields_go_on_their_message() -> None:
    b = body(CHAT, "openai/gpt-5", conversation(CHAT, "openai/gpt-5", [DETAILS, {"reasoning_content": "r"}]))
    assert b["messages"][1] == {"role": "assistant", "content": "Yes.", **DETAILS, "reasoning_content": "r"}
    no_private_fields(b)


@pytest.mark.parametrize("api, model, items", [(MESSAGES, "claude-sonnet-4-5", THINKING),
                                               (RESPONSES, "o4-mini", [RS]), (CHAT, "openai/gpt-5", [DETAILS])])
def test_replay_is_dropped_when_the_model_or_the_api_changes(api: str, model: str, items: list[dict]) -> None:
    plain = body(api, model, conversation(api, model, []))
    assert body(api, model, conversation(api, "another-model", items)) == plain
    other_api = next(a for a in (CHAT, RESPONSES, MESSAGES) if a != api)
    assert body(api, model, conversation(other_api, model, items)) == plain


def test_an_answer_cut_while_thinking_sends_no_replay() -> None:
    # A reasoning item or thinking block with nothing after it is refused by its API.
    b = body(RESPONSES, "o4-mini", conversation(RESPONSES, "o4-mini", [RS], ""))
    assert RS not in b["input"]
    m = body(MESSAGES, "claude-sonnet-4-5", conversation(MESSAGES, "claude-sonnet-4-5", THINKING, ""))
    assert "thinking" not in json.dumps(m["messages"])


def test_replay_on_a_user_message_is_dropped() -> None:
    messages = [{"role": "user", "content": "x", FIELD: {"api": CHAT, "model": "m", "items": [DETAILS]}}]
    assert take_replay(messages, CHAT, "m") == [{"role": "user", "content": "x"}]


def test_what_goes_back_is_counted() -> None:
    plain = conversation(RESPONSES, "o4-mini", [])
    kept = take_replay(conversation(RESPONSES, "o4-mini", [RS]), RESPONSES, "o4-mini")
    dropped = take_replay(conversation(RESPONSES, "other", [RS]), RESPONSES, "o4-mini")
    base = count_chat(take_replay(plain, RESPONSES, "o4-mini"), "o4-mini", api=RESPONSES)
    assert count_chat(dropped, "o4-mini", api=RESPONSES) == base
    # "Plan." is 2 tokens; "gAAAAB" is 6 opaque characters, 2 tokens at 4 a token.
    assert count_chat(kept, "o4-mini", api=RESPONSES) == base + 2 + 2


# ---- through the core -----------------------------------------------------------------------------


def send(model: str, messages: list[dict] = USER, id_: str = "a", **settings: Any) -> dict:
    return {"type": "chat.send", "id": id_, "messages": messages,
            "settings": {"base_url": BASE, "model": model, **settings}}


def anthropic_thinking_body() -> bytes:
    return typed_sse(
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "role": "assistant",
                                              "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me see."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkYIB"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Yes."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30}},
        {"type": "message_stop"},
    )


class Chunked(Canned):
    """A response whose body comes in two network chunks, cut at `at`."""

    def __init__(self, body: bytes, at: int) -> None:
        super().__init__(200, SSE, body)
        self.at = at

    async def chunks(self) -> Any:
        yield self._body[: self.at]
        yield self._body[self.at :]


def test_chat_done_carries_replay_and_the_next_turn_sends_it_back() -> None:
    model = "claude-sonnet-4-5"
    answer = anthropic_thinking_body()
    first = CannedTransport(Chunked(answer, answer.index(b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1")))
    _, events = run_core(first, FakeTime(), send(model, reasoning="medium"))
    deltas = [e for e in events if e["type"] == "chat.delta"]
    # Reasoning alone reaches the page as a delta with empty text (its first reasoning paint).
    assert any(d["text"] == "" and d["reasoning"] == "Let me see." for d in deltas)
    done = events[-1]
    assert done["type"] == "chat.done"
    assert done["replay"] == {"api": MESSAGES, "model": model, "items": [THINKING[0]]}
    second = CannedTransport(Canned(200, SSE, anthropic_thinking_body()))
    turn = [{"role": "user", "content": "Is it?"}, {"role": "assistant", "content": "Yes.", "replay": done["replay"]},
            {"role": "user", "content": "Why?"}]
    run_core(second, FakeTime(), send(model, turn, reasoning="medium"))
    sent = sent_json(second.sent[0])
    assert sent["messages"][1]["content"][0] == THINKING[0]
    assert "Let me see." not in json.dumps(sent["messages"][2])  # reasoning text never as content


def test_chat_done_has_no_replay_when_there_is_none() -> None:
    stream = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    _, events = run_core(CannedTransport(Canned(200, SSE, stream)), FakeTime(), send("gpt-4o"))
    assert events[-1]["type"] == "chat.done" and "replay" not in events[-1]


def test_the_live_count_counts_what_goes_back() -> None:
    turn = conversation(RESPONSES, "o4-mini", [RS])
    count = {"type": "tokens.count", "id": "c", "messages": turn, "settings": {"model": "o4-mini", "api": RESPONSES}}
    other = {**count, "settings": {"model": "o3", "api": RESPONSES}}
    _, events = run_core(CannedTransport(), FakeTime(), count, other)
    kept, dropped = [e["tokens"] for e in events if e["type"] == "tokens.counted"]
    assert kept == dropped + 4


REFUSAL = json.dumps({"error": {"message": "Unrecognized request argument supplied: reasoning_effort",
                                "type": "invalid_request_error", "param": "reasoning_effort",
                                "code": "unknown_parameter"}}).encode()
OK = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
JSON = {"content-type": "application/json"}


def test_a_refused_reasoning_parameter_is_retried_once_without_it_and_remembered() -> None:
    transport = CannedTransport(Canned(400, JSON, REFUSAL), Canned(200, SSE, OK), Canned(200, SSE, OK),
                                Canned(200, SSE, OK))
    _, events = run_core(transport, FakeTime(), send("firsttoken-sim", reasoning="high"),
                         send("firsttoken-sim", id_="b", reasoning="high"),
                         send("firsttoken-sim-think", id_="c", reasoning="high"))
    bodies = [sent_json(r) for r in transport.sent]
    assert [b.get("reasoning_effort") for b in bodies] == ["high", None, None, "high"]
    notices = [e for e in events if e["type"] == "notice" and e["code"] == "reasoning_unsupported"]
    assert len(notices) == 1 and notices[0]["id"] == "a" and notices[0]["reason"] == "reasoning_effort"
    assert [e["id"] for e in events if e["type"] == "chat.done"] == ["a", "b", "c"]
    assert not [e for e in events if e["type"] == "chat.retry"]  # at once, not after a backoff


def test_the_refusal_is_retried_once_only() -> None:
    transport = CannedTransport(Canned(400, JSON, REFUSAL), Canned(400, JSON, REFUSAL))
    _, events = run_core(transport, FakeTime(), send("firsttoken-sim", reasoning="low"))
    assert len(transport.sent) == 2 and events[-1]["type"] == "chat.error"


def test_a_400_about_what_went_back_is_not_taken_for_a_refusal() -> None:
    error = json.dumps({"type": "error", "error": {
        "type": "invalid_request_error", "message": "messages.1.content.0: Invalid `signature` in `thinking` block"}})
    transport = CannedTransport(Canned(400, JSON, error.encode()))
    _, events = run_core(transport, FakeTime(), send("claude-sonnet-4-5", reasoning="medium"))
    assert len(transport.sent) == 1 and events[-1]["type"] == "chat.error"
    assert not [e for e in events if e["type"] == "notice" and e["code"] == "reasoning_unsupported"]


@pytest.mark.parametrize("api, model, error", [
    (RESPONSES, "gpt-4o", {"message": "Unsupported parameter: 'reasoning.effort' is not supported with this model.",
                           "param": "reasoning.effort", "type": "invalid_request_error"}),
    (MESSAGES, "claude-3-5-haiku", {"type": "invalid_request_error",
                                    "message": "thinking: Extra inputs are not permitted"}),
])
def test_each_api_names_the_refused_parameter_its_own_way(api: str, model: str, error: dict) -> None:
    envelope = {"type": "error", "error": error} if api == MESSAGES else {"error": error}
    ok = typed_sse({"type": "response.output_text.delta", "delta": "hi"},
                   {"type": "response.completed", "response": {"id": "r"}}) if api == RESPONSES else typed_sse(
        {"type": "message_start", "message": {"id": "m", "role": "assistant", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"})
    transport = CannedTransport(Canned(400, JSON, json.dumps(envelope).encode()), Canned(200, SSE, ok))
    _, events = run_core(transport, FakeTime(), send(model, api=api, reasoning="low"))
    first, second = (sent_json(r) for r in transport.sent)
    assert asked(first) and not asked(second)
    assert events[-1]["type"] == "chat.done"


# ---- delta pacing -------------------------------------------------------------------------------


def test_pacing_merges_reasoning_as_it_merges_text() -> None:
    sent: list[ChatDelta] = []
    pacer = DeltaPacer(sent.append)
    pacer.enabled = True
    pacer.delta(ChatDelta(id="a", seq=1, text="", t=1.0, reasoning="Let"))  # out at once
    pacer.delta(ChatDelta(id="a", seq=2, text="", t=2.0, reasoning=" me"))
    pacer.delta(ChatDelta(id="a", seq=3, text="", t=3.0, reasoning=" see."))
    pacer.delta(ChatDelta(id="a", seq=4, text="Yes", t=4.0))
    pacer.ack()
    assert [(d.seq, d.text, d.reasoning, d.t) for d in sent] == [(1, "", "Let", 1.0), (4, "Yes", " me see.", 2.0)]
    # A reasoning-only delta keeps its empty text on the wire: the page paints reasoning from it.
    assert sent[0].to_dict()["text"] == "" and sent[0].to_dict()["reasoning"] == "Let"


def test_the_pages_own_fields_never_go_to_a_model() -> None:
    stored = {"role": "assistant", "content": "Yes.", "reasoning": "Let me see.", "reasoning_ms": 1200}
    for api in (CHAT, RESPONSES, MESSAGES):
        assert "Let me see." not in json.dumps(body(api, "o4-mini", [*USER, stored, *USER]))


def test_chat_completions_replay_becomes_plain_message_fields_in_the_prepared_conversation() -> None:
    # What the gateway's early prepare (gateway/prepare.py) sends on as it comes out.
    messages = take_replay(conversation(CHAT, "deepseek-v4-pro", [{"reasoning_content": "r"}]), CHAT, "deepseek-v4-pro")
    assert messages[1] == {"role": "assistant", "content": "Yes.", "reasoning_content": "r"}


def test_reasoning_sent_back_and_refused_is_left_out_once() -> None:
    model = "claude-sonnet-4-5"
    error = json.dumps({"type": "error", "error": {
        "type": "invalid_request_error", "message": "messages.1.content.0: Invalid `signature` in `thinking` block"}})
    turn = conversation(MESSAGES, model, THINKING)
    transport = CannedTransport(Canned(400, JSON, error.encode()), Canned(200, SSE, anthropic_thinking_body()))
    _, events = run_core(transport, FakeTime(), send(model, turn))
    first, second = (sent_json(r) for r in transport.sent)
    assert "signature" in json.dumps(first["messages"]) and "signature" not in json.dumps(second["messages"])
    assert [e["code"] for e in events if e["type"] == "notice" and e["code"].startswith("reasoning")] \
        == ["reasoning_replay_dropped"]
    assert events[-1]["type"] == "chat.done"
    again = CannedTransport(Canned(400, JSON, error.encode()), Canned(400, JSON, error.encode()))
    _, events = run_core(again, FakeTime(), send(model, turn))
    assert len(again.sent) == 2 and events[-1]["type"] == "chat.error"  # once, never a loop


def test_timings_tell_the_first_reasoning_from_the_first_answer() -> None:
    model = "claude-sonnet-4-5"
    answer = anthropic_thinking_body()
    cut = answer.index(b"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1")
    time_ = FakeTime()
    _, events = run_core(CannedTransport(Chunked(answer, cut)), time_, send(model))
    timings = events[-1]["timings"]
    assert timings["first_delta"] is not None and timings["first_text"] is not None
    assert timings["first_delta"] <= timings["first_text"] <= timings["done"]
