"""Server-sent events: bytes in, events out, no I/O.

Implements WHATWG HTML §9.2.5 "Parsing an event stream" and §9.2.6 "Interpreting an
event stream" (https://html.spec.whatwg.org/multipage/server-sent-events.html).

Two stages, as in the spec: bytes → lines, then lines → events. Lines are split on
bytes (CR, LF, CRLF) *before* UTF-8 decoding, so a multibyte character cut by a chunk
boundary is reassembled before it is decoded, and U+2028, U+2029, U+0085, VT and FF
stay inside their line (a `str.splitlines()` decoder would cut JSON there).

Decoding each line (or a block of whole lines) separately gives exactly the spec's
whole-stream "UTF-8 decode": CR and LF are ASCII, and an ASCII byte always ends any
pending multibyte sequence, so no sequence can straddle a line boundary.

Memory is bounded: a line may hold at most `max_line_bytes` and one event's data at
most `max_event_bytes`; past either, `SSEBufferOverflow` is raised and the decoder
refuses further input until `reset()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from ..errors import SSEBufferOverflow

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "SSEDecoder",
    "ServerSentEvent",
]

#: Longest line kept (1 MiB). A chat chunk line is ~200 bytes; a whole non-streamed
#: answer squeezed into one `data:` line still fits.
DEFAULT_MAX_LINE_BYTES = 1 << 20
#: Most `data` one event may accumulate over its lines (4 MiB).
DEFAULT_MAX_EVENT_BYTES = 4 << 20

_MAX_RETRY_DIGITS = 15
_MAX_RETRY_MS = 10**_MAX_RETRY_DIGITS - 1

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event.

    `id` is the stream's last event ID at dispatch (it persists across events, as the
    spec says). `retry` is the reconnection time set by a `retry:` field inside this
    event's block, or None; `SSEDecoder.retry` keeps the stream-level value.
    """

    event: str = "message"
    data: str = ""
    id: str = ""
    retry: int | None = None


class _EventBuilder:
    """Constructs a `ServerSentEvent` in less than half the time its own __init__ takes.

    A frozen dataclass's __init__ must call `object.__setattr__` per field: ~0.5 us an
    event on CPython 3.11, as much as all the decoding of a typical chat chunk. This
    twin has the same slots, so plain stores fill it, and then it becomes a
    `ServerSentEvent` by `__class__` assignment, which CPython allows between classes
    of identical layout. Calling `_EventBuilder(...)` thus returns an ordinary, frozen
    `ServerSentEvent` (test_sse checks that the layouts agree). Switching the class in
    __init__, not in a loop afterwards, saves that loop's per-event bytecode.
    """

    __slots__ = ("event", "data", "id", "retry")

    def __init__(self, event: str, data: str, id: str, retry: int | None) -> None:
        self.event = event
        self.data = data
        self.id = id
        self.retry = retry
        self.__class__ = ServerSentEvent  # type: ignore[assignment]


if TYPE_CHECKING:
    # What a call of `_EventBuilder` returns, as the type checker should see it.
    def _new_event(event: str, data: str, id: str, retry: int | None) -> ServerSentEvent: ...
else:
    _new_event = _EventBuilder  # the same class call: the same bytecode, specialised alike


class SSEDecoder:
    """Incremental `text/event-stream` decoder.

    Feed it the body in chunks of any size; each `feed()` returns the events those
    bytes completed. The result does not depend on where the chunks are cut.

    >>> d = SSEDecoder()
    >>> d.feed(b"data: hel") + d.feed(b"lo\\n\\n")
    [ServerSentEvent(event='message', data='hello', id='', retry=None)]
    """

    __slots__ = (
        "max_line_bytes",
        "max_event_bytes",
        "_pieces",
        "_pieces_len",
        "_skip_lf",
        "_at_start",
        "_data",
        "_data_len",
        "_event_type",
        "_event_retry",
        "_id_buffer",
        "_last_event_id",
        "_retry",
        "_error",
        "scanned_bytes",
    )

    def __init__(
        self,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        if max_line_bytes < 1 or max_event_bytes < 1:
            raise ValueError("bounds must be positive")
        self.max_line_bytes = max_line_bytes
        self.max_event_bytes = max_event_bytes
        self.reset()

    def reset(self) -> None:
        """Forget everything, including the last event ID: ready for a new stream."""
        # The unterminated line, as the chunks that brought it. Joining only when the
        # line ends keeps a long line linear: `buffer += chunk` on every feed would
        # copy the whole buffer each time (quadratic; eventsource-parser warns too).
        self._pieces: list[bytes] = []
        self._pieces_len = 0
        # The last chunk ended in CR: a LF opening the next chunk is the same CRLF.
        self._skip_lf = False
        self._at_start = True
        self._data: list[bytes] = []
        self._data_len = 0
        self._event_type = b""
        self._event_retry: int | None = None
        self._id_buffer = ""
        self._last_event_id = ""
        self._retry: int | None = None
        self._error: SSEBufferOverflow | None = None
        #: Bytes examined so far, counting a long line's pieces again when joined:
        #: stays proportional to the input (the linear-time guarantee, tested).
        self.scanned_bytes = 0

    @property
    def last_event_id(self) -> str:
        """The last event ID string: send it as `Last-Event-ID` when reconnecting."""
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The reconnection time in milliseconds set by the stream, or None."""
        return self._retry

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for the unfinished line and event (bounded by the limits)."""
        return self._pieces_len + self._data_len

    def feed(self, data: bytes) -> list[ServerSentEvent]:
        """Decode `data` and return the events it completed (possibly none)."""
        out: list[ServerSentEvent] = []
        self.decode_into(data, out)
        return out

    def close(self) -> list[ServerSentEvent]:
        """End of stream. Returns no events and resets the decoder.

        §9.2.5: "Once the end of the file is reached, any pending data must be
        discarded. (If the file ends in the middle of an event, before the final
        empty line, the incomplete event is not dispatched.)" The list return keeps
        the shape of `feed()` so callers can treat both alike. To reconnect, read
        `last_event_id` and `retry` before closing.
        """
        self.reset()
        return []

    def decode_into(self, data: bytes, out: list[ServerSentEvent]) -> None:
        """Like `feed()`, but append events to `out`.

        If a bound is passed, the events decoded before the offending line are
        already in `out` when `SSEBufferOverflow` propagates.
        """
        if self._error is not None:
            # A fresh instance: re-raising one object would pile up its traceback.
            raise SSEBufferOverflow(self._error.message, limit=self._error.limit)
        if not data:
            return
        data = bytes(data)
        if self._skip_lf:
            self._skip_lf = False
            if data[0] == 0x0A:
                data = data[1:]
                if not data:
                    return
        self.scanned_bytes += len(data)
        # §9.2.5: lines end in CRLF, a lone LF or a lone CR. Normalise to LF over the
        # new bytes only; the common stream has no CR at all and skips this.
        if b"\r" in data:
            if data[-1] == 0x0D:
                # This CR ends the line now; if the next chunk opens with LF, that LF
                # belongs to this CR (a CRLF cut in two), not to a new empty line.
                self._skip_lf = True
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = data.rfind(b"\n") + 1
        if not end:
            self._pieces.append(data)
            self._pieces_len += len(data)
            if self._pieces_len > self.max_line_bytes:
                self._overflow("line", self.max_line_bytes)
            return
        # `block`: the complete lines this chunk finished, each ending in LF.
        block = data[:end] if end < len(data) else data
        if self._pieces:
            self._pieces.append(block)
            block = b"".join(self._pieces)
            self.scanned_bytes += self._pieces_len
            self._pieces = []
            self._pieces_len = 0
        bom = False
        if self._at_start:
            self._at_start = False
            bom = block.startswith(_BOM)
        if bom or not (self._decode_chat_block(block, out) or self._decode_typed_block(block, out)):
            lines = block.split(b"\n")
            lines.pop()  # the empty string after the last LF
            # A block no longer than the bound cannot hold a line past it. A BOM counts
            # towards its line, as it does while buffered: cuts must not change results.
            first_bad = -1
            if len(block) > self.max_line_bytes and max(map(len, lines)) > self.max_line_bytes:
                first_bad = self._first_too_long(lines)
            if bom:
                # §9.2.5 decodes with "UTF-8 decode", which strips one leading BOM only;
                # a second BOM is an ordinary U+FEFF (and spoils that line's field name).
                lines[0] = lines[0][3:]
            if first_bad >= 0:
                # Deliver the events before the offending line, as a split feed would.
                if first_bad:
                    self._process(lines[:first_bad], out)
                self._overflow("line", self.max_line_bytes)
            self._process(lines, out)
        if end < len(data):
            self._pieces.append(data[end:])
            self._pieces_len = len(data) - end
            if self._pieces_len > self.max_line_bytes:
                self._overflow("line", self.max_line_bytes)

    def _first_too_long(self, lines: list[bytes]) -> int:
        limit = self.max_line_bytes
        return next(i for i, line in enumerate(lines) if len(line) > limit)

    def _overflow(self, what: str, limit: int) -> NoReturn:
        self._error = SSEBufferOverflow(
            f"server-sent {what} longer than {limit} bytes", limit=limit
        )
        # Drop what was held: the decoder is dead until reset(), and must not keep
        # the oversized buffer alive meanwhile.
        self._pieces = []
        self._pieces_len = 0
        self._data = []
        self._data_len = 0
        raise self._error

    def _decode_chat_block(self, block: bytes, out: list[ServerSentEvent]) -> bool:
        """The common shape, whole: `data: ...` lines, each followed by a blank line.

        Chat servers send nothing else, so a block of complete lines is decoded whole
        and cut into event payloads by one `split`, instead of line by line; what is
        left per event is making its text and its object, the floor in Pyodide. Returns
        False, having changed nothing, for any other shape (or an event left unfinished
        at the end of the block, ~1 block in 300); `_process` then does it line by line.
        """
        if self._data or self._event_type or self._event_retry is not None:
            return False
        # A one-line event's data is shorter than its line, so only a smaller event
        # bound, or a block that may hold a line past the line bound, needs the loop.
        if self.max_event_bytes < self.max_line_bytes or len(block) > self.max_line_bytes:
            return False
        # Nothing is buffered, so a leading blank line dispatches nothing: it only
        # copies the last event ID buffer into the last event ID string (step 1).
        start = 1 if block[0] == 0x0A else 0
        if not block.startswith(b"data: ", start) or not block.endswith(b"\n\n"):
            return False
        # Decoding the block at once is the per-line decoding the spec implies: LF is
        # ASCII, so no UTF-8 sequence (nor a replaced broken one) spans two lines.
        parts = block.decode("utf-8", "replace").split("\n\ndata: ")
        parts[0] = parts[0][start + 6 :]
        parts[-1] = parts[-1][:-2]
        event_id = self._id_buffer
        # With no LF inside a payload, the block is exactly [LF] + "data: P\n\n" per
        # event: every line a `data: ` line or a blank line, in turn, and every
        # separator found a real one. Testing each payload (memchr) is cheaper than
        # counting the block's LFs. A comprehension, not map(): CPython 3.11+
        # specialises a class call made from bytecode, which matters most in WASM.
        events = [
            _new_event("message", text, event_id, None) for text in parts if "\n" not in text
        ]
        if len(events) != len(parts):
            if "\nid: " not in parts[0]:
                return False
            # The firsttoken gateway's numbered events (bridge/PROTOCOL.md, "Resumable
            # streams"): "data: P\nid: N\n\n" each, N its number in ASCII digits. An
            # `id` field sets the last event ID buffer (§9.2.6), which the event then
            # carries and which stays for the events after it.
            events = []
            for text in parts:
                if "\n" in text:
                    text, found, number = text.rpartition("\nid: ")
                    if not found or "\n" in text or not (number.isascii() and number.isdigit()):
                        return False
                    event_id = number
                events.append(_new_event("message", text, event_id, None))
            self._id_buffer = event_id
        out.extend(events)
        self._last_event_id = event_id
        return True

    def _decode_typed_block(self, block: bytes, out: list[ServerSentEvent]) -> bool:
        """The typed dialects' shape (Responses, Messages): `event: T` then `data: P`,
        then a blank line, per event; the block's complete events at once, as
        `_decode_chat_block` does, the lines after its last blank line by the loop.

        A network cut lands inside an event's long `data:` line far more often than in
        a chat stream's blank line, so the unfinished tail is left to `_process`, and an
        event type it kept (`event: T` came, the data not yet) is taken up here. Returns
        False, having changed nothing, for any other shape.
        """
        if self._data or self._event_retry is not None:
            return False
        if self.max_event_bytes < self.max_line_bytes or len(block) > self.max_line_bytes:
            return False
        # The shape, checked before any decoding, so that a stream of other fields costs
        # the loop little more: `id:` per event is the common one (a comment or `retry:`
        # line is rare, and found while splitting).
        lead = 1 if block[0] == 0x0A else 0
        if not (block.startswith(b"event: ", lead) or block.startswith(b"data: ", lead)):
            return False
        if b"\nid:" in block:
            return False
        cut = block.rfind(b"\n\n")
        if cut < 0:
            return False
        event_type = self._event_type.decode("utf-8", "replace")
        head = block[:cut].decode("utf-8", "replace")
        if head.startswith("\n"):
            # A blank line first (the previous block ended inside "\n\n"): with no data
            # buffered it dispatches nothing, and empties the event type (§9.2.6).
            head = head[1:]
            event_type = ""
        event_id = self._id_buffer
        pending = event_type
        lines = head.split("\n")
        events: list[ServerSentEvent] = []
        first = lines[0]
        if event_type or not first.startswith("event: "):
            # The first event's type came in an earlier block (or it has none): that event
            # alone, then the rest as below.
            if not first.startswith("data: ") or (len(lines) > 1 and lines[1]):
                return self._decode_typed_loop(head, pending, event_id, block, cut, out)
            events.append(_new_event(event_type or "message", first[6:], event_id, None))
            event_type = ""
            lines = lines[2:]
        if lines:
            # Each event is exactly three lines, "event: T", "data: P" and a blank one (the
            # last one's blank line is the `\n\n` cut at): checked for all at once in C
            # rather than per event in bytecode. With n events in 3n-1 lines, every third
            # line blank, the first an `event:` line, n-1 `event:` lines after a blank one
            # and n `data:` lines account for every line; and a line after a non-blank one
            # cannot be one of those `event:` lines, so the lines are exactly in that order.
            # Any other shape (more data lines, an `id`, a comment) fails, and the loop,
            # which takes every shape, does the block.
            start = len(first) + 2 if events else 0
            n = (len(lines) + 1) // 3
            if (
                len(lines) != 3 * n - 1
                or "".join(lines[2::3])
                or not lines[0].startswith("event: ")
                or head.count("\n\nevent: ", start) != n - 1
                or head.count("\ndata: ", start) != n
            ):
                return self._decode_typed_loop(head, pending, event_id, block, cut, out)
            events += [_new_event(t[7:] or "message", d[6:], event_id, None) for t, d in zip(lines[0::3], lines[1::3])]
        return self._typed_done(events, event_id, block, cut, out)

    def _decode_typed_loop(
        self, head: str, event_type: str, event_id: str, block: bytes, cut: int, out: list[ServerSentEvent]
    ) -> bool:
        """`_decode_typed_block`'s events one at a time, from `head`'s start: any mix of
        typed and untyped events. False, having changed nothing, for any other shape."""
        events: list[ServerSentEvent] = []
        for text in head.split("\n\n"):
            if text.startswith("event: "):
                event_type, found, text = text[7:].partition("\ndata: ")
                if not found:
                    return False
            elif text.startswith("data: "):
                text = text[6:]
            else:
                return False
            if "\n" in text or "\n" in event_type:
                return False  # another field, or more lines: the loop's
            events.append(_new_event(event_type or "message", text, event_id, None))
            event_type = ""
        return self._typed_done(events, event_id, block, cut, out)

    def _typed_done(
        self, events: list[ServerSentEvent], event_id: str, block: bytes, cut: int, out: list[ServerSentEvent]
    ) -> bool:
        out.extend(events)
        self._event_type = b""
        self._last_event_id = event_id
        tail = block[cut + 2 :]
        if tail:
            lines = tail.split(b"\n")
            lines.pop()  # the empty string after the last LF
            self._process(lines, out)
        return True

    def _process(self, lines: list[bytes], out: list[ServerSentEvent]) -> None:
        """§9.2.6 "Interpreting an event stream", for complete lines."""
        # The per-event state lives in locals for the loop (attribute access costs as
        # much as the work on a typical line) and is written back at the end.
        data_buf = self._data
        data_len = self._data_len
        event_type = self._event_type
        event_retry = self._event_retry
        id_buffer = self._id_buffer
        last_event_id = self._last_event_id
        max_event = self.max_event_bytes
        append = out.append
        for line in lines:
            if not line:
                # "If the line is empty (a blank line): Dispatch the event."
                # Step 1: the last event ID string takes the buffer's value, even when
                # no event follows.
                last_event_id = id_buffer
                if data_buf:
                    # Steps 3-4: we never add the buffer's trailing LF, so joining the
                    # lines with LF is "the data buffer minus its last LF".
                    if len(data_buf) == 1:
                        text = data_buf[0].decode("utf-8", "replace")
                    else:
                        text = b"\n".join(data_buf).decode("utf-8", "replace")
                    event = _new_event(
                        event_type.decode("utf-8", "replace") if event_type else "message",
                        text,
                        id_buffer,
                        event_retry,
                    )
                    append(event)
                    data_buf.clear()
                    data_len = 0
                # Steps 2 and 5: the event type buffer empties, dispatched or not.
                event_type = b""
                event_retry = None
                continue
            if line.startswith(b"data: "):
                # The hot path: one `data: {json}` line per chat chunk.
                value = line[6:]
            elif line[0] == 0x3A:
                # "If the line starts with a U+003A COLON character (:)": a comment.
                continue
            else:
                colon = line.find(b":")
                if colon < 0:
                    # "Otherwise, the string is not empty but does not contain a
                    # U+003A COLON character": the whole line is the field name, the
                    # value is the empty string.
                    name, value = line, b""
                else:
                    name, value = line[:colon], line[colon + 1 :]
                    # "If value starts with a U+0020 SPACE character, remove it."
                    if value[:1] == b" ":
                        value = value[1:]
                if name == b"event":
                    event_type = value
                    continue
                if name == b"id":
                    # "If the field value does not contain U+0000 NULL, then set the
                    # last event ID buffer to the field value. Otherwise, ignore."
                    if b"\0" not in value:
                        id_buffer = value.decode("utf-8", "replace")
                    continue
                if name == b"retry":
                    # "If the field value consists of only ASCII digits, then interpret
                    # it as an integer in base ten" (bytes.isdigit() is ASCII-only).
                    if value.isdigit():
                        event_retry = _parse_retry(value)
                        self._retry = event_retry
                    continue
                if name != b"data":
                    # "Otherwise: The field is ignored."
                    continue
            # "data": append the value, and a LF, to the data buffer.
            data_buf.append(value)
            data_len += len(value) + 1
            if data_len > max_event:
                self._overflow("event", max_event)
        self._data_len = data_len
        self._event_type = event_type
        self._event_retry = event_retry
        self._id_buffer = id_buffer
        self._last_event_id = last_event_id


def _parse_retry(digits: bytes) -> int:
    # Saturate instead of parsing absurd lengths: int() refuses over ~4300 digits, and
    # 15 digits of milliseconds are already ~31,000 years.
    digits = digits.lstrip(b"0")
    if len(digits) > _MAX_RETRY_DIGITS:
        return _MAX_RETRY_MS
    return int(digits or b"0")
