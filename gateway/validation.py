"""Reading and validating `POST /v1/chat/completions` bodies.

The body is read with a hard bound (so a client cannot make us buffer without end), then
checked field by field. Every failure becomes an `APIError` naming the offending `param`,
the way OpenAI reports it, never an exception escaping to the server.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from .errors import APIError, invalid

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A validated chat-completion request. `raw` is the body exactly as parsed."""

    model: str
    messages: list[dict[str, Any]]
    stream: bool
    include_usage: bool
    max_tokens: int | None
    raw: dict[str, Any] = field(repr=False)


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


def _too_large(limit: int) -> APIError:
    return APIError(
        413,
        f"Request body is larger than the limit of {limit} bytes.",
        code="request_too_large",
    )


def _reject_constant(name: str) -> Any:
    # json.loads accepts NaN/Infinity by default; JSON (RFC 8259 §6) does not.
    raise ValueError(f"{name} is not valid JSON")


def parse_chat_request(body: bytes) -> ChatRequest:
    """Validate a chat-completion body; raise `APIError` (400) on the first problem."""
    return check_chat(decode_body(body), body)


def decode_body(body: bytes) -> Any:
    """The JSON of a body (RFC 8259, strictly: no NaN or Infinity), or a 400."""
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        raise invalid(
            "We could not parse the JSON body of your request. "
            "(HINT: This likely means you aren't using your HTTP library correctly.)"
        ) from None


def check_chat(data: Any, body: bytes) -> ChatRequest:
    """Validate `data`, the decoded `body`; raise `APIError` (400) on the first problem.
    (`body` is scanned for escaped surrogates, far faster than walking `data`.)"""
    if not isinstance(data, dict):
        raise invalid("The request body must be a JSON object.")
    if _SURROGATE_ESCAPE.search(body):
        try:
            _check_unicode(data, "")
        except RecursionError:
            raise invalid("The request body is nested too deeply.") from None

    model = data.get("model")
    if model is None:
        raise invalid("you must provide a model parameter", param="model", code="missing_required_parameter")
    if not isinstance(model, str) or not model:
        raise invalid("model must be a non-empty string.", param="model", code="invalid_type")

    messages = data.get("messages")
    if messages is None:
        raise invalid("Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter")
    if not isinstance(messages, list) or not messages:
        raise invalid("'messages' must be a non-empty array.", param="messages", code="invalid_type")
    for i, message in enumerate(messages):
        _check_message(message, i)

    stream = data.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise invalid("'stream' must be a boolean.", param="stream", code="invalid_type")

    include_usage = False
    options = data.get("stream_options")
    if options is not None:
        if not isinstance(options, dict):
            raise invalid("'stream_options' must be an object.", param="stream_options", code="invalid_type")
        if not stream:
            raise invalid(
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                param="stream_options",
            )
        flag = options.get("include_usage", False)
        if not isinstance(flag, bool):
            raise invalid("'stream_options.include_usage' must be a boolean.", param="stream_options.include_usage", code="invalid_type")
        include_usage = flag

    max_tokens = None
    for name in ("max_completion_tokens", "max_tokens"):
        value = data.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise invalid(f"'{name}' must be a positive integer.", param=name, code="invalid_type")
        max_tokens = value if max_tokens is None else min(max_tokens, value)

    for name in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        value = data.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        ):
            raise invalid(f"'{name}' must be a number.", param=name, code="invalid_type")

    for name, kind in (("response_format", dict), ("tools", list)):
        value = data.get(name)
        if value is not None and not isinstance(value, kind):
            raise invalid(f"'{name}' must be {'an object' if kind is dict else 'an array'}.", param=name, code="invalid_type")
    fmt = data.get("response_format")
    if fmt is not None and not isinstance(fmt.get("type"), str):
        raise invalid("Missing required parameter: 'response_format.type'.", param="response_format.type",
                      code="missing_required_parameter")

    n = data.get("n")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1 or n > 128):
        raise invalid("'n' must be an integer from 1 to 128.", param="n", code="invalid_type")

    return ChatRequest(
        model=model,
        messages=messages,
        stream=stream,
        include_usage=include_usage,
        max_tokens=max_tokens,
        raw=data,
    )


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


def _check_message(message: Any, i: int) -> None:
    where = f"messages[{i}]"
    if not isinstance(message, dict):
        raise invalid(f"'{where}' must be an object.", param=where, code="invalid_type")
    role = message.get("role")
    if role is None:
        raise invalid(f"Missing required parameter: '{where}.role'.", param=f"{where}.role", code="missing_required_parameter")
    if not isinstance(role, str) or role not in ROLES:  # a list or an object is not hashable
        raise invalid(
            f"Invalid value: '{str(role)[:40]}'. Supported values are: {', '.join(sorted(ROLES))}.",
            param=f"{where}.role",
            code="invalid_value",
        )
    content = message.get("content")
    if content is None:
        # Assistant turns that only call tools carry no content.
        if role == "assistant" and (message.get("tool_calls") or message.get("function_call")):
            return
        raise invalid(f"Missing required parameter: '{where}.content'.", param=f"{where}.content", code="missing_required_parameter")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise invalid(f"'{where}.content' must be a string or an array.", param=f"{where}.content", code="invalid_type")
    for j, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise invalid(
                f"'{where}.content[{j}]' must be an object with a 'type'.",
                param=f"{where}.content[{j}]",
                code="invalid_type",
            )
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            raise invalid(f"'{where}.content[{j}].text' must be a string.", param=f"{where}.content[{j}].text", code="invalid_type")


def message_text(message: dict[str, Any]) -> str:
    """The text of a message's content (string, or the text parts of an array)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


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
