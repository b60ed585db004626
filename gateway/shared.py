"""The Redis connection that gateway processes share (`--redis URL`), and its health.

Everything kept in Redis is written by one atomic Lua script per operation (the rate
buckets in `gateway/flow/buckets.py`, the cache references in `gateway/cache_refs.py`),
so processes never read-modify-write across round trips. Failures are reported as
`SharedStateDown`, one type, which callers turn into their fail-open or fail-closed
answer; nothing here lets a Redis error reach the server as a crash.
"""

from __future__ import annotations

import asyncio
from typing import Any, Sequence

__all__ = ["SharedState", "SharedStateDown"]


class SharedStateDown(Exception):
    """Redis did not answer (down, unreachable, too slow, or an error in a script)."""


class SharedState:
    """One Redis client with short timeouts and no retries: a slow Redis must turn into
    a quick decision (fail open or closed), not a request stuck behind it."""

    def __init__(self, url: str, *, timeout_s: float = 0.5) -> None:
        import redis.asyncio as redis  # only a gateway started with --redis needs it
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        self.url = url
        self._errors = (redis.RedisError, OSError, asyncio.TimeoutError)
        self._client = redis.Redis.from_url(
            url,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            max_connections=64,
        )
        self._scripts: dict[str, Any] = {}
        self.healthy: bool | None = None  # unknown until the first answer

    def script(self, name: str, source: str) -> None:
        """Register a Lua script (sent once, then run by its SHA: EVALSHA)."""
        self._scripts[name] = self._client.register_script(source)

    async def run(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            result = await self._scripts[name](keys=list(keys), args=list(args))
        except self._errors as exc:
            self.healthy = False
            raise SharedStateDown(type(exc).__name__) from None
        self.healthy = True
        return result

    async def ping(self) -> bool:
        try:
            await self._client.ping()
        except self._errors:
            self.healthy = False
        else:
            self.healthy = True
        return self.healthy

    async def aclose(self) -> None:
        try:
            await self._client.aclose()
        except self._errors:
            pass
