"""The prompt budget, and estimates when no encoder is at hand (firsttoken.tokens.budget)."""

from __future__ import annotations

import pytest

from firsttoken import tokens
from firsttoken.errors import TokenizerError
from firsttoken.settings import ChatSettings
from firsttoken.tokens import budget as budget_module


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (ChatSettings(model="gpt-4o"), (128_000 - 4096, True)),
        (ChatSettings(model="gpt-4o", max_tokens=1000), (127_000, True)),
        (ChatSettings(model="gpt-4o", context_window=8000), (8000 - 2000, True)),  # a quarter of a small window
        (ChatSettings(model="gpt-4o", context_window=600, max_tokens=100), (500, True)),
    ],
)
def test_budget_is_the_window_less_the_reply_reserve(settings: ChatSettings, expected: tuple[int, bool]) -> None:
    assert tokens.budget_for(settings) == expected


def test_an_unknown_models_window_is_a_guess_until_a_setting_says() -> None:
    budget, known = tokens.budget_for(ChatSettings(model="someones-llama"))
    window = tokens.DEFAULT_CONTEXT_WINDOW
    assert (budget, known) == (window - min(tokens.DEFAULT_REPLY_RESERVE, window // 4), False)
    assert tokens.budget_for(ChatSettings(model="someones-llama", context_window=32_000))[1] is True


def test_rough_count_is_about_four_characters_a_token_plus_the_chat_overhead() -> None:
    assert tokens.rough_count_chat([]) == 3
    assert tokens.rough_count_chat([{"role": "user", "content": "x" * 40}]) == 3 + 3 + 10
    parts = [{"type": "text", "text": "x" * 7}, {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
             {"type": "text", "text": "y"}]
    # The image by its rule (given by URL: at its most, 85 at low detail on gpt-4o).
    assert tokens.rough_count_chat([{"role": "user", "content": parts}, {"role": "assistant", "content": None}]) == 3 + (3 + 2 + 85) + 3


def test_estimate_is_exact_with_an_encoder_and_rough_without(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is a token, exactly?"}]
    assert tokens.estimate_tokens(messages, "gpt-4o") == tokens.count_chat(messages, "gpt-4o")

    def no_encoder(*_args: object) -> int:
        raise TokenizerError("no encoder")  # the page has not loaded it yet

    monkeypatch.setattr(budget_module, "count_chat", no_encoder)
    assert tokens.estimate_tokens(messages, "gpt-4o") == tokens.rough_count_chat(messages)
