"""The leading system messages: which they are, each prepared, and their cache entries.

A long system prompt is the same in every request, so each leading system message's
result (compressed text, exact count, compression report and the repeats state after
it) is kept in `firsttoken.cache` under a key chained over the messages before it.
`prepare_leads` is the pipeline's one step for them: which messages lead, each from the
cache, else as the conversation memory kept it, else compressed now; the new ones
counted, given their entries and stored. The cache is looked up and written here only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..cache import Cache, Entry, cache_key, text_digest
from ..compress import COMPRESSION_VERSION, Compressor, RepeatState, Report
from ..errors import LocalProtocolError
from .counts import TextCounts

__all__ = [
    "LEAD_ROLES",
    "Lead",
    "Leads",
    "Unresumable",
    "leading_system_count",
    "compression_id",
    "cache_keys",
    "cached",
    "entry_for",
    "give_entries",
    "prepare_leads",
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


def entry_for(key: str, lead: Lead, tokens: int, encoding: str, level: str, created_at: float) -> Entry:
    """The cache entry of a leading message just prepared, counted `tokens`. Its report
    is `Report.to_dict()`, the one serialised form (empty when compression is off)."""
    text = lead.text
    report = lead.report.to_dict() if lead.report is not None else {}
    state = lead.state.to_json() if lead.state is not None else None
    return Entry(key, text, tokens, encoding, compression_id(level), report, text_digest(text), created_at, state)


def give_entries(
    cache: Cache, keys: Sequence[str], leads: Sequence[Lead], counts: TextCounts, encoding: str, level: str,
    clock: Callable[[], float], *, store: bool,
) -> None:
    """Cache entries for `leads` (under `keys`), counted; written behind the caller's
    back (`Cache.spawn`) when `store`."""
    for key, lead in zip(keys, leads):
        lead.entry = entry_for(key, lead, counts(lead.text), encoding, level, clock() / 1000.0)
        if store:
            cache.spawn(cache.put(lead.entry))


class Unresumable(Exception):
    """A repeats state grew past its bound: what follows is compressed from the start."""


@dataclass(slots=True)
class Leads:
    """The leading system messages of one conversation, prepared."""

    #: How many messages lead.
    count: int
    leads: list[Lead] = field(default_factory=list)
    #: How many of them came from the cache, and from which tier (`Cache.last_source`).
    hits: int = 0
    sources: set[str | None] = field(default_factory=set)
    #: Their cache keys (none without a cache).
    keys: list[str] = field(default_factory=list)


def _compress_leads(messages: Sequence[Mapping[str, Any]], prior: RepeatState | None, compress: Compressor) -> list[Lead]:
    """Leading system messages not found in the cache, one at a time (each entry holds
    the state after its message)."""
    leads: list[Lead] = []
    for m in messages:
        done = compress([m], prior)
        prior = done.state
        if not compress.resumes(prior):
            raise Unresumable
        leads.append(Lead(done.messages[0]["content"], done.reports[0] if done.reports else None, prior))
    return leads


async def prepare_leads(
    messages: Sequence[Mapping[str, Any]],
    *,
    encoding: str,
    compress: Compressor,
    counts: TextCounts | None,
    cache: Cache | None,
    kept: Sequence[Lead] | None,
    clock: Callable[[], float],
    live: bool,
) -> Leads:
    """The leading system messages of `messages`, each prepared: what `cache` holds of
    them (with a counter only: an entry holds an exact count; `live` reads its memory
    tier only and writes nothing), else what the conversation memory `kept` (when it
    kept exactly these), else compressed now from the state the one before left; the
    ones not from the cache given entries, and stored. Raises `Unresumable` when a
    state grows past its bound (nothing is stored then)."""
    k = leading_system_count(messages)
    if counts is None:
        cache = None
    keys = cache_keys(messages[:k], encoding, compress.level) if cache is not None else []
    leads, sources = await cached(cache, keys, encoding, compress, peek=live) if cache is not None else ([], set())
    hits = len(leads)
    for m, lead in zip(messages, leads):
        # What an entry knows costs nothing to count again: the text as sent, and the
        # text as written (its report's count before compression).
        assert counts is not None and lead.entry is not None
        counts.remember(lead.text, lead.entry.tokens)
        if lead.report is not None and lead.report.tokens_before is not None:
            counts.remember(m["content"], lead.report.tokens_before)
    if kept is not None and len(kept) == k:
        leads += kept[hits:]
    else:
        leads += _compress_leads(messages[hits:k], leads[-1].state if leads else None, compress)
    if cache is not None:
        assert counts is not None
        give_entries(cache, keys[hits:], leads[hits:], counts, encoding, compress.level, clock, store=not live)
    return Leads(k, leads, hits, sources, keys)
