"""Cache references: system messages a client sends once and then names by hash.

The extension (bridge/PROTOCOL.md, "Cache references"):

* Every response under /v1/ carries ``x-firsttoken-gateway: cache-refs=1``
  (`AdvertiseRefs`), which is how a client tells this gateway from any other
  OpenAI-compatible server.
* A client identifies itself with ``x-firsttoken-client: <random id>``. From such a
  client, every system/developer message that arrives in full is stored (`RefStore`),
  keyed by SHA-256 of its UTF-8 text.
* Such a client may then send ``{"role": "system", "x_firsttoken_ref": "sha256:<hex>"}``
  (no content). `expand_refs` replaces it with the stored text before the request is
  validated or forwarded, so neither the validation nor an upstream ever sees the
  extension. A reference the store does not hold is answered 409 with code
  ``cache_ref_unknown``; the client then sends the text again, in full.

Isolation: entries are kept per client key, SHA-256 over (the Authorization header,
the client id), so a reference resolves only for the client that sent the text. Knowing
or guessing a hash gives nothing to anyone else. The store is bounded per client
(entries, bytes) and in all (bytes), least recently used first out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import APIError, invalid

__all__ = [
    "CLIENT_HEADER",
    "GATEWAY_HEADER",
    "ADVERTISED",
    "REF_FIELD",
    "UNKNOWN_REF_CODE",
    "RefLimits",
    "RefStore",
    "AdvertiseRefs",
    "client_key",
    "expand_refs",
    "remember_system_messages",
]

GATEWAY_HEADER = "x-firsttoken-gateway"
ADVERTISED = "cache-refs=1"
CLIENT_HEADER = "x-firsttoken-client"
REF_FIELD = "x_firsttoken_ref"
UNKNOWN_REF_CODE = "cache_ref_unknown"

_REF = re.compile(r"sha256:([0-9a-f]{64})\Z")
_CLIENT_ID = re.compile(r"[A-Za-z0-9_-]{16,128}\Z")
_ROLES = frozenset({"system", "developer"})


@dataclass(frozen=True, slots=True)
class RefLimits:
    """Bounds of the store: per client (entries, bytes) and in all (bytes)."""

    entries_per_client: int = 32
    bytes_per_client: int = 2 * 1024 * 1024
    total_bytes: int = 64 * 1024 * 1024


def client_key(authorization: str | None, client_id: str | None) -> str | None:
    """Whose store a request uses, or None when it names no valid client id."""
    if not client_id or not _CLIENT_ID.match(client_id):
        return None
    material = json.dumps(["firsttoken.refs/1", authorization or "", client_id]).encode()
    return hashlib.sha256(material).hexdigest()


class RefStore:
    """Texts by (client key, sha256), least recently used first out."""

    def __init__(self, limits: RefLimits = RefLimits()) -> None:
        self.limits = limits
        # Two orders of the same entries: each client's own (for its share) and the
        # whole store's (for the total).
        self._clients: dict[str, OrderedDict[str, str]] = {}
        self._client_bytes: dict[str, int] = {}
        self._all: OrderedDict[tuple[str, str], int] = OrderedDict()
        self.total_bytes = 0

    def __len__(self) -> int:
        return len(self._all)

    def get(self, client: str, digest: str) -> str | None:
        texts = self._clients.get(client)
        text = texts.get(digest) if texts else None
        if text is not None:
            texts.move_to_end(digest)  # type: ignore[union-attr]
            self._all.move_to_end((client, digest))
        return text

    def put(self, client: str, text: str) -> str | None:
        """Store `text` for `client`; returns its digest, or None if it cannot be kept
        (not valid UTF-8, or larger than a client's whole share)."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
        size = len(data)
        if size > min(self.limits.bytes_per_client, self.limits.total_bytes):
            return None
        digest = hashlib.sha256(data).hexdigest()
        if self.get(client, digest) is not None:
            return digest
        self._clients.setdefault(client, OrderedDict())[digest] = text
        self._client_bytes[client] = self._client_bytes.get(client, 0) + size
        self._all[(client, digest)] = size
        self.total_bytes += size
        texts = self._clients[client]
        while len(texts) > self.limits.entries_per_client or self._client_bytes[client] > self.limits.bytes_per_client:
            self._remove(client, next(iter(texts)))
        while self.total_bytes > self.limits.total_bytes:
            self._remove(*next(iter(self._all)))
        return digest

    def _remove(self, client: str, digest: str) -> None:
        size = self._all.pop((client, digest))
        texts = self._clients[client]
        del texts[digest]
        self.total_bytes -= size
        self._client_bytes[client] -= size
        if not texts:
            del self._clients[client], self._client_bytes[client]


def _unknown(i: int) -> APIError:
    return APIError(
        409,
        f"messages[{i}] refers to a system message this gateway does not hold for this client; send its text.",
        param=f"messages[{i}]",
        code=UNKNOWN_REF_CODE,
    )


def expand_refs(body: bytes, store: RefStore, client: str | None) -> bytes:
    """`body` with every `x_firsttoken_ref` message replaced by its stored text (the
    body unchanged when it has none). Raises `APIError`: 400 for a malformed reference,
    409 `cache_ref_unknown` for one this client's store does not hold."""
    if REF_FIELD.encode() not in body:
        return body  # the common case costs one scan
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return body  # validation reports it
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list):
        return body
    changed = False
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or REF_FIELD not in message:
            continue
        ref = message[REF_FIELD]
        match = _REF.match(ref) if isinstance(ref, str) else None
        if match is None:
            raise invalid(f"'messages[{i}].{REF_FIELD}' must be 'sha256:' and 64 lowercase hex digits.",
                          param=f"messages[{i}].{REF_FIELD}", code="invalid_value")
        if not isinstance(message.get("role"), str) or message["role"] not in _ROLES:  # ["user"] is unhashable
            raise invalid(f"'messages[{i}]': only system and developer messages may be references.",
                          param=f"messages[{i}].role", code="invalid_value")
        if message.get("content") not in (None, ""):
            raise invalid(f"'messages[{i}]' has both content and a reference.",
                          param=f"messages[{i}].content", code="invalid_value")
        text = store.get(client, match.group(1)) if client else None
        if text is None:
            raise _unknown(i)
        del message[REF_FIELD]
        message["content"] = text
        changed = True
    if not changed:
        return body
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # lone surrogates from \u escapes: keep them escaped
        return json.dumps(data, separators=(",", ":")).encode()


def remember_system_messages(messages: list[dict[str, Any]], store: RefStore, client: str | None) -> None:
    """Store the system/developer texts of a valid request from an identified client."""
    if client is None:
        return
    for message in messages:
        content = message.get("content")
        if isinstance(message.get("role"), str) and message["role"] in _ROLES and isinstance(content, str) and content:
            store.put(client, content)


class AdvertiseRefs:
    """ASGI middleware: ``x-firsttoken-gateway: cache-refs=1`` on every /v1/ response."""

    def __init__(self, app: ASGIApp, prefix: str = "/v1/") -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return

        async def advertise(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[GATEWAY_HEADER] = ADVERTISED
            await send(message)

        await self.app(scope, receive, advertise)
