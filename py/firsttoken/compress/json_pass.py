"""JSON pass: pretty-printed JSON becomes minified JSON, token for token.

We never re-serialise with `json.dumps`: that would rewrite number literals
(`1.0e2` → `100.0`, big floats rounded), drop duplicate keys and re-escape
strings, so the model would read different text. Instead insignificant whitespace
between tokens (RFC 8259 §2: space, tab, LF, CR) is removed and every string, number
and literal stays byte-identical. A self-check re-parses both texts with hooks that
keep duplicate keys and exact number literals, and any difference leaves the text
untouched.

Where JSON is found: a fence whose language is JSON (or has no language) and whose
body is one JSON object or array; a whole message that is one; and in prose, a run of
lines from a line that is just `{` or `[` in column 0 to the first line that is just
the matching closer (or a single line that parses on its own).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right

__all__ = ["JSON_LANGS", "parse_container", "minify", "find_regions", "minify_region"]

JSON_LANGS = frozenset({"json", "jsonc", "json5", "geojson", "jsonl", ""})

_STRING = re.compile(r'("(?:[^"\\]|\\.)*")', re.S)
_OPEN_LINE = re.compile(r"^[\[{][^\n]*$", re.M)
_CLOSE_LINE = re.compile(r"^[\]}][ \t]*\r?$", re.M)


def _exact(pairs: list[tuple[str, object]]) -> list[tuple[str, object]]:
    return pairs


def _structure(text: str) -> object:
    # Duplicate keys, key order and number literals all survive this parse.
    return json.loads(
        text, object_pairs_hook=_exact, parse_float=str, parse_int=str, parse_constant=str
    )


def parse_container(text: str) -> object | None:
    """The parsed value if `text` is exactly one JSON object or array, else None."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None


def minify(text: str) -> str | None:
    """`text` (one valid JSON value) without insignificant whitespace, or None if the
    result would not parse to the same structure."""
    parts = _STRING.split(text.strip(" \t\r\n"))
    # Even indexes lie outside strings, where only JSON whitespace can occur.
    for i in range(0, len(parts), 2):
        parts[i] = "".join(parts[i].split())
    out = "".join(parts)
    try:
        if _structure(out) != _structure(text):
            return None
    except (ValueError, RecursionError):
        return None
    return out


def _ending(text: str) -> str:
    if text.endswith("\r\n"):
        return "\r\n"
    return "\n" if text.endswith("\n") else ""


def minify_region(text: str) -> str:
    """A JSON region (or whole-message JSON) minified, keeping its final line ending."""
    out = minify(text)
    if out is None:
        return text
    return out + _ending(text)


def find_regions(chunk: str) -> list[tuple[bool, str]]:
    """Split a prose chunk into (is_json, text) parts that concatenate back to it."""
    if "{" not in chunk and "[" not in chunk:
        return [(False, chunk)]
    closers: list[int] | None = None
    parts: list[tuple[bool, str]] = []
    pos = 0
    search = 0
    n = len(chunk)
    while True:
        m = _OPEN_LINE.search(chunk, search)
        if m is None:
            break
        start = m.start()
        nl = chunk.find("\n", m.end())
        line_end = n if nl < 0 else nl + 1
        first = m.group(0).rstrip(" \t\r")
        end = -1
        if first in ("{", "["):
            if closers is None:
                closers = [c.start() for c in _CLOSE_LINE.finditer(chunk)]
            want = "}" if first == "{" else "]"
            i = bisect_right(closers, start)
            while i < len(closers) and chunk[closers[i]] != want:
                i += 1
            if i < len(closers):
                c = closers[i]
                cnl = chunk.find("\n", c)
                cend = n if cnl < 0 else cnl + 1
                if parse_container(chunk[start:cend]) is not None:
                    end = cend
        elif parse_container(first) is not None:
            end = line_end
        if end < 0:
            search = line_end
            continue
        if start > pos:
            parts.append((False, chunk[pos:start]))
        parts.append((True, chunk[start:end]))
        pos = search = end
    if pos < n:
        parts.append((False, chunk[pos:]))
    return parts
