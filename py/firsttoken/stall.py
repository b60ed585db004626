"""Stalls: how long the server has sent nothing, and what that means for one attempt.

Time is measured in the core, because only the core sees every byte: an SSE comment
(a keep-alive, WHATWG HTML § 9.2.6 "If the line starts with a U+003A COLON character")
or the response headers show the connection is alive but bring no `chat.delta`, so the
page alone would call a working stream stalled.

`StallWatch` is pure: it is told when bytes arrive (`byte`) and asked, at moments its
driver chooses (`firsttoken.chat`, on the core's injected clock), what to say (`check`)
and when to ask next (`next_check_s`). Nothing here sleeps, so tests drive it on any
clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["StallWatch", "Stalled", "TimedOut"]


@dataclass(frozen=True, slots=True)
class Stalled:
    """Nothing for `waiting_s` whole seconds since `since` (ms, the watch's clock)."""

    since: float
    waiting_s: int


@dataclass(frozen=True, slots=True)
class TimedOut:
    """Nothing for the whole limit: the attempt must end."""

    waited_s: float


class StallWatch:
    """One attempt's silence. `notice_s`: after this long without a byte, the silence is
    shown (then once a whole second more has passed); `timeout_s`: after this long, the
    attempt ends. `start_ms`: when the request left (silence before the first byte
    counts as well)."""

    def __init__(self, notice_s: float, timeout_s: float, start_ms: float) -> None:
        self.notice_s = notice_s
        self.timeout_s = timeout_s
        self.last_ms = start_ms
        #: The last `waiting_s` reported; 0 while bytes flow.
        self.shown_s = 0
        #: `check` said `TimedOut`: the attempt is being ended for its silence, and
        #: however it ends (aborted, cancelled) it ends as a timeout.
        self.timed_out = False

    @property
    def stalled(self) -> bool:
        return self.shown_s > 0

    def byte(self, now_ms: float) -> float | None:
        """Bytes arrived. Returns how long the stall that this ends lasted (seconds), if
        one was shown, so that its note can go."""
        stalled_s = (now_ms - self.last_ms) / 1000.0 if self.stalled else None
        self.last_ms = now_ms
        self.shown_s = 0
        return stalled_s

    def check(self, now_ms: float) -> Stalled | TimedOut | None:
        """What to say now: `TimedOut` past the limit; `Stalled` past the notice threshold
        when the whole seconds waited changed since last said; else None."""
        waited = (now_ms - self.last_ms) / 1000.0
        if waited >= self.timeout_s:
            self.timed_out = True
            return TimedOut(waited)
        if waited < self.notice_s:
            return None
        whole = max(1, int(waited))  # a threshold under a second still says "1 s"
        if whole <= self.shown_s:
            return None
        self.shown_s = whole
        return Stalled(self.last_ms, whole)

    def next_check_s(self, now_ms: float) -> float:
        """Seconds until `check` may have something new to say (never less than a
        millisecond, so a driver cannot spin)."""
        waited = (now_ms - self.last_ms) / 1000.0
        if waited < self.notice_s:
            due = self.notice_s
        else:
            # the next whole second of waiting
            due = math.floor(waited) + 1.0
        return max(min(due, self.timeout_s) - waited, 0.001)
