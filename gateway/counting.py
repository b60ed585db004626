"""How the gateway counts a prompt: decided once per process, done once per request.

`PromptCounter.load()` asks `firsttoken.tokens` (the page's own counter: tiktoken-
compatible BPE, exact for OpenAI's models, an o200k_base estimate for others, Claude's
among them) to count one probe, once. If its data loads, counts are `exact`; if not,
flow control counts UTF-8 bytes (an upper bound: a BPE token is at least one byte) and
the built-in model its rough estimate (gateway/prefill.py), each as before.

One count per request: flow control counts the prompt it admits (when a tokens bucket
or a dry run needs it, gateway/limits/middleware.py) and hands an exact count on in the
request's `ChatBody.prompt_tokens`; the built-in model bills that count, and counts
only a prompt nobody counted (no tokens bucket). The two agree: both count the prompt
the dialect read (`ChatRequest.messages`), and its tools, which the built-in model
refuses before it counts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["CountChat", "CountText", "PromptCounter"]

CountChat = Callable[..., int]  # (messages, model, tools=None) -> tokens
CountText = Callable[[str, str], int]  # (text, model) -> tokens


@dataclass(frozen=True, slots=True)
class PromptCounter:
    """The counts the gateway uses: a chat prompt's (`chat`), a text's (`text`, for an
    answer's usage when its usage is not reported) and a model's context `window`;
    `exact` says they come from `firsttoken.tokens`."""

    exact: bool
    chat: CountChat
    text: CountText
    window: Callable[[str], int]

    @classmethod
    def load(cls) -> PromptCounter:
        """`firsttoken.tokens` when its data loads (one probe), else byte counts."""
        try:
            from firsttoken import tokens

            tokens.count("probe", "gpt-4o")
        except Exception:  # noqa: BLE001 - any failure means: fall back to byte counts
            return cls(False, _bytes_of_chat, _bytes_of_text, lambda model: 128_000)
        return cls(True, tokens.count_chat, tokens.count, lambda model: tokens.context_window(model)[0])


def _bytes_of_chat(messages: list[dict[str, Any]], model: str, tools: Any = None) -> int:
    return len(json.dumps(messages, ensure_ascii=False).encode("utf-8", "replace"))


def _bytes_of_text(text: str, model: str) -> int:
    return len(text.encode("utf-8", "replace"))
