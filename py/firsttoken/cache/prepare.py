"""Preparing a conversation whose leading system messages come from `firsttoken.cache`.

`Core._prepare` compresses, counts and fits a conversation before it leaves. A long
system prompt dominates that work and is the same every time, so the leading run of
system/developer messages is prepared once and kept (compressed text, exact token
count, compression report); later requests take it from the cache and prepare only the
rest. The result is the same as preparing everything, for three reasons:

* Compression is prefix-stable (`firsttoken.compress`): a leading message's output
  depends only on it and the messages before it, all of which are in its key. Only
  the *leading* run is cached for that reason: a system message after a user turn
  depends on that turn.
* The rest does depend on the leading messages, through the repeats pass alone (a
  paragraph of the system prompt pasted into a user turn is dropped there). The rest is
  compressed on its own, and `lead_may_change_rest` decides, conservatively, whether
  the system text could have changed that outcome; if so, everything is prepared the
  slow way (`status` "bypass").
* Fitting never drops or cuts system messages and counting is additive, so fitting the
  rest into the budget minus the system messages' cost (overhead + cached count)
  keeps, drops and cuts exactly what fitting the whole would.

Tests compare both ways on the compression corpus and on generated conversations
(tests/unit/test_cache_prepare.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .. import tokens
from . import Cache, Entry, cache_key, text_digest
from ..compress import COMPRESSION_VERSION, LEVELS, PassSaving, Report, compress_messages
from ..compress.markdown import split_blocks
from ..compress.repeats import MIN_RUN_CHARS, units_of
from ..compress.report import sum_reports

__all__ = ["CachedPrepare", "leading_system_count", "compression_id", "lead_may_change_rest", "prepare_with_cache"]

#: Roles of the messages that may be kept in the cache (when they lead the conversation).
LEAD_ROLES = frozenset({"system", "developer"})
# Only plain messages: another field (tool calls, cache hints) would make the entry's
# count and text stand for less than the message.
_LEAD_FIELDS = frozenset({"role", "content", "name"})
#: Roles whose text loses repeats (as in `firsttoken.compress.repeats`).
_INSTRUCTIVE = frozenset({"system", "developer", "user"})
# The whitespace `compress.repeats` ignores when it compares units.
_WS = re.compile(r"[ \t\r\n\f\v]+")


def leading_system_count(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many messages at the start are plain system/developer messages with text."""
    n = 0
    for m in messages:
        if m.get("role") not in LEAD_ROLES or not isinstance(m.get("content"), str) or not set(m) <= _LEAD_FIELDS:
            break
        n += 1
    return n


def compression_id(level: str) -> str:
    """What a cached text depends on besides itself: compressor version and level."""
    return f"{COMPRESSION_VERSION}/{level}"


def _normal(text: str) -> str:
    # A unit's key in compress.repeats: whitespace runs become one space.
    return " " + " ".join(_WS.split(text.strip(" \t\r\n\f\v"))) + " "


def _texts(message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)]
    return []


def _repeats_saved(report: Report) -> int:
    return sum(p.chars for p in report.passes if p.name == "repeats")


def lead_may_change_rest(
    lead_texts: Sequence[str], rest: Sequence[Mapping[str, Any]], rest_reports: Sequence[Report], level: str
) -> bool:
    """Could the leading texts have made the repeats pass drop more of `rest` (already
    compressed on its own, with its per-message reports) than it did? False only when
    certain: no unit of an instruction-giving message occurs in the leading texts, or
    none that could belong to a run of repeats long enough to be dropped."""
    if "repeats" not in LEVELS[level]:
        return False
    leads = [_normal(t) for t in lead_texts]
    json_regions = "json" in LEVELS[level]
    seen: set[str] = set()  # keys of earlier instruction-giving units in `rest`
    for message, report in zip(rest, rest_reports):
        if message.get("role") not in _INSTRUCTIVE:
            continue
        # Repeats already dropped here: the message's units before that are unknown,
        # so any unit found in the leading texts is reason enough to be careful.
        dropped = _repeats_saved(report) > 0
        texts = _texts(message)
        if sum(len(t) for t in texts) + _repeats_saved(report) < MIN_RUN_CHARS:
            # Too short for any run of repeats (a key is never longer than its text).
            for text in texts:
                for unit in units_of(split_blocks(text, json_regions=json_regions)):
                    seen.add(unit.key)
            continue
        for text in texts:
            run = 0
            run_has_lead = False
            for unit in units_of(split_blocks(text, json_regions=json_regions)):
                if not unit.key:
                    continue  # blank lines join a run, as in compress.repeats
                in_lead = any(f" {unit.key} " in lead for lead in leads)
                if in_lead and dropped:
                    return True
                if in_lead or unit.key in seen:
                    run += len(unit.key)
                    run_has_lead = run_has_lead or in_lead
                    if run_has_lead and run >= MIN_RUN_CHARS:
                        return True
                else:
                    run, run_has_lead = 0, False
                seen.add(unit.key)
    return False


def _report_from(data: Mapping[str, Any]) -> Report:
    return Report(
        level=data["level"],
        passes=tuple(PassSaving(p["name"], p["chars"], p.get("tokens")) for p in data["passes"]),
        chars_before=data["chars_before"],
        chars_after=data["chars_after"],
        tokens_before=data.get("tokens_before"),
        tokens_after=data.get("tokens_after"),
        untouched=tuple(data.get("untouched") or ()),
        version=data.get("version", ""),
    )


def _report_data(report: Report) -> dict[str, Any]:
    return {
        "level": report.level,
        "passes": [{"name": p.name, "chars": p.chars, "tokens": p.tokens} for p in report.passes],
        "chars_before": report.chars_before,
        "chars_after": report.chars_after,
        "tokens_before": report.tokens_before,
        "tokens_after": report.tokens_after,
        "untouched": list(report.untouched),
        "version": report.version,
    }


def _plain_report(level: str, text: str, count: int) -> Report:
    # Compression off: the text as it is, counted.
    return Report(level, (), len(text), len(text), count, count, (), COMPRESSION_VERSION)


@dataclass
class CachedPrepare:
    """What `prepare_with_cache` made: the messages to send, the `chat.prepared`
    fields it decided, and the entries of the leading system messages (for refs)."""

    messages: list[dict[str, Any]]
    fields: dict[str, Any]
    lead: list[Entry] = field(default_factory=list)


async def prepare_with_cache(
    messages: Sequence[Mapping[str, Any]],
    *,
    model: str,
    level: str,
    budget: int,
    counter: Callable[[str], int],
    cache: Cache,
    now: Callable[[], float],
) -> CachedPrepare:
    """Compress, count and fit `messages` into `budget` tokens, with the leading system
    messages from `cache` when it has them (and into it when it had not)."""
    k = leading_system_count(messages)
    encoding, _ = tokens.encoding_for_model(model)
    compression = compression_id(level)
    keys: list[str] = []
    previous = ""
    for m in messages[:k]:
        previous = cache_key(m["content"], encoding, compression, previous)
        keys.append(previous)
    found: list[Entry] = []
    sources: set[str | None] = set()
    for key in keys:
        entry = await cache.get(key)
        if entry is None or entry.encoding != encoding or entry.compression != compression:
            break
        found.append(entry)
        sources.add(cache.last_source)
    rest = [dict(m) for m in messages[k:]]
    status = "miss"
    lead: list[Entry] = []
    if len(found) == k:
        status = "hit"
        if level == "off":
            rest_reports = None
        else:
            compressed = compress_messages(rest, level=level, count=counter)
            rest, rest_reports = compressed.messages, list(compressed.reports)
            if lead_may_change_rest([e.text for e in found], rest, rest_reports, level):
                status = "bypass"
        lead = found
    if status != "hit":
        if level == "off":
            rest_reports = None
            rest = [dict(m) for m in messages[k:]]
            lead_texts = [m["content"] for m in messages[:k]]
            lead_reports = [_plain_report(level, t, counter(t)) for t in lead_texts]
        else:
            compressed = compress_messages(messages, level=level, count=counter)
            lead_texts = [m["content"] for m in compressed.messages[:k]]
            lead_reports = list(compressed.reports[:k])
            rest, rest_reports = compressed.messages[k:], list(compressed.reports[k:])
        created = now()
        lead = [
            Entry(key, text, int(report.tokens_after or 0), encoding, compression, _report_data(report), text_digest(text), created)
            for key, text, report in zip(keys, lead_texts, lead_reports)
        ]
        if status == "miss":
            for entry in lead[len(found):]:
                cache.spawn(cache.put(entry))

    fields: dict[str, Any] = {}
    if rest_reports is not None:
        reports = [_report_from(e.report) for e in lead] + rest_reports
        fields["compression"] = sum_reports(level, reports).to_dict()
        fields["saved"] = [r.saved_tokens for r in reports]
    else:
        fields["compression"] = None
        fields["saved"] = []
    fields["saved_unit"] = "tokens"

    head = [{**m, "content": e.text} for m, e in zip(messages[:k], lead)]
    lead_cost = sum(tokens.count_chat_detailed([{**m, "content": ""}], model).messages[0] + e.tokens for m, e in zip(head, lead))
    if budget - lead_cost < 0:
        # The system messages alone do not fit: let fit_messages say so, with its numbers.
        tokens.fit_messages(head + rest, budget, model, reserve_for_reply=0)
    fit = tokens.fit_messages(rest, budget - lead_cost, model, reserve_for_reply=0)
    fields.update(
        prompt_tokens=fit.total + lead_cost,
        exact=fit.exact,
        dropped=[i + k for i in fit.dropped],
        truncated=[{"index": t.index + k, "tokens_cut": t.tokens_cut} for t in fit.truncated],
        cache={
            "system": status if k else "none",
            "messages": k,
            "store": cache.backend,
            # Where a hit came from: "memory" (this session) or "store" (e.g. after a reload).
            "source": ("store" if "store" in sources else "memory") if status != "miss" else None,
        },
    )
    return CachedPrepare(head + fit.messages, fields, lead)
