"""Model names → encoding, chat-format rule, context window, and the API a model is served
on when only one serves it. Pure data; see `firsttoken.tokens`."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "API_RULES",
    "EFFORTS",
    "ChatFormat",
    "ModelInfo",
    "ReasoningModel",
    "api_of_model",
    "encoding_for_model",
    "model_info",
    "opens_thinking_implicitly",
    "public_tokenizer",
    "reasoning_model",
    "thinking_effort",
]


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


# ---- reasoning models ---------------------------------------------------------------------

#: The efforts the `reasoning` setting names (and "auto", "off"): the three every API
#: that takes an effort shares (OpenAI `reasoning_effort`, Responses `reasoning.effort`,
#: Anthropic `output_config.effort`, DeepSeek, Ollama, Gemini's compatible layer).
EFFORTS = ("low", "medium", "high")


@dataclass(frozen=True, slots=True)
class ReasoningModel:
    """How a model family thinks, and how each API asks it to
    (../shared/RESEARCH-REASONING.md §1; `firsttoken.stream.dialects` sends it)."""

    family: str
    #: It thinks when not asked otherwise (the "auto" setting then reserves room, and
    #: asks Responses and Messages for a summary).
    thinks_by_default: bool
    #: On Chat Completions and Responses, the effort "off" is sent as: "none" (gpt-5.1
    #: and later, Ollama, Gemini), "minimal" (gpt-5: the lowest it takes), "low" (the
    #: o-series and gpt-oss cannot stop thinking); None: the `thinking` switch (DeepSeek).
    off_effort: str | None
    #: How Anthropic's Messages API asks it to think: "adaptive_only" (both `enabled`
    #: and `disabled` are refused with 400: Opus 4.7, Mythos, the Claude 5 models),
    #: "adaptive" (`enabled` is deprecated but `disabled` allowed: Opus/Sonnet 4.6),
    #: "budget" (`enabled` with `budget_tokens`), None (no thinking on Messages).
    anthropic: str | None = None
    #: R1-style: the template opens `<think>` in the prompt, the answer holds only the
    #: closing tag (`firsttoken.stream.think_tags`).
    implicit_tags: bool = False


_REASONING_RULES: tuple[tuple[re.Pattern[str], ReasoningModel | None], ...] = tuple(
    (re.compile(pattern, re.DOTALL), model)
    for pattern, model in (
        # The built-in model that thinks takes all three APIs' forms; the plain one
        # refuses them with a 400 naming the parameter (gateway/simulator.py).
        (rf"firsttoken-sim-think{_TAIL}", ReasoningModel("firsttoken-sim-think", True, "none", "budget")),
        (rf"firsttoken-sim{_TAIL}", None),
        # Chat models named like reasoning families do not reason.
        (r"gpt-5(?:\.\d+)?-chat.*", None),
        (r"gpt-5\.\d+.*", ReasoningModel("gpt-5.x", True, "none")),
        (rf"gpt-5{_TAIL}", ReasoningModel("gpt-5", True, "minimal")),
        (rf"o[134]{_TAIL}|codex-mini.*", ReasoningModel("o-series", True, "low")),
        (rf"gpt-oss{_TAIL}", ReasoningModel("gpt-oss", True, "low")),
        # DeepSeek V4 and deepseek-reasoner: `thinking: {"type": "enabled"|"disabled"}`
        # beside `reasoning_effort` (api-docs.deepseek.com/guides/thinking_mode).
        (r"deepseek-reasoner.*|deepseek-v4.*", ReasoningModel("deepseek", True, None, "budget")),
        # R1 and the models whose template opens the reasoning: only `</think>` comes.
        (r"deepseek-r1.*|.*-r1-distill.*|qwq.*|.*-thinking-2507.*",
         ReasoningModel("r1-style", True, "none", implicit_tags=True)),
        (r"gemini-(?:2\.5|3).*", ReasoningModel("gemini", True, "none")),
        # Claude (AP `thinking_config_*_param.py`; platform.claude.com "adaptive thinking").
        (r"claude-opus-4-(?:[7-9]|\d\d).*|claude-mythos.*|claude-[a-z]+-[5-9](?:[-.@].*)?",
         ReasoningModel("claude-adaptive-only", True, "low", "adaptive_only")),
        (r"claude-(?:opus|sonnet)-4-6.*", ReasoningModel("claude-adaptive", False, "none", "adaptive")),
        (r"claude-(?:opus|sonnet|haiku)-4.*|claude-3-7-sonnet.*",
         ReasoningModel("claude-budget", False, "none", "budget")),
    )
)


def reasoning_model(model: str) -> ReasoningModel | None:
    """How `model` reasons, from the family table; None: not a reasoning model, or
    not known to be (a set effort is then still sent, and a refusal remembered)."""
    base = _base_name(model)
    for pattern, info in _REASONING_RULES:
        if pattern.fullmatch(base):
            return info
    return None


def opens_thinking_implicitly(model: str) -> bool:
    """Whether `model`'s answer starts inside its reasoning, with no opening tag."""
    info = reasoning_model(model)
    return info is not None and info.implicit_tags


def thinking_effort(model: str, setting: str) -> str | None:
    """The effort `model` thinks at under the `reasoning` setting, for the room its
    reasoning needs: a set effort; under "auto", "medium" for a model that thinks by
    default (the default of OpenAI's, Anthropic's and DeepSeek's efforts is "medium"
    or "high"; the reserve is a floor, not a cap); None when it does not think."""
    if setting in EFFORTS:
        return setting
    if setting == "off":
        info = reasoning_model(model)
        # Models that cannot stop thinking still think, at their lowest effort.
        return "low" if info is not None and info.off_effort == "low" else None
    info = reasoning_model(model)
    return "medium" if info is not None and info.thinks_by_default else None
