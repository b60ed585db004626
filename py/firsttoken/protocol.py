"""The firsttoken message protocol, version 1 (see bridge/PROTOCOL.md).

One protocol everywhere: main thread ↔ worker, page ↔ iOS/Android host, page ↔
embedding window. A message is one JSON object with a `type`; requests carry an `id`
chosen by the sender, and every event about that request carries the same `id`.
This module validates incoming messages and encodes outgoing ones; it does no I/O.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import InvalidMessage

__all__ = ["PROTOCOL_VERSION", "MAX_MESSAGE_BYTES", "REQUEST_TYPES", "parse_message", "encode"]

PROTOCOL_VERSION = 1

#: A message larger than this is refused, whatever its type (a long conversation with
#: a long system prompt fits easily; a runaway host does not get to exhaust memory).
MAX_MESSAGE_BYTES = 8 * 1024 * 1024

#: Requests the core accepts, and the fields each must have (name → type).
REQUEST_TYPES: dict[str, dict[str, type]] = {
    "hello": {},
    "ping": {},
    "delta.ack": {},
    "chat.send": {"messages": list, "settings": dict},
    "chat.abort": {},
    "tokens.count": {"messages": list, "settings": dict},
}


def parse_message(raw: str | dict[str, Any]) -> dict[str, Any]:
    """Validate one incoming request; raise `InvalidMessage` saying what is wrong."""
    if isinstance(raw, str):
        if len(raw) > MAX_MESSAGE_BYTES:
            raise InvalidMessage(f"message is larger than {MAX_MESSAGE_BYTES} bytes")
        try:
            msg = json.loads(raw)
        except (ValueError, RecursionError):
            raise InvalidMessage("message is not valid JSON") from None
    else:
        msg = raw
    if not isinstance(msg, dict):
        raise InvalidMessage("message must be a JSON object")
    kind = msg.get("type")
    if not isinstance(kind, str):
        raise InvalidMessage("message has no string 'type'")
    version = msg.get("v", PROTOCOL_VERSION)
    if version != PROTOCOL_VERSION:
        raise InvalidMessage(f"unsupported protocol version {version!r}; this core speaks {PROTOCOL_VERSION}")
    fields = REQUEST_TYPES.get(kind)
    if fields is None:
        raise InvalidMessage(f"unknown message type {kind[:60]!r}")
    request_id = msg.get("id")
    if request_id is not None and not isinstance(request_id, str):
        raise InvalidMessage("'id' must be a string")
    if kind.startswith("chat.") and not request_id:
        raise InvalidMessage(f"'{kind}' needs an 'id'")
    for name, expected in fields.items():
        if not isinstance(msg.get(name), expected):
            raise InvalidMessage(f"'{kind}' needs '{name}' of type {expected.__name__}")
    if kind in ("chat.send", "tokens.count"):
        _check_messages(msg["messages"])
    return msg


def _check_messages(messages: list[Any]) -> None:
    if not messages:
        raise InvalidMessage("'messages' is empty")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise InvalidMessage(f"messages[{i}] needs a string 'role'")
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise InvalidMessage(f"messages[{i}].content must be a string, an array or null")


def encode(kind: str, request_id: str | None = None, **fields: Any) -> str:
    """One outgoing event as JSON text."""
    msg: dict[str, Any] = {"v": PROTOCOL_VERSION, "type": kind}
    if request_id is not None:
        msg["id"] = request_id
    msg.update(fields)
    return json.dumps(msg, ensure_ascii=False, separators=(",", ":"))
