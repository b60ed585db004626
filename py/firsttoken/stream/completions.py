"""Chat completions, assembled: SSE bytes in, typed updates out, one `Completion` at the end.

Sans-IO, like `sse`: `ChatStream.feed(bytes)` returns the updates those bytes
completed, `ChatStream.close()` returns the whole answer. `parse_completion()` reads a
non-streamed body into the same `Completion`.

The wire format is OpenAI's `chat.completion.chunk` stream
(https://platform.openai.com/docs/api-reference/chat-streaming): one JSON chunk per
`data:` line, `data: [DONE]` at the end. Servers that call themselves compatible differ
in details this module absorbs: reasoning text as `reasoning_content` (DeepSeek, vLLM)
or `reasoning` (OpenRouter, newer vLLM), tool calls without an `index`, a final
usage-only chunk with empty `choices`, an `{"error": ...}` chunk or an `event: error`
instead of an HTTP status once the stream has started.

Every failure is a firsttoken error carrying `partial`, the text of choice 0 so far.
`ChatStream` is the one place an answer is assembled: what `chat.error` keeps on an error
or Stop is its `partial`, and nothing else keeps a copy (the page has the deltas).
The update and answer types live in `firsttoken.stream.types` and are re-exported here.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import (
    InvalidChunk,
    ResponseTooLarge,
    SSEBufferOverflow,
    TruncatedStream,
    UpstreamError,
)
from .types import __all__ as _TYPES
from .types import (
    Choice,
    Completion,
    ContentDelta,
    FinishReason,
    ReasoningDelta,
    RefusalDelta,
    RoleDelta,
    StreamDone,
    ToolCallDelta,
    Update,
    UsageUpdate,
)
from .sse import DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES, ServerSentEvent, SSEDecoder

# The update and answer types are part of this module's surface too.
__all__ = ["DEFAULT_MAX_CHARS", "ChatStream", "parse_completion", *_TYPES]

#: Most characters one answer may assemble (16 Mi), counting content, reasoning,
#: refusal and tool-call arguments of every choice: ~100x a long answer, yet a bound
#: on what a broken or hostile server can make the worker hold.
DEFAULT_MAX_CHARS = 16 << 20


class _Text:
    """Text that arrives in pieces, joined only when asked for.

    This is where an answer is assembled, once: the client and the core keep no copy
    (the page gets the pieces, as deltas). `+=` per piece would be quadratic over a
    long answer, and so would joining all the pieces again at every piece: `value()` is
    for the end (or an error, or Stop), not for each chunk.
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


class _ToolCall:
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
        self.tool_calls: dict[int, _ToolCall] = {}
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


def _optional_str(obj: dict[str, Any], key: str, what: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise InvalidChunk(f"{what}.{key} is {type(value).__name__}, not a string")


def _optional_int(value: Any) -> int | None:
    return value if type(value) is int else None


def _error_object(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return {"message": value}
    try:  # a number or a list: keep it readable, and bounded
        return {"message": json.dumps(value)[:1000]}
    except (ValueError, RecursionError):
        return {"message": "upstream error"}


class _Assembler:
    """Chunk (or message) objects in, updates out; both entry points share it."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.id = ""
        self.model = ""
        self.system_fingerprint: str | None = None
        self.usage: dict[str, Any] | None = None
        self.choices: dict[int, _ChoiceState] = {}

    def partial(self) -> str:
        state = self.choices.get(0)
        return state.content.value() if state else ""

    def seed(self, text: str) -> None:
        """Choice 0's content starts with `text` (what a resumed stream had shown)."""
        self._count(text)
        state = self.choices.get(0)
        if state is None:
            state = self.choices[0] = _ChoiceState()
        state.content.append(text)

    def _count(self, text: str) -> None:
        self.chars += len(text)
        if self.chars > self.max_chars:
            raise ResponseTooLarge(
                f"the answer passed {self.max_chars} characters", limit=self.max_chars
            )

    def apply(self, obj: Any, *, part: str) -> list[Update]:
        """Apply one chunk (`part="delta"`) or one whole body (`part="message"`)."""
        if not isinstance(obj, dict):
            raise InvalidChunk(f"a chunk must be a JSON object, not {type(obj).__name__}")
        if obj.get("error") is not None:
            error = _error_object(obj["error"])
            raise UpstreamError(str(error.get("message") or "upstream error"), error=error)
        for key in ("id", "model", "system_fingerprint"):
            value = obj.get(key)
            if isinstance(value, str) and value and not getattr(self, key):
                setattr(self, key, value)
        choices = obj.get("choices")
        if choices is None:
            choices = []
        if not isinstance(choices, list):
            raise InvalidChunk("choices is not a list")
        updates: list[Update] = []
        for item in choices:
            self._apply_choice(item, part, updates)
        usage = obj.get("usage")
        if usage is not None:
            if not isinstance(usage, dict):
                raise InvalidChunk("usage is not an object")
            self.usage = usage
            updates.append(
                UsageUpdate(
                    _optional_int(usage.get("prompt_tokens")),
                    _optional_int(usage.get("completion_tokens")),
                    _optional_int(usage.get("total_tokens")),
                    usage,
                )
            )
        return updates

    def _apply_choice(self, item: Any, part: str, updates: list[Update]) -> None:
        if not isinstance(item, dict):
            raise InvalidChunk("a choice is not an object")
        index = item.get("index", 0)
        if type(index) is not int or index < 0:
            raise InvalidChunk("a choice index is not a non-negative integer")
        delta = item.get(part)
        if delta is None:
            delta = {}
        if not isinstance(delta, dict):
            raise InvalidChunk(f"choices[].{part} is not an object")
        state = self.choices.get(index)
        if state is None:
            state = self.choices[index] = _ChoiceState()
        role = _optional_str(delta, "role", part)
        if role:
            state.role = role
            updates.append(RoleDelta(role, index))
        # vLLM and DeepSeek name it reasoning_content, OpenRouter reasoning; a server
        # sending both sends the same text twice, so the first present one wins.
        reasoning = _optional_str(delta, "reasoning_content", part)
        if reasoning is None:
            reasoning = _optional_str(delta, "reasoning", part)
        for text, pieces, kind in (
            (reasoning, state.reasoning, ReasoningDelta),
            (_optional_str(delta, "content", part), state.content, ContentDelta),
            (_optional_str(delta, "refusal", part), state.refusal, RefusalDelta),
        ):
            if text:
                self._count(text)
                pieces.append(text)
                updates.append(kind(text, index))
        tool_calls = delta.get("tool_calls")
        if tool_calls is not None:
            if not isinstance(tool_calls, list):
                raise InvalidChunk("tool_calls is not a list")
            for position, call in enumerate(tool_calls):
                updates.append(self._apply_tool_call(state, index, call, position, part))
        finish = _optional_str(item, "finish_reason", "choices[]")
        if finish:
            state.finish_reason = finish
            updates.append(FinishReason(finish, index))

    def _apply_tool_call(
        self, state: _ChoiceState, choice: int, call: Any, position: int, part: str
    ) -> ToolCallDelta:
        if not isinstance(call, dict):
            raise InvalidChunk("a tool call is not an object")
        call_id = _optional_str(call, "id", "tool_calls[]")
        index = call.get("index")
        if index is None:
            # A whole message lists its calls in order. A stream without indexes
            # (some compatible servers) starts a new call whenever a new id appears.
            if part == "message":
                index = position
            else:
                last = max(state.tool_calls, default=None)
                new_call = last is None or (call_id and call_id != state.tool_calls[last].id)
                index = (0 if last is None else last + 1) if new_call else last
        if type(index) is not int or index < 0:
            raise InvalidChunk("a tool call index is not a non-negative integer")
        function = call.get("function")
        if function is None:
            function = {}
        if not isinstance(function, dict):
            raise InvalidChunk("tool_calls[].function is not an object")
        name = _optional_str(function, "name", "function")
        arguments = function.get("arguments")
        if isinstance(arguments, (dict, list)):
            arguments = json.dumps(arguments, ensure_ascii=False)  # a few servers send parsed JSON
        elif arguments is not None and not isinstance(arguments, str):
            raise InvalidChunk("function.arguments is not a string")
        kind = _optional_str(call, "type", "tool_calls[]")
        entry = state.tool_calls.get(index)
        if entry is None:
            entry = state.tool_calls[index] = _ToolCall()
        if call_id:
            entry.id = call_id
        if kind:
            entry.type = kind
        if name:
            # id and name are set, not concatenated as openai-python does: a fragment
            # carries them whole (OpenAI sends them once, some compatible servers in
            # every fragment, where concatenating would give "get_timeget_time").
            self._count(name)
            entry.name = name
        if arguments:
            self._count(arguments)
            entry.arguments.append(arguments)
        return ToolCallDelta(index, call_id or None, name or None, arguments or "", choice)

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
        )


def _event_number(event_id: str) -> int | None:
    # A gateway's event number: ASCII digits only (int() would take " 7", "٧" or "7_0").
    if event_id and len(event_id) <= 18 and event_id.isascii() and event_id.isdigit():
        return int(event_id)
    return None


def _loads(data: str | bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurd nesting
        raise InvalidChunk(f"not JSON: {exc}") from None


class ChatStream:
    """A streamed chat completion: feed the response body, get updates, then close.

    >>> stream = ChatStream()
    >>> stream.feed(b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}\\n\\n')
    [ContentDelta(text='Hi', index=0)]
    >>> stream.feed(b"data: [DONE]\\n\\n")
    [StreamDone()]
    >>> stream.close().content
    'Hi'
    """

    def __init__(
        self,
        *,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        prefix: str = "",
        after: int = 0,
    ) -> None:
        self._decoder = SSEDecoder(max_line_bytes, max_event_bytes)
        self._assembler = _Assembler(max_chars)
        self._done = False
        #: Whether events are numbered by a firsttoken gateway (`id: n`, consecutive
        #: from 1: bridge/PROTOCOL.md, "Resumable streams"). Only then is an event whose
        #: number was taken already skipped: a plain server's ids mean nothing to us,
        #: and per the SSE spec an event without an `id:` line repeats the last one.
        self.sequenced = after > 0
        self._taken = after
        if prefix:
            # A stream resumed in a new core (a reload): the text before `after` was
            # painted already, and `partial` must still be the whole answer.
            self._assembler.seed(prefix)

    @property
    def last_event(self) -> int:
        """The number of the last event taken (0: none, or not `sequenced`)."""
        return self._taken

    def reconnect(self) -> None:
        """A new response body continues this answer (a resumed stream): the SSE
        decoder starts afresh, as for a new connection (WHATWG HTML §9.2.3: a
        reconnection is a new stream); what was assembled, and the last event taken,
        stay, so each numbered event is taken once."""
        decoder = self._decoder
        self._decoder = SSEDecoder(decoder.max_line_bytes, decoder.max_event_bytes)

    @property
    def partial(self) -> str:
        """Choice 0's text so far (joined now: ask at the end, not per chunk)."""
        return self._assembler.partial()

    @property
    def done(self) -> bool:
        """True once `data: [DONE]` arrived."""
        return self._done

    def feed(self, data: bytes) -> list[Update]:
        """Decode more of the body; return the updates it completed."""
        events: list[ServerSentEvent] = []
        try:
            self._decoder.decode_into(data, events)
        except SSEBufferOverflow as exc:
            for event in events:  # what came before the overflow still counts
                self.feed_event(event)
            raise SSEBufferOverflow(exc.message, limit=exc.limit, partial=self.partial) from None
        updates: list[Update] = []
        for event in events:
            updates += self.feed_event(event)
        return updates

    def feed_event(self, event: ServerSentEvent) -> list[Update]:
        """Apply one already-decoded event (for callers with their own SSE source)."""
        try:
            return self._feed_event(event)
        except (InvalidChunk, UpstreamError, ResponseTooLarge) as exc:
            exc.partial = self.partial
            raise

    def _feed_event(self, event: ServerSentEvent) -> list[Update]:
        if self.sequenced:
            number = _event_number(event.id)
            if number is not None:
                if number <= self._taken:
                    return []  # replayed after a resume: taken already
                self._taken = number
        if self._done:
            return []  # a few proxies append keep-alives or junk after [DONE]
        if event.event == "error":
            # Some servers report a failure after the 200 as its own event type.
            try:
                payload = json.loads(event.data)
            except (ValueError, RecursionError):
                payload = event.data
            if isinstance(payload, dict) and payload.get("error") is not None:
                payload = payload["error"]
            error = _error_object(payload)
            raise UpstreamError(str(error.get("message") or "upstream error"), error=error)
        if event.event != "message":
            return []  # other event types are not chunks (EventSource would not either)
        if event.data.strip() == "[DONE]":
            self._done = True
            return [StreamDone()]
        return self._assembler.apply(_loads(event.data), part="delta")

    def close(self) -> Completion:
        """End of the body: the assembled answer.

        Raises `TruncatedStream` if neither `[DONE]` nor any finish_reason arrived:
        the connection dropped mid-answer, and `partial` holds what came.
        """
        self._decoder.close()
        assembler = self._assembler
        finished = any(c.finish_reason for c in assembler.choices.values())
        if not (self._done or finished):
            raise TruncatedStream(
                "the stream ended before [DONE] or a finish_reason", partial=self.partial
            )
        return assembler.build()


def parse_completion(body: bytes | str, *, max_chars: int = DEFAULT_MAX_CHARS) -> Completion:
    """A non-streamed `chat.completion` body (some servers ignore `stream: true`).

    Raises `UpstreamError` for an `{"error": ...}` body and `InvalidChunk` for anything
    that is not a completion object.
    """
    obj = _loads(body)
    if (
        isinstance(obj, dict)
        and obj.get("error") is None
        and not isinstance(obj.get("choices"), list)
    ):
        raise InvalidChunk("not a chat completion: no choices list")
    assembler = _Assembler(max_chars)
    try:
        assembler.apply(obj, part="message")
    except (InvalidChunk, ResponseTooLarge) as exc:
        exc.partial = assembler.partial()
        raise
    return assembler.build()
