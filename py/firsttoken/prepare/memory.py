"""The compression of the conversations prepared last, kept by message prefix.

While the user types, the live count prepares the same history with a new draft after
it, many times; a send then prepares it once more, and the next turn adds two messages
to it. Compressing and counting the history each time would cost more than all the
rest of a count. So `firsttoken.prepare` compresses the messages after the leading
system ones in two calls (all but the last, then the last) and keeps each result here,
with the repeats state after it, under a digest of everything it depends on
(`prefix_digests`). The next prepare resumes from the longest prefix kept, exactly as
it resumes from the cache after the system messages.

It also keeps the leading system messages last prepared (the live count reads the
cache's memory tier only, so until a send has stored them, they would be compressed on
every count) and the token counts of the texts the last prepare was given and sent, so
that a live count spends its time on the draft. Bounded: `keep` prefixes, one run of
leading messages, and the counts of one conversation. In memory only: it lasts the
session.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..cache.entries import canonical_json
from ..compress import RepeatState, Report
from .lead import Lead

__all__ = ["ConversationMemory", "Point", "prefix_digests"]


@dataclass(frozen=True, slots=True)
class Point:
    """The messages after the leading system ones up to some point, compressed, their
    reports, and the repeats state after them."""

    messages: tuple[dict[str, Any], ...]
    reports: tuple[Report, ...]
    state: RepeatState


class ConversationMemory:
    """Prefixes of conversations, compressed (`Point`s), the last leading system
    messages prepared, and the last counts."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._points: OrderedDict[bytes, Point] = OrderedDict()
        self._counts: tuple[str, dict[str, int]] = ("", {})
        self._leads: tuple[bytes, tuple[Lead, ...]] = (b"", ())

    def longest(self, digests: Sequence[bytes]) -> tuple[int, Point | None]:
        """(p, point) for the largest p > 0 whose `digests[p]` is kept, else (0, None)."""
        for p in range(len(digests) - 1, 0, -1):
            point = self._points.get(digests[p])
            if point is not None:
                self._points.move_to_end(digests[p])
                return p, point
        return 0, None

    def put(self, digest: bytes, point: Point) -> None:
        self._points[digest] = point
        self._points.move_to_end(digest)
        while len(self._points) > self.keep:
            self._points.popitem(last=False)

    def leads(self, digest: bytes) -> list[Lead] | None:
        """The leading system messages last prepared, if `digest` is theirs."""
        return list(self._leads[1]) if self._leads[0] == digest else None

    def keep_leads(self, digest: bytes, leads: Sequence[Lead]) -> None:
        self._leads = (digest, tuple(leads))

    def counts(self, encoding: str) -> dict[str, int]:
        """The counts the last prepare kept, if it counted in `encoding` (a copy)."""
        return dict(self._counts[1]) if self._counts[0] == encoding else {}

    def keep_counts(self, encoding: str, counts: dict[str, int]) -> None:
        self._counts = (encoding, counts)


def prefix_digests(rest: Sequence[Mapping[str, Any]], context: Any) -> list[bytes]:
    """For p = 0..len(rest): a digest of `context` and rest[:p]. `context` is what
    compressing `rest` depends on besides itself: the messages before it (the repeats
    state they leave is its input), compressor version and level, tokenizer, and
    whether it was counted."""
    h = hashlib.sha256(canonical_json(context))
    digests = [h.digest()]
    for m in rest:
        h.update(canonical_json(m))
        digests.append(h.digest())
    return digests
