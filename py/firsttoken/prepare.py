"""What a conversation becomes before it leaves: compressed, counted, fitted.

`prepare` is the one pipeline. `Core` runs it for `chat.send` (what is sent) and for
`tokens.count` (the composer's live count, which is therefore the count of what would
be sent). It takes the conversation as the user wrote it and returns the messages to
send, the `chat.prepared` fields, the cache entries of the leading system messages
(for gateway references) and the count of the conversation as written:

1. **Compress** (`firsttoken.compress`) in two pieces: the leading run of plain
   system/developer messages, one message at a time, then the rest in one call with
   `prior=` the repeats state the leading messages left. Every decision about repeats
   is `compress`'s: this module only carries its `RepeatState` from one piece to the
   next.
2. **Count** each distinct text once (`TextCounts`): compression's per-pass report
   counts the text before and after, fitting counts what is kept, the live count wants
   the text as written. All of them ask one memo, so no text is tokenized twice in one
   prepare, and counting happens in one place (where an asynchronous counter would
   plug in: it would fill the memo in one batch).
3. **Fit** (`tokens.fit_messages`) into the budget: system messages and the newest
   turn are kept, older turns dropped or cut.

The cache (`firsttoken.cache`) is a speed-up inside step 1, not a second path. Each
leading system message's result (compressed text, exact count, report, and the repeats
state after it) is stored under a key chained over the messages before it. On a hit
the pipeline takes those results instead of compressing and counting the system text,
and goes on exactly as on a miss. Why a hit gives byte-identical results:

* compression is prefix-stable and its repeats pass is a fold over messages with an
  explicit state: compressing messages[:k] and then messages[k:] with `prior=` the
  state after k gives exactly what compressing all of them gives (`compress` tests
  this). A cached entry holds the text, report and state that compressing its message
  gave, and its key names everything they depend on: the message, the messages before
  it (chained keys), the tokenizer, the compressor version and level. So a hit
  replays the same fold with the same inputs;
* counts are exact counts of the same texts, which fitting then sees as on a miss
  (the memo is filled with the entry's count of its text);
* entries are verified (digests, key, types, a state that parses) before use; one
  that fails is a miss, so a corrupt store can cost time but never change what is sent.

Only the leading run is cached: a system message after a user turn depends on that
turn. A repeats state that grew past its bound (`RepeatState.known` false) cannot be
resumed from; the conversation is then compressed whole, from its first message.

Tests compare the pipeline, cold and warm, with compressing and fitting the whole
conversation directly, on the compression corpus and on generated conversations
(tests/unit/test_prepare.py).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import tokens
from .cache import Cache, Entry, cache_key, text_digest
from .compress import COMPRESSION_VERSION, PassSaving, RepeatState, Report, compress_messages
from .compress.report import sum_reports
from .errors import LocalProtocolError
from .stream.client import ChatSettings

__all__ = ["ConversationMemory", "Prepared", "TextCounts", "prepare", "leading_system_count", "compression_id"]

#: Roles of the messages that may be kept in the cache (when they lead the conversation).
LEAD_ROLES = frozenset({"system", "developer"})
# Only plain messages: another field (tool calls, cache hints) would make the entry's
# count and text stand for less than the message.
_LEAD_FIELDS = frozenset({"role", "content", "name"})


class TextCounts:
    """Token counts of texts, each counted once: a memo over an exact counter, for the
    duration of one prepare. `counted` lists what reached the counter (for tests)."""

    __slots__ = ("_count", "_known", "counted")

    def __init__(self, count: Callable[[str], int], known: dict[str, int] | None = None) -> None:
        self._count = count
        self._known: dict[str, int] = known if known is not None else {}
        self.counted = 0

    def __call__(self, text: str) -> int:
        n = self._known.get(text)
        if n is None:
            n = self._known[text] = self._count(text)
            self.counted += 1
        return n

    def remember(self, text: str, n: int) -> None:
        """A count known already (from the cache): `text` will cost nothing."""
        self._known.setdefault(text, n)

    def of(self, texts: Iterable[str]) -> dict[str, int]:
        """The counts known of `texts` (those counted or remembered)."""
        return {t: self._known[t] for t in texts if t in self._known}


@dataclass
class Prepared:
    """What `prepare` made.

    `messages` go to the server; `fields` are the `chat.prepared` fields decided here
    (`compression`, `saved`, `saved_unit`, `prompt_tokens`, `exact`, `dropped`,
    `truncated`, `prepare_ms` and, with a cache, `cache`); `lead` holds the cache
    entries of the leading system messages (for gateway references); `uncompressed`
    is the prompt's count as written (None without a counter).
    """

    messages: list[dict[str, Any]]
    fields: dict[str, Any]
    lead: list[Entry] = field(default_factory=list)
    uncompressed: int | None = None


def leading_system_count(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many messages at the start are plain system/developer messages with text."""
    n = 0
    for m in messages:
        if m.get("role") not in LEAD_ROLES or not isinstance(m.get("content"), str) or not set(m) <= _LEAD_FIELDS:
            break
        n += 1
    return n


def _texts(message: Mapping[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
    return []


def compression_id(level: str) -> str:
    """What a cached text depends on besides itself: compressor version and level."""
    return f"{COMPRESSION_VERSION}/{level}"


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


@dataclass
class _Lead:
    """One leading system message, prepared: from the cache or just now."""

    text: str
    report: Report | None  # None when compression is off
    state: RepeatState | None  # the repeats state after it; None when off
    entry: Entry | None = None  # when counted (an entry needs an exact count)


def _state_of(entry: Entry, level: str) -> RepeatState | None | bool:
    """The entry's repeats state, None when compression is off, False if unusable."""
    if level == "off":
        return None
    if entry.state is None:
        return False
    try:
        state = RepeatState.from_json(entry.state)
        # Whether the state belongs to this compressor and level is for compress to say.
        compress_messages([], level=level, prior=state)
    except LocalProtocolError:
        return False
    return state


async def _cached(
    cache: Cache, keys: Sequence[str], encoding: str, compression: str, level: str
) -> tuple[list[_Lead], set[str | None]]:
    """The longest run of leading messages the cache holds, verified, and where from."""
    found: list[_Lead] = []
    sources: set[str | None] = set()
    for key in keys:
        entry = await cache.get(key)
        if entry is None or entry.encoding != encoding or entry.compression != compression:
            break
        state = _state_of(entry, level)
        if state is False:
            break
        report = _report_from(entry.report) if level != "off" else None
        found.append(_Lead(entry.text, report, state, entry))  # type: ignore[arg-type]
        sources.add(cache.last_source)
    return found, sources


class ConversationMemory:
    """The compression of the conversations prepared last, by message prefix.

    While the user types, the live count prepares the same history with a new draft
    after it, many times; a send then prepares it once more, and the next turn adds two
    messages to it. Compressing the history again each time would cost more than
    everything else in the count. So `prepare` compresses the messages after the
    leading system ones in two calls (all but the last, then the last), and keeps the
    result of each here under a digest of everything it depends on: the compressor
    version and level, the tokenizer, whether it counted, and every message up to
    there (the leading system messages included, as the repeats state they leave is
    the input of the rest). The next prepare resumes from the longest prefix kept,
    with its repeats state, exactly as the cache resumes after the system messages.

    It also keeps the token counts of the texts the last prepare sent or was given,
    so that a count spends its time on the draft, not on the history. Bounded:
    `keep` prefixes, and one conversation's counts.
    """

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self._points: OrderedDict[bytes, _Point] = OrderedDict()
        self._counts: tuple[str, dict[str, int]] = ("", {})

    def _get(self, digest: bytes) -> _Point | None:
        point = self._points.get(digest)
        if point is not None:
            self._points.move_to_end(digest)
        return point

    def _put(self, digest: bytes, point: _Point) -> None:
        self._points[digest] = point
        self._points.move_to_end(digest)
        while len(self._points) > self.keep:
            self._points.popitem(last=False)

    def counts(self, encoding: str) -> dict[str, int]:
        """Counts kept from the last prepare in `encoding` (a copy)."""
        return dict(self._counts[1]) if self._counts[0] == encoding else {}

    def keep_counts(self, encoding: str, counts: dict[str, int]) -> None:
        self._counts = (encoding, counts)


@dataclass(frozen=True, slots=True)
class _Point:
    """Messages k..p compressed (k: the leading system messages), and the state after."""

    messages: tuple[dict[str, Any], ...]
    reports: tuple[Report, ...]
    state: RepeatState


def _canonical(value: Any) -> bytes:
    # ensure_ascii: one spelling per string (lone surrogates included).
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), sort_keys=True, default=repr).encode("ascii")


def _prefix_digests(messages: Sequence[Mapping[str, Any]], k: int, context: list[Any]) -> list[bytes]:
    """For p in k..n: a digest of `context` and messages[:p] (index p - k)."""
    h = hashlib.sha256(_canonical([context, list(messages[:k])]))
    digests = [h.digest()]
    for m in messages[k:]:
        h.update(_canonical(m))
        digests.append(h.digest())
    return digests


class _Unresumable(Exception):
    """A repeats state grew past its bound: what follows must be compressed from the start."""


def _compress_rest(
    rest: Sequence[Mapping[str, Any]],
    prior: RepeatState | None,
    level: str,
    counts: TextCounts | None,
    memory: ConversationMemory | None,
    digests: list[bytes],
) -> tuple[list[dict[str, Any]], list[Report]]:
    """The messages after the leading ones, compressed from `prior`: from the longest
    prefix `memory` holds, then up to the last message, then the last."""
    start, out, reports, state = 0, [], [], prior
    if memory is not None:
        for p in range(len(rest), 0, -1):
            point = memory._get(digests[p])
            if point is not None:
                start, out, reports, state = p, list(point.messages), list(point.reports), point.state
                break
    for end in (len(rest) - 1, len(rest)):
        if end <= start:
            continue
        if state is not None and not state.known:
            raise _Unresumable
        done = compress_messages(rest[start:end], level=level, count=counts, prior=state)
        out += done.messages
        reports += done.reports
        state = done.state
        if memory is not None and state is not None and state.known:
            memory._put(digests[end], _Point(tuple(out), tuple(reports), state))
        start = end
    return out, reports


async def prepare(
    messages: Sequence[Mapping[str, Any]],
    settings: ChatSettings,
    *,
    budget: int,
    counter: Callable[[str], int] | None,
    clock: Callable[[], float],
    cache: Cache | None = None,
    memory: ConversationMemory | None = None,
) -> Prepared:
    """Compress, count and fit `messages` into `budget` prompt tokens.

    `counter` counts one text exactly in the model's encoding, or is None (no encoder
    yet: the messages are compressed but neither counted nor fitted, savings are in
    characters). `cache` makes the leading system messages cheap after the first time
    and is used only with a counter; `memory` does the same for the rest of a
    conversation prepared again. Neither changes the result. `clock` gives
    milliseconds (for `prepare_ms` and entries' creation times). Raises
    `ContextBudgetExceeded` when the system messages and the newest turn cannot fit,
    `LocalProtocolError` for an unknown level.
    """
    started = clock()
    model, level = settings.model, settings.compress
    encoding, _ = tokens.encoding_for_model(model)
    counts = None
    if counter is not None:
        counts = TextCounts(counter, memory.counts(encoding) if memory is not None else None)
    else:
        cache = None  # an entry holds an exact count
    compression = compression_id(level)
    k = leading_system_count(messages)

    # 1. Compress: the leading system messages (from the cache where it has them)...
    keys: list[str] = []
    previous = ""
    for m in messages[:k] if cache is not None else ():
        previous = cache_key(m["content"], encoding, compression, previous)
        keys.append(previous)
    leads, sources = await _cached(cache, keys, encoding, compression, level) if cache is not None else ([], set())
    hits = len(leads)
    for m, lead in zip(messages, leads):
        # What the entry knows costs nothing to count again: the text as sent, and the
        # text as written (the report's count before compression).
        assert counts is not None and lead.entry is not None
        counts.remember(lead.text, lead.entry.tokens)
        if lead.report is not None and lead.report.tokens_before is not None:
            counts.remember(m["content"], lead.report.tokens_before)
    prior = leads[-1].state if leads else None
    whole = False  # compressed from the first message (a state past its bound)
    for i in range(hits, k):
        if level == "off":
            leads.append(_Lead(messages[i]["content"], None, None))
            continue
        done = compress_messages([messages[i]], level=level, count=counts, prior=prior)
        prior = done.state
        leads.append(_Lead(done.messages[0]["content"], done.reports[0], prior))
        if prior is None or not prior.known:
            whole = True
            break

    # ... then the rest, with the state the leading messages left.
    rest_reports: list[Report] | None = None
    if level == "off":
        rest = [dict(m) for m in messages[k:]]
    else:
        if not whole:
            context = [compression, encoding, counts is not None]
            digests = _prefix_digests(messages, k, context) if memory is not None else []
            try:
                rest, rest_reports = _compress_rest(messages[k:], prior, level, counts, memory, digests)
            except _Unresumable:
                whole = True
        if whole:
            done = compress_messages(messages, level=level, count=counts)
            leads = [_Lead(m["content"], r, None) for m, r in zip(done.messages[:k], done.reports[:k])]
            hits = 0  # nothing cached is used, and nothing is stored: there is no state to resume from
            rest, rest_reports = done.messages[k:], list(done.reports[k:])
    head = [{**m, "content": lead.text} for m, lead in zip(messages[:k], leads)]

    if cache is not None:
        assert counts is not None
        created = clock() / 1000.0
        for i in range(hits, k):
            lead = leads[i]
            n = counts(lead.text)
            report = lead.report or Report(level, (), len(lead.text), len(lead.text), n, n, (), COMPRESSION_VERSION)
            state = lead.state.to_json() if lead.state is not None else None
            lead.entry = Entry(
                keys[i], lead.text, n, encoding, compression, _report_data(report), text_digest(lead.text), created, state
            )
            if not whole:
                cache.spawn(cache.put(lead.entry))

    fields: dict[str, Any] = {}
    if rest_reports is not None:
        reports = [lead.report for lead in leads if lead.report is not None] + rest_reports
        fields["compression"] = sum_reports(level, reports).to_dict() if reports else None
        fields["saved"] = [r.saved_tokens if counts is not None else r.saved_chars for r in reports]
    else:
        fields["compression"] = None
        fields["saved"] = []
    fields["saved_unit"] = "tokens" if counts is not None else "chars"

    # 2-3. Count and fit, every text through the one memo.
    to_send = head + rest
    uncompressed = None
    if counts is None:
        fields.update(prompt_tokens=None, exact=False, dropped=[], truncated=[])
    else:
        fit = tokens.fit_messages(to_send, budget, model, reserve_for_reply=0, count=counts)
        to_send = fit.messages
        fields.update(
            prompt_tokens=fit.total,
            exact=fit.exact,
            dropped=list(fit.dropped),
            truncated=[{"index": t.index, "tokens_cut": t.tokens_cut} for t in fit.truncated],
        )
        uncompressed = tokens.count_chat(messages, model, count=counts)
    if cache is not None:
        status = "none" if not k else "hit" if hits == k else "miss"
        fields["cache"] = {
            "system": status,
            "messages": k,
            "store": cache.backend,
            # Where a hit came from: "memory" (this session) or "store" (e.g. after a reload).
            "source": ("store" if "store" in sources else "memory") if status == "hit" else None,
        }
    if memory is not None and counts is not None:
        memory.keep_counts(encoding, counts.of(t for m in (*messages, *head, *rest) for t in _texts(m)))
    fields["prepare_ms"] = round(clock() - started, 3)
    return Prepared(to_send, fields, [lead.entry for lead in leads if lead.entry is not None], uncompressed)
