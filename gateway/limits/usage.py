"""How many tokens an answer really cost, read from the response as it passes. Pure.

The server's own usage is the truth when the answer carries it (non-streaming answers
always do; Chat Completions streams with `stream_options.include_usage`, Responses and
Messages streams always). Otherwise the completion is counted from the answer's text.
Where the usage and the text stand is the dialect's to say (a `Reading`:
gateway/dialects). Bounded: the first `head_bytes` of the body are kept for counting
and the last `tail_bytes` for the usage object, which comes last; a longer answer's
count is extrapolated from the head by bytes, which is an estimate, and said so.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Protocol, Sequence

from firsttoken.stream.sse import SSEDecoder

__all__ = ["Reading", "Settled", "UsageMeter"]

# A usage object, one level of objects nested in it at most (`input_tokens_details`,
# Anthropic's `cache_creation`): no key of these APIs' usage nests deeper. Possessive
# (Python 3.11), so that a long run that never closes is given up in linear time
# rather than split every possible way.
_USAGE = re.compile(rb'"usage"\s*:\s*(\{(?:[^{}]++|\{[^{}]*+\})*+\})')


class Reading(Protocol):
    """Where a dialect's answer states its cost (gateway/dialects, `Dialect`)."""

    def usage_total(self, usages: Sequence[dict[str, Any]], streaming: bool) -> int | None:
        """The tokens the usage objects found (in order) report, or None."""

    def event_text(self, event: Any) -> str:
        """The answer text one streamed event (its decoded JSON) carries."""

    def body_text(self, body: Any) -> str:
        """The answer text of a whole answer (its decoded JSON)."""


class Settled(dict):
    """`{"total_tokens": n, "exact": bool}`: what to charge for an answer."""


class UsageMeter:
    def __init__(self, reading: Reading, *, streaming: bool, head_bytes: int = 1 << 20, tail_bytes: int = 16 << 10) -> None:
        self.reading = reading
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
        # Usage objects may stand early (Anthropic's message_start) and last: in the
        # head, and in the tail once the answer outgrew the head (the tail may start
        # mid-object; the head's end and the tail's start join).
        usages = _usages(bytes(self._head))
        if self._tail:
            usages += _usages(bytes(self._head[-self.tail_bytes :] + self._tail))
        reported = self.reading.usage_total(usages, self.streaming)
        if reported is not None:
            return Settled(total_tokens=reported, exact=True)
        text = self._streamed_text() if self.streaming else self._body_text()
        completion = count_text(text) if text else 0
        exact = len(self._head) == self.total_bytes
        if not exact and self._head:
            completion = round(completion * self.total_bytes / len(self._head))
        return Settled(total_tokens=prompt_tokens + completion, exact=exact)

    def _streamed_text(self) -> str:
        decoder = SSEDecoder()
        try:
            events = decoder.feed(bytes(self._head))
        except Exception:  # noqa: BLE001 - a broken stream is counted as far as it parsed
            return ""
        pieces: list[str] = []
        for event in events:
            try:
                data = json.loads(event.data)
            except ValueError:
                continue  # [DONE], or not ours to judge
            pieces.append(self.reading.event_text(data))
        return "".join(pieces)

    def _body_text(self) -> str:
        try:
            return self.reading.body_text(json.loads(bytes(self._head)))
        except ValueError:
            return ""


def _usages(data: bytes) -> list[dict[str, Any]]:
    found = []
    for match in _USAGE.finditer(data):
        try:
            value = json.loads(match.group(1))
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found
