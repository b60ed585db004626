"""OpenAI Responses API streams: SSE bytes in, the same typed updates as a chat completion.

`POST {base}/responses` with `"stream": true` answers with typed events
(https://platform.openai.com/docs/api-reference/responses-streaming; field names as in
openai-python's `openai/types/responses/response_*_event.py`). Each `data:` is a JSON
object whose `type` names the event; the SSE `event:` line repeats it, and is not
needed (openai-python reads `type` too). What each becomes:

* `response.created` / `.in_progress` / `.queued`: the response's `id` and `model`;
* `response.output_item.added`: a `message` item says the role (`RoleDelta`, once); a
  `function_call` item opens a tool call with its `call_id` (the id a tool result
  answers) and `name` (`ToolCallDelta`). Tool calls are numbered 0, 1, … in the order
  their items come, whatever their `output_index`;
* `response.output_text.delta` → `ContentDelta`; `response.refusal.delta` →
  `RefusalDelta`; `response.reasoning_summary_text.delta` and
  `response.reasoning_text.delta` → `ReasoningDelta` (a new summary part after another
  starts on a blank line, as the parts are paragraphs);
  `response.function_call_arguments.delta` → `ToolCallDelta` arguments;
* `response.output_item.done` of a `reasoning` item: the item, whole, is kept as a
  replay part (`Completion.replay`). Since the client sends `store: false`, a later
  turn must carry the item itself, with its `encrypted_content` (asked for with
  `include: ["reasoning.encrypted_content"]`), and openai-python's
  `ResponseReasoningItem` says to take it from this event: "The `encrypted_content`
  in `response.output_item.added` may be incomplete". Its summary (or text) is shown
  from the item when no delta of it came (a server that sends no deltas);
* their `.done` events repeat the whole text: it is taken only if no delta of that
  part came (a server that sends no deltas), never twice;
* `response.completed` → `FinishReason` ("tool_calls" if a function was called, else
  "stop"), `UsageUpdate`, `StreamDone`; `response.incomplete` the same with the
  reason: `max_output_tokens` → "length", `content_filter` → "content_filter";
  `response.failed` and a top-level `error` event → `UpstreamError`.

There is no `data: [DONE]`: the stream ends at `response.completed`, `.incomplete` or
`.failed`, and one that ends before is `TruncatedStream`. Every other event type
(hosted tools, audio, annotations, and those added later) is ignored, as the API
reference says clients must. Usage (`input_tokens`, `output_tokens`,
`input_tokens_details.cached_tokens`, `output_tokens_details.reasoning_tokens`) is
reported in Chat Completions' names, the response's own fields kept beside them.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import InvalidChunk, UpstreamError
from .answer import (
    TypedEventStream,
    handles,
    optional_int,
    optional_str,
    required_object,
    required_str,
    upstream_error,
)
from .assembly import set_usage
from .types import ContentDelta, FinishReason, ReasoningDelta, RefusalDelta, RoleDelta, StreamDone, ToolCallDelta, Update

__all__ = ["MAX_EVENT_BYTES", "ResponsesStream"]

#: Longest line, and most data per event (8 MiB). More than a chat chunk needs: the
#: closing `response.completed` repeats the whole answer and the `instructions`, so a
#: long answer after a long system prompt must still fit in one event. Still a bound,
#: and far below `DEFAULT_MAX_CHARS`' worth of UTF-8.
MAX_EVENT_BYTES = 8 << 20

# response.incomplete_details.reason → Chat Completions' finish_reason.
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}
# The error codes a response fails with that say what an HTTP status would have said.
_ERROR_STATUS = {"server_error": 500, "rate_limit_exceeded": 429}
#: Parts remembered to have had deltas (so that their `.done` adds nothing). Past this
#: many, `.done` events add nothing at all: never a doubled text, and a bound on what a
#: server sending endless parts makes us hold.
MAX_PARTS = 1024
# A text part's events: their prefix → the update, and the field `.done` repeats it in.
_TEXTS: dict[str, tuple[Callable[[str], Update], str]] = {"response.output_text": (ContentDelta, "text"), "response.refusal": (RefusalDelta, "refusal")}


def _object(payload: dict[str, Any], key: str) -> dict[str, Any]:
    return required_object(payload, key, payload["type"])


def _text(payload: dict[str, Any], key: str) -> str:
    return required_str(payload, key, payload["type"])


def _size(value: Any) -> int:
    """The characters of the strings in a JSON value (what keeping it costs)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(k) + _size(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(_size(v) for v in value)
    return 1


def _part(payload: dict[str, Any]) -> tuple[int | None, int | None]:
    # Which output item and part an event is about (absent or odd: one unnamed part).
    index = payload.get("content_index", payload.get("summary_index"))
    return optional_int(payload.get("output_index")), optional_int(index)


class ResponsesStream(TypedEventStream):
    """A streamed Responses API answer: feed the body, get updates, then close.

    >>> stream = ResponsesStream()
    >>> stream.feed(b'data: {"type":"response.output_text.delta","delta":"Hi"}\\n\\n')
    [ContentDelta(text='Hi', index=0)]
    >>> stream.close()
    Traceback (most recent call last):
    firsttoken.errors.TruncatedStream: the stream ended before response.completed, response.incomplete or response.failed
    """

    _END = "response.completed, response.incomplete or response.failed"
    MAX_LINE_BYTES = MAX_EVENT_BYTES
    MAX_EVENT_BYTES = MAX_EVENT_BYTES

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._tools: dict[int | None, int] = {}  # output_index → tool call number
        self._streamed: set[tuple[str, int | None, int | None]] = set()  # parts that had text in deltas
        self._role = False
        self._reasoning_at: tuple[str, int | None, int | None] | None = None
        self._reasoned: set[int | None] = set()  # output items whose reasoning was streamed

    def _error(self, payload: dict[str, Any]) -> UpstreamError:
        # A top-level `error` event carries code, message and param itself (openai-python's
        # ResponseErrorEvent); some servers nest them in `error`, as Chat Completions does.
        inner = payload.get("error")
        error = inner if isinstance(inner, dict) else payload
        code = error.get("code")
        return upstream_error(error, _ERROR_STATUS.get(code) if isinstance(code, str) else None)

    # ---- lifecycle ----------------------------------------------------------------------

    @handles("response.created", "response.in_progress", "response.queued")
    def _lifecycle(self, payload: dict[str, Any], out: list[Update]) -> None:
        self._answer.identify(_object(payload, "response"))

    @handles("response.completed", "response.incomplete")
    def _end(self, payload: dict[str, Any], out: list[Update]) -> None:
        response = _object(payload, "response")
        self._answer.identify(response)
        if payload["type"] == "response.completed":
            reason = "tool_calls" if self._tools else "stop"
        else:
            details = response.get("incomplete_details")
            why = details.get("reason") if isinstance(details, dict) else None
            reason = _INCOMPLETE.get(why, why) if isinstance(why, str) and why else "length"
        answer = self._answer
        answer.add(FinishReason(reason), out)
        usage = response.get("usage")
        if usage is not None:
            if not isinstance(usage, dict):
                raise InvalidChunk("response.usage is not an object")
            details_in = usage.get("input_tokens_details")
            details_out = usage.get("output_tokens_details")
            out.append(set_usage(
                answer, usage, optional_int(usage.get("input_tokens")), optional_int(usage.get("output_tokens")),
                cached=optional_int(details_in.get("cached_tokens")) if isinstance(details_in, dict) else None,
                reasoning=optional_int(details_out.get("reasoning_tokens")) if isinstance(details_out, dict) else None,
            ))
        self._done = True
        answer.add(StreamDone(), out)

    @handles("response.failed")
    def _failed(self, payload: dict[str, Any], out: list[Update]) -> None:
        response = _object(payload, "response")
        self._answer.identify(response)
        error = response.get("error")
        raise self._error(error if isinstance(error, dict) else {"message": "the response failed"})

    # ---- items and their text -----------------------------------------------------------

    def _tool(self, output_index: int | None) -> int:
        number = self._tools.get(output_index)
        if number is None:
            number = self._tools[output_index] = len(self._tools)
        return number

    @handles("response.output_item.added")
    def _item_added(self, payload: dict[str, Any], out: list[Update]) -> None:
        item = _object(payload, "item")
        kind = item.get("type")
        if kind == "message":
            role = optional_str(item, "role", "item")
            if role and not self._role:
                self._role = True
                self._answer.add(RoleDelta(role), out)
        elif kind == "function_call":
            output_index = optional_int(payload.get("output_index"))
            self._answer.add(
                ToolCallDelta(
                    self._tool(output_index),
                    optional_str(item, "call_id", "item") or None,
                    optional_str(item, "name", "item") or None,
                ),
                out,
            )
            # Arguments already in the item count as their first delta.
            arguments = optional_str(item, "arguments", "item") or ""
            self._part_text(("arguments", output_index, None), arguments, False,
                            lambda text: ToolCallDelta(self._tool(output_index), arguments=text), out)

    @handles("response.output_text.delta", "response.refusal.delta",
             "response.output_text.done", "response.refusal.done")
    def _text(self, payload: dict[str, Any], out: list[Update]) -> None:
        prefix, _, which = payload["type"].rpartition(".")
        kind, field = _TEXTS[prefix]
        done = which == "done"
        self._part_text((prefix, *_part(payload)), _text(payload, field if done else "delta"), done, kind, out)

    @handles("response.function_call_arguments.delta", "response.function_call_arguments.done")
    def _arguments(self, payload: dict[str, Any], out: list[Update]) -> None:
        done = payload["type"].endswith(".done")
        output_index = optional_int(payload.get("output_index"))
        text = _text(payload, "arguments" if done else "delta")
        self._part_text(
            ("arguments", output_index, None), text, done,
            lambda arguments: ToolCallDelta(self._tool(output_index), arguments=arguments), out,
        )

    def _part_text(self, key: tuple, text: str, done: bool, make: Callable[[str], Update], out: list[Update]) -> None:
        """A part's text from a delta, or from its `.done` when no delta had text."""
        if done and (key in self._streamed or len(self._streamed) >= MAX_PARTS):
            return
        if text:
            if len(self._streamed) < MAX_PARTS:
                self._streamed.add(key)
            self._answer.add(make(text), out)

    @handles("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
    def _reasoning(self, payload: dict[str, Any], out: list[Update]) -> None:
        text = _text(payload, "delta")
        if not text:
            return
        at = (payload["type"], *_part(payload))
        self._reason(at, text, out)

    def _reason(self, at: tuple[str, int | None, int | None], text: str, out: list[Update]) -> None:
        if self._reasoning_at is not None and at != self._reasoning_at:
            text = "\n\n" + text  # a new part of the reasoning: its own paragraph
        self._reasoning_at = at
        if len(self._reasoned) < MAX_PARTS:
            self._reasoned.add(at[1])
        self._answer.add(ReasoningDelta(text), out)

    @handles("response.output_item.done")
    def _item_done(self, payload: dict[str, Any], out: list[Update]) -> None:
        item = _object(payload, "item")
        if item.get("type") != "reasoning":
            return
        output_index = optional_int(payload.get("output_index"))
        # Deltas that named no output item may have been this one's: never shown twice.
        if output_index not in self._reasoned and None not in self._reasoned and len(self._reasoned) < MAX_PARTS:
            # No delta of it came: its summary parts (else its reasoning text) now.
            for field in ("summary", "content"):
                parts = item.get(field)
                texts = [p.get("text") for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
                for number, text in enumerate(texts):
                    if isinstance(text, str) and text:
                        self._reason((f"item.{field}", output_index, number), text, out)
                if output_index in self._reasoned:
                    break
        self._answer.add_replay(item, _size(item))
