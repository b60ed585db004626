"""The leading system messages: which they are, and their cache entries.

A long system prompt is the same in every request, so each leading system message's
result (compressed text, exact count, compression report and the repeats state after
it) is kept in `firsttoken.cache` under a key chained over the messages before it.
This module turns entries into results and back; `firsttoken.prepare` decides when.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..cache import Cache, Entry, cache_key, text_digest
from ..compress import COMPRESSION_VERSION, Compressor, RepeatState, Report
from ..errors import LocalProtocolError

__all__ = ["LEAD_ROLES", "Lead", "leading_system_count", "compression_id", "cache_keys", "cached", "entry_for"]

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


def entry_for(key: str, lead: Lead, tokens: int, encoding: str, level: str, created_at: float) -> Entry:
    """The cache entry of a leading message just prepared, counted `tokens`. Its report
    is `Report.to_dict()`, the one serialised form (empty when compression is off)."""
    text = lead.text
    report = lead.report.to_dict() if lead.report is not None else {}
    state = lead.state.to_json() if lead.state is not None else None
    return Entry(key, text, tokens, encoding, compression_id(level), report, text_digest(text), created_at, state)
