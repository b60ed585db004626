"""The streams of this process: found by id for their owner only, bounded, reaped.

Bounds (`ResumeLimits`): streams per client, and bytes in all (events plus
bookkeeping, `charge`). A new stream that would pass either drops the oldest ended
streams first (of that client, or of anyone for the total); if that is not enough it
is not made, and its request is served without resume, as before streams were
resumable. A live stream that outgrows the total after that fails (`StreamTooLarge`).

Ended streams are kept `ttl_s`, then dropped: lazily when asked for, and by one timer
armed for the soonest expiry (expiry order is end order, the TTL being one for all),
so an idle gateway runs nothing. With `--redis`, Redis keeps ended streams
(`keep_ended=False`): this registry holds live ones only, for their generation and
their own POST's response, and the mirror drops each once Redis has all of it.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections import OrderedDict
from typing import Callable

from .limits import ResumeLimits
from .log import StreamLog

__all__ = ["STREAM_OVERHEAD", "LocalStreams"]

#: Memory a stream costs before any event: the log and its slots, two asyncio events,
#: its task and timer, and its entries here (3.7 KiB measured with tracemalloc on
#: CPython 3.11, one client per stream), rounded up.
STREAM_OVERHEAD = 4096


class LocalStreams:
    def __init__(
        self,
        limits: ResumeLimits,
        *,
        keep_ended: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = limits
        self.keep_ended = keep_ended
        self.clock = clock
        self._streams: dict[str, StreamLog] = {}
        #: Each owner's stream ids, oldest first (a dict keeps insertion order).
        self._owners: dict[str, dict[str, None]] = {}
        #: Ended streams by id, oldest end first, with when they expire.
        self._expiry: OrderedDict[str, float] = OrderedDict()
        self._reaper: asyncio.TimerHandle | None = None
        self.total_bytes = 0

    def __len__(self) -> int:
        return len(self._streams)

    def open(self, stream_id: str, owner: str, *, created_at: float, mirrored: bool = False,
             api: str = "chat") -> StreamLog | None:
        """A new live stream, or None when the bounds leave no room for it."""
        self._reap()
        limits = self.limits
        if self.keep_ended:  # with Redis, Redis counts a client's streams (all processes')
            mine = self._owners.get(owner, {})
            while len(mine) >= limits.streams_per_client:
                oldest = next((i for i in mine if not self._streams[i].live), None)
                if oldest is None:
                    return None
                self.drop(oldest)
        if not self._make_room(STREAM_OVERHEAD):
            return None
        log = StreamLog(stream_id, owner, created_at=created_at, stream_bytes=limits.stream_bytes,
                        charge=self._make_room, mirrored=mirrored, api=api)
        self._streams[stream_id] = log
        self._owners.setdefault(owner, {})[stream_id] = None
        return log

    def get(self, stream_id: str, owner: str) -> StreamLog | None:
        """The stream, if it is known and `owner`'s (else None, the same for both)."""
        log = self._streams.get(stream_id)
        if log is None:
            return None
        expires = self._expiry.get(stream_id)
        if expires is not None and expires <= self.clock():
            self.drop(stream_id)
            return None
        return log if hmac.compare_digest(log.owner, owner) else None

    def find(self, stream_id: str) -> StreamLog | None:
        """The stream by id alone (for this process's own bookkeeping, never a client)."""
        return self._streams.get(stream_id)

    def live(self) -> list[StreamLog]:
        return [log for log in self._streams.values() if log.live]

    def ended(self, log: StreamLog) -> None:
        """`log` has ended: keep it `ttl_s`, or (with Redis) until its mirror drops it."""
        if not self.keep_ended or log.id not in self._streams:
            return
        self._expiry[log.id] = self.clock() + self.limits.ttl_s
        self._arm()

    def drop(self, stream_id: str) -> None:
        log = self._streams.pop(stream_id, None)
        if log is None:
            return
        self._expiry.pop(stream_id, None)
        mine = self._owners.get(log.owner)
        if mine is not None:
            mine.pop(stream_id, None)
            if not mine:
                del self._owners[log.owner]
        self.total_bytes -= STREAM_OVERHEAD + log.charged

    def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            self._reaper = None

    # ---- the budget ----------------------------------------------------------------

    def _make_room(self, size: int) -> bool:
        """Charge `size` bytes, dropping the oldest ended streams if need be; False (and
        nothing charged) when even that leaves too little."""
        while self.total_bytes + size > self.limits.total_bytes and self._expiry:
            self.drop(next(iter(self._expiry)))
        if self.total_bytes + size > self.limits.total_bytes:
            return False
        self.total_bytes += size
        return True

    # ---- expiry --------------------------------------------------------------------

    def _reap(self) -> None:
        now = self.clock()
        while self._expiry:
            stream_id, expires = next(iter(self._expiry.items()))
            if expires > now:
                break
            self.drop(stream_id)

    def _arm(self) -> None:
        if self._reaper is not None or not self._expiry:
            return
        soonest = next(iter(self._expiry.values()))
        self._reaper = asyncio.get_running_loop().call_later(max(soonest - self.clock(), 0.0), self._on_timer)

    def _on_timer(self) -> None:
        self._reaper = None
        self._reap()
        self._arm()
