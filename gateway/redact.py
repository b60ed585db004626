"""Secrets never come back: a streaming redactor for what an upstream sends.

An upstream may echo the request, headers included (a debugging proxy, a misconfigured
server, a hostile one): the gateway's upstream key, or the key its clients present to
the gateway itself, would then reach the client. Every relayed body and header value
is passed through `Redactor`, which replaces each secret with `REDACTED`.

Sans-IO: `feed(chunk)` returns what is safe to pass on now, holding back at most the
longest secret's length minus one byte (a secret may be split across chunks), and never
a line's end (no secret spans one);
`flush()` returns the rest at the end. Secrets also match in their JSON-escaped form
(`/` as `\\/`), the only escaping an API key's characters can get.
"""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["REDACTED", "Redactor"]

REDACTED = b"[redacted]"


class Redactor:
    def __init__(self, secrets: Iterable[str | None]) -> None:
        forms: set[bytes] = set()
        for secret in secrets:
            # A short "key" would redact ordinary text; one with a line end is no HTTP
            # header value (RFC 9110 §5.5), and `feed` relies on none holding one.
            if secret and len(secret) >= 4 and "\n" not in secret and "\r" not in secret:
                raw = secret.encode()
                forms.update({raw, raw.replace(b"/", b"\\/")})
        self._pattern = re.compile(b"|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))) if forms else None
        self._keep = max((len(f) for f in forms), default=1) - 1
        self._held = b""

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, value: str) -> str:
        """`value` with every secret replaced (for a header value)."""
        if self._pattern is None:
            return value
        return self._pattern.sub(REDACTED, value.encode("latin-1", "replace")).decode("latin-1")

    def feed(self, chunk: bytes) -> bytes:
        if self._pattern is None:
            return chunk
        data = self._held + chunk
        out: list[bytes] = []
        start = 0
        for match in self._pattern.finditer(data):
            out.append(data[start : match.start()])
            out.append(REDACTED)
            start = match.end()
        # Hold back a tail that could be the start of a secret completed by the next chunk.
        cut = max(start, len(data) - self._keep)
        # ... but no secret holds a line end, so none straddles one: what ends a line is
        # safe now. An SSE event ends with a blank line, so each event goes out whole as
        # it comes, not held until the next chunk (the reader dispatches it only at that
        # blank line), and a keep-alive comment (gateway/keepalive.py) finds a line start.
        tail = data[cut:]
        line_end = max(tail.rfind(b"\n"), tail.rfind(b"\r"))
        if line_end >= 0:
            cut += line_end + 1
        out.append(data[start:cut])
        self._held = data[cut:]
        return b"".join(out)

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held
