"""The preparation proper: one conversation compressed, counted and fitted, once the
preparer has decided everything it depends on (`preparer.Decided`) and recalled what
the conversation memory holds of it (`memory.Recalled`).

Each step runs once, in order, and none looks back: replay taken off
(`firsttoken.replay`), the leading system messages from the cache or compressed and
their new entries written (`lead.prepare_leads`), the rest compressed from the state
they left (`firsttoken.compress.Compressor`), every text counted through one memo
(`counts.TextCounts`) and the whole fitted (`firsttoken.tokens.fit_messages`). What the
memory should keep is handed back (`Kept`), not stored here: see `firsttoken.prepare`
for why any of it gives exactly what preparing from scratch gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .. import tokens
from ..cache import Cache, Entry
from ..compress import Compressor, RepeatState, Report
from ..compress.report import sum_reports
from ..replay import take_replay
from .counts import TextCounts, texts_of
from .lead import Lead, Leads, Unresumable, cache_keys, give_entries, leading_system_count, prepare_leads
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


def _compress_rest(
    rest: Sequence[Mapping[str, Any]], k: int, prior: RepeatState | None, compress: Compressor, recalled: Recalled
) -> tuple[list[dict[str, Any]], list[Report], list[tuple[int, Point]]]:
    """The messages after the `k` leading ones, compressed from `prior`: from the
    longest prefix the memory held, then up to the last message, then the last (the
    draft, in a live count: so the next count finds everything before it). Also the
    points to keep: each prefix compressed, with the state after it."""
    start, point = (recalled.start - k, recalled.point) if recalled.start > k else (0, None)
    out: list[dict[str, Any]] = list(point.messages) if point else []
    reports: list[Report] = list(point.reports) if point else []
    state = point.state if point else prior
    points: list[tuple[int, Point]] = []
    for end in (len(rest) - 1, len(rest)):
        if end <= start:
            continue
        done = compress(rest[start:end], state)
        out += done.messages
        reports += done.reports
        state = done.state
        if not compress.resumes(state):
            if end < len(rest):
                raise Unresumable
            break
        points.append((k + end, Point(tuple(out), tuple(reports), state)))
        start = end
    return out, reports, points


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
    compress = Compressor(level, counts)
    kept = Kept()

    # 1. Compress. The leading system messages (`lead`: the cache's, else the memory's,
    # else compressed now); then the rest, from the state they left.
    try:
        leads = await prepare_leads(
            messages, encoding=encoding, compress=compress, counts=counts, cache=cache, kept=recalled.leads,
            clock=clock, live=live,
        )
        k = leads.count
        kept.leads = tuple(Lead(lead.text, lead.report, lead.state) for lead in leads.leads)
        prior = leads.leads[-1].state if leads.leads else None
        rest, rest_reports, kept.points = _compress_rest(messages[k:], k, prior, compress, recalled)
    except Unresumable:
        # No state to resume from: the whole at once, and nothing cached is used or kept
        # (its entries, for references, are not stored).
        whole = compress(messages)
        k = leading_system_count(messages)
        leads = Leads(k, [Lead(m["content"], r, None) for m, r in zip(whole.messages[:k], whole.reports[:k])])
        if cache is not None and counts is not None:
            leads.keys = cache_keys(messages[:k], encoding, level)
            give_entries(cache, leads.keys, leads.leads, counts, encoding, level, clock, store=False)
        rest, rest_reports = whole.messages[k:], list(whole.reports[k:])
    head = [{**m, "content": lead.text} for m, lead in zip(messages[:k], leads.leads)]

    # Off reports nothing (`Compressor`): no compression report, no savings.
    reports = [lead.report for lead in leads.leads if lead.report is not None] + rest_reports
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

    cache_status: dict[str, Any] | None = None
    if cache is not None and counts is not None:
        status = "none" if not k else "hit" if leads.hits == k else "miss"
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
        lead=[lead.entry for lead in leads.leads if lead.entry is not None],
        uncompressed=uncompressed,
        estimate=estimate,
        api=api,
        encoding=encoding,
    )
    return prepared, kept
