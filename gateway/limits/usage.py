"""How many tokens an answer really cost, read from the response as it passes. Pure.

The server's own `usage` is the truth when the answer carries it (non-streaming
answers always do; streams do with `stream_options.include_usage`). Otherwise the
completion is counted from the streamed `delta.content` text. Bounded: the first
`head_bytes` of the body are kept for counting and the last `tail_bytes` for the usage
object, which comes last; a longer answer's count is extrapolated from the head by
bytes, which is an estimate, and said so.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from firsttoken.stream.sse import SSEDecoder

__all__ = ["UsageMeter", "Settled"]

_USAGE = re.compile(rb'"usage"\s*:\s*(\{[^{}]*\})')


class Settled(dict):
    """`{"total_tokens": n, "exact": bool}`: what to charge for an answer."""


class UsageMeter:
    def __init__(self, *, streaming: bool, head_bytes: int = 1 << 20, tail_bytes: int = 16 << 10) -> None:
        self.streaming = streaming
        self.head_bytes = head_bytes
        self.tail_bytes = tail_bytes
        self._head = bytearray()
        self._tail = bytearray()
        self.total_bytes = 0

    def feed(self, chunk: bytes) -> None:
        # Runs once per chunk of every answer, on the event loop: appends only, and the
        # tail is trimmed when it reaches twice its size (amortised O(1) per byte).
        self.total_bytes += len(chunk)
        room = self.head_bytes - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
            if not chunk:
                return
        self._tail += chunk
        if len(self._tail) > 2 * self.tail_bytes:
            del self._tail[: len(self._tail) - self.tail_bytes]

    def settle(self, prompt_tokens: int, count_text: Callable[[str], int]) -> Settled:
        """Tokens the request cost: the reported usage, else prompt + counted completion.
        Runs `count_text` (CPU-bound): call it off the event loop."""
        # The usage object comes last: in the tail once the answer outgrew the head
        # (the tail may start mid-object; the head's end and the tail's start join).
        reported = _last_usage(bytes(self._head[-self.tail_bytes :] + self._tail)) or _last_usage(bytes(self._head))
        if reported is not None:
            total = reported.get("total_tokens")
            if isinstance(total, int) and total >= 0:
                return Settled(total_tokens=total, exact=True)
            parts = [reported.get("prompt_tokens"), reported.get("completion_tokens")]
            if all(isinstance(p, int) and p >= 0 for p in parts):
                return Settled(total_tokens=sum(parts), exact=True)  # type: ignore[arg-type]
        text = _streamed_text(bytes(self._head)) if self.streaming else _message_text(bytes(self._head))
        completion = count_text(text) if text else 0
        exact = len(self._head) == self.total_bytes
        if not exact and self._head:
            completion = round(completion * self.total_bytes / len(self._head))
        return Settled(total_tokens=prompt_tokens + completion, exact=exact)


def _last_usage(data: bytes) -> dict[str, Any] | None:
    found = None
    for match in _USAGE.finditer(data):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(value, dict):
            found = value
    return found


def _streamed_text(data: bytes) -> str:
    decoder = SSEDecoder()
    pieces: list[str] = []
    try:
        events = decoder.feed(data)
    except Exception:  # noqa: BLE001 - a broken stream is counted as far as it parsed
        return ""
    for event in events:
        try:
            chunk = json.loads(event.data)
        except ValueError:
            continue  # [DONE], or not ours to judge
        for choice in chunk.get("choices") or () if isinstance(chunk, dict) else ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str):
                pieces.append(content)
    return "".join(pieces)


def _message_text(data: bytes) -> str:
    try:
        body = json.loads(data)
    except ValueError:
        return ""
    pieces = []
    for choice in body.get("choices") or () if isinstance(body, dict) else ():
        message = choice.get("message") if isinstance(choice, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            pieces.append(content)
    return "".join(pieces)
