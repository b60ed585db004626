"""A lost connection's answer taken up again from the gateway's resumable stream.

A firsttoken gateway runs the answer apart from the connection and names it
(`chat.stream`; the wire names are `firsttoken.stream.resume`'s). Once it has, the
prompt is never sent again by itself: a connection lost mid-answer (a network error,
the device offline, a stream cut short, a stall past the timeout, or the page's
`chat.reconnect` after it was frozen) is followed by `chat.reconnecting` and a resume
from the last event taken, at once, then with a backoff (`RESUME_BACKOFF_S`); offline,
it waits for the page's `chat.reconnect` (sent on `online`) or `OFFLINE_RETRY_S`. The
same `AnswerStream` (in the request's dialect: the gateway numbers the events of any
dialect it relays) takes the resumed events, each once, so nothing is doubled or lost.
A gateway that no longer has the stream ends the request with `StreamGone` (the page
offers Retry). Stop cancels the stream on the gateway (`cancel`).

`StreamResumer` exists only once a stream is named, so nothing here asks whether there
is one. Each connection is run by the request (`firsttoken.attempt`), so a resumed one
is watched for stalls like the first.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .attempt import RunAttempt, wait_ms
from .cache.refs import CLIENT_HEADER
from .errors import (
    Aborted,
    FirstTokenError,
    HTTPStatusError,
    Offline,
    StallTimeout,
    StreamGone,
    TransportError,
    TruncatedStream,
)
from .protocol import ChatReconnecting
from .stream import dialects
from .stream.answer import AnswerStream
from .stream.client import AbortSignal, HTTPRequest, Timings
from .stream.resume import GONE_CODES, cancel_url, events_url
from .stream.types import Completion

if TYPE_CHECKING:
    from .session import Session
    from .settings import ChatSettings

__all__ = ["CANCEL_TIMEOUT_S", "OFFLINE_RETRY_S", "RESUME_BACKOFF_S", "StreamResumer"]

#: Waits before each resume of a lost stream while the device is online: the first at
#: once (a dropped connection on a working network: a Wi-Fi to cellular switch), then
#: backing off. Past the last, a gateway that cannot be reached ends the request with
#: the network error (about a minute in all: shorter than the gateway keeps a stream).
#: In seconds: they go out as `chat.reconnecting`'s `wait_s`.
RESUME_BACKOFF_S = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
#: Offline, the next try waits for `chat.reconnect` (the page's `online`), or this long.
OFFLINE_RETRY_S = 30.0
#: How long a cancel of the gateway's stream (on Stop) may take; it runs beside the
#: request's end, never in its way.
CANCEL_TIMEOUT_S = 10.0

# Cancels in flight, kept so that they are not collected before they finish.
_cancels: set[asyncio.Future[Any]] = set()


class StreamResumer:
    """The gateway's stream `stream_id` of request `request_id`, read by `assembly`.
    `stop` is the request's signal and `stopped` is set with it; `attempt` runs one
    connection; `client_id` is the id the stream was made with (the gateway gives a
    stream only to its maker)."""

    def __init__(
        self,
        session: Session,
        *,
        request_id: str,
        settings: ChatSettings,
        api: str,
        stream_id: str,
        client_id: str | None,
        assembly: AnswerStream,
        stop: AbortSignal,
        stopped: asyncio.Event,
        attempt: RunAttempt,
    ) -> None:
        self.session = session
        self.request_id = request_id
        self.settings = settings
        self.api = api
        self.stream_id = stream_id
        self.client_id = client_id
        self.assembly = assembly
        self.stop = stop
        self.stopped = stopped
        self.attempt = attempt
        #: Set by the page's `chat.reconnect`: a wait for the next try ends now.
        self.nudged = asyncio.Event()

    def nudge(self) -> None:
        """The page's `chat.reconnect`: the network is back or the page awake."""
        self.nudged.set()

    def lost(self, exc: FirstTokenError) -> bool:
        """Whether `exc` lost a connection whose answer the gateway still runs."""
        if self.stop.aborted:
            return False
        if isinstance(exc, Aborted):
            # Not Stop (above), and a timeout is raised as `StallTimeout`: the only other
            # end of an attempt's signal is the page's `chat.reconnect` (`Attempt.drop`).
            return True
        return isinstance(exc, (TransportError, TruncatedStream))

    async def resume(self, lost: FirstTokenError | None, timings: Timings) -> Completion:
        """Take the answer's stream up from the last event taken until it ends (`lost`:
        what lost it; None: a `chat.send` with `resume`, at once). Raises `StreamGone`
        when the gateway no longer has it, and the network error once the backoff is
        spent (both keep the whole `partial`). The connection's timings end `timings`."""
        assembly = self.assembly
        tries = 0  # consecutive failures while online
        progress_at_timeout = -1
        while True:
            if lost is not None:
                if isinstance(lost, StallTimeout):
                    # Silent for the whole timeout: a dead connection (a network switch
                    # leaves no reset behind) or a stalled server. Resumed once per
                    # event reached; silent again at the same place, it was the server.
                    if progress_at_timeout == assembly.last_event:
                        lost.partial = assembly.partial
                        raise lost
                    progress_at_timeout = assembly.last_event
                if isinstance(lost, Offline):
                    wait_s = OFFLINE_RETRY_S
                elif isinstance(lost, Aborted):
                    wait_s = 0.0  # the page asked: the network is back or the page awake
                else:
                    if tries >= len(RESUME_BACKOFF_S):
                        lost.partial = assembly.partial
                        raise lost
                    wait_s = RESUME_BACKOFF_S[tries]
                    tries += 1
                self.session.pacer.flush(self.request_id)  # the text before the loss goes first
                self.session.post_event(ChatReconnecting(
                    id=self.request_id, after=assembly.last_event, attempt=tries or 1, wait_s=wait_s,
                    reason=lost.code,
                ))
                await wait_ms(self.session, wait_s * 1000.0, self.nudged, self.stopped)
            self.stop.raise_if_aborted(assembly.partial)
            self.nudged.clear()
            taken = Timings()
            before = assembly.last_event
            try:
                completion = await self.attempt(self.request(assembly.last_event), taken)
            except HTTPStatusError as exc:
                code = str(exc.error.get("code") or "")
                if exc.status in (400, 404, 409, 410) or code in GONE_CODES:
                    raise StreamGone(
                        "The answer was cut short, and the server no longer has the rest of it.",
                        status=exc.status, partial=assembly.partial,
                    ) from exc
                if self.stop.aborted or not (exc.status >= 500 or exc.status == 429):
                    raise  # 401, 403: the key no longer works; the user must act
                lost = exc
                continue
            except FirstTokenError as exc:
                if isinstance(exc, TruncatedStream):
                    # A resume that ends cleanly without the answer's end: the gateway's
                    # stream itself ended so (its source failed); asking again would get
                    # the same. A cut connection is a network error, not this.
                    raise
                if not self.lost(exc):
                    raise
                if assembly.last_event > before:
                    tries = 0  # it got further: the backoff starts over
                lost = exc
                continue
            timings.done = taken.done
            timings.bytes += taken.bytes
            return completion

    def request(self, after: int) -> HTTPRequest:
        """The resume: the same credentials and client id as the request that started
        the stream."""
        headers = {**self._headers(), "accept": "text/event-stream"}
        return HTTPRequest("GET", events_url(self.settings.base_url, self.stream_id, after), headers, b"")

    def cancel(self) -> None:
        """Stop: the gateway stops generating (and aborts its upstream request), beside
        the request's end; a cancel that fails leaves a stream the gateway reaps."""
        request = HTTPRequest("POST", cancel_url(self.settings.base_url, self.stream_id),
                              {**self._headers(), "content-type": "application/json"}, b"{}")
        transport = self.session.transport

        async def cancel() -> None:
            signal = AbortSignal()
            try:
                # The event loop's clock, not the session's: this runs after the request
                # ended, and only bounds a network call.
                response = await asyncio.wait_for(transport.send(request, signal), CANCEL_TIMEOUT_S)
                await response.read(4096)
            except (FirstTokenError, asyncio.TimeoutError):
                signal.abort()

        task = asyncio.ensure_future(cancel())
        _cancels.add(task)
        task.add_done_callback(_cancels.discard)

    def _headers(self) -> dict[str, str]:
        settings = self.settings
        headers = dict(settings.headers)
        if self.client_id is not None:
            headers[CLIENT_HEADER] = self.client_id
        headers.update(dialects.credentials(settings, self.api))
        return headers
