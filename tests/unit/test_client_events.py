"""`stream_chat` yields what happened, in order: the response, then per network chunk the
bytes and the text they carried, then the answer; the same events however the body is
split, and the text before an error still comes out ahead of it."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

import pytest

from firsttoken.errors import UpstreamError
from firsttoken.stream.client import (
    AbortSignal,
    BytesSeen,
    Finished,
    HTTPRequest,
    Response,
    StreamEvent,
    Text,
    stream_chat,
)
from tests.unit.fakes import SSE

REQUEST = HTTPRequest("POST", "http://api.test/v1/chat/completions", {}, b"{}")
BODY = (
    b'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
    b": keep-alive\n\n"
    b'data: {"choices":[{"index":0,"delta":{"content":"lo","reasoning_content":"hm"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


class Pieces:
    """A response whose body arrives as the given network chunks."""

    def __init__(self, status: int, headers: dict[str, str], pieces: list[bytes]) -> None:
        self.status, self.headers, self.pieces = status, headers, pieces

    async def chunks(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece

    async def read(self, limit: int) -> bytes:
        return b"".join(self.pieces)[:limit]


class Once:
    def __init__(self, response: Pieces) -> None:
        self.response = response

    async def send(self, request: HTTPRequest, abort: AbortSignal) -> Pieces:
        return self.response


def events_of(response: Pieces) -> list[StreamEvent]:
    async def main() -> list[StreamEvent]:
        return [e async for e in stream_chat(Once(response), REQUEST, abort=AbortSignal(), clock=lambda: 0.0)]

    return asyncio.run(main())


def test_the_response_then_bytes_and_text_per_chunk_then_the_answer() -> None:
    pieces = BODY.split(b"\n\n")
    pieces = [p + b"\n\n" for p in pieces if p]
    events = events_of(Pieces(200, SSE, pieces))
    assert events[0] == Response(200, SSE)
    kinds = [type(e).__name__ for e in events[1:]]
    assert kinds == ["BytesSeen", "Text", "BytesSeen", "BytesSeen", "Text", "BytesSeen", "BytesSeen", "Finished"]
    texts = [e for e in events if isinstance(e, Text)]
    assert texts == [Text("Hel", "", [], 0), Text("lo", "hm", [], 0)]
    final = events[-1]
    assert isinstance(final, Finished) and final.completion.content == "Hello"
    assert final.completion.finish_reason == "stop"


@pytest.mark.parametrize("size", [1, 7, len(BODY)])
def test_the_text_and_the_answer_do_not_depend_on_how_the_body_is_split(size: int) -> None:
    pieces = [BODY[i : i + size] for i in range(0, len(BODY), size)]
    events = events_of(Pieces(200, SSE, pieces))
    assert isinstance(events[0], Response)
    assert sum(isinstance(e, BytesSeen) for e in events) == len(pieces)
    assert "".join(e.text for e in events if isinstance(e, Text)) == "Hello"
    assert "".join(e.reasoning for e in events if isinstance(e, Text)) == "hm"
    assert isinstance(events[-1], Finished) and events[-1].completion.content == "Hello"


def test_text_that_came_with_an_error_is_yielded_before_the_error() -> None:
    body = (b'data: {"choices":[{"index":0,"delta":{"content":"par"}}]}\n\n'
            b'data: {"error":{"message":"overloaded"}}\n\n')
    seen: list[StreamEvent] = []

    async def main() -> None:
        async for event in stream_chat(Once(Pieces(200, SSE, [body])), REQUEST, abort=AbortSignal(), clock=lambda: 0.0):
            seen.append(event)

    with pytest.raises(UpstreamError) as caught:
        asyncio.run(main())
    assert caught.value.partial == "par"
    assert [type(e) for e in seen] == [Response, BytesSeen, Text] and seen[-1].text == "par"


def test_a_json_body_is_the_same_answer_in_one_piece() -> None:
    body = b'{"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}'
    events = events_of(Pieces(200, {"content-type": "application/json"}, [body]))
    assert [type(e) for e in events] == [Response, Text, Finished]
    assert events[1] == Text("Hi", "", [], 0) and events[2].completion.content == "Hi"
