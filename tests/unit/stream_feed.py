"""Feeding a body to an answer stream every way it can arrive: whole, one byte at a time,
and cut in two at every offset; every way must give the same updates, answer and error.
And the smallest well-formed body of each dialect, for tests of what they share.
Shared by the tests of each dialect (`ChatStream`, `ResponsesStream`, `MessagesStream`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Callable

from firsttoken.errors import FirstTokenError
from firsttoken.stream.answer import AnswerStream
from firsttoken.stream.types import Completion, Update

Outcome = tuple[list[Update], Completion | None, tuple | None]


def typed_sse(*events: dict[str, Any], named: bool = True) -> bytes:
    """An event stream of typed events (Responses, Messages): `event: <type>` (unless
    not `named`) and the event as `data:`."""
    out = []
    for event in events:
        name = f"event: {event['type']}\n".encode() if named else b""
        out.append(name + b"data: " + json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n")
    return b"".join(out)


def chat_body(*texts: str, end: bool = True) -> bytes:
    """A Chat Completions stream of `texts`, then (with `end`) its finish and [DONE]."""
    chunks = [{"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in texts]
    if end:
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    return body + (b"data: [DONE]\n\n" if end else b"")


def responses_body(*texts: str, end: bool = True) -> bytes:
    """A Responses stream of `texts`, then (with `end`) `response.completed` with usage."""
    events: list[dict] = [{"type": "response.created", "response": {"id": "resp_1", "model": "o3-pro"}},
                          {"type": "response.output_item.added", "output_index": 0,
                           "item": {"type": "message", "role": "assistant", "content": []}}]
    events += [{"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": t} for t in texts]
    if end:
        usage = {"input_tokens": 8, "output_tokens": 2, "total_tokens": 10}
        events.append({"type": "response.completed", "response": {"id": "resp_1", "usage": usage}})
    return typed_sse(*events)


def messages_body(*texts: str, error: dict | None = None, end: bool = True) -> bytes:
    """A Messages stream of `texts`, then an `error` event with `error`, or (with `end`)
    the stop reason, usage and `message_stop`."""
    events: list[dict] = [
        {"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
                                              "usage": {"input_tokens": 7, "cache_read_input_tokens": 3, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in texts]
    if error is not None:
        return typed_sse(*events, {"type": "error", "error": error})
    if end:
        events += [{"type": "content_block_stop", "index": 0},
                   {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
                   {"type": "message_stop"}]
    return typed_sse(*events)


def splits(data: bytes) -> Iterator[list[bytes]]:
    """Whole, one byte at a time, and cut in two at every offset."""
    yield [data]
    yield [data[i : i + 1] for i in range(len(data))]
    for i in range(1, len(data)):
        yield [data[:i], data[i:]]


def run(new: Callable[..., AnswerStream], chunks: list[bytes], **kw: Any) -> Outcome:
    """Feed `chunks` to `new(**kw)` and close it: the updates, and the answer or the
    error's type and partial text."""
    stream = new(**kw)
    updates: list[Update] = []
    try:
        for c in chunks:
            updates += stream.feed(c)
        return updates, stream.close(), None
    except FirstTokenError as exc:
        return updates, None, (type(exc), exc.partial)


def feed_cut(new: Callable[..., AnswerStream], body: bytes, cuts: list[int]) -> Completion:
    """Feed `body` cut at `cuts` (taken modulo its length) to `new()`; close it."""
    points = sorted({c % (len(body) + 1) for c in cuts})
    stream = new()
    for a, b in zip([0, *points], [*points, len(body)]):
        stream.feed(body[a:b])
    return stream.close()


def assemble(new: Callable[..., AnswerStream], body: bytes, **kw: Any) -> tuple[list[Update], Completion]:
    """Run `body` fed every way; all ways must agree. Raises the stream's error."""
    expected = run(new, [body], **kw)
    for chunks in splits(body):
        got = run(new, chunks, **kw)
        # Updates before an error may be cut differently; the error and its partial not.
        assert (got if expected[2] is None else got[1:]) == (expected if expected[2] is None else expected[1:])
    updates, completion, error = expected
    if error is not None:  # raise it as it came, with all its fields
        stream = new(**kw)
        stream.feed(body)
        stream.close()
    assert completion is not None
    return updates, completion
