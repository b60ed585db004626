"""The one preparation pipeline gives exactly what compressing and fitting the whole
conversation gives (messages sent, counts, reports, what was left out), with no cache,
cold and warm, on the compression corpus and on generated conversations; a warm hit
does not touch the system text; and every distinct text is counted once per prepare."""

from __future__ import annotations

import asyncio
import collections
import json
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from firsttoken import compress as _compress
from firsttoken import prepare as _prepare
from firsttoken import tokens
from firsttoken.cache import Cache, MemoryStore
from firsttoken.compress import compress_messages
from firsttoken.tokens import budget_for
from firsttoken.errors import ContextBudgetExceeded
from firsttoken.prepare import ConversationMemory, Prepared, leading_system_count, prepare
from firsttoken.settings import ChatSettings
from tests.unit.image_files import data_url, png

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "compress"
CHATS = sorted(CORPUS.glob("*.chat.json"))
DOCS = sorted(p for p in CORPUS.glob("*.md"))
SYSTEM_PROMPTS = sorted(CORPUS.glob("system-prompt-*.md"))
PARAGRAPHS = [p for d in DOCS for p in d.read_text().split("\n\n") if p.strip()]
LEVELS = ["safe", "balanced", "max", "off"]
COMPARED = ("compression", "saved", "saved_unit", "prompt_tokens", "exact", "dropped", "truncated", "images_dropped")
MODEL = "gpt-4o"


def exact(text: str) -> int:
    return tokens.count(text, MODEL)


def run(messages: list[dict], level: str, cache: Cache | None, counter: Callable[[str], int] | None = exact,
        memory: ConversationMemory | None = None, model: str = MODEL, live: bool = False, **extra: Any) -> Prepared:
    s = ChatSettings(model=model, compress=level, **extra)

    async def main() -> Prepared:
        done = await prepare([dict(m) for m in messages], s, budget=budget_for(s)[0], counter=counter,
                             clock=lambda: 1000.0, cache=cache, memory=memory, live=live)
        if cache is not None:
            await cache.settle()
        return done

    return asyncio.run(main())


def reference(messages: list[dict], level: str, **extra: Any) -> tuple[list[dict], dict]:
    """The slow way, written out: compress everything, then fit everything."""
    budget = budget_for(ChatSettings(model=MODEL, compress=level, **extra))[0]
    fields: dict[str, Any] = {"compression": None, "saved": [], "saved_unit": "tokens"}
    sent = [dict(m) for m in messages]
    if level != "off":
        done = compress_messages(messages, level=level, count=exact)
        sent = done.messages
        fields.update(compression=done.report.to_dict(), saved=[r.saved_tokens for r in done.reports])
    fit = tokens.fit_messages(sent, budget, MODEL)
    fields.update(prompt_tokens=fit.total, exact=fit.exact, dropped=list(fit.dropped),
                  truncated=[{"index": t.index, "tokens_cut": t.tokens_cut} for t in fit.truncated],
                  images_dropped=fit.images_left_out)
    return fit.messages, fields


def same(got: Prepared, want: tuple[list[dict], dict]) -> None:
    assert got.messages == want[0]
    assert {k: getattr(got, k) for k in COMPARED} == want[1]


def check(messages: list[dict], level: str, **extra: Any) -> list[str]:
    """No cache, cold, then warm (with a conversation memory, cold then warm too),
    against the reference; returns the cache statuses seen."""
    want = reference(messages, level, **extra)
    same(run(messages, level, None, **extra), want)
    cache = Cache(MemoryStore())
    memory = ConversationMemory()
    statuses = []
    for _ in range(2):
        got = run(messages, level, cache, memory=memory, **extra)
        same(got, want)
        statuses.append(got.cache["system"])
    return statuses


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("path", CHATS, ids=lambda p: p.stem)
def test_corpus_chats_prepare_as_the_whole_would_cold_and_warm(path: Path, level: str) -> None:
    messages = json.loads(path.read_text())["messages"]
    statuses = check(messages, level)
    # A system template pasted into a user turn is no reason to bypass the cache any more:
    # the entry carries the repeats state the rest is compressed with.
    assert statuses == (["miss", "hit"] if messages[0]["role"] == "system" else ["none", "none"])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("path", SYSTEM_PROMPTS, ids=lambda p: p.stem)
def test_system_prompts_hit_when_warm(path: Path, level: str) -> None:
    messages = [
        {"role": "system", "content": path.read_text()},
        {"role": "user", "content": (CORPUS / "json-pretty-01.md").read_text()},
        {"role": "assistant", "content": "Here you go:\n\n| a  | b |\n|----|---|\n| 1  | 2 |\n"},
        {"role": "user", "content": "Thanks! And the same for yesterday's file?\n\n" + path.read_text()},
    ]
    assert check(messages, level) == ["miss", "hit"]


def test_two_leading_system_messages_are_chained_and_a_partial_hit_resumes() -> None:
    first = SYSTEM_PROMPTS[0].read_text()
    second = first.split("\n\n")[2] + "\n\nAlso: answer in French."  # repeats a paragraph of the first
    messages = [{"role": "system", "content": first}, {"role": "developer", "content": second},
                {"role": "user", "content": "Bonjour"}]
    assert check(messages, "balanced") == ["miss", "hit"]
    # The second's entry depends on the first: another first makes both miss.
    cache = Cache(MemoryStore())
    run(messages, "balanced", cache)
    other = [{"role": "system", "content": first + "\n\nOne more rule."}, *messages[1:]]
    assert run(other, "balanced", cache).cache["system"] == "miss"
    # Another second: the first comes from the cache, the second is compressed from its state.
    changed = [messages[0], {"role": "developer", "content": second + " And in verse."}, messages[2]]
    got = run(changed, "balanced", cache)
    assert got.cache["system"] == "miss" and cache.stats["hits"] >= 1
    same(got, reference(changed, "balanced"))
    assert run(changed, "balanced", cache).cache["system"] == "hit"


def test_fitting_drops_and_cuts_the_same_and_budget_errors_match() -> None:
    system = SYSTEM_PROMPTS[1].read_text()
    history: list[dict] = [{"role": "system", "content": system}]
    for i in range(12):
        history += [{"role": "user", "content": f"question {i} " + PARAGRAPHS[i % len(PARAGRAPHS)]},
                    {"role": "assistant", "content": f"answer {i} " + PARAGRAPHS[(i * 7) % len(PARAGRAPHS)]}]
    history.append({"role": "user", "content": "the newest question"})
    cut = 0
    for window in range(1000, 2100, 100):
        assert check(history, "balanced", context_window=window, max_tokens=400) == ["miss", "hit"]
        cut += bool(reference(history, "balanced", context_window=window, max_tokens=400)[1]["truncated"])
    assert cut >= 3  # the budgets above drop and cut history, not only keep it whole
    for cache in (None, Cache(MemoryStore())):
        with pytest.raises(ContextBudgetExceeded) as caught:
            run(history, "balanced", cache, context_window=300, max_tokens=100)
        assert caught.value.required > caught.value.available == 200


def test_old_photos_are_left_out_to_fit_and_counted() -> None:
    photo = {"type": "image_url", "image_url": {"url": data_url(png(2048, 1536, pixels=False)), "detail": "high"}}
    history: list[dict] = [{"role": "system", "content": SYSTEM_PROMPTS[1].read_text()}]
    for i in range(6):
        history += [{"role": "user", "content": [{"type": "text", "text": f"photo {i}: what is it?"}, photo]},
                    {"role": "assistant", "content": f"answer {i} " + PARAGRAPHS[i % len(PARAGRAPHS)]}]
    history.append({"role": "user", "content": [{"type": "text", "text": "and this one?"}, photo]})
    left_out = set()
    for window in range(3000, 9000, 500):
        check(history, "balanced", context_window=window, max_tokens=400)
        left_out.add(reference(history, "balanced", context_window=window, max_tokens=400)[1]["images_dropped"])
    assert {0, 1, 2, 3} <= left_out  # the budgets above leave none, then more and more photos out


@pytest.fixture
def compressed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many messages each call of `compress_messages` in the pipeline was given."""
    calls: list[int] = []
    real = _compress.compress_messages

    def recording(msgs, **kw):  # type: ignore[no-untyped-def]
        calls.append(len(msgs))
        return real(msgs, **kw)

    monkeypatch.setattr(_compress, "compress_messages", recording)
    return calls


def test_a_hit_neither_compresses_nor_counts_the_system_text(compressed: list[int]) -> None:
    system = "\n\n".join(p.read_text() for p in SYSTEM_PROMPTS)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "hello"}]
    cache = Cache(MemoryStore())
    counted: list[str] = []
    statuses = []
    for _ in range(2):
        counted.clear()
        compressed.clear()
        done = run(messages, "balanced", cache, counter=lambda t: counted.append(t) or exact(t))
        statuses.append(done.cache["system"])
    assert statuses == ["miss", "hit"]
    assert [n for n in compressed if n] == [1]  # only the user message (0: the state checked)
    assert all(len(t) < 100 for t in counted)  # never the system prompt, as written or as sent


def counting_fake() -> tuple[Callable[[str], int], collections.Counter[str]]:
    seen: collections.Counter[str] = collections.Counter()

    def count(text: str) -> int:
        seen[text] += 1
        return exact(text)

    return count, seen


@pytest.mark.parametrize("level", LEVELS)
def test_each_text_is_counted_once_per_prepare(level: str) -> None:
    chats = [json.loads(p.read_text())["messages"] for p in CHATS]
    chats.append([{"role": "system", "content": SYSTEM_PROMPTS[0].read_text()},
                  *({"role": "user" if i % 2 == 0 else "assistant", "content": p} for i, p in enumerate(PARAGRAPHS[:30])),
                  {"role": "user", "content": PARAGRAPHS[31]}])
    for messages in chats:
        for extra in ({}, {"context_window": 2000, "max_tokens": 400}):
            cache = Cache(MemoryStore())
            for store in (None, cache, cache):  # no cache, cold, warm
                count, seen = counting_fake()
                try:
                    done = run(messages, level, store, counter=count, **extra)
                except ContextBudgetExceeded:
                    continue
                assert seen and max(seen.values()) == 1, [t[:40] for t, n in seen.items() if n > 1]
                assert done.uncompressed == tokens.count_chat(messages, MODEL)


def test_live_count_pieces_without_a_counter_are_compressed_but_not_counted() -> None:
    messages = json.loads(CHATS[0].read_text())["messages"]
    done = run(messages, "balanced", Cache(MemoryStore()), counter=None)
    assert done.prompt_tokens is None and done.saved_unit == "chars"
    assert done.cache is None and done.lead == []
    # Without a counter both counts are estimates, made once here for whoever reads them.
    assert done.uncompressed == tokens.estimate_tokens(messages, MODEL)
    assert done.estimate == tokens.estimate_tokens(done.messages, MODEL)
    assert done.messages == compress_messages(messages, level="balanced").messages


def test_an_entry_whose_state_does_not_verify_is_a_miss() -> None:
    messages = [{"role": "system", "content": SYSTEM_PROMPTS[2].read_text()},
                {"role": "user", "content": SYSTEM_PROMPTS[2].read_text() + "\n\nAnd?"}]
    cache = Cache(MemoryStore(), hot_entries=0)
    run(messages, "balanced", cache)
    store = cache._store
    assert isinstance(store, MemoryStore) and len(store.records) == 1
    (key, record), = store.records.items()
    from firsttoken.cache import decode_entry, encode_entry
    entry = decode_entry(record, key)
    for state in (None, "not json", '{"config": "other", "keys": ""}', '{"config": "x", "keys": null}'):
        import dataclasses
        store.records[key] = encode_entry(dataclasses.replace(entry, state=state))
        got = run(messages, "balanced", cache)
        assert got.cache["system"] == "miss"
        same(got, reference(messages, "balanced"))


def test_a_state_past_its_bound_compresses_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    import firsttoken.compress.repeats as repeats

    monkeypatch.setattr(repeats, "MAX_STATE_KEYS", 2)
    system = SYSTEM_PROMPTS[0].read_text()
    messages = [{"role": "system", "content": system}, {"role": "user", "content": system + "\n\nSo?"}]
    assert check(messages, "balanced") == ["miss", "miss"]  # nothing to resume from: nothing stored
    assert run(messages, "balanced", Cache(MemoryStore())).lead  # still entries, for references


def test_leading_system_count() -> None:
    s = {"role": "system", "content": "x"}
    assert leading_system_count([s, {"role": "developer", "content": "y", "name": "ops"}, {"role": "user", "content": "z"}]) == 2
    assert leading_system_count([{"role": "user", "content": "z"}, s]) == 0
    assert leading_system_count([{"role": "system", "content": [{"type": "text", "text": "x"}]}]) == 0
    assert leading_system_count([{**s, "cache_control": {"type": "ephemeral"}}]) == 0


# ---- generated conversations -------------------------------------------------------------------

paragraph = st.sampled_from(PARAGRAPHS)


@st.composite
def conversations(draw: st.DrawFn) -> list[dict]:
    system_parts = draw(st.lists(paragraph, min_size=1, max_size=6))
    messages = [{"role": "system", "content": "\n\n".join(system_parts)}]
    if draw(st.booleans()):
        messages.append({"role": "developer", "content": "\n\n".join(draw(st.lists(
            st.one_of(paragraph, st.sampled_from(system_parts)), min_size=1, max_size=3)))})
    for _ in range(draw(st.integers(1, 3))):
        parts = draw(st.lists(
            st.one_of(
                paragraph,
                st.sampled_from(system_parts),  # pasted from the system prompt
                st.sampled_from(system_parts).map(lambda p: p.replace("\n", " ")),  # and re-wrapped
                st.sampled_from(["Thanks!", "OK", "go on", "## Rules", "}", "<example>", "</example>", "```"]),
            ),
            min_size=1, max_size=4,
        ))
        messages.append({"role": "user", "content": "\n\n".join(parts)})
        messages.append({"role": "assistant", "content": draw(paragraph)})
    return messages[:-1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.sampled_from(LEVELS))
def test_generated_conversations_prepare_as_the_whole_would(messages: list[dict], level: str) -> None:
    check(messages, level)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.sampled_from(LEVELS), st.data())
def test_a_conversation_growing_and_drafts_changing_prepare_as_the_whole_would(
    messages: list[dict], level: str, data: st.DataObject
) -> None:
    # As the page does it: live counts while a draft is typed, a send, the answer, the
    # next draft; with one cache and one memory throughout, against the slow way.
    cache, memory = Cache(MemoryStore()), ConversationMemory(keep=data.draw(st.integers(1, 4)))
    for n in range(1, len(messages) + 1):
        drafts = [messages[n - 1]]
        if messages[n - 1]["role"] == "user":
            text = messages[n - 1]["content"]
            drafts = [{"role": "user", "content": text[:cut]} for cut in sorted(data.draw(
                st.lists(st.integers(1, len(text)), max_size=3)))] + drafts
        for i, draft in enumerate(drafts):
            conversation = [*messages[: n - 1], draft]
            live = i < len(drafts) - 1  # counts while typing, then the send
            same(run(conversation, level, cache, memory=memory, live=live), reference(conversation, level))


class RecordingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def get(self, key: str) -> str | None:
        self.calls.append("get")
        return await super().get(key)

    async def put(self, key: str, record: str, meta: Any) -> None:
        self.calls.append("put")
        await super().put(key, record, meta)

    async def touch(self, meta: Any) -> None:
        self.calls.append("touch")
        await super().touch(meta)


def test_a_live_count_does_no_storage_io_and_compresses_the_system_text_once(compressed: list[int]) -> None:
    system = "\n\n".join(p.read_text() for p in SYSTEM_PROMPTS)
    history = [{"role": "system", "content": system}, {"role": "user", "content": system + "\n\nhello"},
               {"role": "assistant", "content": "Hi."}]
    store = RecordingStore()
    run(history + [{"role": "user", "content": "x"}], "balanced", Cache(store))  # a send: stored
    store.calls.clear()
    compressed.clear()
    cache, memory = Cache(store), ConversationMemory()  # after a reload: the memory tier is empty
    for draft in ("w", "wh", "why"):
        conversation = [*history, {"role": "user", "content": draft}]
        same(run(conversation, "balanced", cache, memory=memory, live=True), reference(conversation, "balanced"))
    assert store.calls == []  # no storage I/O while typing
    assert compressed == [1, 2, 1, 1, 1]  # the system message and history once, then each draft alone
    sent = run([*history, {"role": "user", "content": "why"}], "balanced", cache, memory=memory)
    assert sent.cache == {"system": "hit", "messages": 1, "store": "memory", "source": "store"}


def test_the_memory_keeps_models_and_levels_apart() -> None:
    messages = json.loads(CHATS[1].read_text())["messages"]
    memory = ConversationMemory()
    for level in ("balanced", "safe", "balanced"):
        for model in ("gpt-4o", "gpt-4", "gpt-4o"):
            got = run(messages, level, None, memory=memory, model=model)
            want = run(messages, level, None, model=model)
            assert got == want
    counted, _ = counting_fake()
    assert run(messages, "balanced", None, counter=None, memory=memory).saved_unit == "chars"
    assert run(messages, "balanced", None, counter=counted, memory=memory).saved_unit == "tokens"


def test_with_a_memory_typing_counts_only_the_draft() -> None:
    messages = json.loads(CHATS[2].read_text())["messages"]
    memory = ConversationMemory()
    run(messages, "balanced", Cache(MemoryStore()), memory=memory)
    count, seen = counting_fake()
    draft = {"role": "user", "content": "and one more question"}
    run([*messages, draft], "balanced", None, counter=count, memory=memory)
    assert set(seen) <= {draft["content"], "user", "assistant", "system"}, list(seen)


def test_what_the_preparer_decides_rides_on_the_result_and_the_memory_wraps_it() -> None:
    from firsttoken.stream.dialects import api_for

    messages = json.loads(CHATS[1].read_text())["messages"]
    calls: list[str] = []

    class Recording(ConversationMemory):
        def recall(self, *args: Any) -> Any:
            calls.append("recall")
            return super().recall(*args)

        def store(self, *args: Any) -> None:
            calls.append("store")
            super().store(*args)

    for model in ("gpt-4o", "gpt-4", "claude-sonnet-4-5", "gpt-5-pro"):
        s = ChatSettings(model=model, compress="balanced")
        calls.clear()
        done = run(messages, "balanced", Cache(MemoryStore()), memory=Recording(), model=model,
                   counter=lambda t, model=model: tokens.count(t, model))
        assert calls == ["recall", "store"]  # looked up once before, kept once after
        assert (done.api, done.encoding) == (api_for(s), tokens.encoding_for_model(model)[0])
        assert (done.budget, done.window_known) == budget_for(s)
        assert done.estimate == done.prompt_tokens and done.uncompressed == tokens.count_chat(messages, model, api=done.api)


def test_public_surface() -> None:
    assert sorted(_prepare.__all__) == sorted(
        ["ConversationMemory", "Prepared", "TextCounts", "prepare", "leading_system_count", "compression_id"])
    for name in _prepare.__all__:
        assert getattr(_prepare, name).__doc__
