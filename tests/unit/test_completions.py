"""ChatStream and parse_completion: chunks as OpenAI and compatible servers send them."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import firsttoken.stream.types as types_module
import firsttoken.stream.completions as completions_module
from firsttoken.stream.completions import (
    ChatStream,
    Completion,
    ContentDelta,
    FinishReason,
    ReasoningDelta,
    RefusalDelta,
    RoleDelta,
    StreamDone,
    ToolCallDelta,
    Update,
    UsageUpdate,
    parse_completion,
)
from firsttoken.errors import (
    FirstTokenError,
    InvalidChunk,
    ResponseTooLarge,
    SSEBufferOverflow,
    StreamError,
    TruncatedStream,
    UpstreamError,
)
from tests.unit import stream_feed

BASE = {
    "id": "chatcmpl-AbC123",
    "object": "chat.completion.chunk",
    "created": 1732000000,
    "model": "gpt-4o-mini-2024-07-18",
    "system_fingerprint": "fp_0ba0d124f1",
}


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, index: int = 0, **extra: Any) -> dict:
    choice = {"index": index, "delta": delta or {}, "logprobs": None, "finish_reason": finish}
    return {**BASE, "choices": [choice], **extra}


def sse(*payloads: dict | str) -> bytes:
    """An event-stream body: one `data:` event per payload (str sent as is)."""
    parts = []
    for p in payloads:
        text = p if isinstance(p, str) else json.dumps(p, ensure_ascii=False, separators=(",", ":"))
        parts.append(b"data: " + text.encode() + b"\n\n")
    return b"".join(parts)


def assemble(body: bytes, **kw: Any) -> tuple[list[Update], Completion]:
    """Run `body` fed every way (`stream_feed`); all ways must agree."""
    return stream_feed.assemble(ChatStream, body, **kw)


HELLO = sse(
    chunk({"role": "assistant", "content": "", "refusal": None}),
    chunk({"content": "Hel"}),
    chunk({"content": "lo, "}),
    chunk({"content": "wörld 🙂\u2028"}),
    chunk({}, "stop"),
    {**BASE, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}},
    "[DONE]",
)


def test_a_plain_answer() -> None:
    updates, completion = assemble(HELLO)
    usage = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    assert updates == [
        RoleDelta("assistant", 0),
        ContentDelta("Hel", 0),
        ContentDelta("lo, ", 0),
        ContentDelta("wörld 🙂\u2028", 0),
        FinishReason("stop", 0),
        UsageUpdate(9, 4, 13, usage),
        StreamDone(),
    ]
    assert completion.content == "Hello, wörld 🙂\u2028"
    assert (completion.id, completion.model, completion.system_fingerprint) == (
        BASE["id"],
        BASE["model"],
        BASE["system_fingerprint"],
    )
    assert completion.finish_reason == "stop" and completion.usage == usage
    assert completion.reasoning == completion.refusal == "" and completion.tool_calls == []
    assert [c.index for c in completion.choices] == [0]
    assert json.loads(json.dumps(completion.to_dict()))["content"] == completion.content


def test_crlf_and_no_space_after_colon() -> None:
    body = HELLO.replace(b"\n", b"\r\n").replace(b"data: ", b"data:")
    assert assemble(body)[1].content == "Hello, wörld 🙂\u2028"


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_under_either_name(key: str) -> None:
    body = sse(chunk({key: "think "}), chunk({key: "more"}), chunk({"content": "answer"}, "stop"))
    updates, completion = assemble(body)
    assert updates[:2] == [ReasoningDelta("think ", 0), ReasoningDelta("more", 0)]
    assert (completion.reasoning, completion.content) == ("think more", "answer")


def test_reasoning_sent_under_both_names_counts_once() -> None:
    body = sse(chunk({"reasoning_content": "x", "reasoning": "x"}), chunk({}, "stop"))
    assert assemble(body)[1].reasoning == "x"


def test_refusal() -> None:
    body = sse(chunk({"refusal": "I can't "}), chunk({"refusal": "help."}), chunk({}, "stop"))
    updates, completion = assemble(body)
    assert RefusalDelta("I can't ", 0) in updates and completion.refusal == "I can't help."


# ---- Mistral: content as a list of typed parts (magistral) ----------------------------------


def test_mistral_thinking_and_text_parts() -> None:
    body = sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "Let me "}]}]}),
        chunk({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "see."}], "closed": True}]}),
        chunk({"content": [{"type": "text", "text": "It is "}, {"type": "text", "text": "4."}]}),
        chunk({}, "stop"),
        "[DONE]",
    )
    updates, completion = assemble(body)
    assert updates[1:5] == [
        ReasoningDelta("Let me ", 0),
        ReasoningDelta("see.", 0),
        ContentDelta("It is ", 0),
        ContentDelta("4.", 0),
    ]
    assert (completion.reasoning, completion.content) == ("Let me see.", "It is 4.")


def test_mistral_parts_keep_their_order_within_a_chunk() -> None:
    parts = [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "a"}, {"type": "thinking", "thinking": ""}]
    updates, completion = assemble(sse(chunk({"content": parts}, "stop")))
    assert updates == [ReasoningDelta("hm", 0), ContentDelta("a", 0), FinishReason("stop", 0)]


def test_mistral_unknown_parts_are_skipped() -> None:
    parts = [
        {"type": "image_url", "image_url": "data:,"},
        {"type": "thinking", "thinking": [{"type": "reference", "reference_ids": [1]}, {"type": "text", "text": "t"}]},
        {"type": "text", "text": "x"},
        {"type": "x_new"},
    ]
    completion = assemble(sse(chunk({"content": parts}, "stop")))[1]
    assert (completion.reasoning, completion.content) == ("t", "x")


def test_a_whole_mistral_message_with_parts() -> None:
    body = {**BODY, "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "r"}]},
                                         {"type": "text", "text": "c"}]}}]}
    completion = parse_completion(json.dumps(body))
    assert (completion.reasoning, completion.content) == ("r", "c")


@pytest.mark.parametrize(
    "content, says",
    [
        (["text"], "delta.content[0] is str, not an object"),
        ([{"type": "text", "text": 5}], "delta.content[0].text is int"),
        ([{"type": "thinking", "thinking": 5}], "delta.content[0].thinking is int"),
        ([{"type": "thinking", "thinking": [None]}], "delta.content[0].thinking[0] is NoneType"),
        ([{"type": "thinking", "thinking": [{"type": "text", "text": []}]}], "thinking[0].text is list"),
        ({"type": "text", "text": "x"}, "delta.content is dict, not a string or a list"),
    ],
)
def test_mistral_parts_of_the_wrong_type(content: Any, says: str) -> None:
    stream = ChatStream()
    stream.feed(sse(chunk({"content": "kept"})))
    with pytest.raises(InvalidChunk) as info:
        stream.feed(sse(chunk({"content": content})))
    assert says in info.value.message and info.value.partial == "kept"


def tool_delta(index: int | None, id: str | None = None, name: str | None = None, args: str | None = None) -> dict:
    call: dict[str, Any] = {"function": {}}
    if index is not None:
        call["index"] = index
    if id is not None:
        call.update(id=id, type="function")
    if name is not None:
        call["function"]["name"] = name
    if args is not None:
        call["function"]["arguments"] = args
    return {"tool_calls": [call]}


def test_parallel_tool_calls_merge_by_index() -> None:
    body = sse(
        chunk({"role": "assistant", "content": None}),
        chunk(tool_delta(0, "call_a", "get_weather", "")),
        chunk(tool_delta(0, args='{"city": ')),
        chunk(tool_delta(1, "call_b", "get_time", '{"tz"')),
        chunk(tool_delta(0, args='"Paris"}')),
        chunk(tool_delta(1, args=': "CET"}')),
        chunk({}, "tool_calls"),
        "[DONE]",
    )
    updates, completion = assemble(body)
    assert ToolCallDelta(0, "call_a", "get_weather", "", 0) in updates
    assert ToolCallDelta(1, None, None, ': "CET"}', 0) in updates
    assert completion.finish_reason == "tool_calls"
    assert completion.tool_calls == [
        {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
        {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": '{"tz": "CET"}'}},
    ]
    assert [json.loads(c["function"]["arguments"]) for c in completion.tool_calls] == [
        {"city": "Paris"},
        {"tz": "CET"},
    ]


def test_tool_calls_without_index_split_on_new_ids() -> None:
    body = sse(
        chunk(tool_delta(None, "call_a", "f", "{")),
        chunk(tool_delta(None, args="}")),
        chunk(tool_delta(None, "call_b", "g", "[]")),
        chunk({}, "tool_calls"),
    )
    calls = assemble(body)[1].tool_calls
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("call_a", "f", "{}"),
        ("call_b", "g", "[]"),
    ]


def test_repeated_id_and_name_are_not_doubled() -> None:
    body = sse(chunk(tool_delta(0, "call_a", "f", "{")), chunk(tool_delta(0, "call_a", "f", "}")), chunk({}, "stop"))
    (call,) = assemble(body)[1].tool_calls
    assert (call["id"], call["function"]["name"], call["function"]["arguments"]) == ("call_a", "f", "{}")


def test_arguments_sent_as_an_object_become_json_text() -> None:
    body = sse(chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": {"a": 1}}}]}), "[DONE]")
    assert json.loads(assemble(body)[1].tool_calls[0]["function"]["arguments"]) == {"a": 1}


def test_several_choices_are_tracked_apart() -> None:
    body = sse(
        chunk({"role": "assistant"}, index=0),
        chunk({"role": "assistant"}, index=1),
        chunk({"content": "one"}, index=1),
        chunk({"content": "zero"}, index=0),
        chunk({}, "length", index=1),
        chunk({}, "stop", index=0),
        "[DONE]",
    )
    updates, completion = assemble(body)
    assert ContentDelta("one", 1) in updates and FinishReason("length", 1) in updates
    assert (completion.content, completion.finish_reason) == ("zero", "stop")
    assert [(c.index, c.content, c.finish_reason) for c in completion.choices] == [
        (0, "zero", "stop"),
        (1, "one", "length"),
    ]


def test_choices_in_any_order() -> None:
    body = sse(chunk({"content": "b"}, "stop", index=1), chunk({"content": "a"}, "stop", index=0))
    completion = assemble(body)[1]
    assert completion.content == "a" and [c.content for c in completion.choices] == ["a", "b"]


def test_choice_zero_missing() -> None:
    completion = assemble(sse(chunk({"content": "b"}, "stop", index=2)))[1]
    assert (completion.content, completion.finish_reason) == ("", None)
    assert [c.index for c in completion.choices] == [2]


def test_unknown_fields_are_ignored() -> None:
    body = sse(
        {**chunk({"content": "a", "audio": None, "x_new": {"y": 1}}), "obfuscation": "zz", "service_tier": "default"},
        {"choices": [{"delta": {"content": "b"}, "finish_reason": None, "content_filter_results": {}}]},
        chunk({}, "stop"),
    )
    assert assemble(body)[1].content == "ab"


def test_usage_with_odd_values() -> None:
    usage = {"prompt_tokens": 3, "completion_tokens": "4", "total_tokens": True, "prompt_tokens_details": {"cached_tokens": 0}}
    updates, completion = assemble(sse({"choices": [], "usage": usage}, chunk({}, "stop")))
    assert updates[0] == UsageUpdate(3, None, None, usage) and completion.usage == usage


def test_null_usage_and_missing_choices_are_fine() -> None:
    assert assemble(sse({**BASE, "usage": None}, {"id": "x"}, "[DONE]"))[1].content == ""


# ---- ends of the stream ---------------------------------------------------------------


def test_done_without_finish_reason_is_complete() -> None:
    assert assemble(sse(chunk({"content": "a"}), "[DONE]"))[1].content == "a"


def test_finish_reason_without_done_is_complete() -> None:
    assert assemble(sse(chunk({"content": "a"}, "stop")))[1].finish_reason == "stop"


def test_truncated_stream_keeps_the_partial_text() -> None:
    body = sse(chunk({"content": "Once upon"}), chunk({"content": " a time"})) + b"data: {\"choi"
    with pytest.raises(TruncatedStream) as info:
        assemble(body)
    assert info.value.partial == "Once upon a time" and info.value.code == "truncated"


def test_unterminated_done_does_not_count() -> None:
    # §9.2.5: an event without its blank line is discarded at the end of the stream.
    with pytest.raises(TruncatedStream):
        assemble(sse(chunk({"content": "a"})) + b"data: [DONE]\n")


def test_anything_after_done_is_ignored() -> None:
    updates, completion = assemble(sse(chunk({"content": "a"}), "[DONE]", "not json", chunk({"content": "b"})))
    assert updates[-1] == StreamDone() and completion.content == "a"


def test_comments_and_other_event_types_are_skipped() -> None:
    body = b": keep-alive\n\nevent: ping\ndata: {}\n\n" + sse(chunk({"content": "a"}, "stop"))
    assert assemble(body)[1].content == "a"


# ---- errors ---------------------------------------------------------------------------


def test_error_chunk_mid_stream() -> None:
    error = {"message": "The server had an error", "type": "server_error", "code": None}
    stream = ChatStream()
    stream.feed(sse(chunk({"content": "Half an "})))
    with pytest.raises(UpstreamError) as info:
        stream.feed(sse({"error": error}))
    assert info.value.error == error and info.value.message == "The server had an error"
    assert info.value.partial == "Half an "
    assert info.value.to_dict()["error"] == error


def test_error_chunk_any_split() -> None:
    with pytest.raises(UpstreamError) as info:
        assemble(sse(chunk({"content": "x"}), {"error": "overloaded"}))
    assert info.value.partial == "x"


@pytest.mark.parametrize(
    "data",
    ['{"error": {"message": "boom", "code": 500}}', '{"message": "boom"}', "boom"],
)
def test_error_event(data: str) -> None:
    stream = ChatStream()
    stream.feed(sse(chunk({"content": "so far"})))
    with pytest.raises(UpstreamError) as info:
        stream.feed(b"event: error\ndata: " + data.encode() + b"\n\n")
    assert info.value.error["message"] == "boom" and info.value.partial == "so far"


@pytest.mark.parametrize(
    "data",
    [
        "{not json",
        "",
        "[1, 2]",
        "42",
        '"text"',
        "null",
        '{"choices": {}}',
        '{"choices": [1]}',
        '{"choices": [{"delta": []}]}',
        '{"choices": [{"index": -1, "delta": {}}]}',
        '{"choices": [{"index": true, "delta": {}}]}',
        '{"choices": [{"index": "0", "delta": {}}]}',
        '{"choices": [{"delta": {"content": 5}}]}',
        '{"choices": [{"delta": {"role": ["a"]}}]}',
        '{"choices": [{"delta": {"tool_calls": {}}}]}',
        '{"choices": [{"delta": {"tool_calls": [7]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": "f"}]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": 3}}]}}]}',
        '{"choices": [{"delta": {}, "finish_reason": 1}]}',
        '{"choices": [], "usage": 5}',
        "[" * 100_000 + "]" * 100_000,  # deep enough for RecursionError inside json
        '{"choices": [{"index": ' + "[" * 900 + "]" * 900 + "}]}",  # shallow enough to parse
    ],
)
def test_invalid_chunks(data: str) -> None:
    stream = ChatStream()
    stream.feed(sse(chunk({"content": "kept"})))
    with pytest.raises(InvalidChunk) as info:
        stream.feed(b"data: " + data.encode() + b"\n\n")
    assert info.value.partial == "kept" and info.value.code == "invalid_chunk"


def test_sse_overflow_carries_the_partial_text() -> None:
    stream = ChatStream(max_line_bytes=1024)
    with pytest.raises(SSEBufferOverflow) as info:
        stream.feed(sse(chunk({"content": "before"})) + b"data: " + b"x" * 2000)
    assert info.value.partial == "before" and info.value.limit == 1024


def test_answer_size_is_bounded() -> None:
    stream = ChatStream(max_chars=10)
    stream.feed(sse(chunk({"content": "12345"}), chunk({"reasoning": "6789"})))
    with pytest.raises(ResponseTooLarge) as info:
        stream.feed(sse(chunk({"content": "ab"})))
    assert info.value.limit == 10 and info.value.partial == "12345"
    assert isinstance(info.value, StreamError)


def test_endless_empty_choices_and_tool_calls_are_bounded_too() -> None:
    stream = ChatStream(max_chars=10)
    with pytest.raises(ResponseTooLarge):
        stream.feed(sse(*(chunk(tool_delta(i)) for i in range(20))))
    with pytest.raises(ResponseTooLarge):
        ChatStream(max_chars=10).feed(sse(*(chunk({}, index=i) for i in range(20))))


# ---- parse_completion -------------------------------------------------------------------

BODY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Hi ☃",
                "reasoning_content": "hmm",
                "refusal": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "[1]"}},
                ],
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
}


@pytest.mark.parametrize("encode", [lambda s: s, str.encode])
def test_parse_completion(encode: Any) -> None:
    completion = parse_completion(encode(json.dumps(BODY, ensure_ascii=False)))
    assert (completion.content, completion.reasoning, completion.finish_reason) == ("Hi ☃", "hmm", "tool_calls")
    assert completion.tool_calls == BODY["choices"][0]["message"]["tool_calls"]
    assert completion.usage == BODY["usage"] and completion.id == "chatcmpl-1"


def test_parse_completion_error_body() -> None:
    with pytest.raises(UpstreamError) as info:
        parse_completion(b'{"error": {"message": "Invalid API key", "type": "invalid_request_error"}}')
    assert info.value.error["type"] == "invalid_request_error"


@pytest.mark.parametrize("body", [b"", b"<html>502</html>", b"[]", b"{}", b'{"choices": 1}', b"\xff\xfe\x00", b'{"choices": [{"message": 1}]}'])
def test_parse_completion_malformed(body: bytes) -> None:
    with pytest.raises(InvalidChunk):
        parse_completion(body)


# ---- the types ----------------------------------------------------------------------


def test_updates_are_frozen_and_slotted() -> None:
    for update in assemble(HELLO)[0]:
        assert dataclasses.is_dataclass(update) and not hasattr(update, "__dict__")
        for f in dataclasses.fields(update):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(update, f.name, None)


def test_public_surface() -> None:
    for module in (completions_module, types_module):
        for name in module.__all__:
            assert hasattr(module, name), name
    assert set(types_module.__all__) <= set(completions_module.__all__)
    assert {"ChatStream", "parse_completion", "DEFAULT_MAX_CHARS"} <= set(completions_module.__all__)


# ---- properties: agreement with openai-python, fuzz ---------------------------------------

_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)


@st.composite
def chat_streams(draw: st.DrawFn) -> list[dict]:
    """Chunks as OpenAI streams them: per choice, role first, id and name of a tool call
    only in its first fragment, finish_reason last."""
    n = draw(st.integers(1, 2))
    script: list[tuple[int, dict]] = []
    for index in range(n):
        script.append((index, {"role": "assistant"}))
        for _ in range(draw(st.integers(0, 5))):
            script.append((index, {"content": draw(_text)}))
        for call in range(draw(st.integers(0, 2))):
            script.append((index, tool_delta(call, f"call_{index}_{call}", draw(st.sampled_from(["f", "g_2"])), "")))
            for _ in range(draw(st.integers(0, 3))):
                script.append((index, tool_delta(call, args=draw(_text))))
    # Interleave the choices without reordering inside one.
    # Choice 0 opens (openai-python's accumulator fails on a choice 1 arriving first;
    # test_choices_in_any_order covers that for us).
    per_choice = {i: [d for j, d in script if j == i] for i in range(n)}
    interleaved: list[dict] = [chunk(per_choice[0].pop(0))]
    for index in draw(st.permutations([i for i, _ in script[1:]])):
        interleaved.append(chunk(per_choice[index].pop(0), index=index))
    for index in range(n):
        # Not "length": openai-python raises on it.
        interleaved.append(chunk({}, draw(st.sampled_from(["stop", "tool_calls"])), index=index))
    return interleaved


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks=chat_streams(), cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_property_agrees_with_openai_python(chunks: list[dict], cuts: list[int]) -> None:
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state = ChatCompletionStreamState()
    for c in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(c))
    reference = state.get_final_completion()

    body = sse(*chunks, "[DONE]")
    completion = stream_feed.feed_cut(ChatStream, body, cuts)

    assert len(completion.choices) == len(reference.choices)
    for ours, theirs in zip(completion.choices, reference.choices):
        assert ours.index == theirs.index
        assert ours.content == (theirs.message.content or "")
        assert ours.finish_reason == theirs.finish_reason
        assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in ours.tool_calls] == [
            (c.id, c.function.name, c.function.arguments) for c in theirs.message.tool_calls or []
        ]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=10,
)
_keys = st.sampled_from(["choices", "delta", "message", "index", "content", "tool_calls", "function", "arguments",
                         "name", "id", "error", "usage", "finish_reason", "reasoning", "refusal", "role"])
_chunkish = st.recursive(
    _json,
    lambda inner: st.dictionaries(_keys, inner, max_size=4) | st.lists(inner, max_size=2),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payloads=st.lists(_chunkish, max_size=5), junk=st.binary(max_size=30), event=st.sampled_from([b"", b"event: error\n"]))
def test_fuzz_only_firsttoken_errors(payloads: list[Any], junk: bytes, event: bytes) -> None:
    body = b"".join(event + b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads) + junk
    stream = ChatStream(max_chars=50)
    try:
        stream.feed(body)
        completion = stream.close()
        assert isinstance(completion.content, str)
        json.dumps(completion.to_dict())
    except FirstTokenError as exc:
        assert isinstance(exc.partial, str)
    try:
        parse_completion(json.dumps(payloads[0] if payloads else None))
    except FirstTokenError:
        pass


def test_feed_event_for_callers_with_their_own_sse_source() -> None:
    from firsttoken.stream.sse import ServerSentEvent

    stream = ChatStream()
    data = json.dumps(chunk({"content": "hi"}))
    assert stream.feed_event(ServerSentEvent(data=data)) == [ContentDelta("hi", 0)]
    assert stream.partial == "hi" and not stream.done
    assert stream.feed_event(ServerSentEvent(data="[DONE]")) == [StreamDone()]
    assert stream.done and stream.close().content == "hi"
