"""One attempt: a request sent and its answer's events read under the stall policy's deadline.

`Attempt.run` is the one loop over the typed events of `firsttoken.stream.client`
(`Response`, `BytesSeen`, `Text`, `Finished`). The reading is awaited until the moment
the stall policy names (`firsttoken.stall.StallWatch.next_check_ms`); a deadline that
passes before the answer ends is not an error but a moment to ask the policy what the
silence means:

* `Stalled`: a `chat.stall` (the reading goes on and is awaited again);
* `TimedOut`: the attempt's own signal is aborted (the transport's fetch ends), the
  read is given `ABORT_GRACE_MS` to end with it, then cancelled; the attempt raises
  `StallTimeout` with the text it took.

Text after a shown stall is a `chat.stall.cleared`. There is no flag between the read
and the deadline: the events are read by one task (`_read`, an `async for` that takes
each event the moment it comes), and `run` awaits that task's end under the deadline,
so one timer serves every event until the deadline passes.

Why one reading task and not one `Task` and one timer per event: the event loop's steps
are not free everywhere. Pyodide's `WebLoop.call_soon` is `scheduleCallback(…, 0)`,
which uses a `MessageChannel` except in Safari/WebKit (`IN_SAFARI`, the user agent says
Safari and not Chrome: `ensureSharedChannel` skips it) where, in a worker, it is
`setTimeout(…, 0)`; and HTML clamps a timer nested more than 5 deep to at least 4 ms
(HTML § 8.6 "Timers", timer initialisation steps). A read per `Task`, its one-step
yield, a timer `Task` armed and cancelled and `asyncio.wait`'s callbacks chained
several steps a network chunk: 54–69 ms a chunk in WebKit's worker against 2.7 ms
(`bench/native.py`'s core leg; webkit-plain p50 82 ms at 10a5e84 against 16 ms before
it), Chromium unaffected. The reading task costs about a step a chunk, as the
`async for` before 10a5e84 did.

The attempt has its own `AbortSignal`, aborted by the request's (Stop), by a timeout
(raised here as `StallTimeout`, never as `Aborted`) and by `drop` (the page's
`chat.reconnect`). So an `Aborted` out of `run` while the request's signal is not
aborted means exactly one thing: the page asked to reconnect (`firsttoken.reconnect`).

Waits go through the session's `sleep` (ms, `firsttoken.session`), never the event
loop's timers, so that tests run the loop on virtual time; `wait_ms` and `within` are
the two ways to wait, for every waiter of the request (`firsttoken.chat`,
`firsttoken.reconnect`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable

from .errors import FirstTokenError, StallTimeout, TruncatedStream
from .protocol import ChatStall, ChatStallCleared
from .stall import Stalled, StallWatch, TimedOut
from .stream.answer import AnswerStream
from .stream.client import (
    AbortSignal,
    BytesSeen,
    Finished,
    HTTPRequest,
    Response,
    StreamEvent,
    Text,
    Timings,
    stream_chat,
)
from .stream.types import Completion

if TYPE_CHECKING:
    from .session import Session
    from .settings import ChatSettings

__all__ = ["ABORT_GRACE_MS", "Attempt", "wait_ms", "within"]

#: After a timeout aborted the attempt, how long its transport may take to end it
#: before the read is cancelled outright (a transport that ignores its signal must not
#: hold the request forever).
ABORT_GRACE_MS = 2000.0


async def wait_ms(session: Session, ms: float, *wake: asyncio.Event) -> None:
    """Wait `ms` on the session's clock, or less when one of `wake` is (or gets) set."""
    if ms <= 0 or any(event.is_set() for event in wake):
        return
    waiters = [asyncio.ensure_future(session.sleep(ms)), *(asyncio.ensure_future(e.wait()) for e in wake)]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


async def within(session: Session, future: asyncio.Future[Any], ms: float) -> bool:
    """Whether `future` is done within `ms` on the session's clock (`ms` ≤ 0: after one
    step). It is never cancelled here: a late read is awaited again."""
    if not future.done():
        # One step first: a read that needs no waiting (a canned answer, bytes already
        # buffered) ends in it, and no timer is armed (a fake clock's sleep may move
        # time the moment it is called).
        await asyncio.sleep(0)
    if future.done() or ms <= 0:
        return future.done()
    timer = asyncio.ensure_future(session.sleep(ms))
    try:
        await asyncio.wait([future, timer], return_when=asyncio.FIRST_COMPLETED)
    finally:
        timer.cancel()
    if not future.done():
        await asyncio.sleep(0)  # a fake sleep may end without yielding: the read gets its step
    return future.done()


class Attempt:
    """One connection of request `request_id`: its own signal (aborted by `stop` too),
    its silences watched with `settings`' thresholds."""

    def __init__(self, session: Session, request_id: str, settings: ChatSettings, stop: AbortSignal) -> None:
        self.session = session
        self.request_id = request_id
        self.settings = settings
        self.signal = AbortSignal()
        stop.on_abort(self.signal.abort)

    def drop(self) -> None:
        """End the connection now (the page's `chat.reconnect`): `run` raises `Aborted`."""
        self.signal.abort()

    async def run(
        self,
        request: HTTPRequest,
        *,
        stream: AnswerStream | None,
        timings: Timings,
        on_text: Callable[[Text], None],
        on_response: Callable[[Response], None],
    ) -> Completion:
        """Send `request` and read its events until `Finished`: text to `on_text`, the
        response's status and headers to `on_response`; stalls said as they happen.
        Raises the stream's firsttoken errors, and `StallTimeout` past the limit."""
        session = self.session
        watch = StallWatch(self.settings.stall_notice_s, self.settings.stall_timeout_s, session.clock())
        events = stream_chat(session.transport, request, abort=self.signal, clock=session.clock,
                             timings=timings, stream=stream, stamps=session.stamps)
        read: asyncio.Future[Completion] = asyncio.ensure_future(
            self._read(events, watch, stream, on_text, on_response))
        # The moment the policy may have something new to say. Events do not move it:
        # text or bytes that come at that very moment are taken first (`within` gives
        # the reading task its step), then it is asked.
        deadline = session.clock() + watch.next_check_ms(session.clock())
        try:
            while True:
                if await within(session, read, deadline - session.clock()):
                    return read.result()  # the completion, or the stream's error
                # The deadline passed with the answer not ended: what does the silence mean now?
                now = session.clock()
                said = watch.check(now)
                if isinstance(said, Stalled):
                    session.pacer.flush(self.request_id)  # the text before the silence goes first
                    session.post_event(ChatStall(id=self.request_id, since=said.since, waiting_s=said.waiting_s,
                                                 timeout_s=self.settings.stall_timeout_s, connected=said.connected))
                elif isinstance(said, TimedOut):
                    raise await self._timed_out(read)
                deadline = now + watch.next_check_ms(now)
        finally:
            if not read.done():  # a timeout, or the request itself was cancelled
                read.cancel()

    async def _read(self, events: AsyncIterator[StreamEvent], watch: StallWatch, stream: AnswerStream | None,
                    on_text: Callable[[Text], None], on_response: Callable[[Response], None]) -> Completion:
        """The answer's events, each taken as it comes, until `Finished`'s completion."""
        async for event in events:
            if isinstance(event, Finished):  # the last event: the stream has ended
                return event.completion
            self._take(event, watch, on_text, on_response)
        # `stream_chat` ends with `Finished` or raises; an end without either is a
        # stream cut short all the same.
        raise TruncatedStream("The answer's stream ended without its end.",
                              partial=stream.partial if stream is not None else "")

    def _take(self, event: StreamEvent, watch: StallWatch, on_text: Callable[[Text], None],
              on_response: Callable[[Response], None]) -> None:
        """One event short of the last: bytes tell `watch` the connection lives, text
        that the model speaks (ending a shown stall)."""
        now = self.session.clock()
        if isinstance(event, Text):
            stalled_ms = watch.progress(now)
            if stalled_ms is not None:
                self.session.post_event(ChatStallCleared(id=self.request_id, stalled_s=round(stalled_ms / 1000.0, 3)))
            on_text(event)
        elif isinstance(event, BytesSeen):
            watch.byte(now)
        elif isinstance(event, Response):
            watch.byte(now)
            on_response(event)

    async def _timed_out(self, read: asyncio.Future[Completion]) -> StallTimeout:
        """The limit passed without a byte: abort the connection, give the read
        `ABORT_GRACE_MS` to end with it (its error carries the text taken), then cancel it."""
        self.signal.abort()
        partial = ""
        cause: BaseException | None = None
        if await within(self.session, read, ABORT_GRACE_MS) and not read.cancelled():
            cause = read.exception()
            if isinstance(cause, FirstTokenError):
                partial = cause.partial
        else:
            read.cancel()
        error = StallTimeout(f"The server sent nothing for {self.settings.stall_timeout_s:g} s.",
                             timeout_s=self.settings.stall_timeout_s, partial=partial)
        error.__cause__ = cause
        return error


#: What `ChatRequest` runs for each connection (`firsttoken.reconnect` runs it too).
RunAttempt = Callable[[HTTPRequest, Timings], Awaitable[Completion]]
