"""Precompressed variants of the static runtime, chosen per request by `Accept-Encoding`.

A first visit downloads Pyodide's wasm, its standard library, the snapshot, the JS and
the vocabularies: ~32 MB as they are, a fraction of that as brotli. Compressing on the
fly would cost seconds of CPU per visit (brotli's best quality runs at ~1 MB/s), so
`python -m gateway.build.encode` (`make`) compresses each file once into `build/encoded/`,
and this middleware only chooses and sends bytes.

One place for every static route: the middleware sits around the router and knows
nothing of files, mounts or the snapshot. The build recorded, per URL path, the
identity response it compressed (its ETag and length, as the app served it) and each
variant (file, length, SHA-256). A request gets a variant only when

- it accepts one (`negotiate`, RFC 9110 §12.5.3), and asks for no `Range` (ranges of
  an encoded body are ranges of other bytes: identity answers them);
- the app would still serve that same identity response (asked as a HEAD, so no body
  is read): same ETag, same length. A file edited since the build, or a snapshot the
  gateway no longer serves, falls back to identity by itself;
- the variant on disk is the one recorded: its length on every request, its SHA-256
  once per file version. A truncated or corrupt variant is logged once and skipped.

The variant's response keeps every header the app sent (content type, caching, the
snapshot's `x-firsttoken-*` label, which describes the decoded body) and changes only
what describes the bytes sent: `Content-Encoding`, `Content-Length`, and the ETag
(the identity one plus `-br`/`-gz`, so that a cache never takes one variant's
validator for another's, RFC 9110 §8.8.3). It adds `x-firsttoken-identity-length`:
a page reading the body counts decoded bytes, and with both lengths it can tell a
person how much of the download (in bytes on the wire) has arrived (js/boot/progress.js). Every response of a path with variants,
identity included, says `Vary: Accept-Encoding`.

`index.json` (written last by the build, so it never names a variant not yet written):

    {"version": 1, "files": {"/vendor/pyodide/pyodide.asm.wasm": {"etag": "\\"…\\"",
      "length": 9612345, "variants": {"br": {"file": "vendor/pyodide/pyodide.asm.wasm.br",
      "length": 2412345, "sha256": "…"}, "gzip": {…}}}, …}}
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import anyio
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .conditional import none_match
from .offload import Run, in_thread

log = logging.getLogger("gateway.precompressed")

INDEX = "index.json"
#: Offered codings, preferred first when a client weighs them equally: brotli is 22–35%
#: smaller than gzip on the runtime (README, "Boot") and decodes as fast.
CODINGS = ("br", "gzip")
SUFFIX = {"br": ".br", "gzip": ".gz"}
_ETAG_SUFFIX = {"br": "-br", "gzip": "-gz"}
_CHUNK = 256 * 1024
# An Accept-Encoding past this many elements is not a browser's; the rest is ignored.
_MAX_ELEMENTS = 32


def negotiate(accept_encoding: str | None, offered: Sequence[str]) -> str:
    """The content coding to send, one of `offered` or "identity".

    RFC 9110 §12.5.3: codings weighted by `q` (absent: 1; 0: not acceptable); `*`
    stands for every coding not named; `x-gzip` is gzip (§8.4.1.3). Unknown codings
    and malformed elements are ignored. Among acceptable offered codings the highest
    `q` wins, ties going to the order of `offered`; an explicit `identity` with a
    higher `q` than all of them wins over them. With no header, identity: a client
    that says nothing gets bytes it surely reads. Identity is also the answer when
    nothing offered is acceptable, even if identity was refused (`identity;q=0`):
    serving it is what §12.5.3 lets a server do rather than answer 406.
    """
    if accept_encoding is None:
        return "identity"
    weights: dict[str, float] = {}
    for element in accept_encoding.split(",", _MAX_ELEMENTS)[:_MAX_ELEMENTS]:
        name, *params = element.split(";")
        name = name.strip().lower()
        weight: float | None = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                weight = _qvalue(value.strip())
        if not name or weight is None:
            continue
        weights.setdefault("gzip" if name == "x-gzip" else name, weight)
    star = weights.get("*", 0.0)
    best, best_q = "identity", 0.0
    for coding in offered:
        q = weights.get(coding, star)
        if q > best_q:
            best, best_q = coding, q
    if best != "identity" and weights.get("identity", 0.0) > best_q:
        return "identity"
    return best


def _qvalue(text: str) -> float | None:
    """RFC 9110 §12.4.2: 0 to 1 with up to three decimals; anything else is invalid."""
    try:
        q = float(text)
    except ValueError:
        return None
    return q if 0.0 <= q <= 1.0 and len(text) <= 5 else None


def variant_etag(etag: str, coding: str) -> str:
    """The identity ETag with the coding's suffix inside the quotes (weak stays weak)."""
    if etag.endswith('"'):
        return etag[:-1] + _ETAG_SUFFIX[coding] + '"'
    return etag + _ETAG_SUFFIX[coding]


@dataclass(frozen=True, slots=True)
class Variant:
    file: str
    length: int
    sha256: str


@dataclass(frozen=True, slots=True)
class Entry:
    """One URL path's identity response as the build compressed it, and its variants."""

    etag: str
    length: int
    variants: Mapping[str, Variant]


def read_index(directory: Path) -> dict[str, Entry]:
    """The build's index, or {} when there is none or it does not parse."""
    try:
        raw = json.loads((directory / INDEX).read_text(encoding="utf-8"))
        return {
            path: Entry(str(e["etag"]), int(e["length"]), {
                coding: Variant(str(v["file"]), int(v["length"]), str(v["sha256"]))
                for coding, v in e["variants"].items() if coding in CODINGS
            })
            for path, e in raw["files"].items()
        }
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        log.warning("precompressed: %s does not parse; serving identity", directory / INDEX)
        return {}


class Precompressed:
    """ASGI middleware: a recorded variant when the request accepts it, else the app's
    identity response with `Vary: Accept-Encoding` on paths that have variants."""

    def __init__(self, app: ASGIApp, *, directory: Path, run: Run = in_thread) -> None:
        self.app = app
        self.directory = directory
        self._run = run
        self._index_key: tuple | None = None
        self._index: dict[str, Entry] = {}
        # (file, size, mtime) → whether its SHA-256 is the recorded one.
        self._verified: dict[tuple, bool] = {}

    def _entries(self) -> dict[str, Entry]:
        """The index, read again when the build rewrote it (a stat per request)."""
        try:
            st = (self.directory / INDEX).stat()
            key: tuple | None = (st.st_size, st.st_mtime_ns)
        except OSError:
            key = None
        if key != self._index_key:
            self._index = read_index(self.directory) if key else {}
            self._verified.clear()
            self._index_key = key
        return self._index

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        entry = self._entries().get(scope["path"])
        if entry is None or not entry.variants:
            await self.app(scope, receive, send)
            return
        request = Headers(scope=scope)
        coding = "identity" if "range" in request else negotiate(request.get("accept-encoding"), [c for c in CODINGS if c in entry.variants])
        path = await self._usable(entry, coding) if coding != "identity" else None
        if path is None or not await self._send_variant(scope, receive, send, request, entry, coding, path):
            await self.app(scope, receive, _with_vary(send))

    async def _usable(self, entry: Entry, coding: str) -> Path | None:
        variant = entry.variants[coding]
        path = self.directory / variant.file
        try:
            st = path.stat()
        except OSError:
            self._refuse((str(path),), f"{path} is missing")
            return None
        key = (str(path), st.st_size, st.st_mtime_ns)
        if st.st_size != variant.length:
            self._refuse(key, f"{path} has {st.st_size} bytes, the build wrote {variant.length}")
            return None
        if key not in self._verified:
            digest = await self._run(_sha256, path)
            self._verified[key] = digest == variant.sha256
            if digest != variant.sha256:
                log.warning("precompressed: %s is not the file the build wrote (SHA-256); serving identity", path)
        return path if self._verified[key] else None

    def _refuse(self, key: tuple, why: str) -> None:
        if key not in self._verified:
            self._verified[key] = False
            log.warning("precompressed: %s; serving identity", why)

    async def _send_variant(self, scope: Scope, receive: Receive, send: Send, request: Headers,
                            entry: Entry, coding: str, path: Path) -> bool:
        """Send the variant at `path` if the app still serves the identity it was made
        from; False (nothing sent) otherwise."""
        # Unconditional, and HEAD: the app's headers for a 200, no body read.
        skip = {b"if-none-match", b"if-modified-since", b"if-range", b"range"}
        probe = {**scope, "method": "HEAD", "headers": [(k, v) for k, v in scope["headers"] if k.lower() not in skip]}
        started: list[Message] = []

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(message)

        await self.app(probe, receive, capture)
        if not started or started[0]["status"] != 200:
            return False
        identity = Headers(raw=started[0]["headers"])
        if identity.get("etag") != entry.etag or identity.get("content-length") != str(entry.length):
            return False  # not what the build compressed: edited since, or another snapshot
        length = entry.variants[coding].length
        etag = variant_etag(entry.etag, coding)
        replaced = {b"content-length", b"content-encoding", b"etag", b"accept-ranges", b"vary"}
        headers = [(k, v) for k, v in started[0]["headers"] if k.lower() not in replaced]
        headers += [(b"vary", b"accept-encoding"), (b"etag", etag.encode("latin-1"))]
        if none_match(request.get("if-none-match"), etag):
            await send({"type": "http.response.start", "status": 304,
                        "headers": [(k, v) for k, v in headers if k.lower() != b"content-type"]})
            await send({"type": "http.response.body", "body": b""})
            return True
        try:
            file = await anyio.open_file(path, "rb")
        except OSError:
            return False
        async with file:
            headers += [(b"content-encoding", coding.encode()), (b"content-length", str(length).encode()),
                        (b"x-firsttoken-identity-length", str(entry.length).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            if scope["method"] == "HEAD":
                await send({"type": "http.response.body", "body": b""})
                return True
            # Exactly the recorded length, even if the file grew since it was checked.
            left = length
            while left:
                chunk = await file.read(min(_CHUNK, left))
                if not chunk:
                    break  # shrank under us: the client sees a short body, as with any file
                left -= len(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": left > 0})
            if left:
                await send({"type": "http.response.body", "body": b""})
        return True


def _with_vary(send: Send) -> Send:
    """`send`, adding Accept-Encoding to the response's Vary (identity of a path with
    variants: a cache must not answer a br-accepting client with it, or the reverse)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            vary = [v for k, v in headers if k.lower() == b"vary"]
            if not any(b"accept-encoding" in v.lower() or v.strip() == b"*" for v in vary):
                headers = [(k, v) for k, v in headers if k.lower() != b"vary"]
                headers.append((b"vary", b", ".join([*vary, b"accept-encoding"])))
            message = {**message, "headers": headers}
        await send(message)

    return sending


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def file_name(url_path: str) -> str:
    """Where a URL path's variants live under build/encoded/ (before the suffix)."""
    name = url_path.strip("/") or "index.html"
    if name.startswith(".") or "/." in name or os.sep != "/" and os.sep in name:
        raise ValueError(f"not a path to precompress: {url_path!r}")
    return name
