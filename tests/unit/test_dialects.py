"""The three dialects, pure (gateway/dialects): each framing's events are what the
official clients' own SSE decoders and types accept, in the real order, carrying any
text unchanged however the bytes are cut, and each framing's answer settles its own
usage; each dialect refuses bad bodies with typed 400s in its own words; every dialect
reads one prompt; cache references expand at each dialect's sites; errors take the
route's shape."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from anthropic._streaming import SSEDecoder as AnthropicDecoder
from anthropic.types import Message, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse
from hypothesis import given, settings
from hypothesis import strategies as st
from openai._streaming import SSEDecoder as OpenAIDecoder
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent

from gateway.cache_refs import chat_sites, expand_refs, messages_sites, referenced, responses_sites, system_entries
from gateway.dialects import CHAT, DIALECTS, MESSAGES, RESPONSES, Dialect, dialect_at, error_response
from gateway.dialects.wire import Outcome
from gateway.errors import APIError, anthropic_type
from gateway.limits.usage import UsageMeter
from gateway.simulator import prompt_digest

SYSTEM, USER = "Be brief.", "what is a frame budget?"
BODIES = {
    "chat": {"model": "m", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
             "stream_options": {"include_usage": True}, "stream": True},
    "responses": {"model": "m", "instructions": SYSTEM, "input": USER},
    "messages": {"model": "m", "max_tokens": 100, "system": SYSTEM, "messages": [{"role": "user", "content": USER}]},
}


def request_of(dialect: Dialect, body: dict[str, Any] | None = None) -> Any:
    body = body if body is not None else json.loads(json.dumps(BODIES[dialect.name]))
    return dialect.check(body, json.dumps(body).encode())


def _by_type(union: Any) -> dict[str, Any]:
    args = typing.get_args(union)
    if args and not hasattr(args[0], "model_fields"):  # Annotated[Union[...], ...]
        return _by_type(args[0])
    return {c.model_fields["type"].annotation.__args__[0]: c for c in args}


RESPONSE_EVENTS = _by_type(ResponseStreamEvent)
MESSAGE_EVENTS = _by_type(RawMessageStreamEvent)


def expected_types(dialect: Dialect, deltas: int, finish: str) -> list[str | None]:
    if dialect is CHAT:
        return [None] * (1 + deltas + 2) + [None]  # role, deltas, finish, usage, [DONE]
    if dialect is RESPONSES:
        last = "response.completed" if finish == "stop" else "response.incomplete"
        return (["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
                + ["response.output_text.delta"] * deltas
                + ["response.output_text.done", "response.content_part.done", "response.output_item.done", last])
    return (["message_start", "content_block_start", "ping"] + ["content_block_delta"] * deltas
            + ["content_block_stop", "message_delta", "message_stop"])


def decode(dialect: Dialect, data: bytes, cut: int) -> list[Any]:
    """The events the dialect's official client decodes from `data` fed `cut` bytes at a time."""
    decoder = AnthropicDecoder() if dialect is MESSAGES else OpenAIDecoder()
    return list(decoder.iter_bytes(iter([data[i : i + cut] for i in range(0, len(data), cut)])))


def check_event(dialect: Dialect, event: Any) -> dict[str, Any] | None:
    """The event's JSON, validated strictly by the client's own model of it."""
    if event.data == "[DONE]":
        return None
    data = json.loads(event.data)
    if dialect is CHAT:
        ChatCompletionChunk.model_validate(data, strict=True)
        return data
    assert event.event == data["type"]  # the SSE event type names the JSON's type
    events = RESPONSE_EVENTS if dialect is RESPONSES else MESSAGE_EVENTS
    if data["type"] in events:
        events[data["type"]].model_validate(data, strict=True)
    else:
        assert data == {"type": "ping"}
    return data


texts = st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=1, max_size=20) | st.sampled_from(
    ["\u2028", "\r\n", "data: x\n\n", '"}', "🙂 東京", "\x00"])


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
@settings(max_examples=60)
@given(pieces=st.lists(texts, min_size=1, max_size=6), finish=st.sampled_from(["stop", "length"]),
       cut=st.integers(1, 97))
def test_each_framing_carries_any_text_to_the_official_decoders(dialect: Dialect, pieces: list[str], finish: str,
                                                                 cut: int) -> None:
    outcome = Outcome(finish, 11, len(pieces))
    framing = dialect.framing(request_of(dialect), outcome)
    stream = framing.opening() + b"".join(framing.delta(p) for p in pieces) + framing.closing()
    events = decode(dialect, stream, cut)
    assert [e.event for e in events] == expected_types(dialect, len(pieces), finish)
    decoded = [d for d in (check_event(dialect, e) for e in events) if d is not None]
    assert "".join(dialect.event_text(d) for d in decoded) == "".join(pieces)
    if dialect is RESPONSES:
        assert [d["sequence_number"] for d in decoded] == list(range(len(decoded)))
        assert decoded[-1]["response"]["output"][0]["content"][0]["text"] == "".join(pieces)
    whole = framing.whole("".join(pieces))
    {CHAT: ChatCompletion, RESPONSES: Response, MESSAGES: Message}[dialect].model_validate_json(whole, strict=True)
    assert dialect.body_text(json.loads(whole)) == "".join(pieces)
    for streaming, body in ((True, stream), (False, whole)):
        meter = UsageMeter(dialect, streaming=streaming)
        for i in range(0, len(body), cut):
            meter.feed(body[i : i + cut])
        assert meter.settle(0, len) == {"total_tokens": 11 + len(pieces), "exact": True}


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_an_error_mid_stream_is_each_dialects_error_event(dialect: Dialect) -> None:
    framing = dialect.framing(request_of(dialect), Outcome("stop", 1, 1))
    (event,) = decode(dialect, framing.failure("boom", "simulated"), 1000)
    data = json.loads(event.data)
    if dialect is CHAT:
        assert data["error"]["code"] == "simulated"  # what the openai client raises on
    elif dialect is RESPONSES:
        assert event.event == "error"
        RESPONSE_EVENTS["error"].model_validate(data, strict=True)
        assert data["code"] == "simulated" and data["message"] == "boom"
    else:
        assert event.event == "error"  # what the anthropic client raises on
        ErrorResponse.model_validate(data, strict=True)
        assert data["error"]["type"] == "api_error"


def test_a_messages_stream_cut_before_its_output_usage_is_counted_from_its_text() -> None:
    framing = MESSAGES.framing(request_of(MESSAGES), Outcome("stop", 11, 2))
    meter = UsageMeter(MESSAGES, streaming=True)
    meter.feed(framing.opening() + framing.delta("abc") + framing.delta("de"))
    assert meter.settle(11, len) == {"total_tokens": 11 + 5, "exact": True}  # not message_start's placeholder


def test_every_dialect_reads_one_prompt_so_the_built_in_model_answers_alike() -> None:
    prompts = [request_of(d).messages for d in DIALECTS]
    assert prompts[0] == prompts[1] == prompts[2] == [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]
    blocks = [
        request_of(RESPONSES, {"model": "m", "instructions": SYSTEM,
                               "input": [{"role": "user", "content": [{"type": "input_text", "text": USER}]}]}),
        request_of(MESSAGES, {"model": "m", "max_tokens": 9, "system": [{"type": "text", "text": SYSTEM}],
                              "messages": [{"role": "user", "content": [{"type": "text", "text": USER}]}]}),
    ]
    assert {prompt_digest(r.messages) for r in blocks} == {prompt_digest(prompts[0])}


def test_non_message_items_and_blocks_count_as_the_text_they_carry() -> None:
    responses = request_of(RESPONSES, {"model": "m", "input": [
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"q": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "found"}]})
    assert responses.messages == [{"role": "assistant", "content": 'lookup {"q": 1}'}, {"role": "tool", "content": "found"}]
    messages = request_of(MESSAGES, {"model": "m", "max_tokens": 9, "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "lookup", "input": {"q": 1}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "found"}]}]}],
        "tools": [{"name": "lookup", "description": "d", "input_schema": {"type": "object", "properties": {}}}]})
    assert [m["content"][0]["text"] for m in messages.messages] == ['lookup {"q": 1}', "found"]
    assert messages.tools == [{"type": "function", "function": {"name": "lookup", "description": "d",
                                                                "parameters": {"type": "object", "properties": {}}}}]


@pytest.mark.parametrize("body, param, code", [
    ({"input": "x"}, "model", "missing_required_parameter"),
    ({"model": "m"}, "input", "missing_required_parameter"),
    ({"model": "m", "input": []}, "input", "empty_array"),
    ({"model": "m", "input": 5}, "input", "invalid_type"),
    ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role", "invalid_value"),
    ({"model": "m", "input": [{"content": "x"}]}, "input[0].role", "missing_required_parameter"),
    ({"model": "m", "input": [{"role": "user"}]}, "input[0].content", "missing_required_parameter"),
    ({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text"}]}]}, "input[0].content[0].text", "invalid_type"),
    ({"model": "m", "input": "x", "instructions": 3}, "instructions", "invalid_type"),
    ({"model": "m", "input": "x", "max_output_tokens": 15}, "max_output_tokens", "integer_below_min_value"),
    ({"model": "m", "input": "x", "stream": "yes"}, "stream", "invalid_type"),
    ({"model": "m", "input": "x", "text": {"format": {}}}, "text.format.type", "missing_required_parameter"),
])
def test_responses_refuses_bad_bodies_naming_the_param(body: dict, param: str, code: str) -> None:
    with pytest.raises(APIError) as caught:
        request_of(RESPONSES, body)
    assert (caught.value.status, caught.value.param, caught.value.code) == (400, param, code)


TURN = [{"role": "user", "content": "x"}]


@pytest.mark.parametrize("body, message", [
    ({"model": "m", "messages": TURN}, "max_tokens: Field required"),
    ({"model": "m", "max_tokens": 0, "messages": TURN}, "max_tokens: Input should be greater than or equal to 1"),
    ({"model": "m", "max_tokens": "9", "messages": TURN}, "max_tokens: Input should be a valid integer"),
    ({"max_tokens": 9, "messages": TURN}, "model: Field required"),
    ({"model": "m", "max_tokens": 9}, "messages: Field required"),
    ({"model": "m", "max_tokens": 9, "messages": []}, "messages: at least one message is required"),
    ({"model": "m", "max_tokens": 9, "messages": [{"role": "system", "content": "x"}]},
     "messages.0.role: Input should be 'user' or 'assistant'"),
    ({"model": "m", "max_tokens": 9, "messages": [{"role": "user"}]}, "messages.0.content: Field required"),
    ({"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": [{"type": "text"}]}]},
     "messages.0.content.0.text: Input should be a valid string"),
    ({"model": "m", "max_tokens": 9, "messages": TURN, "system": [{"type": "image"}]}, "system.0.type: Input should be 'text'"),
    ({"model": "m", "max_tokens": 9, "messages": TURN, "system": 5},
     "system: Input should be a valid string or a list of text blocks"),
    ({"model": "m", "max_tokens": 9, "messages": TURN, "stream": "yes"}, "stream: Input should be a valid boolean"),
])
def test_messages_refuses_bad_bodies_in_anthropics_words(body: dict, message: str) -> None:
    with pytest.raises(APIError) as caught:
        request_of(MESSAGES, body)
    assert (caught.value.status, caught.value.message) == (400, message)


def test_the_built_in_model_refuses_tools_and_kept_state_as_each_api_would() -> None:
    refusals = [
        (RESPONSES, {"tools": [{"type": "function", "name": "f"}]}, "tools"),
        (RESPONSES, {"previous_response_id": "resp_1"}, "previous_response_id"),
        (RESPONSES, {"background": True}, "background"),
        (RESPONSES, {"text": {"format": {"type": "json_schema"}}}, "text.format"),
        (RESPONSES, {"text": {"format": {"type": "json_object"}}}, "input"),  # the word json is missing
        (MESSAGES, {"tools": [{"name": "f", "input_schema": {}}]}, "tools"),
        (MESSAGES, {"tool_choice": {"type": "any"}}, "tool_choice"),
        # A valid thinking request (a budget below max_tokens), refused for the model alone.
        (MESSAGES, {"max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 1024}}, "thinking"),
    ]
    for dialect, extra, param in refusals:
        with pytest.raises(APIError) as caught:
            dialect.check_supported(request_of(dialect, {**BODIES[dialect.name], **extra}))
        assert caught.value.status == 400 and caught.value.param == param, (dialect.name, extra)
    json_object = request_of(RESPONSES, {"model": "m", "input": "answer in json", "text": {"format": {"type": "json_object"}}})
    RESPONSES.check_supported(json_object)
    assert json_object.format == "json_object"


# ---- cache references at each dialect's sites ------------------------------------------------

DIGEST = "a" * 64
REF = {"x_firsttoken_ref": "sha256:" + DIGEST}


@pytest.mark.parametrize("sites, body, expanded", [
    (chat_sites, {"messages": [{"role": "system", **REF}, {"role": "user", "content": "u"}]},
     {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "u"}]}),
    (responses_sites, {"instructions": dict(REF), "input": [{"role": "developer", **REF}]},
     {"instructions": "S", "input": [{"role": "developer", "content": "S"}]}),
    (messages_sites, {"system": dict(REF)}, {"system": "S"}),
    (messages_sites, {"system": [{"type": "text", **REF, "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "t"}]},
     {"system": [{"type": "text", "cache_control": {"type": "ephemeral"}, "text": "S"}, {"type": "text", "text": "t"}]}),
])
def test_references_expand_at_each_dialects_sites(sites: Any, body: dict, expanded: dict) -> None:
    assert set(referenced(sites(body))) == {DIGEST}
    assert expand_refs(sites(body), {DIGEST: "S"})
    assert body == expanded
    assert {text for _, text in system_entries(sites(body))} >= {b"S"}


@pytest.mark.parametrize("sites, body, status, param", [
    (messages_sites, {"messages": [{"role": "user", **REF}]}, 400, "messages[0].role"),
    (responses_sites, {"input": [{"role": "user", **REF}]}, 400, "input[0].role"),
    (responses_sites, {"instructions": {**REF, "extra": 1}}, 400, "instructions"),
    (messages_sites, {"system": [{"type": "text", "text": "t", **REF}]}, 400, "system[0].text"),
    (messages_sites, {"system": [{"type": "image", **REF}]}, 400, "system[0].type"),
    (messages_sites, {"system": dict(REF)}, 409, "system"),
])
def test_a_bad_or_unknown_reference_is_refused_where_it_stands(sites: Any, body: dict, status: int, param: str) -> None:
    with pytest.raises(APIError) as caught:
        expand_refs(sites(body), {})
    assert (caught.value.status, caught.value.param) == (status, param)


def test_system_texts_are_remembered_from_every_place_they_stand() -> None:
    body = {"instructions": "I", "input": [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]}
    assert sorted(text for _, text in system_entries(responses_sites(body))) == [b"I", b"S"]
    body = {"system": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}], "messages": [{"role": "user", "content": "U"}]}
    assert sorted(text for _, text in system_entries(messages_sites(body))) == [b"A", b"B"]


# ---- error shapes ------------------------------------------------------------------------------


def test_errors_take_the_shape_of_the_route_asked() -> None:
    error = APIError(429, "slow down", type="requests", code="rate_limit_exceeded", headers={"retry-after": "2"})
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        response = error_response(error, {"path": path})
        body = json.loads(response.body)
        ErrorResponse.model_validate(body, strict=True)
        assert body["error"]["type"] == "rate_limit_error" and body["error"]["message"] == "slow down"
        assert body["error"]["details"] == {"error_code": "rate_limit_exceeded"}
        assert response.headers["request-id"] == body["request_id"] and response.headers["retry-after"] == "2"
    for path in ("/v1/responses", "/v1/chat/completions", "/v1/models"):
        assert json.loads(error_response(error, {"path": path}).body) == error.body()
    assert [anthropic_type(s) for s in (400, 401, 403, 404, 409, 413, 429, 500, 502, 503, 529)] == [
        "invalid_request_error", "authentication_error", "permission_error", "not_found_error", "invalid_request_error",
        "request_too_large", "rate_limit_error", "api_error", "api_error", "overloaded_error", "overloaded_error"]
    assert dialect_at("/v1/responses") is RESPONSES and dialect_at("/v1/messages/x") is None
