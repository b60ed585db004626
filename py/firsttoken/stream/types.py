"""What a chat completion is made of: the typed updates of a stream, and the answer.

Plain frozen, slotted dataclasses with no behaviour beyond `to_dict()`; `completions`
builds them from the wire. Split from it so that code that only consumes answers (the
page protocol, the UI state) need not read the parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

__all__ = [
    "Choice",
    "Completion",
    "ContentDelta",
    "FinishReason",
    "ReasoningDelta",
    "RefusalDelta",
    "RoleDelta",
    "StreamDone",
    "ToolCallDelta",
    "Update",
    "UsageUpdate",
]


@dataclass(frozen=True, slots=True)
class RoleDelta:
    """The speaker of choice `index` (sent once, in the first chunk)."""

    role: str
    index: int = 0


@dataclass(frozen=True, slots=True)
class _TextDelta:
    # The shape of the three kinds of text; each stays its own type, so that the
    # assembler and the client tell them apart by `isinstance` (and they never compare equal).
    text: str
    index: int = 0


@dataclass(frozen=True, slots=True)
class ContentDelta(_TextDelta):
    """More answer text for choice `index`."""


@dataclass(frozen=True, slots=True)
class ReasoningDelta(_TextDelta):
    """More reasoning ("thinking") text, in any of its wire shapes: `reasoning_content`,
    `reasoning`, `reasoning_details`, Mistral's thinking parts, inline `<think>` tags,
    Responses' summary and reasoning text, Anthropic's `thinking_delta`."""


@dataclass(frozen=True, slots=True)
class RefusalDelta(_TextDelta):
    """More refusal text (the model declined; OpenAI structured outputs)."""


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of tool call `index` of choice `choice`: `id` and `name` usually come
    once, `arguments` (a JSON text) in pieces to concatenate."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    choice: int = 0


@dataclass(frozen=True, slots=True)
class FinishReason:
    """Choice `index` is complete: "stop", "length", "tool_calls", "content_filter", ..."""

    reason: str
    index: int = 0


@dataclass(frozen=True, slots=True)
class UsageUpdate:
    """Token counts (usually in a final chunk with empty `choices`); `raw` as sent."""

    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StreamDone:
    """`data: [DONE]`: the server finished the stream."""


Update = Union[
    RoleDelta,
    ContentDelta,
    ReasoningDelta,
    RefusalDelta,
    ToolCallDelta,
    FinishReason,
    UsageUpdate,
    StreamDone,
]


@dataclass(frozen=True, slots=True)
class Choice:
    """One assembled choice. `tool_calls` are in the request format:
    `{"id", "type", "function": {"name", "arguments"}}`, by index."""

    index: int
    role: str = "assistant"
    content: str = ""
    reasoning: str = ""
    refusal: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Completion:
    """The whole answer. The top-level text fields are choice 0's; `choices` has all
    of them (more than one when the request asked for `n` > 1)."""

    id: str = ""
    model: str = ""
    content: str = ""
    reasoning: str = ""
    refusal: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    system_fingerprint: str | None = None
    choices: tuple[Choice, ...] = ()
    #: The opaque parts of the reasoning that must go back to the same API and model on
    #: later turns, each in that API's own wire shape, in order (`chat.done.replay`;
    #: `firsttoken.replay`): Anthropic's `thinking` (with its `signature`) and
    #: `redacted_thinking` blocks, Responses' `reasoning` items (with
    #: `encrypted_content`), and on Chat Completions the fields to set on the assistant
    #: message (`{"reasoning_details": [...]}`, `{"reasoning_content": "..."}`).
    replay: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (for the message protocol)."""
        return {
            "id": self.id,
            "model": self.model,
            "content": self.content,
            "reasoning": self.reasoning,
            "refusal": self.refusal,
            "tool_calls": self.tool_calls,
            "finish_reason": self.finish_reason,
            "usage": self.usage,
            "system_fingerprint": self.system_fingerprint,
            "choices": [
                {
                    "index": c.index,
                    "role": c.role,
                    "content": c.content,
                    "reasoning": c.reasoning,
                    "refusal": c.refusal,
                    "tool_calls": c.tool_calls,
                    "finish_reason": c.finish_reason,
                }
                for c in self.choices
            ],
            "replay": list(self.replay),
        }
