"""What a prompt may cost, and what it costs when it cannot be counted exactly.

* `budget_for(settings)`: the prompt budget, the model's context window less a reserve
  for the reply. Fitting (`fit_messages`) keeps a conversation within it.
* `estimate_tokens(messages, model)`: a prompt's tokens, exactly (`count_chat`) when an
  encoder is at hand, else `rough_count_chat`. The page loads its encoder lazily, so
  the first prompts of a session, and any session whose encoder failed to load, are
  estimated: for the governor's quota check before sending, and the composer's count.
* `rough_count_chat(messages, model)`: no encoder at all. About 4 characters a token
  (OpenAI's rule of thumb for English text), but each Chinese or Japanese character
  about 0.75 of a token and each Korean one 0.55 in o200k (1.05 and 1.1 in cl100k),
  plus the cookbook's chat overhead (3 tokens a message, 3 priming the reply), plus
  each image by `model`'s rule, which needs no encoder (`firsttoken.tokens.images`).
  Also the built-in model's `usage.prompt_tokens` when the gateway cannot load the
  tokenizer data (gateway/simulator.py).

An image whose bytes do not read (`InvalidImage`) is an error in both: it would fail at
the provider too, and no count of it would mean anything.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Protocol, Sequence

from firsttoken.errors import InvalidImage
from firsttoken.replay import CHAT_FIELDS as REPLAY_CHAT_FIELDS
from firsttoken.replay import ITEMS as REPLAY_ITEMS
from firsttoken.replay import replay_chars
from firsttoken.tokens.chat import _part_text, count_chat
from firsttoken.tokens.images import count_image_part
from firsttoken.tokens.models import context_window, encoding_for_model, thinking_effort

__all__ = [
    "DEFAULT_REPLY_RESERVE",
    "THINKING_RESERVE",
    "BudgetSettings",
    "budget_for",
    "estimate_tokens",
    "reply_reserve",
    "rough_count_chat",
    "thinking_reserve",
]

#: Tokens kept free for the reply when `max_tokens` is not set (or a quarter of the
#: window, for a small one).
DEFAULT_REPLY_RESERVE = 4096
#: Tokens kept free for the reasoning of a model that thinks, by effort, beside the
#: reply's: every API counts reasoning against its output limit and the context window
#: (openai-python `CompletionUsage`: reasoning tokens "are still counted in the total
#: completion tokens for purposes of billing, output, and context window limits";
#: Anthropic: thinking "counts towards your `max_tokens` limit"). High follows OpenAI's
#: reasoning guide ("reserve at least 25,000 tokens for reasoning and outputs"); low is
#: twice Anthropic's least `budget_tokens` (1,024). Also Anthropic's `budget_tokens`.
THINKING_RESERVE = {"low": 2048, "medium": 8192, "high": 24576}

# The cookbook's per-message and reply-priming overhead (firsttoken.tokens.chat).
_PER_MESSAGE = 3
_REPLY_PRIMING = 3
_CHARS_PER_TOKEN = 4
# Tokens a character of Chinese or Japanese (Han, Kana, CJK and full-width punctuation)
# and of Korean (Hangul) costs, by encoding. Characters ÷ 4 counts Chinese about 3 times
# too low (k0valik/pi-blackhole#106): BPE merges English letters into words, but a Han
# character is most of a token on its own. Measured with the exact encoders on
# tests/corpus/compress/cjk-*.md, over their CJK characters alone: o200k 0.72–0.78 a
# character (../shared/RESEARCH-REASONING.md §4: 0.70 for Chinese, 0.74 for Japanese,
# on shorter samples), cl100k 0.99–1.15; Korean, one paragraph, with its spaces and
# punctuation counted as below: 0.57 and 1.10.
_CJK_TOKENS_PER_CHAR = {"o200k_base": (0.75, 0.55), "cl100k_base": (1.05, 1.1)}
# Between CJK characters, the rest is mostly markup, numbers, list markers and short
# terms, which merge less than English prose does: there each punctuation mark or line
# break counts half a token, the rest 4 characters a token. On the corpus above, in
# o200k, this took the estimates from 3–16% under (the worst, one holding JSON) to
# between 6% under and 7% over. A text with no CJK character is counted by
# characters ÷ 4 alone, as it always was.
_PUNCT_TOKENS = 0.5
_CJK_RUNS = re.compile(
    "(?P<cjk>[\u2e80-\u2fdf\u2ff0-\u2fff\u3001-\u303f\u3040-\u31ff\u3200-\u9fff\uf900-\ufaff"
    "\ufe10-\ufe1f\ufe30-\ufe6f\uff00-\uffef\U00020000-\U0003fffd]+)"
    "|(?P<hangul>[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7ff]+)"
)
_PUNCT = re.compile(r"[^\w\s]|\n")


class BudgetSettings(Protocol):
    """What the budget depends on (`firsttoken.settings.ChatSettings` has it)."""

    model: str
    context_window: int | None
    max_tokens: int | None
    reasoning: str


def budget_for(settings: BudgetSettings) -> tuple[int, bool]:
    """`(prompt budget, window known)`: the model's context window (the user's setting
    wins over our table) less a reserve for the reply: `max_tokens`, else
    `DEFAULT_REPLY_RESERVE` or a quarter of the window, whichever is smaller.
    `window known` is False when the model is not in our table and no setting says."""
    window, known = _window(settings)
    return window - reply_reserve(settings), known


def reply_reserve(settings: BudgetSettings) -> int:
    """The tokens kept free for the reply: `max_tokens` (which every API counts
    reasoning within), else `DEFAULT_REPLY_RESERVE` or a quarter of the window,
    whichever is smaller, plus `thinking_reserve` for a model that thinks. Also the
    `max_tokens` sent where the API demands one (Anthropic Messages), so that prompt
    and reply fit the window together."""
    if settings.max_tokens:
        return settings.max_tokens
    window = _window(settings)[0]
    return min(DEFAULT_REPLY_RESERVE, window // 4) + thinking_reserve(settings)


def thinking_reserve(settings: BudgetSettings) -> int:
    """Room for reasoning, by the effort the model thinks at (`models.thinking_effort`):
    `THINKING_RESERVE`, at most a quarter of the window; 0 when it does not think."""
    effort = thinking_effort(settings.model, getattr(settings, "reasoning", "auto"))
    if effort is None:
        return 0
    return min(THINKING_RESERVE[effort], _window(settings)[0] // 4)


def _window(settings: BudgetSettings) -> tuple[int, bool]:
    if settings.context_window:
        return settings.context_window, True
    return context_window(settings.model)


def estimate_tokens(messages: Sequence[Mapping[str, Any]], model: str) -> int:
    """Prompt tokens: exact when an encoder for `model` is at hand, else rough."""
    try:
        return count_chat(messages, model)
    except InvalidImage:
        raise  # the prompt's fault, not the encoder's: rough counting would fail the same way
    except Exception:  # noqa: BLE001 - no encoder (yet): the page loads it lazily
        return rough_count_chat(messages, model)


def rough_count_chat(messages: Sequence[Mapping[str, Any]], model: str = "") -> int:
    """Prompt tokens without an encoder: each message's text (the text `count_chat`
    would count: string content, or its text parts) at ~4 characters a token and its
    CJK characters at what they cost in `model`'s encoding (`_CJK_TOKENS_PER_CHAR`; no
    model: gpt-4o's), plus the chat overhead, plus its images by `model`'s rule
    (`firsttoken.tokens.images`)."""
    cjk, hangul = _CJK_TOKENS_PER_CHAR.get(encoding_for_model(model or "gpt-4o")[0], _CJK_TOKENS_PER_CHAR["o200k_base"])
    total = _REPLY_PRIMING
    for message in messages:
        content = message.get("content")
        images = 0
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = [text for text in map(_part_text, content) if text]
            for part in content:
                image = count_image_part(part, model)
                images += image.tokens if image is not None else 0
        else:
            texts = []
        tokens = sum(_rough_text(text, cjk, hangul) for text in texts)
        tokens += replay_chars({k: message.get(k) for k in (REPLAY_ITEMS, *REPLAY_CHAT_FIELDS) if k in message}) / _CHARS_PER_TOKEN
        # Rounded up once a message; the rounding to 1e-9 first keeps 0.75 × 4 from
        # becoming 3.0000000000000004 and so 4.
        total += _PER_MESSAGE + math.ceil(round(tokens, 9)) + images
    return total


def _rough_text(text: str, cjk: float, hangul: float) -> float:
    """`text`'s tokens, roughly, and fractionally (a message's sum is rounded up once)."""
    tokens = 0.0
    start = 0
    for run in _CJK_RUNS.finditer(text):
        tokens += _rough_between(text[start : run.start()]) + len(run.group()) * (cjk if run.lastgroup == "cjk" else hangul)
        start = run.end()
    if start == 0:
        return len(text) / _CHARS_PER_TOKEN  # no CJK at all: characters ÷ 4, as always
    return tokens + _rough_between(text[start:])


def _rough_between(part: str) -> float:
    marks = len(_PUNCT.findall(part))
    return marks * _PUNCT_TOKENS + (len(part) - marks) / _CHARS_PER_TOKEN
