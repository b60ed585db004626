"""The inline `<think>` splitter: whole, cut at every place, cut at random, against each
opening, closing-only and unclosed form; every way must give the same reasoning and
answer, and what it holds must stay bounded. Then the same through `ChatStream`."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from firsttoken.stream.completions import ChatStream
from firsttoken.stream.think_tags import _LONGEST, MAX_LEADING_SPACE, TAGS, ThinkTagSplitter

HOLD_BOUND = MAX_LEADING_SPACE + _LONGEST


def split(parts: list[str], *, implicit: bool = False, cut: bool = False) -> tuple[str, str]:
    """(reasoning, answer) of `parts` fed in order; checks the bound on what is held."""
    splitter = ThinkTagSplitter(implicit=implicit)
    pieces = []
    for part in parts:
        pieces += splitter.feed(part)
        assert len(splitter._held) <= HOLD_BOUND
    pieces += splitter.finish(cut=cut)
    assert all(text for _, text in pieces)  # no empty pieces
    return "".join(t for r, t in pieces if r), "".join(t for r, t in pieces if not r)


# (content, implicit, cut) → (reasoning, answer)
FORMS = [
    # Opened and closed, the blank line before the answer dropped.
    ("<think>Let me see.</think>\n\nYes.", False, False, ("Let me see.", "Yes.")),
    ("  \n<thinking>a < b</thinking>ok", False, False, ("a < b", "ok")),
    ("<Thought>x</Thought>y", False, False, ("x", "y")),
    ("<|begin_of_thought|>x<|end_of_thought|>y", False, False, ("x", "y")),
    ("◁think▷x◁/think▷y", False, False, ("x", "y")),
    ("<think></think>\n\nHi", False, False, ("", "Hi")),  # Qwen3 with thinking off
    # A closing tag of another name does not close.
    ("<think>a</thinking>b</think>c", False, False, ("a</thinking>b", "c")),
    # Closing only: at the very start, dropped; later, answer text unless the model
    # opens its reasoning in the prompt (R1).
    ("</think>\n\nanswer", False, False, ("", "answer")),
    ("R1 thinks</think>\n\nAnswer", False, False, ("", "R1 thinks</think>\n\nAnswer")),
    ("R1 thinks</think>\n\nAnswer", True, False, ("R1 thinks", "Answer")),
    ("<think>R1 opened</think>Answer", True, False, ("R1 opened", "Answer")),
    # Unclosed: cut (length) → reasoning, no answer; finished (stop) → the answer too.
    ("<think>never closed", False, True, ("never closed", "")),
    ("<think>never closed", False, False, ("never closed", "never closed")),
    ("R1 never closed", True, True, ("R1 never closed", "")),
    ("R1 never closed", True, False, ("R1 never closed", "R1 never closed")),
    # Not at the start: answer text, as sent.
    ("Use <think> tags like <think>this</think>.", False, False, ("", "Use <think> tags like <think>this</think>.")),
    ("Hi", False, False, ("", "Hi")),
    # What never became a tag is the answer.
    ("<thi", False, False, ("", "<thi")),
    ("<thinker>", False, False, ("", "<thinker>")),
    ("   ", False, False, ("", "   ")),
    ("", False, False, ("", "")),
]


@pytest.mark.parametrize("content, implicit, cut, expected", FORMS)
def test_each_form_whole_and_cut_in_three_at_every_place(content: str, implicit: bool, cut: bool,
                                                         expected: tuple[str, str]) -> None:
    assert split([content], implicit=implicit, cut=cut) == expected
    assert split(list(content), implicit=implicit, cut=cut) == expected  # a character at a time
    for i in range(len(content) + 1):
        for j in range(i, len(content) + 1):
            got = split([content[:i], content[i:j], content[j:]], implicit=implicit, cut=cut)
            assert got == expected, (content, i, j)


_WORDS = st.sampled_from(["a", " ", "\n", "<", ">", "/", "think", "thinking", "</", "Hmm", "◁", "▷", "|"]
                         + [tag for pair in TAGS for tag in pair])


@given(st.lists(_WORDS, max_size=14).map("".join), st.lists(st.integers(0, 200), max_size=8),
       st.booleans(), st.booleans())
def test_random_content_cut_at_random_gives_what_it_gives_whole(content: str, cuts: list[int],
                                                                implicit: bool, cut: bool) -> None:
    points = sorted({c % (len(content) + 1) for c in cuts})
    parts = [content[a:b] for a, b in zip([0, *points], [*points, len(content)])]
    whole = split([content], implicit=implicit, cut=cut)
    assert split(parts, implicit=implicit, cut=cut) == whole
    reasoning, answer = whole
    if not implicit and not content.lstrip().startswith(tuple(tag for pair in TAGS for tag in pair)):
        assert (reasoning, answer) == ("", content)  # no tag at the start: untouched


@given(st.text(max_size=60))
@example("<reason>")  # a tag alone: nothing to keep (found by Hypothesis)
def test_the_answer_is_never_lost(content: str) -> None:
    # Whatever comes, a finished answer has all its non-tag text somewhere.
    reasoning, answer = split([content])
    text = content  # the tags themselves are not the answer's text ("<reason>" is a tag)
    for tag in {tag for pair in TAGS for tag in pair}:
        text = text.replace(tag, "")
    for char in text:
        if not char.isspace() and char not in "<>/|◁▷":
            assert char in reasoning + answer


def test_leading_whitespace_is_held_only_up_to_its_bound() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed(" " * MAX_LEADING_SPACE) == []
    assert splitter.feed(" ") == [(False, " " * (MAX_LEADING_SPACE + 1))]
    assert splitter.feed("<think>x") == [(False, "<think>x")]  # too late to open


def test_reasoning_is_shown_as_it_comes_and_only_a_tag_prefix_is_held() -> None:
    splitter = ThinkTagSplitter()
    assert splitter.feed("<think>") == []
    assert splitter.feed("Hmm, a <b") == [(True, "Hmm, a <b")]
    assert splitter.feed(" and </thi") == [(True, " and ")]
    assert splitter.feed("nk> Yes") == [(False, "Yes")]


def test_a_resumed_answer_starts_as_answer() -> None:
    splitter = ThinkTagSplitter(answering=True)
    assert splitter.feed("<think>x") == [(False, "<think>x")]


# ---- through the Chat Completions stream ----------------------------------------------------


def _body(texts: list[str], finish: str | None = "stop") -> bytes:
    chunks = [{"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in texts]
    if finish:
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _stream(texts: list[str], finish: str | None = "stop", implicit: bool = False) -> tuple[str, str, str, str]:
    stream = ChatStream(think_implicit=implicit)
    updates = stream.feed(_body(texts, finish)) + stream.finish()
    completion = stream.close()
    shown_reasoning = "".join(u.text for u in updates if type(u).__name__ == "ReasoningDelta")
    shown_answer = "".join(u.text for u in updates if type(u).__name__ == "ContentDelta")
    return completion.reasoning, completion.content, shown_reasoning, shown_answer


@pytest.mark.parametrize("content, implicit, cut, expected", [f for f in FORMS if f[0]])
def test_the_stream_splits_content_cut_into_chunks_anywhere(content: str, implicit: bool, cut: bool,
                                                            expected: tuple[str, str]) -> None:
    finish = "length" if cut else "stop"
    for i in range(len(content) + 1):
        texts = [t for t in (content[:i], content[i:]) if t]
        reasoning, answer, shown_reasoning, shown_answer = _stream(texts, finish, implicit)
        # What the page was sent is what the answer holds.
        assert (reasoning, answer) == (shown_reasoning, shown_answer) == expected, (content, i)


def test_an_answer_cut_while_thinking_ends_with_no_answer_text() -> None:
    reasoning, answer, _, _ = _stream(["<think>Let me think about", " this carefully"], "length")
    assert (reasoning, answer) == ("Let me think about this carefully", "")


def test_held_text_goes_out_at_the_end_of_a_stream_without_a_finish_reason() -> None:
    stream = ChatStream()
    updates = stream.feed(_body(["<thi"], finish=None))
    assert [u for u in updates if type(u).__name__ == "ContentDelta"] == []
    held = stream.finish()
    assert [(type(u).__name__, u.text) for u in held] == [("ContentDelta", "<thi")]
    assert stream.finish() == []  # once
    assert stream.close().content == "<thi"


def test_reasoning_in_a_field_turns_the_implicit_start_off() -> None:
    # A server with a reasoning parser gives R1's reasoning apart: its content is answer.
    chunks = [{"choices": [{"index": 0, "delta": {"reasoning_content": "Hmm"}}]},
              {"choices": [{"index": 0, "delta": {"content": "Answer"}, "finish_reason": "stop"}]}]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    stream = ChatStream(think_implicit=True)
    stream.feed(body)
    completion = stream.close()
    assert (completion.reasoning, completion.content) == ("Hmm", "Answer")


def test_the_request_stream_knows_which_models_open_their_reasoning_unseen() -> None:
    from firsttoken.stream.dialects import stream_for

    body = _body(["Hmm</think>", "Yes"])
    r1 = stream_for("chat_completions", "deepseek/deepseek-r1")
    r1.feed(body)
    plain = stream_for("chat_completions", "gpt-4o")
    plain.feed(body)
    assert (r1.close().reasoning, r1.close().content) == ("Hmm", "Yes")
    assert plain.close().content == "Hmm</think>Yes"
