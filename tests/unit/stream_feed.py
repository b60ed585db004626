"""Feeding a body to an answer stream every way it can arrive: whole, one byte at a time,
and cut in two at every offset; every way must give the same updates, answer and error.
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
