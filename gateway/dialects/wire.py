"""What the three wire formats' encoders share: how an answer ended, JSON, SSE, ids.

Pure: nothing here reads a clock or a socket (ids are random, which no test asserts).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any, Callable, Sequence

__all__ = ["Outcome", "Stamp", "compact", "is_count", "json_string", "last_total", "new_id", "sse_event"]

#: The time a benchmark's chunk left, in wall-clock ms (the built-in model's `stamp=1`),
#: or None for no stamp.
Stamp = Callable[[], float] | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an answer turns out, known to the built-in model before its first piece: why
    it ends (`finish`: "stop" when the model is done, "length" when `max_tokens` cut it,
    in Chat Completions' words; each framing says it in its own) and its usage:
    `prompt_tokens` all of the prompt, `cached_tokens` of them read from the prefix
    cache, `cache_write_tokens` of them written to it (reported by Anthropic only);
    `completion_tokens` all of the output, thinking included."""

    finish: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    #: Of `completion_tokens`, those spent thinking (every API counts them as output).
    reasoning_tokens: int = 0
    #: Chat Completions only: the thinking inline in `content` as `<think>…</think>`
    #: (the sim field `think_tags=1`), as servers without a reasoning parser send it.
    think_tags: bool = False

    @property
    def thinks(self) -> bool:
        """Whether the answer has a thinking phase."""
        return self.reasoning_tokens > 0

    @property
    def cut_thinking(self) -> bool:
        """Whether the output limit ran out while thinking: no answer text at all."""
        return self.thinks and self.finish == "length" and self.completion_tokens == self.reasoning_tokens


# json.dumps(text, ensure_ascii=False) builds a new encoder per call (a third of the
# stream's own time, profiled); the C string encoder it ends in is the same output.
json_string: Callable[[str], str] = json.encoder.encode_basestring


def compact(value: Any) -> bytes:
    """`value` as compact JSON in UTF-8 (the servers' own form: no spaces, no escapes
    beyond JSON's). Request text reaching here was checked for lone surrogates."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def sse_event(name: str, data: bytes) -> bytes:
    """One Server-Sent Event with a type (WHATWG HTML §9.2.6: the `event` field sets
    the type, `data` the payload; a blank line dispatches it). `data` must hold no
    line break: compact JSON has none."""
    return b"event: " + name.encode() + b"\ndata: " + data + b"\n\n"


_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def new_id(prefix: str, length: int = 24, alphabet: str = _ALPHABET) -> str:
    """`prefix` and `length` random characters: ids shaped like the real servers'
    (`chatcmpl-…`, `resp_…`, `msg_…`, `req_…`)."""
    return prefix + "".join(secrets.choice(alphabet) for _ in range(length))


def is_count(value: Any) -> bool:
    """A token count: an integer, not a boolean, not negative."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def last_total(usages: Sequence[dict[str, Any]], parts: tuple[str, str]) -> int | None:
    """The tokens the last usage object that says reports: its `total_tokens`, else
    the sum of its two `parts` (prompt and completion, in the dialect's names)."""
    for usage in reversed(usages):
        total = usage.get("total_tokens")
        if is_count(total):
            return total
        counts = [usage.get(name) for name in parts]
        if all(is_count(c) for c in counts):
            return sum(counts)
    return None
