"""The request body, read and parsed once per request, off the event loop, into its state.

`ReadChat` (an ASGI middleware on the routes of the dialects: `POST
/v1/chat/completions`, `/v1/responses`, `/v1/messages`, gateway/dialects) reads the
body (bounded: `validation.read_body`; a gzipped one inflated within the same bound:
`validation.decode_content`, which firsttoken's clients send to cut a phone's upload),
then, off the event loop (gateway/offload.py),
decodes its JSON, expands its cache references (gateway/cache_refs.py, at the places
the dialect's `ref_sites` lists) and validates it (the dialect's `check`). What later
layers need goes into the scope's state as one `ChatBody` (`chat_of`): flow control
counts and admits it, the backend answers it. Nothing after this reads or parses the
body again.

A body that fails is answered here with its 4xx (the route's own error objects), so a
dry run and a real request get the same answer, and a bad request spends no budget.
The system texts of a valid request from an identified client are remembered, for
its next requests to name by hash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from firsttoken.cache.refs import REF_FIELD

from .access import client_of
from .cache_refs import Entry, RefStores, expand_refs, referenced, system_entries
from .dialects import Dialect, dialect_at, error_response
from .errors import APIError
from .offload import Offload
from .validation import ChatRequest, decode_body, decode_content, read_body, replay_body

__all__ = ["ChatBody", "ReadChat", "chat_of", "set_chat"]

_STATE_KEY = "chat"
# Bodies larger than this are parsed in the worker process: `json.loads` of megabytes
# holds the GIL for tens of ms in one call, which a thread cannot hide from the loop.
_PARSE_IN_PROCESS_BYTES = 512 * 1024


@dataclass(frozen=True, slots=True)
class ChatBody:
    """A valid request of one dialect, and its body as it goes on to an upstream
    (references expanded: an upstream never sees the extension)."""

    dialect: Dialect
    chat: ChatRequest
    body: bytes
    #: The prompt's exact count, when flow control made one (gateway/counting.py): the
    #: built-in model bills it rather than counting again.
    prompt_tokens: int | None = None


def chat_of(scope: Scope) -> ChatBody | None:
    """The request's `ChatBody`, as `ReadChat` left it; None on any other route."""
    return scope.get("state", {}).get(_STATE_KEY)


def set_chat(scope: Scope, read: ChatBody) -> None:
    """Put `read` in the scope's state in place of the body read: a layer that rewrote
    the request (gateway/prepare.py) hands its version on to the layers after it."""
    scope.setdefault("state", {})[_STATE_KEY] = read


class ReadChat:
    def __init__(self, app: ASGIApp, *, max_body_bytes: int, offload: Offload, refs: RefStores | None = None) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.offload = offload
        self.refs = refs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        dialect = dialect_at(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if dialect is None:
            await self.app(scope, receive, send)
            return
        try:
            request = Request(scope, receive)
            body = await read_body(request, self.max_body_bytes)
            if request.headers.get("content-encoding"):
                body = await self.offload.run(decode_content, body, request.headers["content-encoding"], self.max_body_bytes)
                # What follows sees the body as if sent plain.
                kept = [(k, v) for k, v in scope["headers"] if k not in (b"content-encoding", b"content-length")]
                scope = {**scope, "headers": [*kept, (b"content-length", str(len(body)).encode())]}
            read = await self._parse(scope, dialect, body)
        except APIError as error:
            await error_response(error, scope)(scope, receive, send)
            return
        set_chat(scope, read)
        await self.app(scope, replay_body(read.body, receive), send)

    async def _parse(self, scope: Scope, dialect: Dialect, body: bytes) -> ChatBody:
        owner = client_of(scope).owner
        remember = self.refs is not None and owner is not None
        texts: dict[str, str] | None = None
        data = None
        if self.refs is not None and REF_FIELD.encode() in body:  # else this costs one scan
            data = await self.offload.run(decode_body, body)
            digests = referenced(dialect.ref_sites(data))
            texts = await self.refs.get_many(owner, digests) if owner is not None and digests else {}
        read, entries = await self.offload.run(self._read, dialect, body, data, texts, remember)
        if entries and self.refs is not None and owner is not None:
            await self.refs.remember(owner, entries)
        return read

    def _read(self, dialect: Dialect, body: bytes, data: Any, texts: dict[str, str] | None,
              remember: bool) -> tuple[ChatBody, list[Entry]]:
        """In a pool thread: decode (unless done), expand with `texts` (when references
        are on), validate, and hash the system texts to remember. Without references
        (`--no-cache-refs`) a reference is no text, and validation says so."""
        if data is None and len(body) > _PARSE_IN_PROCESS_BYTES:
            chat = self.offload.in_process(dialect.parse, body)
        else:
            if data is None:
                data = decode_body(body)
            if texts is not None and expand_refs(dialect.ref_sites(data), texts):
                try:
                    body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
                except UnicodeEncodeError:  # lone surrogates from \u escapes: keep them escaped
                    body = json.dumps(data, separators=(",", ":")).encode()
            chat = dialect.check(data, body)
        return ChatBody(dialect, chat, body), system_entries(dialect.ref_sites(chat.raw)) if remember else []
