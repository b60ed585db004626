"""The one assembler of an answer: typed updates in, one `Completion` out.

Every dialect's stream (`firsttoken.stream.answer`) applies its updates to an `Answer`,
the one place an answer is assembled: the client and the core keep no copy (the page
has the deltas), and what `chat.error` keeps on an error or Stop is its `partial`.
Bounded by `max_chars`.
"""

from __future__ import annotations

from typing import Any

from ..errors import ResponseTooLarge
from .types import (
    Choice,
    Completion,
    ContentDelta,
    FinishReason,
    ReasoningDelta,
    RefusalDelta,
    RoleDelta,
    ToolCallDelta,
    Update,
    UsageUpdate,
)

__all__ = ["DEFAULT_MAX_CHARS", "Answer", "ToolCallState", "set_usage"]

#: Most characters one answer may assemble (16 Mi), counting content, reasoning,
#: refusal and tool-call arguments of every choice: ~100x a long answer, yet a bound
#: on what a broken or hostile server can make the worker hold.
DEFAULT_MAX_CHARS = 16 << 20


class _Text:
    """Text that arrives in pieces, joined only when asked for.

    `+=` per piece would be quadratic over a long answer, and so would joining all the
    pieces again at every piece: `value()` is for the end (or an error, or Stop), not
    for each chunk.
    """

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[str] = []

    def append(self, piece: str) -> None:
        self._parts.append(piece)

    def value(self) -> str:
        parts = self._parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]  # a second call costs nothing
        return parts[0] if parts else ""


class ToolCallState:
    """One tool call being assembled (a dialect reads it to number calls)."""

    __slots__ = ("id", "type", "name", "arguments")

    def __init__(self) -> None:
        self.id = ""
        self.type = "function"
        self.name = ""
        self.arguments = _Text()


class _ChoiceState:
    __slots__ = ("role", "content", "reasoning", "refusal", "tool_calls", "finish_reason")

    def __init__(self) -> None:
        self.role = "assistant"
        self.content = _Text()
        self.reasoning = _Text()
        self.refusal = _Text()
        self.tool_calls: dict[int, ToolCallState] = {}
        self.finish_reason: str | None = None

    def build(self, index: int) -> Choice:
        return Choice(
            index=index,
            role=self.role,
            content=self.content.value(),
            reasoning=self.reasoning.value(),
            refusal=self.refusal.value(),
            tool_calls=[
                {
                    "id": call.id,
                    "type": call.type,
                    "function": {"name": call.name, "arguments": call.arguments.value()},
                }
                for _, call in sorted(self.tool_calls.items())
            ],
            finish_reason=self.finish_reason,
        )


_TEXT_FIELDS: dict[type, str] = {ContentDelta: "content", ReasoningDelta: "reasoning", RefusalDelta: "refusal"}


class Answer:
    """Updates in, one `Completion` out. The dialect sets `id`, `model`,
    `system_fingerprint` and `usage` (the usage in Chat Completions' names, so that
    `chat.done` and the calibration read one shape); `add` does the rest.

    `chars` counts the text of every choice and tool call, and one more for each choice
    and tool call, so that a stream of empty ones is bounded by `max_chars` too."""

    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.id = ""
        self.model = ""
        self.system_fingerprint: str | None = None
        self.usage: dict[str, Any] | None = None
        self.choices: dict[int, _ChoiceState] = {}
        #: The answer's replay parts (`Completion.replay`), in order.
        self.replay: list[dict[str, Any]] = []

    def identify(self, obj: dict[str, Any], keys: tuple[str, ...] = ("id", "model")) -> None:
        """Take the answer's `id` and `model` (or `system_fingerprint`) from `obj`, the
        first time they come as non-empty strings."""
        for key in keys:
            value = obj.get(key)
            if isinstance(value, str) and value and not getattr(self, key):
                setattr(self, key, value)

    def partial(self) -> str:
        state = self.choices.get(0)
        return state.content.value() if state else ""

    def seed(self, text: str) -> None:
        """Choice 0's content starts with `text` (what a resumed stream had shown)."""
        self._count(len(text))
        self.choice(0).content.append(text)

    def choice(self, index: int) -> _ChoiceState:
        state = self.choices.get(index)
        if state is None:
            self._count(1)
            state = self.choices[index] = _ChoiceState()
        return state

    def tool_call(self, choice: int, index: int) -> ToolCallState:
        calls = self.choice(choice).tool_calls
        call = calls.get(index)
        if call is None:
            self._count(1)
            call = calls[index] = ToolCallState()
        return call

    def charge(self, n: int) -> None:
        """Count `n` more characters against `max_chars` (text kept beside the answer's
        own: a replay part growing by fragments)."""
        self._count(n)

    def add_replay(self, item: dict[str, Any], size: int) -> None:
        """Keep one replay part; `size`: its characters (signatures and encrypted
        content are large), counted against `max_chars` like text."""
        self._count(size + 1)
        self.replay.append(item)

    @property
    def finished(self) -> bool:
        """Whether any choice has a finish reason."""
        return any(c.finish_reason for c in self.choices.values())

    def _count(self, n: int) -> None:
        self.chars += n
        if self.chars > self.max_chars:
            raise ResponseTooLarge(f"the answer passed {self.max_chars} characters", limit=self.max_chars)

    def add(self, update: Update, out: list[Update]) -> None:
        """Apply `update` and append it to `out` (counted first: past `max_chars`,
        `ResponseTooLarge` is raised and neither happens)."""
        field = _TEXT_FIELDS.get(type(update))
        if field is not None:
            text = update.text  # type: ignore[union-attr]
            self._count(len(text))
            getattr(self.choice(update.index), field).append(text)  # type: ignore[union-attr]
        elif isinstance(update, ToolCallDelta):
            if update.name:
                self._count(len(update.name))
            if update.arguments:
                self._count(len(update.arguments))
            call = self.tool_call(update.choice, update.index)
            if update.id:
                call.id = update.id
            if update.name:
                # Set, not concatenated as openai-python does: a fragment carries the
                # name whole (some servers repeat it in every fragment).
                call.name = update.name
            if update.arguments:
                call.arguments.append(update.arguments)
        elif isinstance(update, RoleDelta):
            self.choice(update.index).role = update.role
        elif isinstance(update, FinishReason):
            self.choice(update.index).finish_reason = update.reason
        out.append(update)

    def build(self) -> Completion:
        choices = tuple(state.build(i) for i, state in sorted(self.choices.items()))
        first = choices[0] if choices and choices[0].index == 0 else Choice(0)
        return Completion(
            id=self.id,
            model=self.model,
            content=first.content,
            reasoning=first.reasoning,
            refusal=first.refusal,
            tool_calls=first.tool_calls,
            finish_reason=first.finish_reason,
            usage=self.usage,
            system_fingerprint=self.system_fingerprint,
            choices=choices,
            replay=tuple(self.replay),
        )


def set_usage(
    answer: Answer,
    raw: dict[str, Any],
    prompt: int | None,
    completion: int | None,
    *,
    cached: int | None = None,
    reasoning: int | None = None,
) -> UsageUpdate:
    """A dialect's usage object, as the answer's usage in Chat Completions' names (the
    dialect's own fields stay beside them) and as the update that reports it."""
    total = prompt + completion if prompt is not None and completion is not None else None
    usage: dict[str, Any] = {**raw, "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    answer.usage = usage
    return UsageUpdate(prompt, completion, total, raw)
