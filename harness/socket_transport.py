"""A `firsttoken.stream.client.Transport` over real sockets (httpx), for CPython-side tests of
the core against a real gateway, and `run_core`, a core wired to it. The page uses
`firsttoken.browser.FetchTransport`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
from typing import Any, AsyncIterator, Mapping

import httpx

from firsttoken.core import Core
from firsttoken.ratelimit import Governor
from firsttoken.stream.client import AbortSignal, HTTPRequest
from firsttoken.errors import Aborted, TransportError


class SocketResponse:
    def __init__(self, response: httpx.Response, abort: AbortSignal) -> None:
        self._response = response
        self._abort = abort
        self.status = response.status_code
        self.headers: Mapping[str, str] = dict(response.headers)

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except (httpx.HTTPError, httpx.StreamError) as exc:
            if self._abort.aborted:
                raise Aborted("stopped") from None
            raise TransportError(f"the connection broke: {type(exc).__name__}") from None
        finally:
            await self._response.aclose()

    async def read(self, limit: int) -> bytes:
        out = bytearray()
        async for chunk in self.chunks():
            out += chunk
            if len(out) >= limit:
                break
        return bytes(out[:limit])


class SocketTransport:
    def __init__(self, client: httpx.AsyncClient, sent: list[HTTPRequest] | None = None) -> None:
        self.client = client
        self.sent = sent if sent is not None else []  # every request, as the core made it

    async def send(self, request: HTTPRequest, abort: AbortSignal) -> SocketResponse:
        self.sent.append(request)
        req = self.client.build_request(request.method, request.url, headers=request.headers, content=request.body)
        try:
            response = await self.client.send(req, stream=True)
        except httpx.HTTPError as exc:
            raise TransportError(f"the request could not be sent: {type(exc).__name__}") from None
        # Stop = close the response: the pending read fails, and we report Aborted.
        abort.on_abort(lambda: asyncio.ensure_future(response.aclose()))
        return SocketResponse(response, abort)


def run_core(gateway_url: str, script, governor=lambda: Governor(max_attempts=1), sent: list[HTTPRequest] | None = None,
             **options: Any):
    """Run `script(core, events, wait_for)` against a core wired to a socket transport.
    Retries are off unless a test asks for them (`governor`); `sent` collects the
    requests the core made; `options`: more of `Core`'s (a cache, say)."""

    async def main():
        events: list[dict] = []
        arrived = asyncio.Event()

        def post(text: str) -> None:
            events.append(json.loads(text))
            arrived.set()

        async def wait_for(predicate):
            while not any(predicate(e) for e in events):
                arrived.clear()
                await asyncio.wait_for(arrived.wait(), timeout=30)
            return next(e for e in events if predicate(e))

        async with httpx.AsyncClient(timeout=30) as client:
            core = Core(post=post, transport=SocketTransport(client, sent), clock=lambda: time.time() * 1000, sleep=asyncio.sleep,
                        governor=governor, **options)
            await script(core, events, wait_for)
        return events

    # On a thread of its own: asyncio.run needs a thread without a running loop.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result()
