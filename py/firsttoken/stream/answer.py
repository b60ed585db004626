"""One streamed answer, in any dialect: SSE events in, typed updates out, assembled once.

Every dialect (`completions`, `responses`, `messages`) is a subclass of `AnswerStream`
that says what one event means, as updates (`firsttoken.stream.types`). What they share
is here, so that it is written once:

* **framing**: the bytes go through one bounded `SSEDecoder`; an overflow, and any
  error an event raises, carries `partial`, the text of choice 0 so far;
* **resumable streams**: events numbered by a firsttoken gateway (`id: n`, consecutive
  from 1: bridge/PROTOCOL.md, "Resumable streams") are taken once each, across
  reconnections, whatever the dialect: the gateway relays the upstream's events and
  numbers them, so nothing here depends on what they say;
* **assembly**: the updates go to one `assembly.Answer`;
* **reading the wire**: the field checks every dialect makes, each failure an
  `InvalidChunk` that names the field.
"""

from __future__ import annotations

import json
from typing import Any, Callable, ClassVar

from ..errors import InvalidChunk, ResponseTooLarge, SSEBufferOverflow, TruncatedStream, UpstreamError
from .assembly import DEFAULT_MAX_CHARS, Answer
from .sse import DEFAULT_MAX_EVENT_BYTES, DEFAULT_MAX_LINE_BYTES, ServerSentEvent, SSEDecoder
from .types import Completion, Update

__all__ = ["AnswerStream", "TypedEventStream", "handles"]


def loads(data: str | bytes) -> Any:
    """JSON, or `InvalidChunk`."""
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurd nesting
        raise InvalidChunk(f"not JSON: {exc}") from None


def optional_str(obj: dict[str, Any], key: str, what: str) -> str | None:
    """`obj[key]` if it is a string or absent/null; else `InvalidChunk` naming `what.key`."""
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise InvalidChunk(f"{what}.{key} is {type(value).__name__}, not a string")


def event_object(event: ServerSentEvent) -> dict[str, Any]:
    """A typed dialect's event data (Responses, Messages): a JSON object. An `error`
    event whose data is not JSON is still the server's error, as its text."""
    try:
        payload = json.loads(event.data)
    except (ValueError, RecursionError) as exc:
        if event.event == "error":
            raise upstream_error(event.data) from None
        raise InvalidChunk(f"not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise InvalidChunk(f"an event must be a JSON object, not {type(payload).__name__}")
    return payload


def required_str(obj: dict[str, Any], key: str, what: str) -> str:
    """`obj[key]`, which must be a string; else `InvalidChunk` naming `what.key`."""
    value = obj.get(key)
    if not isinstance(value, str):
        raise InvalidChunk(f"{what}.{key} is {type(value).__name__}, not a string")
    return value


def required_object(obj: dict[str, Any], key: str, what: str) -> dict[str, Any]:
    """`obj[key]`, which must be an object; else `InvalidChunk` naming `what.key`."""
    value = obj.get(key)
    if not isinstance(value, dict):
        raise InvalidChunk(f"{what}.{key} is {type(value).__name__}, not an object")
    return value


def optional_int(value: Any) -> int | None:
    return value if type(value) is int else None


def error_object(value: Any) -> dict[str, Any]:
    """A server's error, whatever its shape, as an object with a `message`."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        return {"message": value}
    try:  # a number or a list: keep it readable, and bounded
        return {"message": json.dumps(value)[:1000]}
    except (ValueError, RecursionError):
        return {"message": "upstream error"}


def upstream_error(value: Any, status: int | None = None) -> UpstreamError:
    error = error_object(value)
    return UpstreamError(str(error.get("message") or "upstream error"), error=error, status=status)


def _event_number(event_id: str) -> int | None:
    # A gateway's event number: ASCII digits only (int() would take " 7", "٧" or "7_0").
    if event_id and len(event_id) <= 18 and event_id.isascii() and event_id.isdigit():
        return int(event_id)
    return None


class AnswerStream:
    """A streamed answer: feed the response body, get updates, then close.

    Subclasses implement `_event` (one event's updates, applied through
    `self._answer.add`) and set `self._done` when the server said the stream is over;
    `close()` accepts the answer if `_complete()`.
    `prefix` and `after` take up a resumed stream in a new core: the text shown
    already, and the number of the last event taken.
    """

    #: What `close()` says when the stream ended before its end (per dialect).
    _END = "its end"
    #: The SSE bounds when none are given (a dialect whose events are larger sets more).
    MAX_LINE_BYTES = DEFAULT_MAX_LINE_BYTES
    MAX_EVENT_BYTES = DEFAULT_MAX_EVENT_BYTES

    def __init__(
        self,
        *,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_line_bytes: int | None = None,
        max_event_bytes: int | None = None,
        prefix: str = "",
        after: int = 0,
    ) -> None:
        self._decoder = SSEDecoder(max_line_bytes or self.MAX_LINE_BYTES, max_event_bytes or self.MAX_EVENT_BYTES)
        self._answer = Answer(max_chars)
        self._done = False
        self._finished = False
        #: Whether events are numbered by a firsttoken gateway. Only then is an event
        #: whose number was taken already skipped: a plain server's ids mean nothing to
        #: us, and per the SSE spec an event without an `id:` line repeats the last one.
        self.sequenced = after > 0
        self._taken = after
        if prefix:
            # A stream resumed in a new core (a reload): the text before `after` was
            # painted already, and `partial` must still be the whole answer.
            self._answer.seed(prefix)

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
        return self._answer.partial()

    @property
    def done(self) -> bool:
        """True once the server said the stream is over."""
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
        if self.sequenced:
            number = _event_number(event.id)
            if number is not None:
                if number <= self._taken:
                    return []  # replayed after a resume: taken already
                self._taken = number
        if self._done:
            return []  # a few proxies append keep-alives or junk after the end
        out: list[Update] = []
        try:
            self._event(event, out)
        except (InvalidChunk, UpstreamError, ResponseTooLarge) as exc:
            exc.partial = self.partial
            raise
        return out

    def _event(self, event: ServerSentEvent, out: list[Update]) -> None:
        raise NotImplementedError

    def _complete(self) -> bool:
        """Whether the answer may end here (by default: the server said it is over)."""
        return self._done

    def parse_body(self, body: bytes) -> Completion:
        """The answer as one JSON body, from a server that ignored `"stream": true`."""
        raise InvalidChunk("the answer is not an event stream")

    def finish(self) -> list[Update]:
        """End of the body: the updates of what was held back until the end (the start
        of an answer that might have been a `<think>` tag: `think_tags`), once. The
        client sends them as text before `close()`; `close()` takes them itself when
        nobody asked."""
        if self._finished:
            return []
        self._finished = True
        out: list[Update] = []
        try:
            self._finish(out)
        except (InvalidChunk, ResponseTooLarge) as exc:
            exc.partial = self.partial
            raise
        return out

    def _finish(self, out: list[Update]) -> None:
        """A dialect's held text, as updates (none by default)."""

    def close(self) -> Completion:
        """End of the body: the assembled answer.

        Raises `TruncatedStream` if the stream ended before its end: the connection
        dropped mid-answer, and `partial` holds what came.
        """
        self._decoder.close()
        if not self._complete():
            raise TruncatedStream(f"the stream ended before {self._END}", partial=self.partial)
        self.finish()
        return self._answer.build()


Handler = Callable[[Any, dict[str, Any], list[Update]], None]


class TypedEventStream(AnswerStream):
    """A dialect whose events are JSON objects named by their `type` (Responses,
    Messages). A subclass maps the types it reads to handlers with `@handles(...)`;
    any other type is skipped (both APIs add event types, and say clients must
    skip those they do not know). `error` events, by `type` or by SSE event name, go to
    `_error`."""

    _handlers: ClassVar[dict[str, Handler]] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        handlers: dict[str, Handler] = {}
        for klass in reversed(cls.__mro__):
            for value in vars(klass).values():
                for kind in getattr(value, "_handles", ()):
                    handlers[kind] = value
        cls._handlers = handlers

    def _event(self, event: ServerSentEvent, out: list[Update]) -> None:
        if event.event == "ping" or event.data.strip() == "[DONE]":
            return  # keep-alives; and not these dialects' end, though a proxy may add one
        payload = event_object(event)
        kind = payload.get("type")
        if kind == "error" or event.event == "error":
            raise self._error(payload)
        if not isinstance(kind, str):
            raise InvalidChunk("an event without a type")
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(self, payload, out)

    def _error(self, payload: dict[str, Any]) -> UpstreamError:
        raise NotImplementedError


def handles(*kinds: str) -> Callable[[Handler], Handler]:
    """Marks a `TypedEventStream` method as the handler of events of `kinds`."""

    def mark(method: Handler) -> Handler:
        method._handles = kinds  # type: ignore[attr-defined]
        return method

    return mark
