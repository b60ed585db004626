"""What the tests of resumable streams share: a client of the routes (headers, reads of
a stream in as many steps as a test needs) and an upstream that records its request
being aborted. A helper module, so that no test module imports another."""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Callable

import httpx

from firsttoken.stream.sse import ServerSentEvent, SSEDecoder

SIM = "x-firsttoken-sim"
CLIENT_HEADER = "x-firsttoken-client"
STREAM = "x-firsttoken-stream"
CLIENT = "client-" + "0123456789abcdef"
OTHER = "client-" + "fedcba9876543210"
CHAT = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "resume me, please"}], "stream": True}
SLOW = "ttft_ms=0,tps=40,tokens=48"
FAST = "ttft_ms=0,tps=100000"
NEVER = "ttft_ms=0,tps=1,tokens=100000"  # runs until it is cancelled
STREAM_ID = re.compile(r"fts_[A-Za-z0-9_-]{22}\Z")


def me(client: str = CLIENT, **more: str) -> dict[str, str]:
    return {CLIENT_HEADER: client, **more}


class Reader:
    """The events of one streamed response, read as they come, in as many calls as needed."""

    def __init__(self, response: httpx.Response) -> None:
        self.chunks = response.iter_raw()
        self.decoder = SSEDecoder()
        self.pending: list[ServerSentEvent] = []
        #: Every event read so far (kept when the connection breaks).
        self.seen: list[ServerSentEvent] = []

    def __call__(self, until: Callable[[list[ServerSentEvent]], bool] | None = None) -> list[ServerSentEvent]:
        events: list[ServerSentEvent] = []
        while True:
            while self.pending:
                events.append(self.pending.pop(0))
                self.seen.append(events[-1])
                if until is not None and until(events):
                    return events
            chunk = next(self.chunks, None)
            if chunk is None:
                return events + self.decoder.close()
            self.pending = self.decoder.feed(chunk)


def read(response: httpx.Response, until: Callable[[list[ServerSentEvent]], bool] | None = None) -> list[ServerSentEvent]:
    """The events of a streamed response, as they come; stops early once `until`, and
    goes on from there when called again."""
    reader = getattr(response, "_events_reader", None)
    if reader is None:
        reader = response._events_reader = Reader(response)  # type: ignore[attr-defined]
    return reader(until)


def content(events: list[ServerSentEvent]) -> str:
    out = []
    for event in events:
        if event.data and event.data != "[DONE]":
            for choice in json.loads(event.data).get("choices") or []:
                out.append(choice["delta"].get("content") or "")
    return "".join(out)


def contents(n: int) -> Callable[[list[ServerSentEvent]], bool]:
    """`until` for: n events with content read."""
    return lambda events: sum(1 for e in events if '"content":"' in e.data and '"content":""' not in e.data) >= n


def whole_answer(base: str, sim: str = FAST, chat: dict = CHAT) -> str:
    r = httpx.post(base + "/v1/chat/completions", json={**chat, "stream": False}, headers={SIM: sim}, timeout=30)
    return r.json()["choices"][0]["message"]["content"]


def start(client: httpx.Client, sim: str, who: dict[str, str] | None = None, chat: dict = CHAT) -> Any:
    return client.stream("POST", "/v1/chat/completions", json=chat, headers={**(who or me()), SIM: sim})


def status(base: str, stream_id: str, who: dict[str, str] | None = None) -> httpx.Response:
    return httpx.get(f"{base}/v1/streams/{stream_id}", headers=who or me(), timeout=30)


def cancel(base: str, stream_id: str, who: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(f"{base}/v1/streams/{stream_id}/cancel", json={}, headers=who or me(), timeout=30)


def numbered(body: bytes) -> list[int]:
    """The `id:` of every event block of a raw body (which must end each block)."""
    blocks = body.split(b"\n\n")
    assert blocks[-1] == b""
    ids = []
    for block in blocks[:-1]:
        last = block.split(b"\n")[-1]
        assert last.startswith(b"id: "), block
        ids.append(int(last[4:]))
    return ids


# The keep-alive after it carries the event past the gateway's redactor, which holds
# back a secret's length of the stream's tail (gateway/redact.py).
FIRST_EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n: keep-alive\n\n'


class HangingUpstream:
    """An OpenAI-compatible upstream (an ASGI app) that sends the first event of each
    answer and then holds the request open until its client goes away, which it records."""

    def __init__(self) -> None:
        self.answering = threading.Event()
        self.closed = threading.Event()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                await send({"type": message["type"] + ".complete"})
                if message["type"] == "lifespan.shutdown":
                    return
        while (message := await receive())["type"] == "http.request" and message.get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": FIRST_EVENT, "more_body": True})
        self.answering.set()
        while (await receive())["type"] != "http.disconnect":
            pass
        self.closed.set()
