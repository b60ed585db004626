"""The Redis connection that gateway processes share (`--redis URL`), and its health.

Everything kept in Redis is written by one atomic Lua script per operation (the rate
buckets in `gateway/limits/buckets.py`, the cache references in `gateway/cache_refs.py`),
so processes never read-modify-write across round trips. Failures are reported as
`SharedStateDown`, one type, which callers turn into their fail-open or fail-closed
answer; nothing here lets a Redis error reach the server as a crash.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Sequence

from urllib.parse import urlsplit

__all__ = ["SharedState", "SharedStateDown"]

log = logging.getLogger("firsttoken.gateway.shared")


class SharedStateDown(Exception):
    """Redis did not answer (down, unreachable, too slow, or an error in a script)."""


class SharedState:
    """One Redis client with short timeouts and no retries: a slow Redis must turn into
    a quick decision (fail open or closed), not a request stuck behind it."""

    def __init__(self, url: str, *, timeout_s: float = 2.0, max_connections: int = 32) -> None:
        import redis.asyncio as redis  # only a gateway started with --redis needs it
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        # Host and port only: a URL may carry a password.
        parsed = urlsplit(url)
        self._where = f"{parsed.hostname}:{parsed.port or 6379}"
        self._errors = (redis.RedisError, OSError, asyncio.TimeoutError)
        # A blocking pool: past `max_connections` a call waits (up to `timeout_s`) for a
        # free connection instead of failing at once, which under a burst would read as
        # "Redis down" and trip fail-open or fail-closed for no reason.
        pool = redis.BlockingConnectionPool.from_url(
            url,
            max_connections=max_connections,
            timeout=timeout_s,
            socket_timeout=timeout_s,
            socket_connect_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
        )
        self._pool = pool
        self._client = redis.Redis(connection_pool=pool)
        self._scripts: dict[str, Any] = {}
        self.healthy: bool | None = None  # unknown until the first answer

    def script(self, name: str, source: str) -> None:
        """Register a Lua script (sent once, then run by its SHA: EVALSHA)."""
        self._scripts[name] = self._client.register_script(source)

    async def run(self, name: str, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            result = await self._scripts[name](keys=list(keys), args=list(args))
        except self._errors as exc:
            self._mark(False, type(exc).__name__)
            raise SharedStateDown(type(exc).__name__) from None
        self._mark(True)
        return result

    def _mark(self, healthy: bool, why: str = "") -> None:
        # One line per change of state, not one per request: a Redis outage under load
        # must not flood the log.
        if healthy != self.healthy:
            if healthy and self.healthy is False:
                log.warning("redis at %s answers again", self._where)
            elif not healthy:
                log.warning("redis at %s is down (%s)", self._where, why)
        self.healthy = healthy

    async def ping(self) -> bool:
        try:
            await self._client.ping()
        except self._errors as exc:
            self._mark(False, type(exc).__name__)
        else:
            self._mark(True)
        return bool(self.healthy)

    async def aclose(self) -> None:
        try:
            await self._client.aclose()
            await self._pool.aclose()  # a pool passed in is not closed with the client
        except self._errors:
            pass
