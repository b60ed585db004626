"""Stalls: how long the model has said nothing, whether the connection still shows life,
and what that means for one attempt.

Two kinds of life, two clocks:

* **bytes** (the response's headers, an SSE comment such as the gateway's `: keep-alive`,
  WHATWG HTML § 9.2.6 "If the line starts with a U+003A COLON character", an Anthropic
  `ping`, any chunk that brings no text) prove the *connection* alive. Only their
  absence ends an attempt: `timeout_s` without a byte is a dead connection (a network
  switch leaves no reset behind) or a dead server.
* **progress** (text: answer or reasoning) proves the *model* speaks. Its absence is
  what a person notices: past `notice_s` the silence is shown (`Stalled`), and it ends
  (`progress` returns its length) when text comes again.

A reasoning model may think silently for minutes behind a connection kept alive with
comments; the notice then says `connected`: bytes came during this silence (or, before
any text, the headers did: the server took the request and its model is at work). That
is evidence, not a guess: a connection that dies after its last keep-alive still reads
`connected` until the timeout ends it, because the cadence of keep-alives is no API's
contract (our gateway: 15 s; OpenAI: none), and a guess from it would flip the words
each cycle, which is the bug this module replaced. A mid-answer silence with no byte
since the last text reads not connected until a keep-alive says otherwise.

The core measures this, not the page: only the core sees every byte. `StallWatch` is
pure: it is told when bytes (`byte`) and text (`progress`) arrive and asked what to say
(`check`). It is also the deadline policy of its driver's reads: `next_check_ms` is how
long the next read may take before `check` has something new to say
(`firsttoken.attempt` awaits each read of the answer's events that long, on the core's
injected clock). Nothing here sleeps, so tests drive it on any clock.

Every moment and length is in milliseconds, the unit of the core's session clock
(`firsttoken.session` says why); the thresholds come in as the settings' seconds and are
converted once, here at construction. `Stalled.waiting_s` stays in whole seconds: it is
what the page shows (`chat.stall`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["StallWatch", "Stalled", "TimedOut"]


@dataclass(frozen=True, slots=True)
class Stalled:
    """No text for `waiting_s` whole seconds since `since` (ms, the watch's clock).
    `connected`: bytes came during that silence; the model is thinking, not gone."""

    since: float
    waiting_s: int
    connected: bool = False


@dataclass(frozen=True, slots=True)
class TimedOut:
    """No byte at all for `waited_ms`, the whole limit or more: the attempt must end."""

    waited_ms: float


class StallWatch:
    """One attempt's silences. `notice_s`: after this long without text, the silence is
    shown (then once a whole second more has passed); `timeout_s`: after this long
    without a byte, the attempt ends. `start_ms`: when the request left (silence before
    the first byte counts as well)."""

    def __init__(self, notice_s: float, timeout_s: float, start_ms: float) -> None:
        # The settings speak seconds; the watch's clock is the session's (ms).
        self.notice_ms = notice_s * 1000.0
        self.timeout_ms = timeout_s * 1000.0
        #: The last byte (the connection's life) and the last text (the model's).
        self.last_byte_ms = start_ms
        self.last_progress_ms = start_ms
        #: Bytes came since the last text (or since the request left).
        self.connected = False
        #: The last `waiting_s` reported; 0 while text flows.
        self.shown_s = 0
        #: `check` said `TimedOut`: the attempt is being ended for its silence, and
        #: however it ends (aborted, cancelled) it ends as a timeout.
        self.timed_out = False

    @property
    def stalled(self) -> bool:
        return self.shown_s > 0

    def byte(self, now_ms: float) -> None:
        """Bytes arrived (headers, a keep-alive, a chunk): the connection is alive."""
        self.last_byte_ms = now_ms
        self.connected = True

    def progress(self, now_ms: float) -> float | None:
        """Text arrived: the model speaks. Returns how long the stall that this ends
        lasted (ms), if one was shown, so that its note can go."""
        stalled_ms = now_ms - self.last_progress_ms if self.stalled else None
        self.last_byte_ms = self.last_progress_ms = now_ms
        self.connected = False
        self.shown_s = 0
        return stalled_ms

    def check(self, now_ms: float) -> Stalled | TimedOut | None:
        """What to say now: `TimedOut` past the limit without a byte; `Stalled` past the
        notice threshold without text, when the whole seconds waited changed since
        last said; else None."""
        deaf = now_ms - self.last_byte_ms
        if deaf >= self.timeout_ms:
            self.timed_out = True
            return TimedOut(deaf)
        waited = now_ms - self.last_progress_ms
        if waited < self.notice_ms:
            return None
        whole = max(1, int(waited // 1000))  # a threshold under a second still says "1 s"
        if whole <= self.shown_s:
            return None
        self.shown_s = whole
        return Stalled(self.last_progress_ms, whole, self.connected)

    def next_check_ms(self, now_ms: float) -> float:
        """Milliseconds until `check` may have something new to say: the deadline of
        the driver's next read (never under a millisecond, so a driver cannot spin)."""
        waited = now_ms - self.last_progress_ms
        # the threshold, then the next whole second of waiting
        notice = self.notice_ms - waited if waited < self.notice_ms else (math.floor(waited / 1000) + 1) * 1000 - waited
        timeout = self.timeout_ms - (now_ms - self.last_byte_ms)
        return max(min(notice, timeout), 1.0)
