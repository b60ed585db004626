"""Reading request bodies, and what every dialect's validation shares.

The body is read with a hard bound (so a client cannot make us buffer without end),
decoded as strict JSON no deeper than `MAX_DEPTH`, and checked for lone surrogates; each dialect
(gateway/dialects) then checks its own fields into one `ChatRequest`. Every failure
becomes an `APIError` naming the offending `param`, never an exception escaping to the
server.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from firsttoken.errors import InvalidImage
from firsttoken.tokens.images import part_image

from .errors import APIError, invalid

__all__ = ["MAX_DEPTH", "ChatRequest", "bad_image", "check_object", "decode_body", "decode_content", "message_text", "read_body", "replay_body"]


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A validated request, whatever its dialect. `messages` is its prompt as Chat
    Completions messages (a system message for the dialect's system text or
    instructions, then its turns, text as text parts): what flow control counts and
    the built-in model answers; `tools` its function tools in Chat Completions' form,
    counted with it. `raw` is the body exactly as parsed; `format` the answer's format
    ("text", "json_object", or a type the built-in model refuses)."""

    model: str
    messages: list[dict[str, Any]]
    stream: bool
    include_usage: bool
    max_tokens: int | None
    raw: dict[str, Any] = field(repr=False)
    format: str = "text"
    tools: list[dict[str, Any]] | None = None
    #: The reasoning effort asked (OpenAI's words: "none" … "max"; Anthropic's
    #: `thinking: disabled` is "none"), or None: the model's default.
    effort: str | None = None
    #: The most tokens thinking may take (Anthropic's `budget_tokens`), or None.
    think_cap: int | None = None


async def read_body(request: Request, limit: int) -> bytes:
    """Read the body, refusing more than `limit` bytes (413) before buffering it all."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise _too_large(limit)
        except ValueError:
            raise invalid("Content-Length is not a number.") from None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


#: Request content codings taken (RFC 9110 §8.4). gzip only: what a browser's
#: CompressionStream and Python's zlib both make, and enough: a chat body is JSON text,
#: which it cuts 4–6×, and on a phone the upload is the slow direction.
REQUEST_CODINGS = ("gzip",)


def decode_content(body: bytes, coding: str | None, limit: int) -> bytes:
    """The body as sent before its `Content-Encoding` (RFC 9110 §8.4): unchanged without
    one, gunzipped for gzip, never past `limit` bytes however small the compressed body
    (a 413, as for a plain body that size: a gzip bomb is refused as it inflates, not
    after). A coding not taken is a 415 (RFC 9110 §15.5.16); a corrupt or cut stream a 400."""
    coding = (coding or "identity").strip().lower()
    if coding == "identity":
        return body
    if coding not in REQUEST_CODINGS:
        raise APIError(415, f"Content-Encoding {coding[:40]!r} is not supported; send gzip or none.",
                       code="unsupported_content_encoding")
    inflate = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer (RFC 1952)
    try:
        out = inflate.decompress(body, limit + 1)
        if len(out) > limit or inflate.unconsumed_tail:
            raise _too_large(limit)
        if not inflate.eof or inflate.unused_data:
            raise invalid("The gzip body is cut short or has bytes after its end.")
    except zlib.error:
        raise invalid("The body is not valid gzip.") from None
    return out


def _too_large(limit: int) -> APIError:
    return APIError(
        413,
        f"Request body is larger than the limit of {limit} bytes.",
        code="request_too_large",
    )


def _reject_constant(name: str) -> Any:
    # json.loads accepts NaN/Infinity by default; JSON (RFC 8259 §6) does not.
    raise ValueError(f"{name} is not valid JSON")


#: The deepest a body may nest, counting its object as level 1 (a chat message's
#: content part is at level 5, a tool's JSON schema rarely 20 levels below its tool).
#:
#: Every step after the parser must be able to serialise or walk what the parser
#: accepted, and each runs deeper in the stack than it: CPython stops at
#: `sys.getrecursionlimit()` (1,000) frames, its C JSON encoder and decoder spend one a
#: level, and a Python walker of JSON values one to three (`copy.deepcopy`: two). The
#: prefix cache's `json.dumps` of a content part (gateway/prefill.py) runs about 12
#: frames deep in a pool thread, and overflowed at a body about 984 levels deep; a step
#: on the event loop starts about 40 frames deep. At 256 levels, a walker at three
#: frames a level from the event loop still has a margin of about 200 frames (3 × 256
#: + 40 = 808), and the parser itself, which gives up near 990, never decides.
MAX_DEPTH = 256


def decode_body(body: bytes) -> Any:
    """The JSON of a body (RFC 8259, strictly: no NaN or Infinity) nested at most
    `MAX_DEPTH` levels, or a 400."""
    try:
        data = json.loads(body, parse_constant=_reject_constant)
    except RecursionError:
        raise _too_deep() from None
    except ValueError:
        raise invalid(
            "We could not parse the JSON body of your request. "
            "(HINT: This likely means you aren't using your HTTP library correctly.)"
        ) from None
    # Each level opens a bracket: fewer brackets than the bound (counted in C, the
    # usual case) need no walk.
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH and _deeper_than(data, MAX_DEPTH):
        raise _too_deep()
    return data


def _too_deep() -> APIError:
    return invalid(f"The request body is nested too deeply: at most {MAX_DEPTH} levels of arrays and objects.")


def _deeper_than(data: Any, limit: int) -> bool:
    """Whether `data` nests arrays and objects more than `limit` levels deep. Iterative
    (a recursive walk is what the bound protects), and over containers only."""
    if not isinstance(data, (dict, list)):
        return False
    stack: list[tuple[dict[str, Any] | list[Any], int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            return True
        for item in value.values() if isinstance(value, dict) else value:
            if isinstance(item, (dict, list)):
                stack.append((item, depth + 1))
    return False


def check_object(data: Any, body: bytes) -> dict[str, Any]:
    """`data` (the decoded `body`) if it is a JSON object holding no lone surrogate,
    else a 400. (`body` is scanned for escaped surrogates, far faster than walking
    `data`.)"""
    if not isinstance(data, dict):
        raise invalid("The request body must be a JSON object.")
    if _SURROGATE_ESCAPE.search(body):
        _check_unicode(data, "")  # recursive: `decode_body` bounded the depth
    return data


# A `\uD800`-`\uDFFF` escape: JSON allows it, but a lone one is no character (RFC 8259
# §8.2) and cannot be encoded as UTF-8, so it would fail later, mid-answer.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _check_unicode(value: Any, where: str) -> None:
    """Refuse lone surrogates anywhere in the parsed body (400, naming the place)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise invalid(f"'{where or 'body'}' contains a lone surrogate (\\uD800-\\uDFFF), which is not valid Unicode.",
                          param=where or None, code="invalid_value") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key, where)
            _check_unicode(item, f"{where}.{key}" if where else key)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_unicode(item, f"{where}[{i}]")


def message_text(message: dict[str, Any]) -> str:
    """The text of a message's content (string, or the text parts of an array)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def bad_image(turns: Any, name: str, *, dotted: bool = False) -> tuple[str, InvalidImage] | None:
    """The first image part among `turns` (a body's list of messages or input items, at
    `name`) whose bytes do not read as an image or declare too many pixels
    (`firsttoken.image_header`), as `(param path, error)`; None if every one reads. The
    built-in model bills images from their headers, so it refuses what it cannot read, as
    the real APIs refuse an image they cannot decode. `dotted`: Anthropic's paths
    (`messages.0.content.1`), else OpenAI's (`messages[0].content[1]`)."""
    for i, turn in enumerate(turns if isinstance(turns, list) else ()):
        content = turn.get("content") if isinstance(turn, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else ()):
            try:
                part_image(part)
            except InvalidImage as error:
                return (f"{name}.{i}.content.{j}" if dotted else f"{name}[{i}].content[{j}]"), error
    return None


def replay_body(body: bytes, receive: Any) -> Any:
    """An ASGI `receive` that hands on a body already read (by a middleware that had to
    look at it), then the real channel, for the disconnect an app may wait on."""
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
