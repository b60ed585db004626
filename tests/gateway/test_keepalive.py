"""Keep-alive comments through a long silence, over real sockets: an upstream silent for
many intervals (its silence ends when the client has counted the comments, never on a
timer), the built-in model thinking silently, and where a comment may go in a stream."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import AsyncIterator, Iterator

import httpx
import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from gateway.app import GatewayConfig, create_app
from gateway.keepalive import BOUNDARY_COMMENT, LINE_COMMENT, comment_after
from gateway.simulator import SimParams
from harness.servers import serve_app

INTERVAL_S = 0.02
#: Intervals of silence the upstream keeps: 60 s at the default 15 s is four; this is more.
INTERVALS = 8
CHUNK = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "o-silent",
         "choices": [{"index": 0, "delta": {"content": "after the silence"}, "finish_reason": None}]}


@pytest.mark.parametrize("tail, comment", [
    (b"", BOUNDARY_COMMENT), (b"}\n\n", BOUNDARY_COMMENT), (b"}\r\n\r\n", BOUNDARY_COMMENT), (b"}\r\r", BOUNDARY_COMMENT),
    (b"event: x\n", LINE_COMMENT), (b'data: {"a"', b""), (b"data: 1\r", b""),
])
def test_a_comment_goes_only_where_a_line_starts(tail: bytes, comment: bytes) -> None:
    assert comment_after(tail) == comment


class SilentUpstream:
    """Answers a chat completion with one event, then says nothing until `release` is set,
    then the rest: a reasoning model thinking in silence."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.answer, methods=["POST"])])

    async def answer(self, request: Request) -> StreamingResponse:
        await request.body()

        async def body() -> AsyncIterator[bytes]:
            yield b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"o-silent",' \
                  b'"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
            # Half an event, cut after a line: a comment may still go in, as a line alone.
            yield b"event: message\n"
            await asyncio.to_thread(self.release.wait, 60)
            yield b"data: " + json.dumps(CHUNK).encode() + b"\n\ndata: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def silent() -> Iterator[tuple[SilentUpstream, str]]:
    upstream = SilentUpstream()
    with serve_app(upstream.app) as origin:
        config = GatewayConfig(upstream=origin + "/v1", upstream_key="sk-up", keepalive_s=INTERVAL_S,
                               upstream_read_timeout_s=120)
        with serve_app(create_app(config)) as url:
            yield upstream, url


def test_keep_alive_comments_flow_through_a_long_upstream_silence(silent: tuple[SilentUpstream, str]) -> None:
    upstream, url = silent
    lines: list[str] = []
    with httpx.stream("POST", url + "/v1/chat/completions", timeout=60,
                      json={"model": "o-silent", "messages": [{"role": "user", "content": "x"}], "stream": True}) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            lines.append(line)
            # Counted inside the half-made event only: on a busy machine a comment may
            # also come in the 20 ms between the first event and its `event:` line.
            if "event: message" in lines and lines[lines.index("event: message"):].count(": keep-alive") == INTERVALS:
                upstream.release.set()
    # The comments came during the silence, each a line of its own; the events around
    # them arrive whole and in order, and the half-made event was not dispatched early.
    assert lines.count(": keep-alive") >= INTERVALS
    data = [line for line in lines if line.startswith("data: ")]
    assert data[-1] == "data: [DONE]" and json.loads(data[-2][6:]) == CHUNK
    # The silence fell inside an event (after its `event:` line): the comments came as
    # lines alone, with no blank line that would have dispatched it half-made.
    event_line = lines.index("event: message")
    inside = lines[event_line + 1 : lines.index(data[-2])]
    assert inside == [": keep-alive"] * len(inside) and len(inside) >= INTERVALS


def test_the_openai_client_reads_through_the_comments(silent: tuple[SilentUpstream, str]) -> None:
    upstream, url = silent
    upstream.release.set()  # no silence needed: the comments already proven; the client reads the stream
    client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
    text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="o-silent", messages=[{"role": "user", "content": "x"}], stream=True) if c.choices)
    client.close()
    assert text == "after the silence"


def test_the_built_in_model_thinking_silently_keeps_the_connection_alive() -> None:
    # Responses without a summary: the thinking streams nothing (OpenAI's hidden
    # reasoning), for 30 tokens at 100/s, 15 intervals of 0.02 s.
    config = GatewayConfig(sim=SimParams(ttft_ms=0, tps=100, tokens=3, think_tokens=30), keepalive_s=INTERVAL_S)
    with serve_app(create_app(config)) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0)
        with httpx.stream("POST", url + "/v1/responses", timeout=60,
                          json={"model": "firsttoken-sim-think", "input": "x", "stream": True}) as r:
            raw = b"".join(r.iter_bytes())
        assert raw.count(BOUNDARY_COMMENT) >= 3
        with client.responses.stream(model="firsttoken-sim-think", input="x") as stream:
            final = stream.get_final_response()
        client.close()
        assert final.output_text and final.usage.output_tokens_details.reasoning_tokens == 30


def test_whole_answers_get_no_comment_and_zero_turns_it_off() -> None:
    config = GatewayConfig(sim=SimParams(ttft_ms=0, tps=100, tokens=3, think_tokens=10), keepalive_s=0)
    with serve_app(create_app(config)) as url:
        with httpx.stream("POST", url + "/v1/responses", timeout=60,
                          json={"model": "firsttoken-sim-think", "input": "x", "stream": True}) as r:
            assert b"keep-alive" not in b"".join(r.iter_bytes())


def test_the_redactor_releases_every_line_end_at_once() -> None:
    # Held back until the next chunk, an event's blank line kept it from its reader (and
    # a comment from a line start); no secret spans a line end, so none is risked.
    from gateway.redact import REDACTED, Redactor

    secret = "sk-upstream-0123456789abcdef"
    redactor = Redactor([secret])
    assert redactor.feed(b'data: {"a":1}\n\n') == b'data: {"a":1}\n\n'
    assert redactor.feed(b"data: sk-upstream-0123") == b""
    assert redactor.feed(b"456789abcdef\n\n") == b"data: " + REDACTED + b"\n\n"
    assert redactor.feed(b"data: x") == b"" and redactor.flush() == b"data: x"


def test_a_resumable_stream_carries_the_comments_between_its_numbered_events() -> None:
    from firsttoken.stream.sse import SSEDecoder
    from tests.gateway.stream_client import me

    config = GatewayConfig(sim=SimParams(ttft_ms=0, tps=100, tokens=3, think_tokens=30), keepalive_s=INTERVAL_S)
    with serve_app(create_app(config)) as url:
        r = httpx.post(url + "/v1/responses", json={"model": "firsttoken-sim-think", "input": "x", "stream": True},
                       headers=me(), timeout=60)
    assert r.headers["x-firsttoken-stream"] and r.content.count(BOUNDARY_COMMENT) >= 3
    events = [e for e in SSEDecoder().feed(r.content) if e.data]
    assert [int(e.id) for e in events] == list(range(1, len(events) + 1))
    assert json.loads(events[-1].data)["type"] == "response.completed"
