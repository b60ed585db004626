"""The leading system messages: which they are, each prepared, and their cache entries.

A long system prompt is the same in every request, so each leading system message's
result (compressed text, exact count, compression report and the repeats state after
it) is kept in `firsttoken.cache` under a key chained over the messages before it.
`find_leads` is the pipeline's step for them: which messages lead, and which of them
the cache, else the conversation memory, holds already. The cache is read there only;
the pipeline compresses the rest with everything else, and writes the new entries
(`pipeline.entry_for`) once the prompt is prepared.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..cache import Cache, Entry, cache_key
from ..compress import COMPRESSION_VERSION, Compressor, RepeatState, Report
from ..errors import LocalProtocolError
from .counts import TextCounts

__all__ = [
    "LEAD_ROLES",
    "Lead",
    "Leads",
    "leading_system_count",
    "compression_id",
    "cache_keys",
    "cached",
    "find_leads",
]

#: Roles of the messages that may be kept in the cache (when they lead the conversation).
LEAD_ROLES = frozenset({"system", "developer"})
# Only plain messages: another field (tool calls, cache hints) would make the entry's
# count and text stand for less than the message.
_LEAD_FIELDS = frozenset({"role", "content", "name"})


def leading_system_count(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many messages at the start are plain system/developer messages with text.
    Only those are cached: a system message after a user turn depends on that turn."""
    n = 0
    for m in messages:
        if m.get("role") not in LEAD_ROLES or not isinstance(m.get("content"), str) or not set(m) <= _LEAD_FIELDS:
            break
        n += 1
    return n


def compression_id(level: str) -> str:
    """What a cached text depends on besides itself: compressor version and level."""
    return f"{COMPRESSION_VERSION}/{level}"


@dataclass(slots=True)
class Lead:
    """One leading system message, prepared: from the cache or just now."""

    text: str
    report: Report | None  # None when compression is off (`Compressor`)
    state: RepeatState | None  # the repeats state after it; None when off
    entry: Entry | None = None  # its cache entry (which needs an exact count)


def cache_keys(messages: Sequence[Mapping[str, Any]], encoding: str, level: str) -> list[str]:
    """The keys of leading system `messages`, each chained over those before it."""
    keys: list[str] = []
    previous = ""
    for m in messages:
        previous = cache_key(m["content"], encoding, compression_id(level), previous)
        keys.append(previous)
    return keys


def _lead_of(entry: Entry, compressor: Compressor) -> Lead | None:
    """The entry as a result, or None if it cannot be used (then it is a miss)."""
    try:
        # One reader for the stored form (`Report.from_dict`): `removed` (what kind of
        # text went) must survive the cache, or a prepared conversation would report
        # less than the whole does.
        state, report = compressor.restore(entry.state, entry.report)
    except (LocalProtocolError, KeyError, TypeError, ValueError):
        return None
    return Lead(entry.text, report, state, entry)


async def cached(
    cache: Cache, keys: Sequence[str], encoding: str, compressor: Compressor, *, peek: bool = False
) -> tuple[list[Lead], set[str | None]]:
    """The longest run of leading messages the cache holds, usable, and where each
    came from (`Cache.last_source`). `peek`: from its memory tier only (`Cache.peek`)."""
    found: list[Lead] = []
    sources: set[str | None] = set()
    for key in keys:
        entry = cache.peek(key) if peek else await cache.get(key)
        if entry is None or entry.encoding != encoding or entry.compression != compression_id(compressor.level):
            break
        lead = _lead_of(entry, compressor)
        if lead is None:
            break
        found.append(lead)
        sources.add("memory" if peek else cache.last_source)
    return found, sources


@dataclass(slots=True)
class Leads:
    """The leading system messages of one conversation, and which of them are known."""

    #: How many messages lead.
    count: int
    #: The first of them, as the cache or the conversation memory holds them.
    known: list[Lead] = field(default_factory=list)
    #: How many of those came from the cache, and from which tier (`Cache.last_source`).
    hits: int = 0
    sources: set[str | None] = field(default_factory=set)
    #: Their cache keys (none without a cache).
    keys: list[str] = field(default_factory=list)


async def find_leads(
    messages: Sequence[Mapping[str, Any]],
    *,
    encoding: str,
    compress: Compressor,
    counts: TextCounts | None,
    cache: Cache | None,
    kept: Sequence[Lead] | None,
    live: bool,
) -> Leads:
    """Which messages of `messages` lead, and the first of them known: what `cache`
    holds (with a counter only, since an entry holds an exact count; `live` reads its
    memory tier only), then what the conversation memory `kept`, when it kept exactly
    these. What an entry knows is remembered in `counts`, so it costs nothing to count
    again. The cache is read here only, and written once the prompt is prepared
    (`pipeline`)."""
    k = leading_system_count(messages)
    if counts is None:
        cache = None
    keys = cache_keys(messages[:k], encoding, compress.level) if cache is not None else []
    known, sources = await cached(cache, keys, encoding, compress, peek=live) if cache is not None else ([], set())
    hits = len(known)
    for m, lead in zip(messages, known):
        # The text as sent, and the text as written (its report's count before compression).
        assert counts is not None and lead.entry is not None
        counts.remember(lead.text, lead.entry.tokens)
        if lead.report is not None and lead.report.tokens_before is not None:
            counts.remember(m["content"], lead.report.tokens_before)
    if kept is not None and len(kept) == k:
        known += kept[hits:]
    return Leads(k, known, hits, sources, keys)
