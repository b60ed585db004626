"""The last line of defence (a plain ASGI middleware, the outermost): whatever escapes
a route becomes one concise log line and, if no response has started, a JSON 500 in
the route's error shape. Nothing reaches the server, so the client never gets uvicorn's plain-text 500 and
the log never gets the two full tracebacks (Starlette's and uvicorn's) it used to write
for each failure: a client that can make the gateway fail cannot also flood its log.

A client that goes away mid-body is not an error of ours: one debug line. A
`DropConnection` from the built-in model must break the connection, so it goes on to
the server, which drops it (`__main__` keeps that out of the log).
"""

from __future__ import annotations

import logging
import traceback

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .dialects import error_response
from .errors import APIError

__all__ = ["ErrorBoundary", "describe"]

log = logging.getLogger("firsttoken.gateway")


def describe(exc: BaseException) -> str:
    """`Type: message at file:line` (the innermost frame), bounded, on one line."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}{where}"


class ErrorBoundary:
    def __init__(self, app: ASGIApp, *, passthrough: tuple[type[BaseException], ...] = ()) -> None:
        self.app = app
        self.passthrough = passthrough

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        except ClientDisconnect:
            log.debug("client went away during %s %s", scope["method"], scope["path"])
        except self.passthrough:
            raise
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - also Rust panics (pyo3 PanicException)
            if isinstance(exc, OSError) and started:
                log.debug("connection lost during %s %s: %s", scope["method"], scope["path"], describe(exc))
                return
            log.error("%s %s failed: %s", scope["method"], scope["path"], describe(exc))
            if not started:
                error = APIError(500, "The gateway hit an internal error.", type="server_error")
                await error_response(error, scope)(scope, receive, send)
