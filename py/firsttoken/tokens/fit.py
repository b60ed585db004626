"""Fitting a conversation into a token budget. See `firsttoken.tokens`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence

from firsttoken.tokens.chat import Message, TextCount, _Counter, _part_text, count_chat_detailed
from firsttoken.tokens.encoders import truncate_counted
from firsttoken.tokens.images import is_image_part
from firsttoken.errors import ContextBudgetExceeded, TokenizerError

__all__ = ["FitResult", "TruncatedMessage", "fit_messages"]

_PINNED_ROLES = frozenset({"system", "developer"})


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
    #: Kept messages sent without their images (an old photo left out so that its
    #: message's text still fits); their entries in `truncated` say what that saved.
    images_dropped: tuple[int, ...]
    #: Images not sent: those of dropped messages and of `images_dropped`.
    images_left_out: int
    #: The tokens of the images sent, within `total` (`ChatCount.images`: the
    #: calibration corrects them apart from the text).
    image_tokens: int
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


def _image_count(message: Message) -> int:
    content = message.get("content")
    return sum(map(is_image_part, content)) if isinstance(content, list) else 0


def _without_images(message: Message) -> dict[str, Any]:
    """`message` with its image parts removed (its text stays)."""
    return {**message, "content": [p for p in message["content"] if not is_image_part(p)]}


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


# Longer than 80 lines of code (issue 47, item 3), on purpose: one greedy pass over the
# history whose state (what was replaced, cut and left without its images) its two
# helpers, `cut` and `text_without_images`, share as closures; lifted out, each would
# take and return that state, and the order of the fitting rules would be split up.
def fit_messages(
    messages: Sequence[Message],
    budget: int,
    model: str,
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    reserve_for_reply: int = 0,
    min_partial_tokens: int = 16,
    cut_side: Literal["start", "end"] = "start",
    count: TextCount | None = None,
    api: str = "chat_completions",
) -> FitResult:
    """Choose the messages to send so the prompt fits `budget - reserve_for_reply` tokens.

    Always kept: system/developer messages, and the current turn (the newest user
    message and anything after it, such as tool calls and results). Then the newest
    history that fits, whole; an assistant tool-call message and its tool results count
    as one unit. The next older message, if it has text, is cut to the room left
    (from `cut_side`, default its start, so what remains runs on into the kept
    conversation) when at least `min_partial_tokens` of its text fit; everything older
    is dropped; an older message whose images leave no room for its text is kept without
    them, its text whole or cut (`images_dropped`: a photo several turns back costs
    hundreds of tokens, its caption a few). The current turn's images are never dropped.
    If the current turn does not fit, the newest user message's text is cut.
    System messages are never cut: if they (with tool schemas, reply priming and the
    smallest possible current turn) exceed the budget, `ContextBudgetExceeded` is raised,
    since silently rewriting the operator's instructions would change behaviour.

    `count`, if given, counts each text instead of `model`'s encoder (a memo over it,
    so that texts the caller counted already cost nothing here). `api`: the dialect the
    prompt is sent in (`count_chat_detailed`).
    """
    if budget < 0 or reserve_for_reply < 0 or min_partial_tokens < 1:
        raise ValueError("budget and reserve_for_reply must be >= 0, min_partial_tokens >= 1")
    counter = _Counter(model, count, api)
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
    images_dropped: list[int] = []

    def untextured(i: int) -> int:
        """What message i costs with no text: overhead, role, name, images."""
        return counter.message(_without_text(messages[i]))

    def cut(i: int, room: int, minimum: int, message: Message | None = None) -> bool:
        """Cut the text of message i (or of `message`, a version of it) so that it costs
        at most `room`, and send that; False unless at least `minimum` tokens of its text
        remain."""
        message = messages[i] if message is None else message
        floor = counter.message(_without_text(message))
        if room - floor < minimum:
            return False
        new = _cut_content(message, room - floor, counter, cut_side)
        if new is None:
            return False
        after = counter.message(new)
        if after > room or after - floor < minimum:
            return False
        replaced[i] = new
        truncated.append(TruncatedMessage(i, costs[i], after))
        return True

    def text_without_images(i: int, room: int) -> bool:
        """Send message i without its images, its text whole or cut to `room`; False if
        it has no images, or too little of its text would remain."""
        if not _image_count(messages[i]):
            return False
        bare = _without_images(messages[i])
        if not any(_part_text(p) for p in bare["content"]):
            return False  # a photo alone: nothing would be left to send
        after = counter.message(bare)
        if after <= room:
            replaced[i] = bare
            truncated.append(TruncatedMessage(i, costs[i], after))
        elif not cut(i, room, min_partial_tokens, bare):
            return False
        images_dropped.append(i)
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
        if len(unit) == 1 and (cut(unit[0], room, min_partial_tokens) or text_without_images(unit[0], room)):
            kept_history.append(unit[0])
        break

    kept = sorted({*pinned, *turn, *kept_history})
    kept_set = set(kept)
    result = [replaced.get(i) or dict(messages[i]) for i in kept]
    final = count_chat_detailed(result, model, tools, count=count, api=api)
    if final.total > available:  # counting is additive, so this cannot happen; guard anyway
        raise TokenizerError(f"fit_messages overshot: {final.total} > {available}")
    return FitResult(
        messages=result,
        kept=tuple(kept),
        dropped=tuple(i for i in range(len(messages)) if i not in kept_set),
        truncated=tuple(sorted(truncated, key=lambda t: t.index)),
        images_dropped=tuple(images_dropped),
        images_left_out=sum(_image_count(messages[i]) for i in range(len(messages)) if i not in kept_set or i in images_dropped),
        newest_user_index=newest_user,
        image_tokens=final.images,
        total=final.total,
        budget=budget,
        reserve_for_reply=reserve_for_reply,
        exact=final.exact,
    )
