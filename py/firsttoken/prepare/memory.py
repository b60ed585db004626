"""The compression of the conversations prepared last, kept by message prefix.

While the user types, the live count prepares the same history with a new draft after
it, many times; a send then prepares it once more, and the next turn adds two messages
to it. Compressing and counting the history each time would cost more than all the
rest of a count. So `firsttoken.prepare` compresses the messages after the leading
system ones in two pieces (all but the last, then the last) and keeps each result here,
with the repeats state after it, under a digest of everything it depends on
(`prefix_digests`). The next prepare resumes from the longest prefix kept, exactly as
it resumes from the cache after the system messages.

It also keeps the leading system messages last prepared (the live count reads the
cache's memory tier only, so until a send has stored them, they would be compressed on
every count) and the token counts of the texts the last prepare was given and sent, so
that a live count spends its time on the draft. Bounded: `keep` prefixes, one run of
leading messages, and the counts of one conversation. In memory only: it lasts the
session.

The memory wraps a preparation and is never consulted inside it: `recall` before it
gives everything it holds of the conversation (`Recalled`), the preparation says what
it made (`Kept`), and `store` keeps that after it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..cache.entries import canonical_json
from ..compress import RepeatState, Report
from .lead import Lead

__all__ = ["ConversationMemory", "Kept", "Point", "Recalled", "prefix_digests"]


@dataclass(frozen=True, slots=True)
class Point:
    """The messages after the leading system ones up to some point, compressed, their
    reports, and the repeats state after them."""

    messages: tuple[dict[str, Any], ...]
    reports: tuple[Report, ...]
    state: RepeatState | None  # None when compression is off


@dataclass(frozen=True, slots=True)
class Recalled:
    """What the memory holds of one conversation, looked up before it is prepared."""

    #: `digests[p]`: of the context and the first p messages (`prefix_digests`).
    digests: tuple[bytes, ...] = ()
    #: The encoding it is counted in.
    encoding: str = ""
    #: Token counts known already (of the last conversation, in the same encoding).
    counts: dict[str, int] = field(default_factory=dict)
    #: The leading system messages last prepared, if the conversation starts with them.
    leads: tuple[Lead, ...] | None = None
    #: The longest prefix kept (`point`: its messages after the leading ones,
    #: compressed), and how many messages it spans from the first.
    start: int = 0
    point: Point | None = None


@dataclass(slots=True)
class Kept:
    """What a preparation leaves for the memory to keep."""

    #: The leading system messages, prepared (None: nothing to keep).
    leads: tuple[Lead, ...] | None = None
    #: (p, point): the first p messages, those after the leading ones compressed.
    points: list[tuple[int, Point]] = field(default_factory=list)
    #: The counts of the texts given and sent (None: not counted).
    counts: dict[str, int] | None = None


class ConversationMemory:
    """Prefixes of conversations, compressed (`Point`s), the last leading system
    messages prepared, and the last counts."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._points: OrderedDict[bytes, Point] = OrderedDict()
        self._counts: tuple[str, dict[str, int]] = ("", {})
        self._leads: tuple[bytes, tuple[Lead, ...]] = (b"", ())

    def recall(self, messages: Sequence[Mapping[str, Any]], encoding: str, context: Any) -> Recalled:
        """What is kept of `messages` (as written), prepared in `encoding` under
        `context`: what else the result depends on (compressor version and level,
        whether it is counted, the dialect and model that decide what replay rides on
        each message)."""
        digests = tuple(prefix_digests(messages, (encoding, context)))
        digest, kept = self._leads
        leads = None
        if len(kept) < len(digests) and digests[len(kept)] == digest:
            # Copies: a preparation gives its leads their cache entries.
            leads = tuple(Lead(lead.text, lead.report, lead.state) for lead in kept)
        start, point = 0, None
        for p in range(len(digests) - 1, 0, -1):
            point = self._points.get(digests[p])
            if point is not None:
                self._points.move_to_end(digests[p])
                start = p
                break
        counts = dict(self._counts[1]) if self._counts[0] == encoding else {}
        return Recalled(digests, encoding, counts, leads, start, point)

    def store(self, recalled: Recalled, kept: Kept) -> None:
        """Keep what the preparation of `recalled`'s conversation made."""
        if kept.leads is not None:
            self._leads = (recalled.digests[len(kept.leads)], kept.leads)
        for p, point in kept.points:
            self._points[recalled.digests[p]] = point
            self._points.move_to_end(recalled.digests[p])
            while len(self._points) > self.keep:
                self._points.popitem(last=False)
        if kept.counts is not None:
            self._counts = (recalled.encoding, kept.counts)


def prefix_digests(messages: Sequence[Mapping[str, Any]], context: Any) -> list[bytes]:
    """For p = 0..len(messages): a digest of `context` and messages[:p]. `context` is
    what compressing them depends on besides themselves: compressor version and level,
    tokenizer, and whether they were counted."""
    h = hashlib.sha256(canonical_json(context))
    digests = [h.digest()]
    for m in messages:
        h.update(canonical_json(m))
        digests.append(h.digest())
    return digests
