"""Preparing with cached system messages gives exactly what preparing everything gives
(messages sent, counts, reports, what was left out), on the compression corpus and on
generated conversations, cold and warm; and a warm hit does not touch the system text."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from firsttoken import tokens
from firsttoken.cache import prepare as _cache_prepare
from firsttoken.cache.prepare import leading_system_count, prepare_with_cache
from firsttoken.cache import Cache, MemoryStore
from firsttoken.stream.client import ChatSettings
from firsttoken.core import Core
from firsttoken.errors import ContextBudgetExceeded

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "compress"
CHATS = sorted(CORPUS.glob("*.chat.json"))
DOCS = sorted(p for p in CORPUS.glob("*.md"))
SYSTEM_PROMPTS = sorted(CORPUS.glob("system-prompt-*.md"))
PARAGRAPHS = [p for d in DOCS for p in d.read_text().split("\n\n") if p.strip()]
LEVELS = ["safe", "balanced", "max", "off"]
IGNORED = {"cache", "prepare_ms"}


def core(cache: Cache | None) -> Core:
    return Core(post=lambda _: None, transport=None, clock=lambda: 0.0, sleep=asyncio.sleep, cache=cache)  # type: ignore[arg-type]


def prepare(messages: list[dict], level: str, cache: Cache | None, **extra: Any) -> tuple[list[dict], dict]:
    s = ChatSettings(model="gpt-4o", compress=level, **extra)

    async def main() -> tuple[list[dict], dict]:
        c = core(cache)
        sent, fields, _ = await c._prepare([dict(m) for m in messages], s)
        if cache is not None:
            await cache.settle()
        return sent, fields

    return asyncio.run(main())


def same(a: tuple[list[dict], dict], b: tuple[list[dict], dict]) -> None:
    assert a[0] == b[0]
    assert {k: v for k, v in a[1].items() if k not in IGNORED} == {k: v for k, v in b[1].items() if k not in IGNORED}


def check(messages: list[dict], level: str, **extra: Any) -> list[str]:
    """Cold, then warm, against the reference; returns the cache statuses seen."""
    reference = prepare(messages, level, None, **extra)
    cache = Cache(MemoryStore())
    statuses = []
    for _ in range(2):
        got = prepare(messages, level, cache, **extra)
        same(got, reference)
        statuses.append(got[1].get("cache", {}).get("system", "none"))
    return statuses


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("path", CHATS, ids=lambda p: p.stem)
def test_corpus_chats_prepare_the_same_cold_and_warm(path: Path, level: str) -> None:
    messages = json.loads(path.read_text())["messages"]
    statuses = check(messages, level)
    if messages[0]["role"] != "system":
        assert statuses == ["none", "none"]
        return
    assert statuses[0] == "miss" and statuses[1] in ("hit", "bypass")
    pasted = any(messages[0]["content"] in m["content"] for m in messages if m["role"] == "user")
    if level in ("balanced", "max") and pasted:
        # The system template pasted into a user turn: the repeats pass must see the
        # system text, so the warm run prepares everything.
        assert statuses[1] == "bypass"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("path", SYSTEM_PROMPTS, ids=lambda p: p.stem)
def test_system_prompts_hit_when_warm(path: Path, level: str) -> None:
    messages = [
        {"role": "system", "content": path.read_text()},
        {"role": "user", "content": (CORPUS / "json-pretty-01.md").read_text()},
        {"role": "assistant", "content": "Here you go:\n\n| a  | b |\n|----|---|\n| 1  | 2 |\n"},
        {"role": "user", "content": "Thanks! And the same for yesterday's file?"},
    ]
    assert check(messages, level) == ["miss", "hit"]


def test_two_leading_system_messages_are_chained() -> None:
    first = SYSTEM_PROMPTS[0].read_text()
    second = first.split("\n\n")[2] + "\n\nAlso: answer in French."  # repeats a paragraph of the first
    messages = [{"role": "system", "content": first}, {"role": "developer", "content": second},
                {"role": "user", "content": "Bonjour"}]
    assert check(messages, "balanced") == ["miss", "hit"]
    # The second's entry depends on the first: another first makes both miss.
    cache = Cache(MemoryStore())
    prepare(messages, "balanced", cache)
    other = [{"role": "system", "content": first + "\n\nOne more rule."}, *messages[1:]]
    assert prepare(other, "balanced", cache)[1]["cache"]["system"] == "miss"


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
        reference = prepare(history, "balanced", None, context_window=window, max_tokens=400)
        cut += bool(reference[1]["truncated"])
    assert cut >= 3  # the budgets above drop and cut history, not only keep it whole
    for cache in (None, Cache(MemoryStore())):
        with pytest.raises(ContextBudgetExceeded) as caught:
            prepare(history, "balanced", cache, context_window=300, max_tokens=100)
        assert caught.value.required > caught.value.available == 200


def test_a_hit_neither_compresses_nor_counts_the_system_text(monkeypatch: pytest.MonkeyPatch) -> None:
    system = "\n\n".join(p.read_text() for p in SYSTEM_PROMPTS)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "hello"}]
    cache = Cache(MemoryStore())
    counted: list[str] = []
    compressed: list[int] = []
    real = _cache_prepare.compress_messages

    def recording(msgs, **kw):  # type: ignore[no-untyped-def]
        compressed.append(len(msgs))
        return real(msgs, **kw)

    monkeypatch.setattr(_cache_prepare, "compress_messages", recording)

    async def main() -> list[str]:
        statuses = []
        for _ in range(2):
            counted.clear()
            compressed.clear()
            done = await prepare_with_cache(
                messages, model="gpt-4o", level="balanced", budget=100_000,
                counter=lambda t: counted.append(t) or tokens.count(t, "o200k_base"), cache=cache, now=lambda: 1.0,
            )
            await cache.settle()
            statuses.append(done.fields["cache"]["system"])
        return statuses

    assert asyncio.run(main()) == ["miss", "hit"]
    assert compressed == [1]  # only the user message
    assert all(len(t) < 100 for t in counted)  # never the system prompt


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
    system = "\n\n".join(system_parts)
    messages = [{"role": "system", "content": system}]
    for _ in range(draw(st.integers(1, 3))):
        parts = draw(st.lists(
            st.one_of(
                paragraph,
                st.sampled_from(system_parts),  # pasted from the system prompt
                st.sampled_from(system_parts).map(lambda p: p.replace("\n", " ")),  # and re-wrapped
                st.sampled_from(["Thanks!", "OK", "go on", "## Rules", "}"]),
            ),
            min_size=1, max_size=4,
        ))
        messages.append({"role": "user", "content": "\n\n".join(parts)})
        messages.append({"role": "assistant", "content": draw(paragraph)})
    return messages[:-1]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(), st.sampled_from(LEVELS))
def test_generated_conversations_prepare_the_same_cold_and_warm(messages: list[dict], level: str) -> None:
    check(messages, level)
