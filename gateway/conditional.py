"""Conditional GET (RFC 9110 §13): one validator per body, a 304 when the client has it.

Every static body the gateway builds itself (the package zip, the repacked standard
library, the vocabularies, the service worker, a CommonJS module) is served with a
strong ETag (a digest of its bytes) and `Cache-Control: no-cache`, so browsers
revalidate each time and a revalidation that finds nothing new costs one 304.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable, Hashable, Mapping

from starlette.requests import Request
from starlette.responses import Response

__all__ = ["BuiltBody", "cached_response", "etag_of", "file_version", "none_match"]


def etag_of(body: bytes) -> str:
    """A strong entity tag for `body`: 128 bits of its SHA-256, quoted (§8.8.3)."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def file_version(path: Path) -> tuple[int, int]:
    """What changes when a file does, for a stat: its size and modification time."""
    st = path.stat()
    return st.st_size, st.st_mtime_ns


class BuiltBody:
    """A body made from files (`build()`), with its ETag, made again only when
    `version()` (a cheap stat of its sources) changes."""

    __slots__ = ("version", "build", "_version", "_body", "_etag")

    def __init__(self, version: Callable[[], Hashable], build: Callable[[], bytes]) -> None:
        self.version = version
        self.build = build
        self._version: Hashable = None
        self._body = b""
        self._etag = ""

    def current(self) -> tuple[bytes, str]:
        version = self.version()
        if version != self._version or not self._etag:
            self._body = self.build()
            self._etag = etag_of(self._body)
            self._version = version
        return self._body, self._etag


def none_match(if_none_match: str | None, etag: str) -> bool:
    """Whether `If-None-Match` holds `etag` (§13.1.2): `*`, or a member equal to it by
    the weak comparison (§8.8.3.2: opaque tags equal, `W/` ignored on either side)."""
    if not if_none_match:
        return False
    bare = etag.removeprefix("W/")
    return any(t == "*" or t.removeprefix("W/") == bare for t in (m.strip() for m in if_none_match.split(",")))


def cached_response(
    request: Request, body: bytes, *, media_type: str, etag: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """`body` with its ETag and `no-cache`, or a 304 when the request's `If-None-Match`
    names it (§15.4.5: the 304 carries the ETag and Cache-Control a 200 would)."""
    etag = etag or etag_of(body)
    sent = {"etag": etag, "cache-control": "no-cache", **(headers or {})}
    if request.method in ("GET", "HEAD") and none_match(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=sent)
    return Response(body, media_type=media_type, headers=sent)
