"""Fakes for unit tests of the pure Python core: canned HTTP responses and a transport
that gives them (or a body that breaks, or a script of answers), a fake clock, a cache
entry, and a store that fails on demand."""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any, AsyncIterator, Callable

from firsttoken.cache import Entry, MemoryStore, Meta, cache_key, text_digest
from firsttoken.core import Core
from firsttoken.ratelimit import Governor
from firsttoken.stream.client import AbortSignal, HTTPRequest

OK_STREAM = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def sent_json(request: HTTPRequest) -> Any:
    """A request's JSON body as the server reads it: inflated if the core gzipped it."""
    body = request.body
    return json.loads(gzip.decompress(body) if request.headers.get("content-encoding") == "gzip" else body)


class Canned:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self._body = status, headers, body

    async def chunks(self) -> AsyncIterator[bytes]:
        yield self._body

    async def read(self, limit: int) -> bytes:
        return self._body[:limit]


class CannedTransport:
    def __init__(self, *responses: Canned) -> None:
        self.responses = list(responses)
        self.sent: list[HTTPRequest] = []

    async def send(self, request: HTTPRequest, abort: AbortSignal) -> Canned:
        self.sent.append(request)
        return self.responses.pop(0)


class Broken:
    """A 200 whose body breaks (with `error`) after `body`."""

    def __init__(self, headers: dict[str, str], body: bytes, error: Exception) -> None:
        self.status, self.headers, self._body, self._error = 200, headers, body, error

    async def chunks(self) -> AsyncIterator[bytes]:
        yield self._body
        raise self._error

    async def read(self, limit: int) -> bytes:
        return b""


class Script:
    """A transport that answers each request with the next of `responses` (a callable
    is called with the request: the test sees the request it answers)."""

    def __init__(self, *responses) -> None:
        self.responses = list(responses)
        self.sent: list[HTTPRequest] = []

    async def send(self, request: HTTPRequest, abort: AbortSignal):
        self.sent.append(request)
        response = self.responses.pop(0)
        if hasattr(response, "bind"):
            response.bind(abort)
        if isinstance(response, Exception):
            raise response
        return response(request) if callable(response) else response


class FakeTime:
    def __init__(self) -> None:
        self.now_ms = 1_000_000.0
        self.slept: list[float] = []
        self.on_sleep = None

    def clock(self) -> float:
        return self.now_ms

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now_ms += seconds * 1000
        if self.on_sleep:
            self.on_sleep()


SSE = {"content-type": "text/event-stream"}


def entry(text: str = "You are terse.", key: str | None = None, tokens: int = 4, created: float = 1.0) -> Entry:
    return Entry(
        key=key or cache_key(text, "o200k_base", "2+py3.11/balanced"),
        text=text, tokens=tokens, encoding="o200k_base", compression="2+py3.11/balanced",
        report={"level": "balanced", "passes": [], "chars_before": len(text), "chars_after": len(text),
                "tokens_before": tokens, "tokens_after": tokens, "untouched": [], "version": "2"},
        text_sha256=text_digest(text), created_at=created,
    )


class BrokenStore(MemoryStore):
    """A store that fails with `error` from the `fail_on` operations."""

    kind = "broken"

    def __init__(self, error: Exception, fail_on: set[str]) -> None:
        super().__init__()
        self.error = error
        self.fail_on = fail_on
        self.closed = False

    async def get(self, key: str) -> str | None:
        if "get" in self.fail_on:
            raise self.error
        return await super().get(key)

    async def put(self, key: str, record: str, meta: Meta) -> None:
        if "put" in self.fail_on:
            raise self.error
        await super().put(key, record, meta)

    def close(self) -> None:
        self.closed = True


def run_core(transport: Any, time_: FakeTime, *messages: Any,
             governor: Callable[[], Governor] = lambda: Governor(rng=__import__("random").Random(1))) -> tuple[Core, list[dict]]:
    """Handle `messages` (JSON text or objects) in a new core on fake time: the core, and
    every event it posted."""
    events: list[dict] = []
    core = Core(post=lambda t: events.append(json.loads(t)), transport=transport,
                clock=time_.clock, sleep=time_.sleep, governor=governor)

    async def main() -> None:
        for m in messages:
            await core.handle(m if isinstance(m, str) else json.dumps(m))

    asyncio.run(main())
    return core, events
