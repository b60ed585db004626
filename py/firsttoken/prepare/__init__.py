"""firsttoken.prepare: what a conversation becomes before it leaves — compressed,
counted, fitted.

`prepare` is the one pipeline. `Core` runs it for `chat.send` (what is sent) and for
`tokens.count` (the composer's live count, which is therefore the count of what a send
would report as `prompt_tokens`). It takes the conversation as the user wrote it and
returns the messages to send, the `chat.prepared` fields it decides, the cache entries
of the leading system messages (for gateway references) and the count as written:

0. **Replay** (`firsttoken.replay`): each message's `replay` comes off; the parts that
   go back (same API and model) ride on their message from here on, so that they are
   counted and fitted with it, and never compressed.
1. **Compress** (`firsttoken.compress`) in pieces: the leading plain system/developer
   messages one at a time (`lead`), then the rest, each piece with `prior=` the
   repeats state the pieces before it left. Every decision about repeats is
   `compress`'s: this package only carries its `RepeatState` from piece to piece.
2. **Count** each distinct text once (`counts.TextCounts`): compression's report counts
   each text before and after, fitting counts what is kept, the live count wants the
   text as written. All of them ask one memo, the one place where counting happens.
3. **Fit** (`tokens.fit_messages`) into the budget: system messages and the newest turn
   are kept, older turns dropped or cut. Counts are of the prompt in the dialect it is
   sent in (`firsttoken.stream.dialects.api_for`): exact only where that is verified.

Two speed-ups live inside step 1, and neither is a second path: the **cache**
(`firsttoken.cache`, across sessions) holds each leading system message's result
(compressed text, exact count, report, repeats state after it); the **memory**
(`memory.ConversationMemory`, this session) holds the rest of the conversations
prepared last, by message prefix, for the live count while typing. Either gives
byte-identical results to preparing from scratch, for these reasons:

* Compression's repeats pass is a fold over messages with an explicit state:
  compressing messages[:k], then messages[k:] with `prior=` the state after k, gives
  exactly what compressing all of them gives (`compress` guarantees and tests this).
  Compressing in pieces is therefore the same as compressing the whole, and a kept
  piece replays it: it holds the text, report and state that compressing it gave, and
  it is found only under a key naming everything those depend on (the messages up to
  it, chained; the tokenizer; compressor version and level).
* Counts are exact counts of the same texts. A kept count goes into the memo, where
  fitting finds it as it would have found its own.
* The cache verifies entries before use (digests, key, types), and `compress` is asked
  whether a stored state is one it can resume from; an entry that fails is a miss, so
  a corrupt store can cost time but never change what is sent.

A repeats state that grew past its bound (`RepeatState.known` false) cannot be resumed
from; the conversation is then compressed whole, from its first message, and nothing
is kept.

tests/unit/test_prepare.py compares the pipeline (without either speed-up, cold, warm,
and through a conversation growing turn by turn and keystroke by keystroke) with
compressing and fitting the whole conversation directly, on the compression corpus and
on generated conversations, and checks that no text is counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .. import tokens
from ..cache import Cache, Entry
from ..compress import RepeatState, Report, compress_messages
from ..compress.report import sum_reports
from ..replay import take_replay
from ..settings import ChatSettings
from ..stream.dialects import api_for
from .counts import TextCounts, texts_of
from .lead import Lead, cache_keys, cached, compression_id, entry_for, leading_system_count
from .memory import ConversationMemory, Point, prefix_digests

__all__ = ["ConversationMemory", "Prepared", "TextCounts", "prepare", "leading_system_count", "compression_id"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """What `prepare` made: the messages to send, what was done to them (the fields of
    `chat.prepared` decided here, named as there: bridge/PROTOCOL.md), the cache entries
    of the leading system messages (for gateway references), and the count as written."""

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
    #: The prompt's count as written (None without a counter).
    uncompressed: int | None = None


class _Unresumable(Exception):
    """A repeats state grew past its bound: what follows is compressed from the start."""


def _compress_leads(
    messages: Sequence[Mapping[str, Any]], prior: RepeatState | None, level: str, counts: TextCounts | None
) -> list[Lead]:
    """Leading system messages not found in the cache, one at a time (each entry holds
    the state after its message)."""
    leads: list[Lead] = []
    for m in messages:
        if level == "off":
            leads.append(Lead(m["content"], None, None))
            continue
        done = compress_messages([m], level=level, count=counts, prior=prior)
        prior = done.state
        if prior is None or not prior.known:
            raise _Unresumable
        leads.append(Lead(done.messages[0]["content"], done.reports[0], prior))
    return leads


def _compress_rest(
    rest: Sequence[Mapping[str, Any]],
    prior: RepeatState | None,
    level: str,
    counts: TextCounts | None,
    memory: ConversationMemory | None,
    digests: Sequence[bytes],
) -> tuple[list[dict[str, Any]], list[Report]]:
    """The messages after the leading ones, compressed from `prior`: from the longest
    prefix `memory` holds, then up to the last message, then the last (the draft, in
    a live count: so the next count finds everything before it)."""
    start, point = memory.longest(digests) if memory is not None else (0, None)
    out: list[dict[str, Any]] = list(point.messages) if point else []
    reports: list[Report] = list(point.reports) if point else []
    state = point.state if point else prior
    for end in (len(rest) - 1, len(rest)):
        if end <= start:
            continue
        done = compress_messages(rest[start:end], level=level, count=counts, prior=state)
        out += done.messages
        reports += done.reports
        state = done.state
        if state is None or not state.known:
            if end < len(rest):
                raise _Unresumable
            break
        if memory is not None:
            memory.put(digests[end], Point(tuple(out), tuple(reports), state))
        start = end
    return out, reports


async def prepare(
    messages: Sequence[Mapping[str, Any]],
    settings: ChatSettings,
    *,
    budget: int | None = None,
    counter: Callable[[str], int] | None,
    clock: Callable[[], float],
    cache: Cache | None = None,
    memory: ConversationMemory | None = None,
    live: bool = False,
) -> Prepared:
    """Compress, count and fit `messages` into `budget` prompt tokens (by default the
    settings' budget: `tokens.budget_for`).

    `counter` counts one text exactly in the model's encoding, or is None (no encoder
    yet: the messages are compressed but neither counted nor fitted, and savings are
    in characters). `cache` makes the leading system messages cheap after the first
    time (used only with a counter: an entry holds an exact count); `memory` does the
    same for the rest of a conversation prepared again. Neither changes the result.
    `live`: a live count, which runs on every pause in typing, so it reads only the
    cache's memory tier and writes nothing (no storage I/O beside a send's).
    `clock` gives milliseconds (for `prepare_ms` and entries' creation times). Raises
    `ContextBudgetExceeded` when the system messages and the newest turn cannot fit,
    `LocalProtocolError` for an unknown compression level.
    """
    started = clock()
    model, level, api = settings.model, settings.compress, api_for(settings)
    # Replay parts come off first; those that go back ride on their message, counted
    # and fitted with it (`firsttoken.replay`).
    messages = take_replay(messages, api, model)
    default_budget, window_known = tokens.budget_for(settings)
    budget = default_budget if budget is None else budget
    encoding, _ = tokens.encoding_for_model(model)
    counts: TextCounts | None = None
    if counter is not None:
        counts = TextCounts(counter, memory.counts(encoding) if memory is not None else None)
    else:
        cache = None
    k = leading_system_count(messages)
    keys = cache_keys(messages[:k], encoding, level) if cache is not None or memory is not None else []
    digests: Sequence[bytes] = ()
    if memory is not None:
        # The leading messages' cache keys stand for them.
        digests = prefix_digests(messages[k:], (compression_id(level), encoding, counts is not None, keys))

    # 1. Compress. The leading system messages: what the cache holds of them, else the
    # memory's, else compressed now; then the rest, from the state they left.
    leads, sources = await cached(cache, keys, encoding, level, peek=live) if cache is not None else ([], set())
    hits = len(leads)
    for m, lead in zip(messages, leads):
        # What an entry knows costs nothing to count again: the text as sent, and the
        # text as written (its report's count before compression).
        assert counts is not None and lead.entry is not None
        counts.remember(lead.text, lead.entry.tokens)
        if lead.report is not None and lead.report.tokens_before is not None:
            counts.remember(m["content"], lead.report.tokens_before)
    rest_reports: list[Report] | None = None
    stored = True
    kept = memory.leads(digests[0]) if memory is not None and hits < k else None
    try:
        if kept is not None:
            leads += [Lead(lead.text, lead.report, lead.state) for lead in kept[hits:]]
        else:
            leads += _compress_leads(messages[hits:k], leads[-1].state if leads else None, level, counts)
        if memory is not None:
            memory.keep_leads(digests[0], leads)
        if level == "off":
            rest = [dict(m) for m in messages[k:]]
        else:
            prior = leads[-1].state if leads else None
            rest, rest_reports = _compress_rest(messages[k:], prior, level, counts, memory, digests)
    except _Unresumable:
        whole = compress_messages(messages, level=level, count=counts)
        leads = [Lead(m["content"], r, None) for m, r in zip(whole.messages[:k], whole.reports[:k])]
        rest, rest_reports = whole.messages[k:], list(whole.reports[k:])
        hits, stored = 0, False  # no state to resume from: nothing cached is used or kept
    head = [{**m, "content": lead.text} for m, lead in zip(messages[:k], leads)]
    if cache is not None:
        assert counts is not None
        for key, lead in zip(keys[hits:], leads[hits:]):
            lead.entry = entry_for(key, lead, counts(lead.text), encoding, level, clock() / 1000.0)
            if stored and not live:
                cache.spawn(cache.put(lead.entry))

    compression: dict[str, Any] | None = None
    saved: list[int | None] = []
    if rest_reports is not None:
        reports = [lead.report for lead in leads if lead.report is not None] + rest_reports
        if reports:
            compression = sum_reports(level, reports).to_dict()
        saved = [r.saved_tokens if counts is not None else r.saved_chars for r in reports]

    # 2-3. Count and fit, every text through the one memo.
    to_send = head + rest
    uncompressed = None
    prompt_tokens: int | None = None
    exact, dropped, truncated, images_dropped, image_tokens = False, [], [], 0, 0
    if counts is not None:
        fit = tokens.fit_messages(to_send, budget, model, reserve_for_reply=0, count=counts, api=api)
        prompt_tokens, exact, dropped, images_dropped = fit.total, fit.exact, list(fit.dropped), fit.images_left_out
        image_tokens = fit.image_tokens
        truncated = [{"index": t.index, "tokens_cut": t.tokens_cut} for t in fit.truncated]
        uncompressed = tokens.count_chat(messages, model, count=counts, api=api)
        if memory is not None:
            memory.keep_counts(encoding, counts.of(t for m in (*messages, *to_send) for t in texts_of(m)))
        to_send = fit.messages

    cache_status: dict[str, Any] | None = None
    if cache is not None:
        status = "none" if not k else "hit" if hits == k else "miss"
        cache_status = {
            "system": status,
            "messages": k,
            "store": cache.backend,
            # Where a hit came from: "memory" (this session) or "store" (e.g. after a reload).
            "source": ("store" if "store" in sources else "memory") if status == "hit" else None,
        }
    return Prepared(
        messages=to_send,
        budget=budget,
        window_known=window_known,
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
        lead=[lead.entry for lead in leads if lead.entry is not None],
        uncompressed=uncompressed,
    )
