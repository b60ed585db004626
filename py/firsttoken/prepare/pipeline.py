"""The preparation proper: one conversation compressed, counted and fitted, once the
preparer has decided everything it depends on (`preparer.Decided`) and recalled what
the conversation memory holds of it (`memory.Recalled`).

Each step runs once, in order, and none looks back: replay taken off
(`firsttoken.replay`); which system messages lead, and which of them the cache or the
memory holds (`lead.find_leads`); everything else compressed in one call, piece by
piece (`firsttoken.compress.Compressor.pieces`); every text counted through one memo
(`counts.TextCounts`) and the whole fitted (`firsttoken.tokens.fit_messages`); then the
cache written. What the memory should keep is handed back (`Kept`), not stored here:
see `firsttoken.prepare` for why any of it gives exactly what preparing from scratch
gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .. import tokens
from ..cache import Cache, Entry, text_digest
from ..compress import Compressor, Report
from ..compress.report import sum_reports
from ..replay import take_replay
from .counts import TextCounts, texts_of
from .lead import Lead, Leads, compression_id, find_leads
from .memory import Kept, Point, Recalled

__all__ = ["Decided", "Prepared", "run"]


@dataclass(frozen=True, slots=True)
class Decided:
    """What preparing a prompt depends on besides its messages, decided once, by the
    preparer (`preparer.decide`), before the pipeline runs."""

    model: str
    #: The compression level (`ChatSettings.compress`; "off" included).
    level: str
    #: The API dialect it is sent in: counts and replay depend on it.
    api: str
    #: The token encoding it is counted in.
    encoding: str
    #: The prompt budget, and whether the model's window is known.
    budget: int
    window_known: bool


@dataclass(frozen=True, slots=True)
class Prepared:
    """What `prepare` made: the messages to send, what was done to them (the fields of
    `chat.prepared` decided here, named as there: bridge/PROTOCOL.md), the cache entries
    of the leading system messages (for gateway references), the count as written, and
    what the preparer decided for them (dialect, encoding, budget, estimate), which
    whoever sends them reads from here rather than deciding again."""

    #: What goes to the server: compressed and fitted.
    messages: list[dict[str, Any]]
    #: The prompt budget it was fitted into, and whether the model's window is known
    #: (else the budget is a guess: `tokens.budget_for`).
    budget: int
    window_known: bool
    #: The whole compression report (`Report.to_dict()`), or None (level "off").
    compression: dict[str, Any] | None
    #: What compression saved, per message, in `saved_unit` ("tokens", or "chars"
    #: without a counter).
    saved: list[int | None]
    saved_unit: str
    #: The count of `messages` (None without a counter), exact or estimated.
    prompt_tokens: int | None
    exact: bool
    #: Indices of messages fitting dropped, and of those it cut (`{index, tokens_cut}`).
    dropped: list[int]
    truncated: list[dict[str, Any]]
    #: Images fitting left out (of dropped messages, or taken off old ones).
    images_dropped: int
    #: The tokens of the images sent, within `prompt_tokens` (0 without a counter).
    image_tokens: int
    #: What the cache did for the leading system messages; None without a cache.
    cache: dict[str, Any] | None
    prepare_ms: float
    lead: list[Entry] = field(default_factory=list)
    #: The prompt's count as written: counted like `prompt_tokens`, or without a
    #: counter estimated (`tokens.estimate_tokens`).
    uncompressed: int = 0
    #: The count of `messages` for whatever needs one even without a counter (the
    #: governor's quota check, the live count): `prompt_tokens`, else estimated.
    estimate: int = 0
    #: The API dialect the messages were counted for (`stream.dialects.api_for`) and the
    #: encoding they were counted in (`tokens.encoding_for_model`).
    api: str = ""
    encoding: str = ""


def entry_for(key: str, lead: Lead, tokens: int, encoding: str, level: str, created_at: float) -> Entry:
    """The cache entry of a leading message just prepared, counted `tokens`. Its report
    is `Report.to_dict()`, the one serialised form (empty when compression is off)."""
    text = lead.text
    report = lead.report.to_dict() if lead.report is not None else {}
    state = lead.state.to_json() if lead.state is not None else None
    return Entry(key, text, tokens, encoding, compression_id(level), report, text_digest(text), created_at, state)


class _Unresumable(Exception):
    """A repeats state grew past its bound: what follows is compressed from the start."""


def _compress(
    messages: Sequence[Mapping[str, Any]], leads: Leads, compress: Compressor, recalled: Recalled
) -> tuple[list[Lead], list[dict[str, Any]], list[Report], list[tuple[int, Point]]]:
    """What is not known compressed, in one call (`Compressor.pieces`), each piece from
    the state the one before left: the leading messages not known one at a time (each
    entry holds the state after its message), then the messages after them from the
    longest prefix the memory held, up to the last message, then the last (the draft,
    in a live count: so the next count finds everything before it). Returns the
    leading messages, the rest compressed, their reports, and the points to keep (each
    prefix compressed, with the state after it)."""
    k, known = leads.count, leads.known
    missing, rest = messages[len(known) : k], messages[k:]
    # The memory's prefix continues the chain only after leading messages all known:
    # else they are compressed now, and the rest after them.
    start, point = (recalled.start - k, recalled.point) if recalled.start > k and not missing else (0, None)
    out: list[dict[str, Any]] = list(point.messages) if point else []
    reports: list[Report] = list(point.reports) if point else []
    prior = point.state if point else known[-1].state if known else None
    ends = [end for end in (len(rest) - 1, len(rest)) if end > start]
    pieces = [[m] for m in missing] + [rest[a:b] for a, b in zip([start, *ends], ends)]
    done = compress.pieces(pieces, prior)
    new = [Lead(d.messages[0]["content"], d.reports[0] if d.reports else None, d.state) for d in done[: len(missing)]]
    if len(done) < len(pieces) or not all(compress.resumes(lead.state) for lead in new):
        raise _Unresumable  # a state past its bound before the last piece
    points: list[tuple[int, Point]] = []
    for end, piece in zip(ends, done[len(missing) :]):
        out += piece.messages
        reports += piece.reports
        if compress.resumes(piece.state):
            points.append((k + end, Point(tuple(out), tuple(reports), piece.state)))
    return [*known, *new], out, reports, points


# Longer than 80 lines of code (issue 47, item 3), on purpose: it is the walk itself
# (ARCHITECTURE.md, "Preparation, one walk", steps 4-8), each step called once and in
# order, so that one prompt's messages can be followed top to bottom; in parts, the
# counts, leads, pieces and reports would be handed between them and the walk hidden.
async def run(
    messages: Sequence[Mapping[str, Any]],
    decided: Decided,
    *,
    counter: Callable[[str], int] | None,
    clock: Callable[[], float],
    started: float,
    cache: Cache | None,
    recalled: Recalled,
    live: bool,
) -> tuple[Prepared, Kept]:
    """`messages` as written, prepared as `decided`, from what the memory held of them
    (`recalled`); and what the memory should keep. See `preparer.prepare`."""
    model, level, api, encoding = decided.model, decided.level, decided.api, decided.encoding
    # 0. Replay parts come off first; those that go back ride on their message, counted
    # and fitted with it (`firsttoken.replay`).
    messages = take_replay(messages, api, model)
    counts = TextCounts(counter, recalled.counts) if counter is not None else None
    if counts is None:
        cache = None  # entries hold exact counts
    compress = Compressor(level, counts)
    kept = Kept()

    # 1. Compress: the leading system messages the cache or the memory holds are known
    # (`lead`); everything else is compressed in one call, from the state they left.
    leads = await find_leads(
        messages, encoding=encoding, compress=compress, counts=counts, cache=cache, kept=recalled.leads, live=live
    )
    k, hits, stored = leads.count, leads.hits, True
    try:
        lead_list, rest, rest_reports, kept.points = _compress(messages, leads, compress, recalled)
        kept.leads = tuple(Lead(lead.text, lead.report, lead.state) for lead in lead_list)
    except _Unresumable:
        whole = compress(messages)
        lead_list = [Lead(m["content"], r, None) for m, r in zip(whole.messages[:k], whole.reports[:k])]
        rest, rest_reports = whole.messages[k:], list(whole.reports[k:])
        hits, stored = 0, False  # no state to resume from: nothing cached is used or kept
    head = [{**m, "content": lead.text} for m, lead in zip(messages[:k], lead_list)]

    # Off reports nothing (`Compressor`): no compression report, no savings.
    reports = [lead.report for lead in lead_list if lead.report is not None] + rest_reports
    compression = sum_reports(level, reports).to_dict() if reports else None
    saved: list[int | None] = [r.saved_tokens if counts is not None else r.saved_chars for r in reports]

    # 2-3. Count and fit, every text through the one memo.
    to_send = head + rest
    prompt_tokens: int | None = None
    exact, dropped, truncated, images_dropped, image_tokens = False, [], [], 0, 0
    if counts is not None:
        fit = tokens.fit_messages(to_send, decided.budget, model, reserve_for_reply=0, count=counts, api=api)
        prompt_tokens, exact, dropped, images_dropped = fit.total, fit.exact, list(fit.dropped), fit.images_left_out
        image_tokens = fit.image_tokens
        truncated = [{"index": t.index, "tokens_cut": t.tokens_cut} for t in fit.truncated]
        uncompressed = tokens.count_chat(messages, model, count=counts, api=api)
        kept.counts = counts.of(t for m in (*messages, *to_send) for t in texts_of(m))
        to_send = fit.messages
        estimate = prompt_tokens
    else:
        # No encoder: nothing was fitted, and the counts are estimates (`budget.py`).
        uncompressed = tokens.estimate_tokens(messages, model)
        estimate = tokens.estimate_tokens(to_send, model)

    # 4. The cache written: the leading messages it did not hold get entries (for
    # references, always), stored unless a live count (no storage I/O) or nothing
    # could be resumed from.
    cache_status: dict[str, Any] | None = None
    if cache is not None and counts is not None:
        for key, lead in zip(leads.keys[hits:], lead_list[hits:]):
            lead.entry = entry_for(key, lead, counts(lead.text), encoding, level, clock() / 1000.0)
            if stored and not live:
                cache.spawn(cache.put(lead.entry))
        status = "none" if not k else "hit" if hits == k else "miss"
        cache_status = {
            "system": status,
            "messages": k,
            "store": cache.backend,
            # Where a hit came from: "memory" (this session) or "store" (e.g. after a reload).
            "source": ("store" if "store" in leads.sources else "memory") if status == "hit" else None,
        }
    prepared = Prepared(
        messages=to_send,
        budget=decided.budget,
        window_known=decided.window_known,
        compression=compression,
        saved=saved,
        saved_unit="tokens" if counts is not None else "chars",
        prompt_tokens=prompt_tokens,
        exact=exact,
        dropped=dropped,
        truncated=truncated,
        images_dropped=images_dropped,
        image_tokens=image_tokens,
        cache=cache_status,
        prepare_ms=round(clock() - started, 3),
        lead=[lead.entry for lead in lead_list if lead.entry is not None],
        uncompressed=uncompressed,
        estimate=estimate,
        api=api,
        encoding=encoding,
    )
    return prepared, kept
