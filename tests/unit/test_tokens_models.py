"""Model name → encoding (and chat-format rule)."""

from __future__ import annotations

import pytest

from firsttoken import tokens

O200K = [
    "gpt-4o", "gpt-4o-mini", "gpt-4o-2024-08-06", "gpt-4o-audio-preview", "chatgpt-4o-latest",
    "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano-2025-04-14", "gpt-4.5-preview",
    "gpt-5", "gpt-5-mini", "gpt-5.1", "gpt-5.1-codex", "gpt-5-chat-latest",
    "o1", "o1-mini", "o1-preview", "o3", "o3-mini", "o3-pro", "o4-mini", "o4-mini-deep-research",
    "gpt-oss-120b", "gpt-oss-20b", "gpt-oss:20b",
    "GPT-4o", " gpt-4o ",  # case and stray spaces from a settings field
]  # fmt: skip
CL100K = [
    "gpt-4", "gpt-4-0613", "gpt-4-32k", "gpt-4-turbo", "gpt-4-turbo-2024-04-09",
    "gpt-4-1106-preview", "gpt-4-vision-preview",
    "gpt-3.5-turbo", "gpt-3.5-turbo-0301", "gpt-3.5-turbo-16k", "gpt-3.5-turbo-instruct",
    "gpt-35-turbo", "gpt-35-turbo-16k",
    "text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002",
]  # fmt: skip
WRAPPED = {
    "openai/gpt-4o": "o200k_base",
    "openai/gpt-4o-mini": "o200k_base",
    "azure/openai/gpt-4": "cl100k_base",
    "openai/gpt-oss-20b:free": "o200k_base",
    "openai.gpt-oss-120b-1:0": "o200k_base",
    "ft:gpt-4o-mini:org::id": "o200k_base",
    "ft:gpt-4o-mini-2024-07-18:acme:support:9abc": "o200k_base",
    "ft:gpt-3.5-turbo-0125:acme::xyz": "cl100k_base",
    "ft:gpt-4-0613:acme::xyz": "cl100k_base",
}
UNKNOWN = [
    "llama-3.1-70b-instruct", "mistral-large", "claude-3-5-sonnet", "gemini-1.5-pro",
    "gpt-4.2", "gpt-4x", "gpt-40", "o2", "o10", "gpt-50", "gpt", "", "text-embedding-4",
]  # fmt: skip


@pytest.mark.parametrize("model", O200K)
def test_o200k_models(model: str) -> None:
    assert tokens.encoding_for_model(model) == ("o200k_base", True)


@pytest.mark.parametrize("model", CL100K)
def test_cl100k_models(model: str) -> None:
    assert tokens.encoding_for_model(model) == ("cl100k_base", True)


@pytest.mark.parametrize(("model", "encoding"), sorted(WRAPPED.items()))
def test_provider_prefixes_and_fine_tunes(model: str, encoding: str) -> None:
    assert tokens.encoding_for_model(model) == (encoding, True)


@pytest.mark.parametrize("model", UNKNOWN)
def test_unknown_models_fall_back_to_o200k_and_say_so(model: str) -> None:
    assert tokens.encoding_for_model(model) == ("o200k_base", False)


def test_model_info_reports_the_chat_rule() -> None:
    assert tokens.model_info("gpt-3.5-turbo-0301").chat_format.tokens_per_message == 4
    assert tokens.model_info("gpt-3.5-turbo-0301").chat_format.tokens_per_name == -1
    gpt4o = tokens.model_info("openai/gpt-4o-mini")
    assert (gpt4o.base, gpt4o.chat_format.func_init, gpt4o.chat_format.verified) == (
        "gpt-4o-mini", 7, True
    )
    assert tokens.model_info("gpt-4-turbo").chat_format.func_init == 10
    assert not tokens.model_info("gpt-5").chat_format.verified
    assert not tokens.model_info("llama-3").known


def test_context_windows_by_family_and_default() -> None:
    from firsttoken import tokens

    assert tokens.context_window("gpt-4o-mini-2024-07-18") == (128_000, True)
    assert tokens.context_window("openai/gpt-4.1-nano") == (1_047_576, True)
    assert tokens.context_window("gpt-4-0613") == (8_192, True)
    assert tokens.context_window("gpt-3.5-turbo") == (16_385, True)
    assert tokens.context_window("llama-3-70b") == (tokens.DEFAULT_CONTEXT_WINDOW, False)
