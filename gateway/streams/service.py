"""Resumable streams as the app sees them: detach a streamed answer, then find it again.

`Streams.detach` is called with every streamed answer, in each API (Chat Completions,
Responses, Messages: the events are kept as bytes, whatever their shape). It makes the answer
resumable only for a firsttoken client (a valid `x-firsttoken-client` header, so
`access.Client.owner` names its owner) and only for a 2xx `text/event-stream`:
anything else (the official `openai` client, curl, errors) goes out untouched, byte
for byte as before. A resumable answer runs as a generation of its own (`run`), and
the POST's response follows its log from the first event (`response`), with the
header `x-firsttoken-stream: <id>`.

Memory or Redis: without `--redis` the process's `LocalStreams` keeps every stream;
with it, `RedisStreams` keeps them for every process and the local registry holds the
live ones this process generates. Redis down when a stream would start: served
without resume when flow control fails open (the built-in model), a 503 when it fails
closed (in front of an upstream), as flow control itself answers.

Shutdown (`begin_shutdown`, from the server as it starts to stop): generations whose
clients all left are stopped (the process would otherwise wait `max_s` for them);
those still read go on until their readers leave, as uvicorn lets any open response
finish.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from typing import AsyncIterator, cast

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from firsttoken.stream.resume import STREAM_HEADER  # the wire name, defined once

from ..access import client_of
from ..errors import APIError
from ..shared import SharedState, SharedStateDown
from . import run
from .limits import ResumeLimits
from .log import StreamLog, StreamStatus
from .memory import LocalStreams
from .redis import RedisStreams
from .response import SSE_HEADERS, EventStreamResponse

__all__ = ["STREAM_HEADER", "Streams", "is_stream_id", "new_stream_id", "owner_of", "store_down"]

_ID = re.compile(r"fts_[A-Za-z0-9_-]{22}\Z")


def new_stream_id() -> str:
    """A fresh id: 128 random bits (`secrets`), unguessable."""
    return "fts_" + secrets.token_urlsafe(16)


def is_stream_id(value: str) -> bool:
    return bool(_ID.match(value))


def owner_of(request: Request) -> str | None:
    """The firsttoken client a request speaks for (gateway/access.py), or None."""
    return client_of(request.scope).owner


def store_down() -> APIError:
    return APIError(
        503, "The gateway cannot reach the store of resumable streams; try again shortly.",
        type="server_error", code="stream_store_unavailable",
        headers={"retry-after": "1", "retry-after-ms": "1000"},
    )


class Streams:
    def __init__(
        self,
        limits: ResumeLimits,
        *,
        fail_open: bool,
        shared: SharedState | None = None,
        redis_url: str | None = None,
    ) -> None:
        self.limits = limits
        self.fail_open = fail_open
        self.local = LocalStreams(limits, keep_ended=shared is None)
        self.redis = RedisStreams(shared, redis_url, limits, self.local) if shared is not None and redis_url else None
        self.stopping = False

    # ---- the POST ----------------------------------------------------------------

    async def detach(self, request: Request, response: Response, api: str = "chat") -> Response | EventStreamResponse:
        """`response`, an answer in `api`'s events (a dialect's name: "chat",
        "responses", "messages"), as a resumable stream, when it may be one; else
        `response` itself."""
        owner = owner_of(request)
        if (
            owner is None
            or self.stopping
            or not isinstance(response, StreamingResponse)
            or not 200 <= response.status_code < 300
            or not response.headers.get("content-type", "").startswith("text/event-stream")
        ):
            return response
        stream_id = new_stream_id()
        log = self.local.open(stream_id, owner, created_at=time.time(), mirrored=self.redis is not None, api=api)
        if log is None:
            return response
        if self.redis is not None:
            try:
                made = await self.redis.create(log)
            except SharedStateDown:
                self.local.drop(stream_id)
                if self.fail_open:
                    return response
                await _discard(response)
                raise store_down() from None
            if not made:
                self.local.drop(stream_id)
                return response
        # The dialects stream bytes (gateway/dialects); starlette types any body.
        run.start(log, cast(AsyncIterator[bytes], response.body_iterator), response.background, self.limits, on_end=self._ended)
        if self.redis is not None:
            self.redis.mirror(log)
        log.followers += 1
        headers = [*response.raw_headers, (STREAM_HEADER.encode(), stream_id.encode())]
        return EventStreamResponse(
            log.follow(0), headers=headers, status_code=response.status_code, outlive_client=True,
            on_leave=lambda: self._left(log), failure=lambda: log.failure,
        )

    def _ended(self, log: StreamLog) -> None:
        self.local.ended(log)

    def _left(self, log: StreamLog) -> None:
        log.followers -= 1
        if self.stopping and log.followers <= 0:
            run.stop(log, run.STOP_SHUTDOWN)

    # ---- the routes ----------------------------------------------------------------

    async def status(self, stream_id: str, owner: str) -> StreamStatus | None:
        """Raises `SharedStateDown` (with Redis)."""
        if self.redis is not None:
            return await self.redis.status(stream_id, owner)
        log = self.local.get(stream_id, owner)
        return log.snapshot() if log is not None else None

    async def cancel(self, stream_id: str, owner: str) -> StreamStatus | None:
        """Stop the stream's generation (idempotent) and wait, briefly, until it has let
        go of its source; its status after. Raises `SharedStateDown` (with Redis)."""
        status = await self.redis.cancel(stream_id, owner) if self.redis is not None else None
        log = self.local.get(stream_id, owner)
        if log is not None:
            run.stop(log, run.STOP_CANCEL)
            if log.task is not None:
                await asyncio.wait({log.task}, timeout=5.0)
            if self.redis is None:
                status = log.snapshot()
        return status

    def resume(self, stream_id: str, owner: str, after: int) -> EventStreamResponse:
        """A resume's answer (for a stream `status` just found): the events after
        `after`, then live ones, until the stream ends or the client leaves."""
        log = self.local.get(stream_id, owner)
        events: AsyncIterator[bytes]
        if self.redis is not None:
            events = self.redis.follow(stream_id, owner, after)
        elif log is not None:
            events = log.follow(after)
        else:
            events = _nothing()
        on_leave = None
        if log is not None:  # generated here: a reader keeps it going through a shutdown
            log.followers += 1
            on_leave = lambda: self._left(log)  # noqa: E731
        headers = [*SSE_HEADERS, (STREAM_HEADER.encode(), stream_id.encode())]
        return EventStreamResponse(events, headers=headers, outlive_client=False, on_leave=on_leave)

    # ---- the process's life ----------------------------------------------------------

    def begin_shutdown(self) -> None:
        self.stopping = True
        for log in self.local.live():
            if log.followers <= 0:
                run.stop(log, run.STOP_SHUTDOWN)

    async def aclose(self) -> None:
        self.stopping = True
        tasks = []
        for log in self.local.live():
            run.stop(log, run.STOP_SHUTDOWN)
            if log.task is not None:
                tasks.append(log.task)
        if tasks:
            await asyncio.wait(tasks, timeout=10.0)
        if self.redis is not None:
            await self.redis.aclose()
        self.local.close()


async def _discard(response: StreamingResponse) -> None:
    """Release a streamed answer that will not be sent (its upstream request, if any)."""
    aclose = getattr(response.body_iterator, "aclose", None)
    if aclose is not None:
        await aclose()
    if response.background is not None:
        await response.background()


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # an async generator that yields nothing
