"""The HTTP server and the limits it enforces against abusive connections.

uvicorn serves the app (why uvicorn: README, "Security"). Its own options give the idle
keep-alive timeout (`timeout_keep_alive`) and a bound on a request's head
(`h11_max_incomplete_event_size`); what it lacks is added here, in a subclass of its
h11 protocol (`LimitedH11Protocol`):

- a **header timeout**: a connection must deliver a request's whole head within
  `header_timeout_s` of its first byte (or of opening), else it is closed. This is what
  stops slowloris (one byte every 10 s) and idle connections that never send anything;
  uvicorn's keep-alive timer is reset by every byte, so it stops neither;
- a **body timeout**: the body must follow within `body_timeout_s`;
- a **connection limit**: past `max_connections` open connections, a new one is closed
  at once, so the process stays well clear of its descriptor limit (where accept()
  fails and asyncio logs an error for each attempt). Refusals are logged at most once
  every 10 s.

Concurrent answers per client are bounded in the app, by API key rather than by
connection (`StreamsPerClient`, gateway/limits/concurrency.py).

`GatewayServer` tells the app when shutting down begins (`begin_shutdown`): uvicorn
waits for every running request before the ASGI lifespan hears "shutdown", and a
resumable stream's POST runs until its answer ends, even with its client gone
(gateway/streams), so the app must learn of it earlier, to stop what nobody reads.

It also sets `TCP_NODELAY` on every connection. asyncio does so only for sockets whose
`proto` is `IPPROTO_TCP`, and a listening socket made with `socket.socket()` (proto 0,
as `__main__` and uvicorn's `sockets=` path have it) passes proto 0 on to what it
accepts: Nagle's algorithm then held each response's second write until the client's
delayed ACK, 40 ms per response on loopback (measured: `/healthz` p50 44 ms, 0.2 ms with
the option), and as much per streamed chunk.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from .options import option

__all__ = ["GatewayServer", "ServerLimits", "LimitedH11Protocol", "uvicorn_config", "raise_fd_limit"]

log = logging.getLogger("firsttoken.gateway.server")


@dataclass(frozen=True, slots=True)
class ServerLimits:
    header_timeout_s: float = field(default=10.0, metadata=option(
        "--header-timeout", "seconds a connection has to send a request's head"))
    body_timeout_s: float = field(default=30.0, metadata=option("--body-timeout", "seconds a request has to send its body"))
    #: Idle keep-alive: nginx's default (`keepalive_timeout 75s`). A phone opens the
    #: connection before Send (js/page/warm.js) and the person may type for a minute;
    #: the 5 s uvicorn defaults to would close it first. Idle connections are bounded by
    #: `max_connections`, and one that never sends a request by the header timeout.
    keep_alive_s: int = field(default=75, metadata=option(
        "--keep-alive", "seconds an idle kept-alive connection stays open"))
    max_connections: int = field(default=4096, metadata=option(
        "--max-connections", "open connections at most; past it, new ones are closed at once"))
    max_head_bytes: int = 64 * 1024


class _Throttled:
    """Log a repeated event at most once per `every` seconds, with how often it happened."""

    def __init__(self, every: float = 10.0) -> None:
        self.every = every
        self.last = -float("inf")
        self.count = 0

    def __call__(self, message: str) -> None:
        self.count += 1
        now = time.monotonic()
        if now - self.last >= self.every:
            log.warning("%s (%d times since the last report)", message, self.count)
            self.last, self.count = now, 0


_refusals = _Throttled()


class LimitedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with header and body timeouts and a connection cap."""

    limits = ServerLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._reading_body = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections:
            _refusals(f"connection refused: {self.limits.max_connections} connections are open")
            transport.abort()
            self.transport = transport
            self._closed_at_once = True
            return
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        super().connection_made(transport)
        self._arm(self.limits.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        if getattr(self, "_closed_at_once", False):
            return
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if getattr(self, "_closed_at_once", False):
            return
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            self._arm(self.limits.header_timeout_s)  # a new request on a kept-alive connection
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.SEND_BODY and not self._reading_body:
            self._reading_body = True
            self._arm(self.limits.body_timeout_s)
        elif state is not h11.IDLE and state is not h11.SEND_BODY:
            self._disarm()  # the request is in: what follows is ours to answer

    def on_response_complete(self) -> None:
        self._disarm()
        super().on_response_complete()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._timed_out)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._reading_body = False

    def _timed_out(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            log.debug("closing %s: request not received in time", self.client)
            self.transport.close()


def uvicorn_config(app: ASGIApp, limits: ServerLimits, *, log_level: str | int = "warning") -> Any:
    protocol = type("GatewayH11Protocol", (LimitedH11Protocol,), {"limits": limits})
    return uvicorn.Config(
        app,
        http=protocol,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_keep_alive=limits.keep_alive_s,
        h11_max_incomplete_event_size=limits.max_head_bytes,
        backlog=1024,
    )


class GatewayServer(uvicorn.Server):
    """uvicorn's server, calling `begin_shutdown()` first thing when it shuts down."""

    def __init__(self, config: Any, *, begin_shutdown: Callable[[], None] = lambda: None) -> None:
        super().__init__(config)
        self._begin_shutdown = begin_shutdown

    async def shutdown(self, sockets: Any = None) -> None:
        try:
            self._begin_shutdown()
        except Exception:  # noqa: BLE001 - the server must still stop
            log.exception("begin_shutdown failed")
        await super().shutdown(sockets)


def raise_fd_limit(wanted: int) -> int:
    """Raise the soft descriptor limit toward `wanted` (within the hard one); returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft
