"""The repeat state: compressing a conversation in two calls, the second given the
state the first left, is exactly compressing it in one (`RepeatState`)."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from firsttoken.compress import LEVELS, RepeatState, compress_messages
from firsttoken.compress.repeats import MAX_STATE_KEYS
from firsttoken.errors import LocalProtocolError
from tests.unit.compress_invariants import check_messages
from tests.unit.markdownish import markdownish

SETTINGS = settings(
    max_examples=int(os.environ.get("FIRSTTOKEN_COMPRESS_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
_ROLES = st.sampled_from(["system", "developer", "user", "user", "assistant", "tool"])


_LONG = st.sampled_from([
    "Always answer in English and cite the section of the policy you rely on.",
    "Keep product names, model numbers and units unchanged in the translation.",
    "```python\ndef total(prices):\n    return sum(prices)  # the whole cart, in cents\n```",
    '<example type="bad">\nThe comment said only: fix the loop, and nothing about why or how.\n</example>',
    "## Good example\n\nThe comment names the problem, the fix, and the line it is about.",
    "<rules>\n\nNever approve a change that has no tests, whoever wrote it.\n\n</rules>",
])


@st.composite
def _template(draw: st.DrawFn) -> str:
    """Paragraphs long enough to be taken for a pasted template, mixed with others."""
    parts = draw(st.lists(st.one_of(_LONG, _LONG, _LONG, markdownish()), min_size=1, max_size=4))
    return "\n\n".join(p.strip("\n") for p in parts)


@st.composite
def conversations(draw: st.DrawFn) -> list[dict]:
    """Messages that often paste earlier texts (whole, or as a prefix or suffix)."""
    texts = draw(st.lists(_template(), min_size=1, max_size=4))
    msgs = []
    for _ in range(draw(st.integers(1, 6))):
        a, b = draw(st.sampled_from(texts)), draw(st.sampled_from(texts))
        content = draw(st.sampled_from([a, a + "\n\n" + b, a + b, "Intro line.\n\n" + a, a + "\n\nNew input."]))
        if draw(st.integers(0, 4)) == 0:
            content = [{"type": "text", "text": content}, {"type": "image_url", "image_url": {"url": "x"}},
                       {"type": "text", "text": b}]
        msgs.append({"role": draw(_ROLES), "content": content})
    return msgs


@SETTINGS
@given(conversations(), st.sampled_from(sorted(LEVELS)), st.data())
def test_split_with_state_is_compressing_all(msgs: list[dict], level: str, data: st.DataObject) -> None:
    count = len  # any counter: reports must agree token for token too
    whole = compress_messages(msgs, level=level, count=count)
    k = data.draw(st.integers(0, len(msgs)), label="k")
    head = compress_messages(msgs[:k], level=level, count=count)
    state = RepeatState.from_json(head.state.to_json())
    assert state == head.state
    rest = compress_messages(msgs[k:], level=level, count=count, prior=state)
    assert head.messages + rest.messages == whole.messages
    assert head.reports + rest.reports == whole.reports
    assert rest.state == whole.state


@settings(
    max_examples=int(os.environ.get("FIRSTTOKEN_COMPRESS_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(conversations(), st.sampled_from(sorted(LEVELS)))
# Found here once: a 4-space "```" line after a paragraph (text, not a fence) was taken
# for a container fence, and its span swallowed the opener of a top-level "```json"
# fence, whose body the prose passes then changed (compress/markdown.py, _TOP_RUN).
@example(
    msgs=[{"role": "system", "content": "word \n# Rules\nword \n    ``` \nword \n```json\n[]\n```word \n# Rules\nword \n    ``` \nword \n```json\n[]\n```"}],
    level="balanced",
)
# Found here once: a table row `| ``` |` and another further down made one code span
# across the lines between them to the repeats pass, which then took the repeated
# paragraph holding `<example>` for tag-free, dropped it, and left `</example>` alone
# (compress/repeats.py, `pinned`).
@example(
    msgs=[{"role": "system", "content": "```c\n\n```\nword \nword \nword \n| ``` |\n|:---|\n<example>\nword \n| ``` |\n|:---|\n\n</example>"}] * 2,
    level="balanced",
)
def test_conversations_keep_structure(msgs: list[dict], level: str) -> None:
    plain = [m for m in msgs if isinstance(m["content"], str)]
    assert check_messages(plain, compress_messages, level) == []


SYSTEM = "You are a translator. Keep product names unchanged and use the formal register.\n\nReturn only the translation."


def test_state_carries_the_system_prompt_to_later_turns() -> None:
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": SYSTEM + "\n\nLamp, dimmable."}]
    head = compress_messages(msgs[:1])
    assert head.state is not None and head.state.known and len(head.state) == 2
    rest = compress_messages(msgs[1:], prior=head.state)
    assert rest.messages[0]["content"] == "Lamp, dimmable."
    # Without the state the user turn has nothing to repeat.
    assert compress_messages(msgs[1:]).messages[0]["content"] == msgs[1]["content"]


def test_a_state_is_refused_under_another_level_or_version() -> None:
    state = compress_messages([{"role": "system", "content": SYSTEM}], level="balanced").state
    with pytest.raises(LocalProtocolError, match="made for"):
        compress_messages([], level="max", prior=state)
    with pytest.raises(LocalProtocolError, match="made for"):
        compress_messages([], level="balanced", passes={"repeats": False}, prior=state)
    stale = RepeatState.from_json(state.to_json().replace(state.config.split("/")[0], "0+py0.0"))
    with pytest.raises(LocalProtocolError, match="made for"):
        compress_messages([], prior=stale)


def test_past_its_bound_a_state_is_unknown_and_refused() -> None:
    paragraphs = "\n\n".join(f"Paragraph number {i}." for i in range(MAX_STATE_KEYS + 1))
    out = compress_messages([{"role": "system", "content": paragraphs}])
    assert not out.state.known
    assert json.loads(out.state.to_json())["keys"] is None
    assert RepeatState.from_json(out.state.to_json()) == out.state
    with pytest.raises(LocalProtocolError, match="unknown"):
        compress_messages([{"role": "user", "content": "x"}], prior=out.state)
    # At the bound it is still exact.
    exact = "\n\n".join(f"Paragraph number {i}." for i in range(MAX_STATE_KEYS))
    assert compress_messages([{"role": "system", "content": exact}]).state.known


@pytest.mark.parametrize("data", ["", "{}", "[]", '{"config": 1, "keys": null}', '{"config": "x", "keys": "!!"}',
                                  '{"config": "x", "keys": "AAAA"}'])
def test_malformed_state_json_is_a_local_protocol_error(data: str) -> None:
    with pytest.raises(LocalProtocolError):
        RepeatState.from_json(data)


def test_state_json_is_compact() -> None:
    text = "\n\n".join(f"Rule {i}: say it once." for i in range(100))
    state = compress_messages([{"role": "system", "content": text}]).state
    assert len(state) == 100 and len(state.to_json()) < 100 * 23 + 80


def _corpus_chats() -> list:
    from tests.unit.markdownish import CORPUS

    return sorted(CORPUS.glob("*.chat.json"))


@pytest.mark.parametrize("path", _corpus_chats(), ids=lambda p: p.stem)
def test_corpus_chats_split_at_every_message(path) -> None:
    msgs = json.loads(path.read_text())["messages"]
    for level in sorted(LEVELS):
        whole = compress_messages(msgs, level=level)
        for k in range(len(msgs) + 1):
            head = compress_messages(msgs[:k], level=level)
            rest = compress_messages(msgs[k:], level=level, prior=RepeatState.from_json(head.state.to_json()))
            assert head.messages + rest.messages == whole.messages, (level, k)
            assert head.reports + rest.reports == whole.reports, (level, k)
