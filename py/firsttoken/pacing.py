"""Delta pacing: at most one `chat.delta` the page has not yet taken (the protocol's
"flow control", bridge/PROTOCOL.md).

A slow phone's main thread handles each message as a task of its own, and at hundreds
of chunks a second those tasks crowd out the frames that paint them. A page that says
`hello` with `flow: true` answers each `chat.delta` it takes with a `delta.ack`; until
then, text arriving here is held and merged (one message per request, in order), and
goes out, all of it, with the ack. So the page gets one message per turn of its event
loop however fast the model streams, and a page that keeps up gets every chunk at once,
with no added wait. A page that never says `flow` gets every delta as it comes
(bridge/PROTOCOL.md, "Flow control").

Held text is bounded: past `DeltaPacer.HOLD_LIMIT` characters it goes out without
waiting. `t` of a merged delta is that of its first part (when the oldest text in it was
parsed), so the page's latency figures count the holding; its `seq` and `event` are the last's.
"""

from __future__ import annotations

from typing import Callable

from .protocol import ChatDelta

__all__ = ["DeltaPacer"]


class _Held:
    """The deltas of one request held since the last ack, merged. Text is kept as parts
    and joined once, when it goes out."""

    __slots__ = ("request_id", "t", "seq", "event", "text", "reasoning", "stamps", "chars")

    def __init__(self, first: ChatDelta) -> None:
        self.request_id = first.id
        self.t = first.t
        self.seq = first.seq
        self.event = first.event
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.stamps: list[float] = []
        self.chars = 0

    def add(self, delta: ChatDelta) -> int:
        """Merge `delta`; returns the characters it added."""
        self.seq = delta.seq
        self.event = delta.event
        self.text.append(delta.text)
        if delta.reasoning:
            self.reasoning.append(delta.reasoning)
        self.stamps.extend(delta.stamps)
        added = len(delta.text) + len(delta.reasoning)
        self.chars += added
        return added

    def merged(self) -> ChatDelta:
        return ChatDelta(
            id=self.request_id,
            seq=self.seq,
            text="".join(self.text),
            t=self.t,
            reasoning="".join(self.reasoning),
            stamps=self.stamps,
            event=self.event,
        )


class DeltaPacer:
    """Sends `chat.delta` events through `send`, holding them while one is unacknowledged
    (only once `enabled`: the page said `hello` with `flow: true`)."""

    HOLD_LIMIT = 256 * 1024

    def __init__(self, send: Callable[[ChatDelta], None]) -> None:
        self.send = send
        self.enabled = False
        self.waiting = False  # a delta is out that the page has not acknowledged
        self.held: dict[str, _Held] = {}
        self.held_chars = 0

    def delta(self, delta: ChatDelta) -> None:
        """Send `delta` now, or hold it until the page takes the one before."""
        if not self.enabled or (not self.waiting and not self.held):
            self.waiting = self.enabled
            self.send(delta)
            return
        request_id = delta.id or ""
        held = self.held.get(request_id)
        if held is None:
            held = self.held[request_id] = _Held(delta)
        self.held_chars += held.add(delta)
        if self.held_chars > self.HOLD_LIMIT:
            self.ack()

    def ack(self) -> None:
        """The page took the last delta: send what was held, if anything."""
        self.waiting = False
        for request_id in list(self.held):
            self.flush(request_id)

    def flush(self, request_id: str) -> None:
        """Send what is held for `request_id` now (its end must not overtake its text)."""
        held = self.held.pop(request_id, None)
        if held is None:
            return
        self.held_chars -= held.chars
        self.waiting = True
        self.send(held.merged())
