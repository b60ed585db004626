"""Who is asking, decided once per request: authorisation and the client's identity.

`Access` (an ASGI middleware, before anything under `/v1/` reads a body or spends a
budget) checks the gateway's own key, when it has one, and puts the request's `Client`
in the scope's state; every later layer reads it there (`client_of`) instead of
deriving it again from the headers.

A client's key is its `credential`: `Authorization: Bearer <key>`, as OpenAI's clients
send it, or `x-api-key: <key>`, as Anthropic's do (read as the same Bearer, so one key
is one client either way; Authorization wins when both come). The gateway's own key
may come either way, on every route.

One rule, `identify`, says who a client is, in two parts for two jobs:

- `owner`: a firsttoken client, its `x-firsttoken-client` id scoped by its
  credential (SHA-256 of both, bridge/PROTOCOL.md "Cache references"), or None.
  Whose cache references and resumable streams these are, so a reference or a stream
  resolves only for the client that made it.
- `account`: its credential (hashed), else its address. What a client cannot shed
  by naming itself anew: the bound on concurrent answers (gateway/server.py).

`limit_key` (whose rate buckets) is the owner when there is one, else the account: a
client id is chosen by the client, so per-client limits bind cooperating clients;
`--gateway-rpm/-tpm` bind everyone. Keys are hashes, never raw secrets, so none appears
in a memory dump or in Redis.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from firsttoken.cache.refs import CLIENT_HEADER

from .dialects import error_response
from .errors import APIError

__all__ = ["API_PREFIX", "Access", "Client", "client_key", "client_of", "credential", "identify"]

API_PREFIX = "/v1/"
_STATE_KEY = "client"
_CLIENT_ID = re.compile(r"[A-Za-z0-9_-]{16,128}\Z")


def client_key(authorization: str | None, client_id: str | None) -> str | None:
    """The owner a (key, client id) pair names, or None when the id is not a valid one."""
    if not client_id or not _CLIENT_ID.match(client_id):
        return None
    material = json.dumps(["firsttoken.refs/1", authorization or "", client_id]).encode()
    return hashlib.sha256(material).hexdigest()


@dataclass(frozen=True, slots=True)
class Client:
    """Who a request speaks for (see the module's docstring)."""

    owner: str | None
    account: str

    @property
    def limit_key(self) -> str:
        return "c" + self.owner[:32] if self.owner is not None else self.account


def credential(headers: Headers) -> str | None:
    """The key a request presents: its Authorization, else its `x-api-key` as the
    `Bearer` it stands for."""
    authorization = headers.get("authorization")
    if authorization:
        return authorization
    key = headers.get("x-api-key")
    return f"Bearer {key}" if key else None


def identify(headers: Headers, peer: str | None) -> Client:
    authorization = credential(headers)
    if authorization:
        account = "k" + hashlib.sha256(authorization.encode("utf-8", "replace")).hexdigest()[:32]
    else:
        account = "p" + (peer or "?")
    return Client(client_key(authorization, headers.get(CLIENT_HEADER)), account)


def client_of(scope: Scope) -> Client:
    """The request's `Client`: the one `Access` decided, else decided now by the same rule
    (a piece used without the middleware in front of it)."""
    state = scope.setdefault("state", {})
    client = state.get(_STATE_KEY)
    if client is None:
        peer = scope.get("client")
        client = state[_STATE_KEY] = identify(Headers(scope=scope), peer[0] if peer else None)
    return client


class Access:
    """ASGI middleware for `/v1/`: a 401 unless the request's credential is the
    gateway's key (when it has one), then the request's `Client` in its state."""

    def __init__(self, app: ASGIApp, *, key: str | None, prefix: str = API_PREFIX) -> None:
        self.app = app
        self.expected = f"Bearer {key}".encode() if key else None
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        if self.expected is not None:
            sent = (credential(Headers(scope=scope)) or "").encode("latin-1")
            # Constant time: how much of a guess was right must not show in the timing.
            if not hmac.compare_digest(sent, self.expected):
                error = APIError(401, "Incorrect API key provided.", code="invalid_api_key")
                await error_response(error, scope)(scope, receive, send)
                return
        client_of(scope)
        await self.app(scope, receive, send)
