"""Model names → encoding, chat-format rule, context window, and the API a model is served
on when only one serves it. Pure data; see `firsttoken.tokens`."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["API_RULES", "ChatFormat", "ModelInfo", "api_of_model", "encoding_for_model", "model_info", "public_tokenizer"]


@dataclass(frozen=True, slots=True)
class ChatFormat:
    """Hidden tokens a chat model adds around messages and tool schemas.

    Numbers from the OpenAI cookbook "How to count tokens with tiktoken". `verified` is
    True only where the cookbook compared the rule with the API's `prompt_tokens`.
    """

    name: str
    tokens_per_message: int
    tokens_per_name: int
    reply_priming: int
    func_init: int
    verified: bool
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12


# "<|im_start|>{role or name}\n{content}<|im_end|>\n": 4 per message, and a name replaces the role.
CHATML_0301 = ChatFormat("gpt-3.5-turbo-0301", 4, -1, 3, func_init=10, verified=True)
CL100K_CHAT = ChatFormat("gpt-3.5-turbo/gpt-4", 3, 1, 3, func_init=10, verified=True)
GPT_4O_CHAT = ChatFormat("gpt-4o", 3, 1, 3, func_init=7, verified=True)
# Later o200k models (gpt-4.1, gpt-5, o-series, …) and unknown models: assumed to format
# like gpt-4o. Nothing published checks this; `Calibration` corrects the drift.
O200K_ASSUMED = ChatFormat("assumed like gpt-4o", 3, 1, 3, func_init=7, verified=False)
CL100K_ASSUMED = ChatFormat("assumed like gpt-4", 3, 1, 3, func_init=10, verified=False)


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """How a model name was understood."""

    model: str  #: as given
    base: str  #: lower-cased, provider prefix and fine-tune wrapper removed
    encoding: str
    known: bool  #: False: `encoding` is the o200k_base guess for an unknown model
    chat_format: ChatFormat


# A family name is followed by nothing or by a separator: "gpt-4" must not swallow
# "gpt-4o" or "gpt-4.1". ':' admits tags such as "gpt-oss:20b", '@' versions such as
# "gpt-4o@2024-08-06"; gpt-5 also takes ".1"-style point releases.
_TAIL = r"(?:[-:@].*)?"
_RULES: tuple[tuple[re.Pattern[str], str, ChatFormat], ...] = tuple(
    (re.compile(pattern, re.DOTALL), encoding, chat_format)
    for pattern, encoding, chat_format in (
        (r"gpt-3\.5-turbo-0301|gpt-35-turbo-0301", "cl100k_base", CHATML_0301),
        (rf"(?:chat)?gpt-4o{_TAIL}", "o200k_base", GPT_4O_CHAT),
        (rf"gpt-4\.[15]{_TAIL}", "o200k_base", O200K_ASSUMED),
        (r"gpt-5(?:[-.:@].*)?", "o200k_base", O200K_ASSUMED),
        (rf"o[134]{_TAIL}", "o200k_base", O200K_ASSUMED),
        (rf"gpt-oss{_TAIL}", "o200k_base", O200K_ASSUMED),
        # The gateway's built-in model: it counts its usage with this very table
        # (gateway/simulator.py), as gpt-4o does, so its counts are exact by definition.
        (rf"firsttoken-sim{_TAIL}", "o200k_base", GPT_4O_CHAT),
        (rf"gpt-4{_TAIL}", "cl100k_base", CL100K_CHAT),
        (rf"gpt-3\.5{_TAIL}|gpt-35-turbo{_TAIL}", "cl100k_base", CL100K_CHAT),
        (rf"text-embedding-3-(?:small|large){_TAIL}", "cl100k_base", CL100K_ASSUMED),
        (r"text-embedding-ada-002|davinci-002|babbage-002", "cl100k_base", CL100K_ASSUMED),
    )
)


def _base_name(model: str) -> str:
    name = model.strip().lower()
    name = name.rsplit("/", 1)[-1]  # "openai/gpt-4o", "azure/openai/gpt-4o"
    if name.startswith("openai."):  # Bedrock-style "openai.gpt-oss-120b-1:0"
        name = name[len("openai.") :]
    if name.startswith("ft:"):  # "ft:gpt-4o-mini-2024-07-18:org:suffix:id"
        name = name[len("ft:") :].split(":", 1)[0]
    return name


def model_info(model: str) -> ModelInfo:
    """Encoding and chat-format rule for `model` (unknown → o200k_base, `known=False`)."""
    base = _base_name(model)
    for pattern, encoding, chat_format in _RULES:
        if pattern.fullmatch(base):
            return ModelInfo(model, base, encoding, True, chat_format)
    return ModelInfo(model, base, "o200k_base", False, O200K_ASSUMED)


def encoding_for_model(model: str) -> tuple[str, bool]:
    """`(encoding_name, known)` for a model name.

    o200k_base: gpt-4o*, chatgpt-4o*, gpt-4.1*, gpt-4.5*, gpt-5*, o1*, o3*, o4*, gpt-oss*.
    cl100k_base: gpt-4 and gpt-4-* (turbo, 32k, dated), gpt-3.5*, text-embedding-3-*,
    text-embedding-ada-002; o200k_base with gpt-4o's chat format: firsttoken-sim*, the
    gateway's built-in model. Provider prefixes ("openai/gpt-4o") and fine-tune names
    ("ft:gpt-4o-mini:org::id") are understood. Anything else gives
    `("o200k_base", False)`: a guess, and the caller should say so.
    """
    info = model_info(model)
    return info.encoding, info.known


# Context windows (prompt + reply, in tokens) as OpenAI's and Anthropic's model pages
# list them. A prefix table, longest prefix first: dated snapshots share their family's
# window.
_CONTEXT_WINDOWS: tuple[tuple[str, int], ...] = (
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("chatgpt-4o", 128_000),
    ("gpt-4.5", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4-32k", 32_768),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo-instruct", 4_096),
    ("gpt-3.5", 16_385),
    ("gpt-35", 16_385),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("gpt-oss", 131_072),
    ("firsttoken-sim", 128_000),
    # Every Claude model since Claude 3 (1 M for some only behind a beta header).
    ("claude", 200_000),
)

#: The window assumed for a model not in the table (the page lets the user set one).
DEFAULT_CONTEXT_WINDOW = 128_000


def context_window(model: str) -> tuple[int, bool]:
    """`(tokens, known)`: the model's context window, or the default for an unknown one."""
    base = _base_name(model)
    for prefix, size in _CONTEXT_WINDOWS:
        if base.startswith(prefix):
            return size, True
    return DEFAULT_CONTEXT_WINDOW, False


# Models served on one API only. OpenAI's pro and codex models answer "This model is
# only supported in v1/responses" on /chat/completions (o3-pro, o1-pro, gpt-5-pro,
# gpt-5.2-pro, gpt-5-codex: their model pages, and the reports in RESEARCH-2026-12.md);
# Claude is served on Anthropic's Messages API (OpenAI-compatible layers exist, but the
# Messages API is the one that carries all of it). Dated snapshots follow their family.
# The page applies the same rules to pick the headers of its model list request:
# gateway.build.protocol_js writes them into js/link/protocol.js.
_DATED = r"(?:-\d{4}-\d{2}-\d{2})?"
#: `(pattern, api)`: a model name (trimmed, lower-cased, with no "/") that matches the
#: whole of `pattern` is served on `api` only (`api_of_model`).
API_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.DOTALL), api)
    for pattern, api in (
        (rf"(?:o1-pro|o3-pro|gpt-5(?:\.\d+)?-pro){_DATED}", "responses"),
        (rf"(?:gpt-5(?:\.\d+)?-codex(?:-mini|-max)?|codex-mini-latest){_DATED}", "responses"),
        (r"claude-.*", "anthropic_messages"),
    )
)


def api_of_model(model: str) -> str | None:
    """The API `model` is served on when only one serves it ("responses",
    "anthropic_messages"), else None. A provider-prefixed name ("openai/o3-pro",
    "anthropic/claude-sonnet-4") is a router's (OpenRouter, LiteLLM), and routers serve
    every model on Chat Completions: None."""
    name = model.strip().lower()
    if "/" in name:
        return None
    for pattern, api in API_RULES:
        if pattern.fullmatch(name):
            return api
    return None


def public_tokenizer(model: str) -> bool:
    """False for a family whose maker publishes no tokenizer (Claude: Anthropic offers a
    counting endpoint, not the vocabulary), whose counts can only be estimates."""
    return not _base_name(model).startswith("claude")
