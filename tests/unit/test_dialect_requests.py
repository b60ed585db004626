"""Which API dialect a request speaks, the request each builds from the same conversation,
and the core sending, streaming, counting, retrying and resuming in each."""

from __future__ import annotations

import json
from typing import Any

import pytest

from firsttoken.errors import TransportError
from firsttoken.settings import APIS, ChatSettings
from firsttoken.stream.client import build_request
from firsttoken.stream.dialects import EPHEMERAL, api_for, credentials
from firsttoken.stream.resume import events_url
from firsttoken.tokens import count_chat_detailed
from tests.unit.fakes import SSE, Broken, Canned, CannedTransport, FakeTime, Script, run_core
from tests.unit.stream_feed import messages_body, responses_body

BASE = "http://api.test/v1"
REF = "sha256:" + "a" * 64
CONVERSATION = [
    {"role": "system", "content": "You are terse."},
    {"role": "system", "content": "Answer in French."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 °C"},
    {"role": "user", "content": [{"type": "text", "text": "And this?"},
                                 {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO", "detail": "low"}}]},
    {"role": "user", "content": "Be brief."},
]


def body_of(request: Any) -> dict:
    return json.loads(request.body)


# ---- settings and the choice of dialect -----------------------------------------------


@pytest.mark.parametrize("value, api", [*((a, a) for a in APIS), ("graphql", None), (3, None), (None, None), ("", None)])
def test_the_api_setting_and_anything_else_counts_as_absent(value: Any, api: str | None) -> None:
    assert ChatSettings.from_dict({"api": value}).api == api


@pytest.mark.parametrize(
    "model, api, expected",
    [
        ("gpt-4o", None, "chat_completions"),
        ("o3-pro", None, "responses"),
        ("o3-pro-2025-06-10", None, "responses"),
        ("gpt-5-pro", None, "responses"),
        ("gpt-5.2-pro-2025-12-11", None, "responses"),
        ("gpt-5", None, "chat_completions"),
        ("claude-sonnet-4-5", None, "anthropic_messages"),
        ("openai/o3-pro", None, "chat_completions"),  # a router's name
        ("anthropic/claude-sonnet-4", None, "chat_completions"),
        ("claude-sonnet-4-5", "chat_completions", "chat_completions"),  # the user's choice wins
        ("gpt-4o", "responses", "responses"),
    ],
)
def test_which_dialect(model: str, api: str | None, expected: str) -> None:
    assert api_for(ChatSettings(model=model, api=api)) == expected


# ---- the requests -----------------------------------------------------------------------


def test_chat_completions_as_before() -> None:
    settings = ChatSettings(base_url=BASE + "/", model="gpt-4o", api_key="sk-1", max_tokens=100, headers={"x-h": "1"})
    request = build_request(CONVERSATION, settings, refs={0: REF}, headers={"x-firsttoken-client": "c"})
    body = body_of(request)
    assert request.url == BASE + "/chat/completions"
    assert body["messages"][0] == {"role": "system", "x_firsttoken_ref": REF}
    assert body["messages"][1:] == CONVERSATION[1:]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 100
    assert request.headers["authorization"] == "Bearer sk-1" and request.headers["x-h"] == "1"
    assert request.headers["x-firsttoken-client"] == "c"


def test_responses() -> None:
    settings = ChatSettings(base_url=BASE, model="o3-pro", api_key="sk-1", max_tokens=300)
    request = build_request(CONVERSATION, settings)
    body = body_of(request)
    assert request.url == BASE + "/responses" and request.headers["authorization"] == "Bearer sk-1"
    assert body["instructions"] == "You are terse.\n\nAnswer in French."
    assert (body["stream"], body["store"], body["max_output_tokens"]) == (True, False, 300)
    assert "stream_options" not in body and "previous_response_id" not in body and "messages" not in body
    assert body["input"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "18 °C"},
        {"role": "user", "content": [{"type": "input_text", "text": "And this?"},
                                     {"type": "input_image", "image_url": "data:image/png;base64,iVBO", "detail": "low"}]},
        {"role": "user", "content": "Be brief."},
    ]


def test_responses_to_a_gateway_keeps_system_messages_apart_and_refers_to_them() -> None:
    settings = ChatSettings(base_url=BASE, model="o3-pro")
    body = body_of(build_request(CONVERSATION, settings, gateway=True))
    assert "instructions" not in body and body["input"][:3] == [
        {"role": "system", "content": "You are terse."}, {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Weather in Paris?"}]
    body = body_of(build_request(CONVERSATION, settings, refs={0: REF}, gateway=True))
    assert "instructions" not in body and body["input"][:2] == [
        {"role": "system", "x_firsttoken_ref": REF}, {"role": "system", "content": "Answer in French."}]


def test_anthropic_messages() -> None:
    settings = ChatSettings(base_url=BASE, model="claude-sonnet-4-5", api_key="sk-ant-1")
    request = build_request(CONVERSATION, settings)
    body = body_of(request)
    assert request.url == BASE + "/messages"
    assert request.headers["x-api-key"] == "sk-ant-1" and "authorization" not in request.headers
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["anthropic-dangerous-direct-browser-access"] == "true"
    # Anthropic caches only up to blocks marked `cache_control`: the end of the system
    # prompt and the end of the conversation are marked, so the next turn reads both.
    assert body["system"] == [{"type": "text", "text": "You are terse.\n\nAnswer in French.", "cache_control": EPHEMERAL}]
    assert body["max_tokens"] == 4096 and body["stream"] is True
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [  # the tool result and the next user messages: one turn
            {"type": "tool_result", "tool_use_id": "call_1", "content": "18 °C"},
            {"type": "text", "text": "And this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
            {"type": "text", "text": "Be brief.", "cache_control": EPHEMERAL},
        ]},
    ]


def test_anthropic_turns_alternate_and_skip_empty_messages() -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": ""},
                {"role": "assistant", "content": "c"}, {"role": "user", "content": [{"type": "text", "text": ""}]}]
    body = body_of(build_request(messages, ChatSettings(model="claude-3-5-haiku-latest")))
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "c", "cache_control": EPHEMERAL}]},
    ]
    assert "system" not in body


def test_anthropic_to_a_gateway_keeps_system_blocks_and_refers_to_them() -> None:
    settings = ChatSettings(base_url=BASE, model="claude-sonnet-4-5")
    request = build_request(CONVERSATION, settings, refs={1: REF}, gateway=True)
    assert body_of(request)["system"] == [{"type": "text", "text": "You are terse."},
                                          {"type": "text", "x_firsttoken_ref": REF, "cache_control": EPHEMERAL}]
    assert "x-api-key" not in request.headers and "anthropic-dangerous-direct-browser-access" not in request.headers


@pytest.mark.parametrize("max_tokens, window, sent", [(None, None, 4096), (777, None, 777), (None, 8000, 2000)])
def test_anthropic_max_tokens_is_the_reply_reserve(max_tokens: int | None, window: int | None, sent: int) -> None:
    settings = ChatSettings(model="claude-sonnet-4-5", max_tokens=max_tokens, context_window=window)
    assert body_of(build_request(CONVERSATION, settings))["max_tokens"] == sent


def test_the_bodies_use_the_official_clients_field_names() -> None:
    from anthropic.types.message_create_params import MessageCreateParamsStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    responses = body_of(build_request(CONVERSATION, ChatSettings(model="o3-pro", max_tokens=5)))
    messages = body_of(build_request(CONVERSATION, ChatSettings(model="claude-sonnet-4-5")))
    assert set(responses) <= set(ResponseCreateParamsStreaming.__annotations__)
    assert set(messages) <= set(MessageCreateParamsStreaming.__annotations__)


def test_credentials_of_each_dialect() -> None:
    assert credentials(ChatSettings(api_key="k"), "responses") == {"authorization": "Bearer k"}
    assert credentials(ChatSettings(api_key="k"), "anthropic_messages") == {"x-api-key": "k"}
    assert credentials(ChatSettings(), "anthropic_messages") == {}


# ---- counting -----------------------------------------------------------------------------


def test_only_chat_completions_counts_are_exact() -> None:
    text = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Hello there"}]
    chat = count_chat_detailed(text, "gpt-4o")
    responses = count_chat_detailed(text, "gpt-4o", api="responses")
    assert chat.exact and not responses.exact and responses.total == chat.total
    assert any("Responses" in note for note in responses.notes)


def test_claude_counts_are_estimates() -> None:
    count = count_chat_detailed([{"role": "user", "content": "Hello"}], "claude-sonnet-4-5", api="anthropic_messages")
    assert not count.exact and any("no public tokenizer" in note for note in count.notes)


# ---- the core, in each dialect ------------------------------------------------------------


def send(model: str, **settings: Any) -> dict:
    return {"type": "chat.send", "id": "a", "messages": [{"role": "user", "content": "hello"}],
            "settings": {"base_url": BASE, "model": model, **settings}}


def test_a_responses_only_model_is_sent_to_responses_and_streams_as_usual() -> None:
    transport = CannedTransport(Canned(200, SSE, responses_body("Bon", "jour")))
    _, events = run_core(transport, FakeTime(), send("o3-pro"))
    assert transport.sent[0].url == BASE + "/responses"
    assert "".join(e["text"] for e in events if e["type"] == "chat.delta") == "Bonjour"
    done = events[-1]
    assert done["type"] == "chat.done" and done["finish_reason"] == "stop"
    assert done["usage"]["prompt_tokens"] == 8 and done["prompt"]["actual"] == 8
    prepared = next(e for e in events if e["type"] == "chat.prepared")
    assert prepared["exact"] is False  # o3-pro's overhead is not verified


def test_responses_counts_are_not_exact_even_for_a_verified_family() -> None:
    count = {"type": "tokens.count", "id": "c", "messages": [{"role": "user", "content": "hello"}],
             "settings": {"model": "gpt-4o"}}
    _, events = run_core(CannedTransport(), FakeTime(), count, count | {"settings": {"model": "gpt-4o", "api": "responses"}})
    assert [e["exact"] for e in events if e["type"] == "tokens.counted"] == [True, False]


def test_claude_is_sent_to_messages_and_its_count_is_labelled_an_estimate() -> None:
    transport = CannedTransport(Canned(200, SSE, messages_body("Bon", "jour")), Canned(200, SSE, messages_body("!")))
    _, events = run_core(transport, FakeTime(), send("claude-sonnet-4-5"), send("claude-sonnet-4-5") | {"id": "b"})
    assert [e["type"] for e in events].count("chat.done") == 2
    assert transport.sent[0].url == BASE + "/messages"
    prepared = next(e for e in events if e["type"] == "chat.prepared")
    assert prepared["exact"] is False
    notices = [e for e in events if e["type"] == "notice"]
    assert [(n["code"], n["reason"]) for n in notices] == [("tokens_estimated", "no_public_tokenizer")]  # once
    done = next(e for e in events if e["type"] == "chat.done")
    assert done["usage"]["prompt_tokens"] == 10 and done["usage"]["completion_tokens"] == 2


def test_the_live_count_of_claude_is_not_exact() -> None:
    count = {"type": "tokens.count", "id": "c", "messages": [{"role": "user", "content": "hello"}],
             "settings": {"model": "claude-sonnet-4-5"}}
    _, events = run_core(CannedTransport(), FakeTime(), count)
    assert events[-1]["type"] == "tokens.counted" and events[-1]["exact"] is False


def test_overloaded_before_any_text_is_retried_like_a_529() -> None:
    overloaded = {"type": "overloaded_error", "message": "Overloaded"}
    transport = CannedTransport(Canned(200, SSE, messages_body(error=overloaded)), Canned(200, SSE, messages_body("ok")))
    _, events = run_core(transport, FakeTime(), send("claude-sonnet-4-5"))
    retry = next(e for e in events if e["type"] == "chat.retry")
    assert retry["status"] == 529 and retry["error"]["code"] == "upstream_error"
    assert events[-1]["type"] == "chat.done" and len(transport.sent) == 2


def test_overloaded_after_text_ends_the_request_keeping_it() -> None:
    overloaded = {"type": "overloaded_error", "message": "Overloaded"}
    transport = CannedTransport(Canned(200, SSE, messages_body("Half", error=overloaded)))
    _, events = run_core(transport, FakeTime(), send("claude-sonnet-4-5"))
    error = events[-1]
    assert error["type"] == "chat.error" and error["error"]["code"] == "upstream_error"
    assert error["error"]["partial"] == "Half" and error["error"]["status"] == 529 and len(transport.sent) == 1


def test_a_responses_stream_is_resumed_with_its_own_decoder_and_credentials() -> None:
    stream = {**SSE, "x-firsttoken-stream": "fts_abc"}
    whole = responses_body("One", " two", " three")
    pieces = [p + b"\n\n" for p in whole.split(b"\n\n") if p]
    numbered = [p[:-1] + b"id: %d\n\n" % (n + 1) for n, p in enumerate(pieces)]
    transport = Script(Broken(stream, b"".join(numbered[:3]), TransportError("reset")),
                       Canned(200, stream, b"".join(numbered[3:])))
    _, events = run_core(transport, FakeTime(), send("claude-sonnet-4-5", api="responses", api_key="sk-1"))
    assert "".join(e["text"] for e in events if e["type"] == "chat.delta") == "One two three"
    assert events[-1]["type"] == "chat.done"
    resume = transport.sent[1]
    assert resume.url == events_url(BASE, "fts_abc", 3) and resume.headers["authorization"] == "Bearer sk-1"


def test_a_messages_stream_is_resumed_with_x_api_key() -> None:
    stream = {**SSE, "x-firsttoken-stream": "fts_abc"}
    pieces = [p + b"\n\n" for p in messages_body("One", " two").split(b"\n\n") if p]
    numbered = [p[:-1] + b"id: %d\n\n" % (n + 1) for n, p in enumerate(pieces)]
    transport = Script(Broken(stream, b"".join(numbered[:3]), TransportError("reset")),
                       Canned(200, stream, b"".join(numbered)))  # replayed from the start: taken once
    _, events = run_core(transport, FakeTime(), send("claude-sonnet-4-5", api_key="sk-ant"))
    assert "".join(e["text"] for e in events if e["type"] == "chat.delta") == "One two"
    assert transport.sent[1].headers["x-api-key"] == "sk-ant" and "authorization" not in transport.sent[1].headers


def test_a_json_body_in_another_dialect_is_a_typed_error() -> None:
    transport = CannedTransport(Canned(200, {"content-type": "application/json"}, b'{"id": "resp_1", "output": []}'))
    _, events = run_core(transport, FakeTime(), send("o3-pro"))
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["code"] == "invalid_chunk"
