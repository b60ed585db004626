"""Concurrent answers per client: the bound that rate limits cannot give.

A rate limit spaces requests out; it does not stop one client from holding hundreds
of streamed answers open at once (each a connection, a task and, for the built-in
model, a schedule). `StreamsPerClient` counts the answers in flight on every dialect's
route per client, by its `Client.account` (gateway/access.py: its key, else its
address, which a client cannot shed by naming itself anew), and answers a 429 with
`retry-after` past `--streams-per-client`.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ..access import client_of
from ..dialects import DIALECTS, error_response
from ..errors import APIError

__all__ = ["StreamsPerClient"]


#: The routes whose answers count (every dialect's).
ANSWER_PATHS = frozenset(dialect.path for dialect in DIALECTS)


class StreamsPerClient:
    """ASGI middleware: at most `limit` answers (chat completions, responses, messages
    together) in flight per client (its `Client.account`, gateway/access.py: its key,
    else its address, which a client cannot shed by naming itself anew); past it, 429
    with `retry-after`."""

    def __init__(self, app: ASGIApp, *, limit: int, paths: frozenset[str] = ANSWER_PATHS) -> None:
        self.app = app
        self.limit = limit
        self.paths = paths
        self._open: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        key = client_of(scope).account
        if self._open.get(key, 0) >= self.limit:
            error = APIError(
                429, f"Too many concurrent requests: at most {self.limit} at a time per client.",
                type="requests", code="too_many_concurrent_requests",
                headers={"retry-after": "1", "retry-after-ms": "1000"},
            )
            await error_response(error, scope)(scope, receive, send)
            return
        self._open[key] = self._open.get(key, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            left = self._open[key] - 1
            if left:
                self._open[key] = left
            else:
                del self._open[key]
