"""Who may talk to the gateway from a browser: Host, Origin and Content-Type checks
(a plain ASGI middleware, outermost but for the error boundary).

A gateway on localhost holds an upstream key, so any web page the user visits must not
be able to spend it, nor read the answers. Three checks, each closing one hole:

- **Host** (every route). DNS rebinding points an attacker's name at 127.0.0.1; the
  browser then sends `Host: attacker.example` and treats the answers as same-origin to
  the attacker's page. Only the names this gateway is reached by are accepted: the
  bound host, `localhost`, `127.0.0.1`, `::1`, and `--allowed-host` names (`*`: any).
- **Origin** (`/v1/`). Browsers send `Origin` with every cross-origin request and with
  every POST (Fetch §3.1, "origin" header), so a request whose Origin is neither this
  gateway's own origin (scheme + the allow-listed Host) nor an `--allow-origin` one
  comes from a foreign page: 403. A request without Origin is not from a browser page
  (curl, the official `openai` client, a native host) and passes.
- **Content-Type** (POST under `/v1/`). `application/json` is not a CORS-safelisted
  content type (Fetch §2.2.2), so a browser cannot send it cross-origin without a
  preflight, and `no-cors` requests are limited to text/plain, form and multipart
  bodies. Requiring it closes `no-cors` spending even where Origin were missing: 415.

Origins allowed with `--allow-origin` are answered with CORS headers (and their
preflights with 204), so that a page there may call the API. Refusals are error
objects in the route's shape (gateway/dialects, `error_response`).
"""

from __future__ import annotations

from typing import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .dialects import error_response
from .errors import APIError

__all__ = ["LOCAL_HOSTS", "RequestGuard", "hostname"]

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_API_PREFIX = "/v1/"
_CORS_METHODS = b"GET, POST, OPTIONS"


def hostname(host: str) -> str:
    """The name part of a Host header value: no port, no brackets, lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        host = host.partition(":")[0]
    return host.rstrip(".")


class RequestGuard:
    def __init__(self, app: ASGIApp, *, hosts: Iterable[str], origins: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = frozenset(hostname(h) if h != "*" else "*" for h in hosts) | LOCAL_HOSTS
        self.origins = frozenset(o.rstrip("/").lower() for o in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = origin = content_type = None
        asked = b""
        for name, value in scope["headers"]:
            if name == b"host":
                host = value.decode("latin-1")
            elif name == b"origin":
                origin = value.decode("latin-1").lower()
            elif name == b"content-type":
                content_type = value.decode("latin-1")
            elif name == b"access-control-request-headers":
                asked = value
        if "*" not in self.hosts and (host is None or hostname(host) not in self.hosts):
            shown = (host or "")[:80]
            await self._refuse(scope, send, APIError(
                403, f"Host {shown!r} is not served here (start the gateway with --allowed-host to add it).",
                code="host_not_allowed"))
            return
        if not scope["path"].startswith(_API_PREFIX):
            await self.app(scope, receive, send)
            return
        cors = origin is not None and origin in self.origins
        if origin is not None and not cors and origin != f"{scope.get('scheme', 'http')}://{(host or '').lower()}":
            await self._refuse(scope, send, APIError(
                403, f"Requests from the web origin {origin[:80]!r} are not allowed (see --allow-origin).",
                code="origin_not_allowed"))
            return
        if cors and scope["method"] == "OPTIONS":
            await self._preflight(send, origin, asked)  # type: ignore[arg-type]
            return
        if scope["method"] == "POST" and (content_type or "").split(";")[0].strip().lower() != "application/json":
            await self._refuse(scope, send, APIError(
                415, "The request body must be sent with 'Content-Type: application/json'.",
                code="unsupported_media_type"))
            return
        if not cors:
            await self.app(scope, receive, send)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_cors_headers(origin)]}  # type: ignore[arg-type]
            await send(message)

        await self.app(scope, receive, send_with_cors)

    async def _refuse(self, scope: Scope, send: Send, error: APIError) -> None:
        await error_response(error, scope)(scope, _no_body, send)

    async def _preflight(self, send: Send, origin: str, asked: bytes) -> None:
        # The origin is trusted (configured), so whatever headers it asks for may come.
        headers = [
            *_cors_headers(origin),
            (b"access-control-allow-methods", _CORS_METHODS),
            (b"access-control-allow-headers", asked[:1024] or b"authorization, content-type"),
            (b"access-control-max-age", b"600"),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def _cors_headers(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", b"*"),
        (b"vary", b"origin"),
    ]


async def _no_body() -> Message:
    return {"type": "http.disconnect"}
