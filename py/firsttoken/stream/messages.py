"""Anthropic Messages streams: SSE bytes in, the same typed updates as a chat completion.

`POST {base}/messages` with `"stream": true` answers with typed events
(https://docs.anthropic.com/en/docs/build-with-claude/streaming; field names as in the
`anthropic` client's `anthropic/types/raw_message_stream_event.py` and its parts). Each
`data:` is a JSON object whose `type` names the event, as the `event:` line does:

* `message_start`: the message's `id`, `model`, `role` (`RoleDelta`) and the prompt's
  usage (`UsageUpdate`);
* `content_block_start` opens block `index`: `text` and `thinking` blocks (their text,
  if any, already counts), `tool_use` (a tool call, numbered 0, 1, … in order, with its
  `id` and `name`), `redacted_thinking` and server-tool blocks (nothing to show);
* `content_block_delta`: `text_delta` → `ContentDelta`, `thinking_delta` →
  `ReasoningDelta`, `input_json_delta` of a `tool_use` block → `ToolCallDelta`
  arguments; `signature_delta` completes a thinking block (below); `citations_delta`
  carries no text and is skipped;
* `content_block_stop`: a `tool_use` block that streamed no arguments gets its
  `input` as JSON text (`{}` for a call without arguments: arguments are JSON text);
  a `thinking` block is kept whole as a replay part (`Completion.replay`):
  `{"type": "thinking", "thinking", "signature"}`, and a `redacted_thinking` block
  as received (`{"type", "data"}`), in order. Anthropic wants them back "exactly as
  received" on later turns (required with tools: `anthropic` `types/thinking_block.py`),
  and checks the signature: a block that never got one (cut before its
  `signature_delta`, which comes "just before the block's `content_block_stop`") could
  only be refused, so it is not kept. With `display: "omitted"` the thinking text is
  empty and only the signature comes: the block is kept all the same;
* `message_delta`: `stop_reason` → `FinishReason` (`end_turn`, `stop_sequence` →
  "stop"; `max_tokens`, `model_context_window_exceeded` → "length"; `tool_use` →
  "tool_calls"; `refusal` → "content_filter"; others as sent, e.g. `pause_turn`) and
  the usage so far (its counts are cumulative: they replace, never add);
* `message_stop` ends the stream (`StreamDone`); one that ends before it is
  `TruncatedStream`. `ping` and unknown event types are skipped, as Anthropic's
  versioning policy says clients must;
* `error` (`{"type": "error", "error": {"type": "overloaded_error", ...}}`) →
  `UpstreamError`, with `status` the HTTP status the error type has outside a stream
  (`overloaded_error` 529, `api_error` 500, …: docs.anthropic.com/en/api/errors), so
  that one arriving before any text is retried as that status would be.

Usage: Anthropic counts a prompt in three parts (`input_tokens`,
`cache_read_input_tokens`, `cache_creation_input_tokens`); their sum is the prompt's
`prompt_tokens`, as OpenAI's includes its cached tokens, so that our count of the
prompt compares with it (`Calibration`).
"""

from __future__ import annotations

import json
from typing import Any

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
from .types import ContentDelta, FinishReason, ReasoningDelta, RoleDelta, StreamDone, ToolCallDelta, Update

__all__ = ["MessagesStream"]

_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}

#: Error `type` → the HTTP status Anthropic answers it with (docs.anthropic.com/en/api/errors).
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class _ThinkingBlock:
    """A `thinking` block being streamed: its text and signature, for replay."""

    __slots__ = ("thinking", "signature")

    def __init__(self, thinking: str, signature: str) -> None:
        self.thinking = [thinking] if thinking else []
        self.signature = signature


class _ToolBlock:
    __slots__ = ("number", "input", "streamed")

    def __init__(self, number: int, start_input: Any) -> None:
        self.number = number
        self.input = start_input
        self.streamed = False


def _index(payload: dict[str, Any]) -> int:
    index = payload.get("index")
    if type(index) is not int or index < 0:
        raise InvalidChunk(f"{payload['type']}.index is not a non-negative integer")
    return index


class MessagesStream(TypedEventStream):
    """A streamed Anthropic Messages answer: feed the body, get updates, then close.

    >>> stream = MessagesStream()
    >>> stream.feed(b'event: content_block_delta\\ndata: {"type":"content_block_delta",'
    ...             b'"index":0,"delta":{"type":"text_delta","text":"Hi"}}\\n\\n')
    [ContentDelta(text='Hi', index=0)]
    """

    _END = "message_stop"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._tools: dict[int, _ToolBlock] = {}  # block index → its tool call
        self._thinking: dict[int, _ThinkingBlock] = {}  # block index → its thinking block
        self._calls = 0  # tool calls so far (a block index sent twice is a new call)
        self._usage: dict[str, Any] = {}

    def _error(self, payload: dict[str, Any]) -> UpstreamError:
        error = payload.get("error")
        error = error if isinstance(error, dict) else payload
        kind = error.get("type")
        return upstream_error(error, ERROR_STATUS.get(kind) if isinstance(kind, str) else None)

    @handles("message_start")
    def _message_start(self, payload: dict[str, Any], out: list[Update]) -> None:
        message = required_object(payload, "message", "message_start")
        answer = self._answer
        answer.identify(message)
        role = optional_str(message, "role", "message")
        if role:
            answer.add(RoleDelta(role), out)
        self._take_usage(message.get("usage"), out)

    def _take_usage(self, usage: Any, out: list[Update]) -> None:
        if usage is None:
            return
        if not isinstance(usage, dict):
            raise InvalidChunk("usage is not an object")
        # Cumulative counts: a later one replaces an earlier; one left out keeps it.
        self._usage.update((k, v) for k, v in usage.items() if v is not None)
        raw = dict(self._usage)
        parts = [optional_int(raw.get(k)) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
        prompt = sum(n for n in parts if n is not None) if parts[0] is not None else None
        details = raw.get("output_tokens_details")
        out.append(set_usage(
            self._answer, raw, prompt, optional_int(raw.get("output_tokens")),
            cached=parts[1],
            reasoning=optional_int(details.get("thinking_tokens")) if isinstance(details, dict) else None,
        ))

    @handles("content_block_start")
    def _block_start(self, payload: dict[str, Any], out: list[Update]) -> None:
        index = _index(payload)
        block = required_object(payload, "content_block", "content_block_start")
        kind = block.get("type")
        answer = self._answer
        self._tools.pop(index, None)  # a block sent again at an index starts afresh
        self._thinking.pop(index, None)
        if kind == "text":
            text = optional_str(block, "text", "content_block")
            if text:
                answer.add(ContentDelta(text), out)
        elif kind == "thinking":
            text = optional_str(block, "thinking", "content_block")
            if text:
                answer.add(ReasoningDelta(text), out)
            signature = optional_str(block, "signature", "content_block") or ""
            self._thinking[index] = _ThinkingBlock(text or "", signature)
        elif kind == "redacted_thinking":
            data = optional_str(block, "data", "content_block") or ""
            answer.add_replay({"type": "redacted_thinking", "data": data}, len(data))
        elif kind == "tool_use":
            tool = self._tools[index] = _ToolBlock(self._calls, block.get("input"))
            self._calls += 1
            answer.add(
                ToolCallDelta(
                    tool.number,
                    optional_str(block, "id", "content_block") or None,
                    optional_str(block, "name", "content_block") or None,
                ),
                out,
            )

    @handles("content_block_delta")
    def _block_delta(self, payload: dict[str, Any], out: list[Update]) -> None:
        index = _index(payload)
        delta = required_object(payload, "delta", "content_block_delta")
        kind = delta.get("type")
        if kind == "text_delta":
            text = required_str(delta, "text", "text_delta")
            if text:
                self._answer.add(ContentDelta(text), out)
        elif kind == "thinking_delta":
            text = required_str(delta, "thinking", "thinking_delta")
            if text:
                self._answer.add(ReasoningDelta(text), out)
                block = self._thinking.get(index)
                if block is not None:
                    block.thinking.append(text)
        elif kind == "signature_delta":
            signature = required_str(delta, "signature", "signature_delta")
            block = self._thinking.get(index)
            if block is not None and signature:
                self._answer.charge(len(signature))
                block.signature += signature
        elif kind == "input_json_delta":
            text = required_str(delta, "partial_json", "input_json_delta")
            tool = self._tools.get(index)
            if tool is not None and text:  # a server tool's input is not ours to run
                tool.streamed = True
                self._answer.add(ToolCallDelta(tool.number, arguments=text), out)

    @handles("content_block_stop")
    def _block_stop(self, payload: dict[str, Any], out: list[Update]) -> None:
        index = _index(payload)
        thinking = self._thinking.pop(index, None)
        if thinking is not None and thinking.signature:
            # Already counted as reasoning text; kept again for replay.
            text = "".join(thinking.thinking)
            self._answer.add_replay(
                {"type": "thinking", "thinking": text, "signature": thinking.signature}, len(text)
            )
        tool = self._tools.get(index)
        if tool is not None and not tool.streamed:
            tool.streamed = True
            start = tool.input if isinstance(tool.input, dict) else {}
            self._answer.add(ToolCallDelta(tool.number, arguments=json.dumps(start, ensure_ascii=False)), out)

    @handles("message_delta")
    def _message_delta(self, payload: dict[str, Any], out: list[Update]) -> None:
        delta = payload.get("delta")
        if delta is not None:
            if not isinstance(delta, dict):
                raise InvalidChunk("message_delta.delta is not an object")
            reason = optional_str(delta, "stop_reason", "delta")
            if reason:
                self._answer.add(FinishReason(_STOP.get(reason, reason)), out)
        self._take_usage(payload.get("usage"), out)

    @handles("message_stop")
    def _message_stop(self, payload: dict[str, Any], out: list[Update]) -> None:
        self._done = True
        self._answer.add(StreamDone(), out)

