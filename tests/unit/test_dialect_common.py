"""What every dialect's stream shares (`firsttoken.stream.answer`), checked in each: a
stream cut before its end, a 10 MB delta, the bound on the answer, numbered events of a
resumed stream, random bytes. Each dialect's own events: test_completions.py,
test_dialect_responses.py, test_dialect_messages.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firsttoken.errors import FirstTokenError, ResponseTooLarge, SSEBufferOverflow, TruncatedStream
from firsttoken.stream.answer import AnswerStream
from firsttoken.stream.completions import ChatStream
from firsttoken.stream.messages import MessagesStream
from firsttoken.stream.responses import ResponsesStream
from tests.unit import stream_feed
from tests.unit.stream_feed import chat_body, messages_body, responses_body


@dataclass(frozen=True)
class Dialect:
    new: type[AnswerStream]
    body: Callable[..., bytes]  # texts (and `end=False`) → the body
    end: str  # what a stream cut short did not see


DIALECTS = [
    pytest.param(Dialect(ChatStream, chat_body, "[DONE] or a finish_reason"), id="chat_completions"),
    pytest.param(Dialect(ResponsesStream, responses_body, "response.completed"), id="responses"),
    pytest.param(Dialect(MessagesStream, messages_body, "message_stop"), id="anthropic_messages"),
]


def pieces(body: bytes) -> list[bytes]:
    return [p + b"\n\n" for p in body.split(b"\n\n") if p]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_whole_answer_every_way_it_can_arrive(dialect: Dialect) -> None:
    completion = stream_feed.assemble(dialect.new, dialect.body("Hel", "lo 🙂", "\u2028"))[1]
    assert completion.content == "Hello 🙂\u2028"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_stream_cut_before_its_end_is_truncated_and_keeps_the_text(dialect: Dialect) -> None:
    body = dialect.body("Once upon", " a time", end=False)
    with pytest.raises(TruncatedStream) as info:
        stream_feed.assemble(dialect.new, body)
    assert info.value.partial == "Once upon a time" and dialect.end in info.value.message


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_stream_cut_inside_the_event_after_the_text_is_truncated(dialect: Dialect) -> None:
    body = dialect.body("Once upon", " a time")
    text_end = body.index(b" a time") + body[body.index(b" a time"):].index(b"\n\n") + 2
    after = body[text_end:].index(b"\n\n")
    with pytest.raises(TruncatedStream) as info:
        stream_feed.assemble(dialect.new, body[: text_end + after // 2])
    assert info.value.partial == "Once upon a time"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_10_mb_delta_is_a_typed_error_keeping_the_text(dialect: Dialect) -> None:
    stream = dialect.new()
    huge = pieces(dialect.body("x" * 10_000_000, end=False))[-1]
    with pytest.raises(SSEBufferOverflow) as info:
        stream.feed(dialect.body("before", end=False))
        for i in range(0, len(huge), 1 << 16):
            stream.feed(huge[i : i + (1 << 16)])
    assert info.value.partial == "before" and info.value.limit == dialect.new.MAX_LINE_BYTES < 10_000_000


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_answer_is_bounded(dialect: Dialect) -> None:
    stream = dialect.new(max_chars=10)
    body = pieces(dialect.body("12345", "678901", end=False))
    stream.feed(b"".join(body[:-1]))
    with pytest.raises(ResponseTooLarge) as info:
        stream.feed(body[-1])
    assert info.value.partial == "12345" and info.value.limit == 10


@pytest.mark.parametrize("dialect", DIALECTS)
def test_numbered_events_are_taken_once_across_a_reconnect(dialect: Dialect) -> None:
    numbered = [p[:-1] + b"id: %d\n\n" % (n + 1) for n, p in enumerate(pieces(dialect.body("One", " two", " three")))]
    stream = dialect.new(after=0)
    stream.sequenced = True  # a gateway named the stream
    for piece in numbered[:-2]:
        stream.feed(piece)
    stream.reconnect()
    for piece in numbered[1:]:  # the gateway replays from an older event
        stream.feed(piece)
    assert stream.close().content == "One two three" and stream.last_event == len(numbered)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_resumed_stream_starts_from_the_text_shown(dialect: Dialect) -> None:
    numbered = [p[:-1] + b"id: %d\n\n" % (n + 1) for n, p in enumerate(pieces(dialect.body("One", " two")))]
    after = next(n for n, p in enumerate(numbered) if b"One" in p) + 1
    stream = dialect.new(prefix="One", after=after)
    stream.feed(b"".join(numbered))
    assert stream.close().content == "One two"


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.tuples(st.sampled_from([b"", b"data: ", b"data:", b"event: error\ndata: ", b"id: 3\n"]),
                             st.binary(max_size=40)),
                   max_size=6),
    eol=st.sampled_from([b"\n\n", b"\r\n\r\n", b"\r\r", b""]),
)
def test_random_bytes_raise_only_firsttoken_errors(dialect: Dialect, parts: list[tuple[bytes, bytes]], eol: bytes) -> None:
    stream = dialect.new(max_chars=64, max_line_bytes=64, max_event_bytes=128)
    try:
        for prefix, junk in parts:
            stream.feed(prefix + junk + eol)
        stream.close()
    except FirstTokenError as exc:
        assert isinstance(exc.partial, str)


# Objects built from the words each dialect's events use, nested at random: every
# handler meets every wrong type.
_text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
_keys = st.sampled_from([
    "type", "choices", "delta", "content", "index", "finish_reason", "tool_calls", "function", "arguments",
    "text", "item", "response", "output_index", "content_index", "usage", "error", "call_id", "name", "role",
    "incomplete_details", "reason", "thinking", "partial_json", "content_block", "message", "stop_reason", "id",
    "input", "output_tokens", "input_tokens",
])
_types = st.sampled_from([
    "response.output_text.delta", "response.output_item.added", "response.completed", "response.incomplete",
    "response.function_call_arguments.delta", "response.failed", "response.refusal.done",
    "response.reasoning_summary_text.delta", "message_start", "content_block_start", "content_block_delta",
    "content_block_stop", "message_delta", "message_stop", "error", "text_delta", "input_json_delta", "tool_use",
    "thinking_delta", "text", "thinking", "function_call", "message", "[DONE]",
])
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | _text | _types,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payloads=st.lists(st.dictionaries(_keys, _json, max_size=5), max_size=6), junk=st.binary(max_size=30))
def test_fuzz_only_firsttoken_errors(dialect: Dialect, payloads: list[Any], junk: bytes) -> None:
    body = b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads) + junk
    stream = dialect.new(max_chars=50)
    try:
        stream.feed(body)
        completion = stream.close()
        json.dumps(completion.to_dict())
    except FirstTokenError as exc:
        assert isinstance(exc.partial, str)
