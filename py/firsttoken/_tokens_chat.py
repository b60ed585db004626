"""Chat-level counting and fitting a conversation into a token budget. See `firsttoken.tokens`
for the counting rules and their sources."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from firsttoken._tokens_encoders import Encoder, _count_with, get_encoder, truncate_counted
from firsttoken._tokens_models import ChatFormat, model_info
from firsttoken.errors import ContextBudgetExceeded, TokenizerError

__all__ = [
    "IMAGE_TOKENS_DEFAULT",
    "IMAGE_TOKENS_LOW",
    "TOOL_CALL_OVERHEAD",
    "ChatCount",
    "FitResult",
    "TruncatedMessage",
    "count_chat",
    "count_chat_detailed",
    "fit_messages",
]

#: An image part with `"detail": "low"`: the fixed price OpenAI documents for gpt-4o.
IMAGE_TOKENS_LOW = 85
#: Any other image part: a 1024×1024 image at high detail on gpt-4o (85 + 4 tiles × 170).
#: The real figure depends on the image size and the model, which we do not know.
IMAGE_TOKENS_DEFAULT = 765
#: Per tool call in an assistant message, on top of its name and arguments. Our estimate
#: of the wrapper the server adds; no published source gives this number.
TOOL_CALL_OVERHEAD = 7

Message = Mapping[str, Any]
_PINNED_ROLES = frozenset({"system", "developer"})


@dataclass(frozen=True, slots=True)
class ChatCount:
    """A chat prompt's token count, itemised. `total` = sum(messages) + tools + reply_priming.

    `exact` is True only when every part was counted by a rule the cookbook verified
    against the API (text content, names, a verified model family, no tools); `notes`
    says what was estimated otherwise.
    """

    total: int
    messages: tuple[int, ...]
    tools: int
    reply_priming: int
    encoding: str
    exact: bool
    notes: tuple[str, ...]


class _Counter:
    """Counts messages for one model; collects notes on what was estimated."""

    def __init__(self, model: str) -> None:
        info = model_info(model)
        self.format: ChatFormat = info.chat_format
        self.encoder: Encoder = get_encoder(info.encoding)
        self.notes: dict[str, None] = {}  # ordered set
        if not info.known:
            self.note(f"unknown model {model!r}: counted with o200k_base, formatted like gpt-4o")
        elif not info.chat_format.verified:
            self.note(f"{model!r}: message overhead assumed {info.chat_format.name}")

    def note(self, text: str) -> None:
        self.notes[text] = None

    def text(self, value: str) -> int:
        return _count_with(self.encoder, value)

    def content(self, content: Any) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.text(content)
        if not isinstance(content, list):
            self.note(f"content of type {type(content).__name__} not counted")
            return 0
        if sum(1 for p in content if _part_text(p) is not None) > 1:
            # How the server joins several text parts is not published.
            self.note("several text parts: counted separately")
        return sum(self.part(p) for p in content)

    def part(self, part: Any) -> int:
        text = _part_text(part)
        if text is not None:
            return self.text(text)
        kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
        if kind == "image_url":
            detail = (part.get("image_url") or {}).get("detail")
            self.note(
                f"image parts estimated at {IMAGE_TOKENS_LOW} (detail=low) or"
                f" {IMAGE_TOKENS_DEFAULT} tokens each"
            )
            return IMAGE_TOKENS_LOW if detail == "low" else IMAGE_TOKENS_DEFAULT
        self.note(f"{kind} parts not counted")
        return 0

    def tool_call(self, call: Any) -> int:
        self.note(f"tool calls estimated as name + arguments + {TOOL_CALL_OVERHEAD}")
        function = call.get("function", call) if isinstance(call, Mapping) else {}
        return (
            self.text(str(function.get("name") or ""))
            + self.text(str(function.get("arguments") or ""))
            + TOOL_CALL_OVERHEAD
        )

    def message(self, message: Message) -> int:
        fmt = self.format
        n = fmt.tokens_per_message
        for key, value in message.items():
            if value is None:
                continue
            if key == "content":
                n += self.content(value)
            elif key == "role":
                n += self.text(str(value))
            elif key == "name":
                n += self.text(str(value)) + fmt.tokens_per_name
            elif key == "tool_calls":
                n += sum(self.tool_call(c) for c in value)
            elif key == "function_call":
                n += self.tool_call(value)
            elif isinstance(value, str):
                # The cookbook's rule encodes every string field; for fields like
                # tool_call_id the server's real rendering is unknown.
                self.note(f"field {key!r} counted as plain text")
                n += self.text(value)
            else:
                self.note(f"field {key!r} not counted")
        return n

    def tools(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        if not tools:
            return 0
        fmt = self.format
        self.note("tool schemas counted by the cookbook's approximation")
        n = 0
        for tool in tools:
            function = tool.get("function", tool)
            if tool.get("type", "function") != "function":
                self.note(f"tool type {tool.get('type')!r} counted like a function")
            n += fmt.func_init
            description = str(function.get("description") or "").removesuffix(".")
            n += self.text(f"{function.get('name', '')}:{description}")
            properties = (function.get("parameters") or {}).get("properties") or {}
            if properties:
                n += fmt.prop_init
                for key, prop in properties.items():
                    n += fmt.prop_key
                    if "enum" in prop:
                        n += fmt.enum_init
                        for item in prop["enum"]:
                            n += fmt.enum_item + self.text(str(item))
                    if "properties" in prop or "items" in prop or "anyOf" in prop:
                        self.note("nested schema parts not counted")
                    kind = prop.get("type", "")
                    if not isinstance(kind, str):
                        kind = ",".join(map(str, kind))
                    desc = str(prop.get("description") or "").removesuffix(".")
                    n += self.text(f"{key}:{kind}:{desc}")
        return n + fmt.func_end

    @property
    def exact(self) -> bool:
        return not self.notes


def _part_text(part: Any) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Mapping):
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            return part["text"]
        if kind == "refusal" and isinstance(part.get("refusal"), str):
            return part["refusal"]
    return None


def count_chat_detailed(
    messages: Sequence[Message], model: str, tools: Sequence[Mapping[str, Any]] | None = None
) -> ChatCount:
    """Tokens of a chat-completions prompt, per message, with notes on what was estimated."""
    counter = _Counter(model)
    per_message = tuple(counter.message(m) for m in messages)
    tool_tokens = counter.tools(tools)
    priming = counter.format.reply_priming
    return ChatCount(
        total=sum(per_message) + tool_tokens + priming,
        messages=per_message,
        tools=tool_tokens,
        reply_priming=priming,
        encoding=counter.encoder.name,
        exact=counter.exact,
        notes=tuple(counter.notes),
    )


def count_chat(
    messages: Sequence[Message], model: str, tools: Sequence[Mapping[str, Any]] | None = None
) -> int:
    """Prompt tokens the server will likely report for `messages` (+ `tools`) on `model`."""
    return count_chat_detailed(messages, model, tools).total


@dataclass(frozen=True, slots=True)
class TruncatedMessage:
    """A message kept only in part: its token cost (with overhead) before and after."""

    index: int
    tokens_before: int
    tokens_after: int

    @property
    def tokens_cut(self) -> int:
        return self.tokens_before - self.tokens_after


@dataclass(frozen=True, slots=True)
class FitResult:
    """What `fit_messages` kept. Indices refer to the input list.

    `messages` holds shallow copies of the kept input messages (truncated ones with
    shorter content), ready to send. `total` is `count_chat(messages, model, tools)`,
    and `total <= budget - reserve_for_reply`.
    """

    messages: list[dict[str, Any]]
    kept: tuple[int, ...]
    dropped: tuple[int, ...]
    truncated: tuple[TruncatedMessage, ...]
    newest_user_index: int | None
    total: int
    budget: int
    reserve_for_reply: int
    exact: bool

    @property
    def newest_user_truncated(self) -> bool:
        """True if even the newest user message had to be cut to fit."""
        return any(t.index == self.newest_user_index for t in self.truncated)

    @property
    def tokens_cut(self) -> int:
        return sum(t.tokens_cut for t in self.truncated)


def _units(messages: Sequence[Message], indices: list[int]) -> list[list[int]]:
    """Group history into units that are kept or dropped whole: an assistant message
    that calls tools travels with the tool results that follow it (the API rejects a
    tool result whose call is missing, and a call without its results)."""
    units: list[list[int]] = []
    for i in indices:
        role = messages[i].get("role")
        if role in ("tool", "function") and units and units[-1][-1] == i - 1:
            head = messages[units[-1][0]]
            if head.get("tool_calls") or head.get("function_call"):
                units[-1].append(i)
                continue
        units.append([i])
    return units


def _without_text(message: Message) -> dict[str, Any]:
    """`message` with its text removed (non-text parts such as images stay)."""
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [p for p in content if _part_text(p) is None]}
    return {**message, "content": None if isinstance(content, str) else content}


def _cut_content(
    message: Message, text_budget: int, counter: _Counter, side: Literal["start", "end"]
) -> dict[str, Any] | None:
    """A copy of `message` whose text costs at most `text_budget` tokens, or None if it
    has no text to cut."""
    content = message.get("content")
    if isinstance(content, str):
        text, _ = truncate_counted(content, max(text_budget, 0), counter.encoder, side=side)
        return {**message, "content": text}
    if not isinstance(content, list):
        return None
    text_at = [i for i, p in enumerate(content) if _part_text(p) is not None]
    if not text_at:
        return None
    left = text_budget
    # Keep whole text parts nearest the kept side, cut the one that straddles the budget,
    # drop the rest (non-text parts stay).
    keep_order = reversed(text_at) if side == "start" else text_at
    new_text: dict[int, str | None] = {}
    for i in keep_order:
        text = _part_text(content[i]) or ""
        n = counter.text(text)
        if n <= left:
            new_text[i], left = text, left - n
        elif left > 0:
            new_text[i], _ = truncate_counted(text, left, counter.encoder, side=side)
            left = 0
        else:
            new_text[i] = None
    parts: list[Any] = []
    for i, part in enumerate(content):
        if i not in new_text:
            parts.append(part)
        elif new_text[i]:
            parts.append(new_text[i] if isinstance(part, str) else {**part, "text": new_text[i]})
    return {**message, "content": parts}


def fit_messages(
    messages: Sequence[Message],
    budget: int,
    model: str,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    reserve_for_reply: int = 0,
    min_partial_tokens: int = 16,
    cut_side: Literal["start", "end"] = "start",
) -> FitResult:
    """Choose the messages to send so the prompt fits `budget - reserve_for_reply` tokens.

    Always kept: system/developer messages, and the current turn (the newest user
    message and anything after it, such as tool calls and results). Then the newest
    history that fits, whole; an assistant tool-call message and its tool results count
    as one unit. The next older message, if it has text, is cut to the room left
    (from `cut_side`, default its start, so what remains runs on into the kept
    conversation) when at least `min_partial_tokens` of its text fit; everything older
    is dropped. If the current turn does not fit, the newest user message's text is cut.
    System messages are never cut: if they (with tool schemas, reply priming and the
    smallest possible current turn) exceed the budget, `ContextBudgetExceeded` is raised,
    since silently rewriting the operator's instructions would change behaviour.
    """
    if budget < 0 or reserve_for_reply < 0 or min_partial_tokens < 1:
        raise ValueError("budget and reserve_for_reply must be >= 0, min_partial_tokens >= 1")
    counter = _Counter(model)
    costs = [counter.message(m) for m in messages]
    available = budget - reserve_for_reply
    fixed = counter.format.reply_priming + counter.tools(tools)

    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    newest_user = users[-1] if users else None
    pinned = [i for i, m in enumerate(messages) if m.get("role") in _PINNED_ROLES]
    pinned_set = set(pinned)
    start_of_turn = newest_user if newest_user is not None else len(messages)
    turn = [i for i in range(start_of_turn, len(messages)) if i not in pinned_set]
    history = [i for i in range(start_of_turn) if i not in pinned_set]

    replaced: dict[int, dict[str, Any]] = {}
    truncated: list[TruncatedMessage] = []

    def untextured(i: int) -> int:
        """What message i costs with no text: overhead, role, name, images."""
        return counter.message(_without_text(messages[i]))

    def cut(i: int, room: int, minimum: int) -> bool:
        """Cut message i's text so the message costs at most `room`; False unless at
        least `minimum` tokens of its text remain."""
        floor = untextured(i)
        if room - floor < minimum:
            return False
        new = _cut_content(messages[i], room - floor, counter, cut_side)
        if new is None:
            return False
        after = counter.message(new)
        if after > room or after - floor < minimum:
            return False
        replaced[i] = new
        truncated.append(TruncatedMessage(i, costs[i], after))
        return True

    must = fixed + sum(costs[i] for i in pinned) + sum(costs[i] for i in turn)
    room = available - must
    if room < 0:
        if newest_user is None or not cut(newest_user, costs[newest_user] + room, 1):
            # At least: everything that must go, with the newest user text cut to one token.
            required = must
            if newest_user is not None:
                required += untextured(newest_user) + 1 - costs[newest_user]
            raise ContextBudgetExceeded(
                f"{model}: system messages, tool schemas and the current turn need at least"
                f" {required} tokens; {available} are available",
                required=required,
                available=available,
            )
        room = costs[newest_user] + room - truncated[-1].tokens_after

    kept_history: list[int] = []
    for unit in reversed(_units(messages, history)):
        unit_cost = sum(costs[i] for i in unit)
        if unit_cost <= room:
            kept_history.extend(unit)
            room -= unit_cost
            continue
        if len(unit) == 1 and cut(unit[0], room, min_partial_tokens):
            kept_history.append(unit[0])
        break

    kept = sorted({*pinned, *turn, *kept_history})
    kept_set = set(kept)
    result = [replaced.get(i) or dict(messages[i]) for i in kept]
    final = count_chat_detailed(result, model, tools)
    if final.total > available:  # counting is additive, so this cannot happen; guard anyway
        raise TokenizerError(f"fit_messages overshot: {final.total} > {available}")
    return FitResult(
        messages=result,
        kept=tuple(kept),
        dropped=tuple(i for i in range(len(messages)) if i not in kept_set),
        truncated=tuple(sorted(truncated, key=lambda t: t.index)),
        newest_user_index=newest_user,
        total=final.total,
        budget=budget,
        reserve_for_reply=reserve_for_reply,
        exact=final.exact,
    )
