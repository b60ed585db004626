"""Event blocks of a Server-Sent Events stream: split, numbered, read. Pure, bounded.

A resumable stream (gateway/streams) numbers every event it relays, so a client can
say where it stopped. Three small functions of the WHATWG HTML standard, section 9.2
"Server-sent events" (https://html.spec.whatwg.org/multipage/server-sent-events.html):

- `EventSplitter` cuts a byte stream into event blocks. §9.2.5: lines end with CRLF,
  a lone LF or a lone CR (`end-of-line = ( cr lf / cr / lf )`), and a blank line ends
  an event. Chunks may cut anywhere, a CRLF included (a CR that ends one chunk is
  remembered, so a LF opening the next is its pair, not a second line end), so the
  blocks are the same however the stream was cut. Blocks come out with their lines
  joined by LF (any line end is the same to a reader). Lines are split on bytes, never
  decoded: U+2028 and friends are not line ends (§9.2.5), and a multibyte character
  split between chunks is joined back untouched.
- `stamp` appends `id: <n>` as the block's last field. §9.2.6: an `id` field sets the
  last event ID buffer, so the last `id` line of a block wins, and an `id:` line the
  source wrote itself can never override ours. The id also counts where the block
  holds only comments (a keep-alive): dispatch sets the last event ID string before it
  looks at the data (§9.2.6, "dispatch the event", step 1), so an EventSource that
  reconnects after a keep-alive says it saw it. Every block is numbered, 1, 2, 3…
- `event_facts` reads what a block says about the answer (its text's characters, its
  finish reason, an error), for a stream's status, in each API's events (Chat
  Completions chunks, Responses events, Messages events).

Bounded: a block may hold at most `max_block_bytes`; past it, `EventTooLarge`, which
carries the blocks the same chunk completed before it (they are whole events). Not
kept: a leading UTF-8 BOM (§9.2.5: `stream = [ bom ] *event`; readers drop it), blank
lines between events, and an unterminated block at the end of the stream, which a
reader would discard too (§9.2.6: "If the file ends in the middle of an event, before
the final empty line, the incomplete event is not dispatched").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import EventTooLarge

__all__ = [
    "DEFAULT_MAX_BLOCK_BYTES",
    "EventFacts",
    "APIS",
    "EventSplitter",
    "NO_FACTS",
    "error_event",
    "event_facts",
    "stamp",
]

#: The largest event block kept (4 MiB): the page's SSE decoder takes at most 4 MiB of
#: data per event (py/firsttoken/stream/sse.py), so a larger one could not be read anyway.
DEFAULT_MAX_BLOCK_BYTES = 4 << 20

_BOM = b"\xef\xbb\xbf"


class EventSplitter:
    """`feed(chunk)` returns the event blocks the chunk completes (no terminating blank
    line, lines joined by LF). Keeps at most one unfinished block."""

    __slots__ = ("max_block_bytes", "_buffer", "_scan", "_cr", "_at_start")

    def __init__(self, max_block_bytes: int = DEFAULT_MAX_BLOCK_BYTES) -> None:
        if max_block_bytes < 1:
            raise ValueError("max_block_bytes must be positive")
        self.max_block_bytes = max_block_bytes
        self._buffer = bytearray()
        self._scan = 0  # where the search for a blank line resumes
        self._cr = False  # the last chunk ended with CR: a LF opening the next is its pair
        self._at_start = True  # a BOM may still come

    def feed(self, chunk: bytes) -> list[bytes]:
        if not chunk:
            return []
        if self._cr and chunk[0] == 0x0A:
            chunk = chunk[1:]
        self._cr = False
        if b"\r" in chunk:
            self._cr = chunk[-1] == 0x0D
            # CRLF first, so that its CR does not count as a line end of its own.
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buffer = self._buffer
        buffer += chunk
        if self._at_start:
            if len(buffer) < len(_BOM) and _BOM.startswith(buffer):
                return []
            self._at_start = False
            if buffer.startswith(_BOM):
                del buffer[: len(_BOM)]
        blocks: list[bytes] = []
        start = 0
        scan = self._scan
        limit = self.max_block_bytes
        while True:
            end = buffer.find(b"\n\n", scan)
            if end < 0:
                break
            # Blank lines before a block end no event of their own (no fields).
            block = bytes(buffer[start:end]).lstrip(b"\n")
            if len(block) > limit:
                raise EventTooLarge(len(block), limit, blocks)
            if block:
                blocks.append(block)
            start = scan = end + 2
        if start:
            # One deletion per feed, not per block: deleting the front of a bytearray
            # moves the rest, and doing it per block was quadratic in the blocks a chunk holds.
            del buffer[:start]
        # A blank line may straddle this chunk and the next: look again from its last byte.
        self._scan = max(len(buffer) - 1, 0)
        # What is left holds no blank line: one unfinished block, with at most a line end
        # before it (a blank line's first half) and one after it (its last line's).
        if len(buffer) > limit + 2:
            raise EventTooLarge(len(buffer), limit, blocks)
        return blocks


def stamp(block: bytes, number: int) -> bytes:
    """`block` as a whole event numbered `number`: its lines, `id: <number>` last, and the
    blank line that ends it."""
    return b"%s\nid: %d\n\n" % (block, number)


@dataclass(frozen=True, slots=True)
class EventFacts:
    """What one event says about the answer."""

    #: Characters (code points, as Python counts them) of choice 0's `delta.content`.
    characters: int = 0
    #: Choice 0's finish reason, when this event gives one.
    finish_reason: str | None = None
    #: An error in the stream: an `{"error": …}` object, or an event of type "error".
    error: bool = False


NO_FACTS = EventFacts()


#: The APIs whose events `event_facts` reads, by their dialect's name (gateway/dialects).
APIS = ("chat", "responses", "messages")

# Why an answer ended, in Chat Completions' words whatever the API (one vocabulary for
# a stream's status): Anthropic's `stop_reason`s (API reference, "Messages"), and the
# Responses API's end events with their `incomplete_details.reason`.
_ANTHROPIC_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "max_tokens": "length",
                     "tool_use": "tool_calls", "refusal": "content_filter",
                     "model_context_window_exceeded": "length"}
_INCOMPLETE_FINISH = {"max_output_tokens": "length", "content_filter": "content_filter"}


def event_facts(block: bytes, api: str = "chat") -> EventFacts:
    """The facts of one event block (as `EventSplitter` gives it) of `api`'s stream.
    Never raises: what is not that API's event says nothing. Its characters are the
    answer's text (Chat `delta.content`, Responses `response.output_text.delta`,
    Messages `text_delta`), never its reasoning; its finish reason in Chat's words."""
    data: list[bytes] = []
    error_type = False
    for line in block.split(b"\n"):
        # §9.2.6: the field name is up to the first colon, and one space after it is
        # not part of the value; a line starting with a colon is a comment.
        name, colon, value = line.partition(b":")
        if not name:
            continue
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            data.append(value)
        elif name == b"event":
            error_type = value == b"error"
    if not data:
        return EventFacts(error=True) if error_type else NO_FACTS
    payload = b"\n".join(data)
    if payload[:1] != b"{":
        return EventFacts(error=True) if error_type else NO_FACTS
    try:
        # One decoder, fed text: `json.loads(bytes)` sniffs the encoding and makes a
        # decoder per call, twice the time (and this runs once per event).
        body: Any = _DECODER.decode(payload.decode("utf-8"))
    except (ValueError, RecursionError):
        return EventFacts(error=True) if error_type else NO_FACTS
    if not isinstance(body, dict):
        return EventFacts(error=True) if error_type else NO_FACTS
    if api == "responses":
        return _responses_facts(body, error_type)
    if api == "messages":
        return _messages_facts(body, error_type)
    characters = 0
    finish = None
    choices = body.get("choices")
    if isinstance(choices, list):
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                content = delta.get("content")
                if isinstance(content, str):
                    characters += len(content)
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                finish = reason
    error = error_type or body.get("error") is not None
    if not (characters or finish or error):
        return NO_FACTS
    return EventFacts(characters, finish, error)


def _responses_facts(body: dict[str, Any], error_type: bool) -> EventFacts:
    kind = body.get("type")
    if kind == "response.output_text.delta":
        delta = body.get("delta")
        return EventFacts(characters=len(delta)) if isinstance(delta, str) and delta else NO_FACTS
    if kind == "response.completed":
        return EventFacts(finish_reason="stop")
    if kind == "response.incomplete":
        response = body.get("response")
        details = response.get("incomplete_details") if isinstance(response, dict) else None
        reason = details.get("reason") if isinstance(details, dict) else None
        return EventFacts(finish_reason=_INCOMPLETE_FINISH.get(reason, "length") if isinstance(reason, str) else "length")
    if error_type or kind in ("error", "response.failed"):
        return EventFacts(error=True)
    return NO_FACTS


def _messages_facts(body: dict[str, Any], error_type: bool) -> EventFacts:
    kind = body.get("type")
    delta = body.get("delta")
    if kind == "content_block_delta" and isinstance(delta, dict) and delta.get("type") == "text_delta":
        text = delta.get("text")
        return EventFacts(characters=len(text)) if isinstance(text, str) and text else NO_FACTS
    if kind == "message_delta" and isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
        return EventFacts(finish_reason=_ANTHROPIC_FINISH.get(delta["stop_reason"], delta["stop_reason"]))
    if error_type or kind == "error":
        return EventFacts(error=True)
    return NO_FACTS


_DECODER = json.JSONDecoder()


def error_event(code: str, message: str, *, type: str = "server_error", api: str = "chat") -> bytes:
    """An in-stream error in `api`'s own shape, as an event block (to be stamped): an
    `{"error": …}` chunk (Chat Completions), an `error` event (Responses: its `code`
    and `message`; Messages: an error object, `api_error` as Anthropic's 500s)."""
    payload: dict[str, Any]
    if api == "responses":
        payload = {"type": "error", "code": code, "message": message, "param": None}
        return b"event: error\ndata: " + json.dumps(payload, separators=(",", ":")).encode()
    if api == "messages":
        payload = {"type": "error", "error": {"type": "api_error", "message": message}}
        return b"event: error\ndata: " + json.dumps(payload, separators=(",", ":")).encode()
    error = {"message": message, "type": type, "param": None, "code": code}
    return b"data: " + json.dumps({"error": error}, separators=(",", ":")).encode()
