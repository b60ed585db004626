"""count_chat against published and hand-checked numbers; fit_messages' choices and report."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firsttoken import tokens
from firsttoken.errors import ContextBudgetExceeded
from tests.corpus.tokens.golden import corpus_texts
from tests.unit.image_files import data_url, png

# The example conversation of the OpenAI cookbook "How to count tokens with tiktoken"
# (openai-cookbook, examples/How_to_count_tokens_with_tiktoken.ipynb). The cookbook
# reports the API's usage.prompt_tokens for it: 127 on gpt-3.5-turbo-0301, 129 on
# gpt-3.5-turbo(-0613/-0125) and gpt-4(-0613), 124 on gpt-4o and gpt-4o-mini.
COOKBOOK_MESSAGES = [
    {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
    {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
    {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
    {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."},
]  # fmt: skip

# The cookbook's function-calling example: 105 prompt tokens on gpt-3.5-turbo and gpt-4,
# 101 on gpt-4o and gpt-4o-mini, as reported by the API.
COOKBOOK_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["location"],
            },
        },
    }
]  # fmt: skip
COOKBOOK_TOOL_MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-3.5-turbo-0301", 127),
        ("gpt-3.5-turbo-0613", 129),
        ("gpt-3.5-turbo", 129),
        ("gpt-4-0613", 129),
        ("gpt-4", 129),
        ("gpt-4o", 124),
        ("gpt-4o-mini", 124),
        ("openai/gpt-4o-mini", 124),
    ],
)
def test_cookbook_messages(model: str, expected: int) -> None:
    detail = tokens.count_chat_detailed(COOKBOOK_MESSAGES, model)
    assert detail.total == expected == tokens.count_chat(COOKBOOK_MESSAGES, model)
    assert detail.exact and detail.notes == ()


@pytest.mark.parametrize(
    ("model", "expected"),
    [("gpt-3.5-turbo", 105), ("gpt-4", 105), ("gpt-4o", 101), ("gpt-4o-mini", 101)],
)
def test_cookbook_tools(model: str, expected: int) -> None:
    detail = tokens.count_chat_detailed(COOKBOOK_TOOL_MESSAGES, model, COOKBOOK_TOOLS)
    assert detail.total == expected
    assert not detail.exact  # the tools rule approximates hidden formatting


# Hand-checked: "user", "assistant", "tool", "bob", "hi" are 1 token in both encodings;
# "hello world" 2, "get_time" 2, '{"tz":"UTC"}' 5, "call_1" 3, "12:00" 3.
def test_one_message_by_hand() -> None:
    messages = [{"role": "user", "content": "hello world"}]
    assert tokens.count_chat(messages, "gpt-4o") == 3 + 1 + 2 + 3
    named = [{"role": "user", "name": "bob", "content": "hello world"}]
    assert tokens.count_chat(named, "gpt-4o") == 3 + 1 + 1 + 1 + 2 + 3
    assert tokens.count_chat(named, "gpt-3.5-turbo-0301") == 4 + 1 + 1 - 1 + 2 + 3


def test_parts_and_images() -> None:
    one_part = [{"role": "user", "content": [{"type": "text", "text": "hello world"}]}]
    detail = tokens.count_chat_detailed(one_part, "gpt-4o")
    assert (detail.total, detail.exact) == (9, True)

    two_parts = [{"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": " world"}]}]
    detail = tokens.count_chat_detailed(two_parts, "gpt-4o")
    assert detail.total == 9 and not detail.exact

    def with_image(detail: str | None) -> list[dict[str, Any]]:
        image: dict[str, Any] = {"url": data_url(png(1024, 1024, pixels=False))}
        if detail:
            image["detail"] = detail
        return [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": image}]}]

    assert tokens.count_chat(with_image("low"), "gpt-4o") == 3 + 1 + 1 + tokens.IMAGE_TOKENS_LOW + 3
    assert tokens.count_chat(with_image("high"), "gpt-4o") == 8 + tokens.IMAGE_TOKENS_DEFAULT
    detail = tokens.count_chat_detailed(with_image(None), "gpt-4o")
    assert detail.total == 8 + tokens.IMAGE_TOKENS_DEFAULT
    assert not detail.exact and any("image" in n for n in detail.notes)

    audio = [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "..", "format": "wav"}}]}]
    detail = tokens.count_chat_detailed(audio, "gpt-4o")
    assert detail.total == 3 + 1 + 3 and any("input_audio" in n for n in detail.notes)


def test_tool_calls_and_results_by_hand() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": '{"tz":"UTC"}'}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "12:00"},
    ]
    detail = tokens.count_chat_detailed(messages, "gpt-4o")
    assert detail.messages == (
        3 + 1 + 1,
        3 + 1 + (2 + 5 + tokens.TOOL_CALL_OVERHEAD),
        3 + 1 + 3 + 3,
    )
    assert detail.total == sum(detail.messages) + 3
    assert not detail.exact


def test_tool_schema_details() -> None:
    bare = [{"name": "ping", "description": "Ping."}]  # legacy `functions` entries work too
    # func_init 7 + "ping:Ping" (3 tokens, trailing period dropped) + func_end 12
    assert tokens.count_chat_detailed([], "gpt-4o", bare).tools == 7 + tokens.count("ping:Ping", "gpt-4o") + 12
    nested = [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}}}}}]
    detail = tokens.count_chat_detailed([], "gpt-4o", nested)
    assert any("nested" in n for n in detail.notes)
    assert tokens.count_chat_detailed([], "gpt-4o", []).tools == 0


def test_unknown_and_unverified_models_are_flagged() -> None:
    messages = [{"role": "user", "content": "hello world"}]
    for model in ("llama-3.1-8b", "gpt-5"):
        detail = tokens.count_chat_detailed(messages, model)
        assert detail.total == 9 and not detail.exact and detail.notes
        assert detail.encoding == "o200k_base"


# ---- fit_messages ---------------------------------------------------------------------------

SYSTEM = {"role": "system", "content": "You are terse. Answer in one line."}


def conversation(turns: int, words: int = 40) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [SYSTEM]
    for t in range(turns):
        messages.append({"role": "user", "content": f"Question {t}: " + " ".join(f"word{t}x{i}" for i in range(words))})
        messages.append({"role": "assistant", "content": f"Answer {t}: " + " ".join(f"reply{t}y{i}" for i in range(words))})
    messages.append({"role": "user", "content": "And finally, what now?"})
    return messages


def costs(messages: list[dict[str, Any]], model: str = "gpt-4o") -> tuple[int, ...]:
    return tokens.count_chat_detailed(messages, model).messages


def test_everything_fits() -> None:
    messages = conversation(3)
    total = tokens.count_chat(messages, "gpt-4o")
    fit = tokens.fit_messages(messages, total, "gpt-4o")
    assert fit.kept == tuple(range(len(messages))) and fit.dropped == () and fit.truncated == ()
    assert fit.total == total and fit.messages == messages and fit.exact


def test_oldest_turns_are_dropped_whole() -> None:
    messages = conversation(3)  # 0 system, 1..6 history, 7 newest user
    c = costs(messages)
    # Room for system, the last two history messages and the newest user, plus priming.
    budget = c[0] + c[5] + c[6] + c[7] + 3 + 5
    fit = tokens.fit_messages(messages, budget, "gpt-4o", min_partial_tokens=10_000)
    assert fit.kept == (0, 5, 6, 7)
    assert fit.dropped == (1, 2, 3, 4)
    assert fit.truncated == ()
    assert fit.total == budget - 5 == tokens.count_chat(fit.messages, "gpt-4o")


def test_the_oldest_kept_message_is_cut_to_fill_the_room() -> None:
    messages = conversation(3)
    c = costs(messages)
    spare = 30
    budget = c[0] + c[5] + c[6] + c[7] + 3 + spare
    fit = tokens.fit_messages(messages, budget, "gpt-4o", min_partial_tokens=5)
    assert fit.kept == (0, 4, 5, 6, 7) and fit.dropped == (1, 2, 3)
    (cut,) = fit.truncated
    assert cut.index == 4 and cut.tokens_before == c[4]
    assert cut.tokens_after <= spare and cut.tokens_cut == c[4] - cut.tokens_after
    kept_text = fit.messages[1]["content"]
    assert messages[4]["content"].endswith(kept_text)  # its start was cut
    assert fit.total == tokens.count_chat(fit.messages, "gpt-4o") <= budget
    assert not fit.newest_user_truncated and fit.tokens_cut == cut.tokens_cut
    # cut_side="end" keeps the beginning instead
    fit = tokens.fit_messages(messages, budget, "gpt-4o", min_partial_tokens=5, cut_side="end")
    assert messages[4]["content"].startswith(fit.messages[1]["content"])


def test_reserve_for_reply_is_taken_off_the_budget() -> None:
    messages = conversation(3)
    total = tokens.count_chat(messages, "gpt-4o")
    assert tokens.fit_messages(messages, total + 100, "gpt-4o", reserve_for_reply=100).dropped == ()
    fit = tokens.fit_messages(messages, total + 100, "gpt-4o", reserve_for_reply=101)
    assert fit.dropped or fit.truncated
    assert fit.total <= total - 1


def test_a_too_long_newest_user_message_is_cut_and_reported() -> None:
    long_text = " ".join(corpus_texts()["prose_en"].split()[:400])
    messages = [SYSTEM, {"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"},
                {"role": "user", "content": long_text}]  # fmt: skip
    c = costs(messages)
    budget = c[0] + 3 + 50
    fit = tokens.fit_messages(messages, budget, "gpt-4o")
    assert fit.kept == (0, 3) and fit.dropped == (1, 2)
    assert fit.newest_user_truncated and fit.newest_user_index == 3
    assert fit.truncated[0].tokens_before == c[3] and fit.truncated[0].tokens_after <= 50
    assert long_text.endswith(fit.messages[1]["content"])
    assert fit.total <= budget


def test_system_messages_that_cannot_fit_raise() -> None:
    messages = [SYSTEM, {"role": "user", "content": "hi"}]
    c = costs(messages)
    with pytest.raises(ContextBudgetExceeded) as info:
        tokens.fit_messages(messages, c[0] + 3, "gpt-4o")
    overhead_user = 3 + 1  # per message + "user"
    assert info.value.required == c[0] + 3 + overhead_user + 1
    assert info.value.available == c[0] + 3
    assert info.value.to_dict()["code"] == "context_budget_exceeded"
    # the smallest budget that works
    fit = tokens.fit_messages(messages, info.value.required, "gpt-4o")
    assert fit.kept == (0, 1) and fit.total <= info.value.required


def test_tools_count_against_the_budget() -> None:
    messages = COOKBOOK_TOOL_MESSAGES
    fit = tokens.fit_messages(messages, 101, "gpt-4o", tools=COOKBOOK_TOOLS)
    assert fit.total == 101 and fit.dropped == ()
    with pytest.raises(ContextBudgetExceeded):
        tokens.fit_messages(messages, 60, "gpt-4o", tools=COOKBOOK_TOOLS)


def test_tool_call_groups_are_kept_or_dropped_together() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "weather in Lisbon"}'}}
    messages = [
        SYSTEM,
        {"role": "user", "content": "look something up"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny, 21 degrees"},
        {"role": "assistant", "content": "It is sunny."},
        {"role": "user", "content": "thanks"},
    ]
    c = costs(messages)
    # Room for message 4 and the tool result 3, but not for the call 2 that 3 answers.
    budget = c[0] + c[4] + c[3] + c[5] + 3
    fit = tokens.fit_messages(messages, budget, "gpt-4o")
    assert fit.kept == (0, 4, 5) and fit.dropped == (1, 2, 3)


def test_the_current_turn_after_the_newest_user_message_is_kept() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    messages = [
        SYSTEM,
        {"role": "user", "content": "old question " * 20},
        {"role": "assistant", "content": "old answer " * 20},
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
    ]
    c = costs(messages)
    fit = tokens.fit_messages(messages, c[0] + c[3] + c[4] + c[5] + 3, "gpt-4o")
    assert fit.kept == (0, 3, 4, 5) and fit.dropped == (1, 2)


def test_without_a_user_message_history_is_fitted() -> None:
    messages = [SYSTEM, {"role": "assistant", "content": "hello " * 50}]
    c = costs(messages)
    fit = tokens.fit_messages(messages, c[0] + 3 + 1, "gpt-4o")
    assert fit.kept == (0,) and fit.newest_user_index is None


def test_fit_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        tokens.fit_messages([], -1, "gpt-4o")
    with pytest.raises(ValueError):
        tokens.fit_messages([], 10, "gpt-4o", min_partial_tokens=0)


WORDS = sorted({w for t in corpus_texts().values() for w in t.split() if w})[:400]
message_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)
history_message = st.builds(
    lambda role, text: {"role": role, "content": text},
    st.sampled_from(["user", "assistant"]),
    message_text,
)
multipart_message = st.builds(
    lambda a, b: {"role": "user", "content": [{"type": "text", "text": a}, {"type": "text", "text": b}]},
    message_text,
    message_text,
)


@settings(max_examples=150, deadline=None)
@given(
    system=st.booleans(),
    history=st.lists(st.one_of(history_message, multipart_message), max_size=12),
    last=st.one_of(message_text, st.just("")),
    budget=st.integers(0, 900),
    reserve=st.integers(0, 50),
    min_partial=st.integers(1, 40),
    side=st.sampled_from(["start", "end"]),
    model=st.sampled_from(["gpt-4o", "gpt-4", "gpt-3.5-turbo-0301"]),
)
def test_fit_properties(
    system: bool, history: list[dict[str, Any]], last: str, budget: int, reserve: int,
    min_partial: int, side: str, model: str,
) -> None:  # fmt: skip
    messages = ([SYSTEM] if system else []) + history + [{"role": "user", "content": last}]
    try:
        fit = tokens.fit_messages(
            messages, budget, model, reserve_for_reply=reserve,
            min_partial_tokens=min_partial, cut_side=side,  # type: ignore[arg-type]
        )  # fmt: skip
    except ContextBudgetExceeded as exc:
        assert exc.required > exc.available == budget - reserve
        return
    n = len(messages)
    assert fit.total == tokens.count_chat(fit.messages, model) <= budget - reserve
    assert sorted(fit.kept + fit.dropped) == list(range(n)) and not set(fit.kept) & set(fit.dropped)
    assert n - 1 in fit.kept and (not system or 0 in fit.kept)
    history_kept = [i for i in fit.kept if messages[i] is not SYSTEM and i != n - 1]
    if history_kept:  # the kept history is the newest part: nothing newer was dropped
        assert all(i < min(history_kept) for i in fit.dropped)
    truncated = {t.index: t for t in fit.truncated}
    after = tokens.count_chat_detailed(fit.messages, model).messages
    for position, index in enumerate(fit.kept):
        original, sent = messages[index], fit.messages[position]
        if index in truncated:
            assert truncated[index].tokens_after == after[position] < truncated[index].tokens_before
        else:
            assert sent == original
    # Nothing is dropped when everything would have fitted.
    if tokens.count_chat(messages, model) <= budget - reserve:
        assert fit.dropped == () and fit.truncated == ()


def test_cutting_a_message_with_an_image_keeps_the_image() -> None:
    long_text = " ".join(corpus_texts()["prose_en"].split()[:200])
    image = {"type": "image_url", "image_url": {"url": data_url(png(1024, 1024, pixels=False)), "detail": "low"}}
    messages = [SYSTEM, {"role": "user", "content": [{"type": "text", "text": long_text}, image]}]
    c = costs(messages)
    floor = 3 + 1 + tokens.IMAGE_TOKENS_LOW  # per message, "user", the image
    fit = tokens.fit_messages(messages, c[0] + 3 + floor + 20, "gpt-4o")
    (text_part, image_part) = fit.messages[1]["content"]
    assert image_part == image and long_text.endswith(text_part["text"])
    assert fit.truncated[0].tokens_after <= floor + 20 and fit.newest_user_truncated
    with pytest.raises(ContextBudgetExceeded) as info:
        tokens.fit_messages(messages, c[0] + 3 + floor, "gpt-4o")
    assert info.value.required == c[0] + 3 + floor + 1


def test_an_old_photo_is_left_out_before_its_caption_and_the_current_ones_never() -> None:
    photo = {"type": "image_url", "image_url": {"url": data_url(png(1024, 768, pixels=False)), "detail": "high"}}
    old = {"role": "user", "content": [{"type": "text", "text": "What does this receipt say?"}, photo]}
    history = [SYSTEM, old, {"role": "assistant", "content": "It says 12.40 EUR, paid by card."}]
    now = {"role": "user", "content": [{"type": "text", "text": "And this one?"}, photo]}
    messages = [*history, now]
    c = costs(messages)
    bare = {**old, "content": old["content"][:1]}
    bare_cost = costs([bare])[0]
    # Room for everything but the old photo (765 tokens): its caption and the answer stay.
    fit = tokens.fit_messages(messages, sum(c) + 3 - 765, "gpt-4o")
    assert fit.dropped == () and fit.images_dropped == (1,) and fit.images_left_out == 1
    assert fit.messages[1] == bare and fit.messages[3] == now
    assert [(t.index, t.tokens_before, t.tokens_after) for t in fit.truncated] == [(1, c[1], bare_cost)]
    assert fit.total == tokens.count_chat(fit.messages, "gpt-4o")
    # With less room, the old turn goes whole (the caption cannot be cut to 16 tokens
    # and still mean something: it is dropped like any message), its photo counted.
    fit = tokens.fit_messages(messages, c[0] + c[2] + c[3] + 3 + 5, "gpt-4o")
    assert fit.dropped == (1,) and fit.images_left_out == 1 and fit.images_dropped == ()
    # The photo of the current turn is never left out: the budget is too small instead.
    with pytest.raises(ContextBudgetExceeded):
        tokens.fit_messages(messages, c[0] + 3 + 700, "gpt-4o")
    # With room for everything, nothing is touched.
    fit = tokens.fit_messages(messages, sum(c) + 3, "gpt-4o")
    assert fit.images_dropped == () and fit.images_left_out == 0 and fit.messages == messages
