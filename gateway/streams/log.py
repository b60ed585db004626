"""One stream's numbered events in this process, and what they say about the answer.

The generation (`run`) appends; followers (`follow`) read every event that is visible
at once, as one batch, and wait for more. Events are kept stamped (`events.stamp`):
event n is `events[n - 1]`, so a replay from `after` is a slice.

Visible means: safe to show. In memory that is every event appended. With `--redis`
an event becomes visible once Redis holds it (`redis.RedisStreams` reveals it after
each write), so whatever a client has seen can be resumed on any gateway process.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable

from .errors import StreamTooLarge
from .events import event_facts, stamp

__all__ = [
    "CANCELLED", "COMPLETED", "ENDED", "EVENT_OVERHEAD", "FAILED", "IN_PROGRESS", "StreamLog", "StreamStatus",
]

IN_PROGRESS = "in_progress"
COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
ENDED = frozenset({COMPLETED, FAILED, CANCELLED})

#: Memory an event costs beyond its bytes: the bytes object's header (33 bytes on
#: CPython 3.11) and its slot in the list (44.5 bytes an event measured with
#: tracemalloc), rounded up. Charged to the process's budget
#: (`charge`), not to the stream's cap, which counts what goes on the wire.
EVENT_OVERHEAD = 48


@dataclass(frozen=True, slots=True)
class StreamStatus:
    """What `GET /v1/streams/{id}` answers."""

    id: str
    status: str
    last_event: int
    characters: int
    finish_reason: str | None
    created_at: int
    ended_at: int | None

    def body(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "firsttoken.stream",
            "status": self.status,
            "last_event": self.last_event,
            "characters": self.characters,
            "finish_reason": self.finish_reason,
            "created_at": self.created_at,
            "ended_at": self.ended_at,
        }


class StreamLog:
    """A stream's events and state. `charge(n)` asks the process's budget for `n` more
    bytes (False: the gateway's total is spent); `mirrored` streams are revealed by their
    mirror (`reveal`), others as they are appended."""

    __slots__ = (
        "id", "owner", "created_at", "ended_at", "status", "characters", "finish_reason", "error_seen",
        "events", "bytes", "charged", "visible", "final", "failure", "followers", "task", "timer", "stop_reason",
        "mirrored", "wake", "stream_bytes", "api", "_charge", "_changed",
    )

    def __init__(
        self,
        stream_id: str,
        owner: str,
        *,
        created_at: float,
        stream_bytes: int,
        charge: Callable[[int], bool] = lambda n: True,
        mirrored: bool = False,
        api: str = "chat",
    ) -> None:
        self.id = stream_id
        #: The API whose events these are (gateway/dialects' name): how they are read
        #: (`events.event_facts`) and how the gateway's own error events are shaped.
        self.api = api
        #: `access.Client.owner` of the client that started it: only it may read it.
        self.owner = owner
        self.created_at = created_at
        self.ended_at: float | None = None
        self.status = IN_PROGRESS
        self.characters = 0
        self.finish_reason: str | None = None
        self.error_seen = False
        self.events: list[bytes] = []
        self.bytes = 0
        #: What `charge` accepted for it (given back when it is dropped).
        self.charged = 0
        self.visible = 0
        #: Nothing more will become visible: followers end once they read `visible` events.
        self.final = False
        #: What the source raised, if it did (the POST's own response raises it again, so
        #: its client sees the cut it saw before streams were resumable).
        self.failure: BaseException | None = None
        #: Clients reading it now (the POST's own and resumes), for the shutdown rule.
        self.followers = 0
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.stop_reason: str | None = None
        self.mirrored = mirrored
        #: Set at every append and at the end: the mirror's cue.
        self.wake = asyncio.Event()
        self.stream_bytes = stream_bytes
        self._charge = charge
        self._changed = asyncio.Event()

    @property
    def live(self) -> bool:
        return self.status == IN_PROGRESS

    def append(self, blocks: list[bytes]) -> None:
        """Number `blocks` and add them, with what they say. Raises `StreamTooLarge`,
        having added nothing, when they would take the stream past its cap or the
        process past its budget."""
        first = len(self.events) + 1
        stamped = [stamp(block, first + i) for i, block in enumerate(blocks)]
        size = sum(map(len, stamped))
        if self.bytes + size > self.stream_bytes:
            raise StreamTooLarge(self.bytes + size, self.stream_bytes)
        cost = size + EVENT_OVERHEAD * len(stamped)
        if not self._charge(cost):
            raise StreamTooLarge(self.bytes + size, self.stream_bytes, gateway_full=True)
        self.charged += cost
        self._add(blocks, stamped, size)

    def append_last(self, block: bytes) -> None:
        """Add a final event (an error the gateway reports) past any cap: it is small,
        and a follower must learn why the stream ended."""
        stamped = stamp(block, len(self.events) + 1)
        cost = len(stamped) + EVENT_OVERHEAD
        if self._charge(cost):
            self.charged += cost
        self._add([block], [stamped], len(stamped))

    def _add(self, blocks: list[bytes], stamped: list[bytes], size: int) -> None:
        for block in blocks:
            facts = event_facts(block, self.api)
            self.characters += facts.characters
            if facts.finish_reason is not None:
                self.finish_reason = facts.finish_reason
            self.error_seen = self.error_seen or facts.error
        self.events.extend(stamped)
        self.bytes += size
        self.wake.set()
        if not self.mirrored:
            self.reveal(len(self.events))

    def end(self, status: str, now: float) -> None:
        self.status = status
        self.ended_at = now
        self.wake.set()
        if not self.mirrored:
            self.reveal(len(self.events), final=True)

    def reveal(self, upto: int, *, final: bool = False) -> None:
        """Events up to number `upto` may be shown; with `final`, no more will be."""
        self.visible = max(self.visible, min(upto, len(self.events)))
        self.final = self.final or final
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def unmirror(self) -> None:
        """Show everything from now on without a mirror (it could not write)."""
        self.mirrored = False
        self.reveal(len(self.events), final=not self.live)

    async def follow(self, after: int) -> AsyncIterator[bytes]:
        """Every visible event after number `after`, in batches (all that is visible at
        each turn, joined), until the stream is final and all of it was given."""
        while True:
            changed = self._changed
            visible = self.visible
            if after < visible:
                batch = b"".join(self.events[after:visible])
                after = visible
                yield batch
                continue
            if self.final:
                return
            await changed.wait()

    def snapshot(self) -> StreamStatus:
        return StreamStatus(
            id=self.id,
            status=self.status,
            last_event=self.visible,
            characters=self.characters,
            finish_reason=self.finish_reason,
            created_at=int(self.created_at),
            ended_at=None if self.ended_at is None else int(self.ended_at),
        )
