"""The ASGI response that follows a stream's log: SSE batches to one client.

Two ways to treat a client that goes away (ASGI `http.disconnect`):

- The POST that started the stream (`outlive_client=True`) keeps its ASGI call going
  until the stream ends, still calling `send` for every batch. uvicorn's `send` does
  nothing once its client is gone (uvicorn/protocols/http/h11_impl.py, `send`: "if
  self.disconnected: return"), but the middlewares around this response see every
  byte as before: flow control meters the answer's usage from `send`
  (gateway/limits/middleware.py), and `StreamsPerClient` counts the request until it
  ends. Starlette's `StreamingResponse` is not used: it stops at a disconnect.
- A resume (`outlive_client=False`) stops reading at once: nothing is metered on it.

Either way the client's speed never reaches the generation: a follower reads all the
events visible when it turns, sends them as one body chunk (one write per turn, not
per event: the page's benchmarks stream 500 tokens a second), and a slow client
simply gets bigger chunks.
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator, Callable, Sequence

from starlette.types import Receive, Scope, Send

__all__ = ["EventStreamResponse", "SSE_HEADERS"]

#: The headers of every resumable stream's answer, besides its id.
SSE_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
)


class EventStreamResponse:
    def __init__(
        self,
        batches: AsyncIterator[bytes],
        *,
        headers: Sequence[tuple[bytes, bytes]],
        status_code: int = 200,
        outlive_client: bool,
        on_leave: Callable[[], None] | None = None,
        failure: Callable[[], BaseException | None] | None = None,
    ) -> None:
        """`on_leave` runs once, when the client goes away or the body is complete;
        `failure()`, asked at the end, is an exception to raise instead of ending the
        body cleanly (the source's own failure: its client sees the connection cut)."""
        self.batches = batches
        self.headers = list(headers)
        self.status_code = status_code
        self.outlive_client = outlive_client
        self.on_leave = on_leave
        self.failure = failure
        self._left = False

    def _leave(self) -> None:
        if not self._left:
            self._left = True
            if self.on_leave is not None:
                self.on_leave()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gone = asyncio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            self._leave()

        watcher = asyncio.create_task(watch())
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.headers})
            if self.outlive_client:
                await self._pump(send)
                return
            pump = asyncio.create_task(self._pump(send))
            stop = asyncio.create_task(gone.wait())
            try:
                await asyncio.wait({pump, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                stop.cancel()
                if not pump.done():
                    pump.cancel()
                    await asyncio.gather(pump, return_exceptions=True)
            if not pump.cancelled():
                pump.result()
        finally:
            watcher.cancel()
            self._leave()
            aclose = getattr(self.batches, "aclose", None)
            if aclose is not None:
                await aclose()

    async def _pump(self, send: Send) -> None:
        async for batch in self.batches:
            await send({"type": "http.response.body", "body": batch, "more_body": True})
        failure = self.failure() if self.failure is not None else None
        if failure is not None:
            raise failure
        await send({"type": "http.response.body", "body": b"", "more_body": False})
