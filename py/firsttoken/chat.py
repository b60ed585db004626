"""One chat request, from `chat.send` to its last event.

`ChatRequest.run` takes a conversation through, in order:

1. **prepare**: compress, count and fit it (the session's `prepare`: `firsttoken.prepare`),
   then `chat.prepared`;
2. **request**: the HTTP request, in the API dialect the settings and the model call
   for (`firsttoken.stream.dialects`), its leading system messages sent as gateway
   references where `firsttoken.cache.refs` allows;
3. **wait**: wait out an exhausted rate-limit window here (`chat.wait`) rather than in
   the server's queue (`firsttoken.ratelimit.Governor`);
4. **stream**: send and stream the answer (`firsttoken.stream.client`), each network
   chunk's text a `chat.delta` through the core's delta pacing (`firsttoken.pacing`);
5. **retry**: an attempt that failed before any text may be sent again: at once and in
   full when the gateway lost a reference; at once without the reasoning parameters
   when a 400 named one (the refusal remembered for that base URL and model for the
   core's life, with a `notice`: one retry, never a loop, and a 400 bills nothing);
   at once without the earlier turns' reasoning when a 400 refused what went back
   (`firsttoken.replay`, once, with a `notice`);
   else after the governor's backoff
   (`chat.retry`), an HTTP error or an error event that stands for one (Anthropic's
   in-stream `overloaded_error`) alike; never one that failed `offline` (the device
   has no network: the page holds the prompt until it has);
6. **end**: `chat.done` (with the calibration of the prompt's count against the
   server's, and the answer's replay parts: `firsttoken.replay`), or `chat.error`,
   whose `partial` is what arrived.

Stop (`chat.abort`) ends any step at once through the request's `AbortSignal`, and
cancels the answer's stream on the gateway (which then aborts its upstream request).

**Resume.** A firsttoken gateway runs the answer apart from the connection and names it
(`chat.stream`; `firsttoken.stream.resume`). Once it has, the prompt is never sent
again by itself: a connection lost mid-answer (a network error, the device offline, a
stream cut short, a stall past the timeout, or the page's `chat.reconnect` after it was
frozen) is followed by `chat.reconnecting` and a resume from the last event taken,
at once, then with a backoff; offline, it waits for the page's `chat.reconnect` (sent
on `online`). The same stream (`firsttoken.stream.answer`, in the request's dialect:
the gateway numbers the events of any dialect it relays) takes the resumed events, each
once, so nothing is doubled or lost. A gateway that no longer has the stream ends the request with
`stream_gone` (the page offers Retry). A `chat.send` with `resume` (a reload, a
restarted WebView) starts there.

While an attempt is out, a watch (`firsttoken.stall`, on the core's clock and sleep)
measures two silences: of text (answer or reasoning), past `stall_notice_s` a
`chat.stall` (then each whole second; `connected` when bytes, a keep-alive, came
within it; `chat.resume` when text comes again); and of bytes, past `stall_timeout_s`
the end of the attempt: it aborts the attempt's own signal (the transport's fetch)
and the request ends with `timeout`, keeping its partial text. A timeout is not retried here: the page offers
Retry, and a server that said nothing for a minute is unlikely to say more at once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable

from .cache import Entry
from .cache.refs import CLIENT_HEADER, RefPlan, is_unknown_ref
from .errors import (
    Aborted,
    FirstTokenError,
    HTTPStatusError,
    Offline,
    StallTimeout,
    StreamGone,
    TransportError,
    TruncatedStream,
    UpstreamError,
)
from .protocol import (
    ChatDelta,
    ChatDone,
    ChatError,
    ChatPrepared,
    ChatReconnecting,
    ChatResume,
    ChatRetry,
    ChatSend,
    ChatStall,
    ChatStreamed,
    ChatWait,
)
from .notices import ReasoningRefused, ReplayDropped
from .replay import about_replay, without_replay
from .stall import Stalled, StallWatch, TimedOut
from .stream.client import (
    AbortSignal,
    BytesSeen,
    HTTPRequest,
    Response,
    StreamEvent,
    Text,
    Timings,
    build_request,
    stream_chat,
)
from .stream import dialects
from .stream.answer import AnswerStream
from .stream.types import Completion
from .stream.resume import GONE_CODES, cancel_url, events_url, status_url, stream_id_of

if TYPE_CHECKING:
    from .session import Session

__all__ = ["ChatRequest"]

#: After a timeout aborted the attempt, how long its transport may take to end it
#: before the attempt's task is cancelled outright (a transport that ignores its signal
#: must not hold the request forever).
ABORT_GRACE_S = 2.0

#: Waits before each resume of a lost stream while the device is online: the first at
#: once (a dropped connection on a working network: a Wi-Fi to cellular switch), then
#: backing off. Past the last, a gateway that cannot be reached ends the request with
#: the network error (about a minute in all: shorter than the gateway keeps a stream).
RESUME_BACKOFF_S = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
#: Offline, the next try waits for `chat.reconnect` (the page's `online`), or this long.
OFFLINE_RETRY_S = 30.0
#: How long a cancel of the gateway's stream (on Stop) may take; it runs beside the
#: request's end, never in its way.
CANCEL_TIMEOUT_S = 10.0

#: Most (base URL, model) pairs remembered to refuse reasoning parameters in one core.
MAX_REFUSALS = 256

# Cancels in flight, kept so that they are not collected before they finish.
_cancels: set[asyncio.Future[Any]] = set()


class ChatRequest:
    """One `chat.send`, run with `session` (the core's transport, clock, governors,
    cache, notices, delta pacing and preparation: `firsttoken.session`). `signal` stops it."""

    def __init__(self, session: Session, send: ChatSend) -> None:
        self.session = session
        self.id = send.id
        self.messages = send.messages
        self.settings = send.settings
        #: The API dialect the request speaks (`firsttoken.stream.dialects`).
        self.api = dialects.api_for(send.settings)
        self.governor = session.governor(send.settings.base_url)
        #: Whether the request asks for the settings' reasoning: not once the server
        #: refused it for this model (`_refuses_reasoning`).
        self.reasoning = (send.settings.base_url, send.settings.model) not in session.reasoning_refused
        self.signal = AbortSignal()
        self.timings = Timings()
        #: Deltas sent so far: once there is one, the request may not be sent again.
        self.seq = 0
        self.attempt = 1
        self.plan: RefPlan | None = None
        #: The answer being assembled, kept across a resumed stream's connections.
        self.assembly: AnswerStream | None = None
        #: The gateway's resumable stream of this answer (`chat.stream`), once named.
        self.stream_id: str | None = None
        self.resume = send.resume
        if send.resume is not None:
            self.stream_id = send.resume.stream
            self.assembly = dialects.stream_for(self.api, send.settings.model, prefix=send.resume.text,
                                                after=send.resume.after)
            self.assembly.sequenced = True
        #: The current attempt's own signal, and whether the page asked to reconnect it.
        self._attempt_signal: AbortSignal | None = None
        self._reconnect_asked = False
        self._nudge = asyncio.Event()
        #: The client id sent with the request (a stream is given only to its maker).
        self._client_id: str | None = None

    async def run(self) -> None:
        """Run to the request's last event. Firsttoken errors become `chat.error`;
        anything else is a bug, which the core reports (after the text that arrived)."""
        session = self.session
        try:
            if self.resume is not None:
                await self._run_resumed()
                return
            prepared = await session.prepare(self.messages, self.settings)
            messages, lead = prepared.messages, prepared.lead
            request = await self._request(messages, lead)
            session.post_event(ChatPrepared(
                id=self.id, compression=prepared.compression, saved=prepared.saved,
                saved_unit=prepared.saved_unit, budget=prepared.budget, window_known=prepared.window_known,
                prompt_tokens=prepared.prompt_tokens, exact=prepared.exact, dropped=prepared.dropped,
                truncated=prepared.truncated, cache=prepared.cache, prepare_ms=prepared.prepare_ms,
                request_bytes=len(request.body), images_dropped=prepared.images_dropped,
            ))
            self._post_notices()
            # The count the preparation made, or its estimate without a counter (decided
            # there once: `Prepared.estimate`).
            prompt_tokens = prepared.estimate
            # The window must hold the prompt and the completion the server reserves for it.
            reserve = dialects.completion_reserve(self.settings, self.api, reasoning=self.reasoning)
            completion, request = await self._send(request, messages, lead, prompt_tokens + reserve)
            await self._done(completion, prepared.prompt_tokens, len(request.body), prepared.image_tokens)
        except FirstTokenError as exc:
            if self.signal.aborted and self.stream_id is not None:
                self._cancel_stream()
            await self._settle()
            session.pacer.flush(self.id)
            session.post_event(ChatError(id=self.id, error=exc.to_dict(), timings=self.timings.to_dict(), quota=self._quota()))
        finally:
            # Should a bug end the request (the core then reports it), its text still
            # goes out ahead of that report.
            session.pacer.flush(self.id)

    async def _identity(self) -> str | None:
        """Our client id, for a gateway known to take it (`firsttoken.cache.refs`)."""
        session = self.session
        if session.cache is not None and session.refs.identifies(self.settings.base_url):
            return await session.cache.client_id()
        return None

    async def _run_resumed(self) -> None:
        """A `chat.send` with `resume`: the answer a previous core started (before a
        reload) goes on from its stream; nothing is prepared or sent again."""
        self._client_id = await self._identity()
        await self._done(await self._resumed(None), None, 0)

    async def _done(self, completion: Completion, estimate: int | None, request_bytes: int, images: int = 0) -> None:
        """`chat.done`, once background work ended and the held text went out; `images`:
        the estimate's image tokens, which the calibration learns apart from the text."""
        session = self.session
        await self._settle()
        session.pacer.flush(self.id)
        actual = (completion.usage or {}).get("prompt_tokens")
        session.post_event(
            ChatDone(
                id=self.id,
                finish_reason=completion.finish_reason,
                usage=completion.usage,
                timings=self.timings.to_dict(),
                quota=self._quota(),
                attempts=self.attempt,
                prompt=session.calibration.compare(self.settings.model, estimate, actual, images),
                request_bytes=request_bytes,
                replay={"api": self.api, "model": self.settings.model, "items": list(completion.replay)}
                if completion.replay else None,
            )
        )

    async def _send(
        self, request: HTTPRequest, messages: list[dict[str, Any]], lead: list[Entry], estimate: int
    ) -> tuple[Completion, HTTPRequest]:
        """Send until an attempt answers; returns the answer and the request that got it."""
        resent = replay_dropped = False
        while True:
            # Wait out an exhausted window here rather than in the server's queue.
            wait = self.governor.wait_before(estimate, self._now())
            if wait > 0:
                self.session.post_event(ChatWait(id=self.id, wait_s=round(wait, 3), reason="rate_limit", quota=self._quota()))
                await self._pause(wait)
            self.timings = Timings()
            self.assembly = dialects.stream_for(self.api, self.settings.model)
            try:
                completion = await self._watched(request)
                return completion, request
            except FirstTokenError as exc:
                if self._lost(exc):
                    # The gateway runs the answer on: take its stream up again, never
                    # the prompt (billed once).
                    return await self._resumed(exc), request
                # An error event that stands for an HTTP status (Anthropic's in-stream
                # `overloaded_error`: a 529) is retried as that status would be.
                said_status = isinstance(exc, UpstreamError) and exc.status is not None
                if isinstance(exc, (StallTimeout, Offline)) or not (
                    isinstance(exc, (HTTPStatusError, TransportError)) or said_status
                ):
                    # Offline: no attempt is spent while the device has no network; the
                    # page keeps the prompt in its outbox until `online`.
                    raise
                # Only a request that showed nothing may be sent again: a retry after
                # text arrived would paint the answer twice.
                if self.seq or self.signal.aborted:
                    raise
                if request.headers.get("content-encoding") == "gzip" and getattr(exc, "status", None) == 415:
                    # A server that does not take a gzipped body: the same request plain,
                    # at once, and plain to it from then on.
                    self.session.refs.refuse_gzip(self.settings.base_url)
                    request = await self._request(messages, lead)
                    continue
                if self._refuses_reasoning(exc):
                    # The model does not take the reasoning parameters: the same request
                    # without them, at once (a 400 bills nothing), and never again.
                    request = await self._request(messages, lead)
                    continue
                if not replay_dropped and isinstance(exc, HTTPStatusError) and exc.status == 400 \
                        and about_replay(exc.error):
                    # What went back of earlier reasoning was refused (a signature from
                    # another key): once without it, so that the conversation goes on.
                    without = without_replay(messages)
                    if without is not None:
                        messages, replay_dropped = without, True
                        self.session.post_event(ReplayDropped(message=(
                            "The earlier answers' reasoning was refused by the server and was left out"
                            f" ({exc.message})")).to_event(self.id))
                        request = await self._request(messages, lead)
                        continue
                if self.plan is not None and self.plan.refs and not resent and is_unknown_ref(exc):
                    # The gateway lost what we referred to (a restart, an eviction): send
                    # the text once, which it stores again. No backoff: nothing is
                    # overloaded.
                    self.session.refs.forget(self.settings.base_url, list(self.plan.refs.values()))
                    request = await self._request(messages, lead, full=True)
                    resent = True
                    continue
                status = exc.status if isinstance(exc, (HTTPStatusError, UpstreamError)) else None
                headers = exc.headers if isinstance(exc, HTTPStatusError) else {}
                delay = self.governor.retry_delay(self.attempt, status, headers, self._now())
                if delay is None:
                    raise
                self.session.post_event(
                    ChatRetry(id=self.id, attempt=self.attempt, status=status, wait_s=round(delay, 3),
                              error=exc.to_dict(), quota=self._quota())
                )
                await self._pause(delay)
                self.attempt += 1

    def _refuses_reasoning(self, exc: FirstTokenError) -> bool:
        """Whether `exc` is a 400 naming a reasoning parameter this request sent; if so,
        the refusal is remembered (for this base URL and model, bounded), the page told,
        and the request asks no more."""
        if not (self.reasoning and isinstance(exc, HTTPStatusError) and exc.status == 400):
            return False
        settings = self.settings
        if not dialects.reasoning_refused(exc.error, self.api, dialects.reasoning_fields(settings, self.api)):
            return False
        self.reasoning = False
        refused = self.session.reasoning_refused
        if len(refused) < MAX_REFUSALS:
            refused.add((settings.base_url, settings.model))
        # Told at once, with this request: the retry goes out now.
        self.session.post_event(ReasoningRefused(
            reason=str(exc.error.get("param") or "") or None,
            message=f"{settings.model} does not take the Thinking setting here; it was sent without it"
                    f" ({exc.message})",
        ).to_event(self.id))
        return True

    async def _watched(self, request: HTTPRequest, timings: Timings | None = None) -> Completion:
        """One attempt, under a watch over its silences (`chat.stall`, `timeout`). The
        attempt has its own signal, which Stop aborts too, so that a timeout can end
        the fetch without being taken for Stop."""
        session = self.session
        signal = AbortSignal()
        self.signal.on_abort(signal.abort)
        self._attempt_signal = signal
        self._reconnect_asked = False
        settings = self.settings
        watch = StallWatch(settings.stall_notice_s, settings.stall_timeout_s, session.clock())
        events = stream_chat(session.transport, request, abort=signal, clock=session.clock,
                             timings=timings or self.timings, stream=self.assembly)
        attempt = asyncio.ensure_future(self._until_cancelled(self._take(events, watch), watch))
        watcher = asyncio.ensure_future(self._watch(attempt, watch, signal))
        try:
            return await attempt
        except StallTimeout:
            raise
        except FirstTokenError as exc:
            if watch.timed_out and not self.signal.aborted:
                raise StallTimeout(self._timeout_message(), timeout_s=settings.stall_timeout_s,
                                   partial=exc.partial) from exc
            raise
        finally:
            watcher.cancel()
            if not attempt.done():  # this request itself was cancelled
                attempt.cancel()
            self._attempt_signal = None

    async def _take(self, events: AsyncIterator[StreamEvent], watch: StallWatch) -> Completion:
        """One attempt's events as they come: any bytes (headers included) tell `watch`
        the connection is alive, and text that the model speaks; text goes to the
        page, the response's headers to the rate-limit governor and the gateway's
        references."""
        completion: Completion | None = None
        async for event in events:
            if isinstance(event, Text):
                self._spoke(watch)
                self.seq += 1
                self.session.pacer.delta(ChatDelta(
                    id=self.id, seq=self.seq, text=event.text, t=self.session.clock(),
                    reasoning=event.reasoning, stamps=event.sent_ms, event=event.event,
                ))
            elif isinstance(event, BytesSeen):
                watch.byte(self.session.clock())
            elif isinstance(event, Response):
                watch.byte(self.session.clock())
                self._response(event)
            else:
                completion = event.completion
        assert completion is not None  # `Finished` is the last event of a stream that ends
        return completion

    # ---- a lost stream, taken up again -------------------------------------------------

    def reconnect(self) -> None:
        """The page's `chat.reconnect`: its connection may be dead (the page was frozen)
        or the network is back. An attempt in flight is dropped and resumed; a wait for
        the next try ends now. Nothing happens without a stream to resume."""
        if self.stream_id is None or self.signal.aborted:
            return
        self._nudge.set()
        if self._attempt_signal is not None:
            self._reconnect_asked = True
            self._attempt_signal.abort()

    def _lost(self, exc: FirstTokenError) -> bool:
        """Whether `exc` lost a connection whose answer the gateway still runs."""
        if self.stream_id is None or self.signal.aborted:
            return False
        if isinstance(exc, Aborted):
            return self._reconnect_asked  # dropped on the page's word, not Stop
        return isinstance(exc, (TransportError, TruncatedStream))

    async def _resumed(self, lost: FirstTokenError | None) -> Completion:
        """Take the answer's stream up from the last event taken until it ends: at once,
        then after `RESUME_BACKOFF_S`; offline, on `chat.reconnect`. Raises `StreamGone`
        when the gateway no longer has it, and the network error once the backoff is
        spent (both keep the whole `partial`)."""
        assert self.stream_id is not None and self.assembly is not None
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
                offline = isinstance(lost, Offline)
                if offline:
                    wait = OFFLINE_RETRY_S
                elif isinstance(lost, Aborted):
                    wait = 0.0  # the page asked: the network is back or the page awake
                else:
                    if tries >= len(RESUME_BACKOFF_S):
                        lost.partial = assembly.partial
                        raise lost
                    wait = RESUME_BACKOFF_S[tries]
                    tries += 1
                self.session.pacer.flush(self.id)  # the text before the loss goes first
                self.session.post_event(ChatReconnecting(
                    id=self.id, after=assembly.last_event, attempt=tries or 1, wait_s=wait, reason=lost.code,
                ))
                await self._wait_or_nudge(wait)
            self.signal.raise_if_aborted(assembly.partial)
            self._nudge.clear()
            request = self._resume_request(assembly.last_event)
            timings = Timings()
            before = assembly.last_event
            try:
                completion = await self._watched(request, timings)
            except HTTPStatusError as exc:
                code = str(exc.error.get("code") or "")
                if exc.status in (400, 404, 409, 410) or code in GONE_CODES:
                    raise StreamGone(
                        "The answer was cut short, and the server no longer has the rest of it.",
                        status=exc.status, partial=assembly.partial,
                    ) from exc
                if self.signal.aborted:
                    raise
                lost = exc if exc.status >= 500 or exc.status == 429 else None
                if lost is None:
                    raise  # 401, 403: the key no longer works; the user must act
                continue
            except FirstTokenError as exc:
                if isinstance(exc, TruncatedStream):
                    # A resume that ends cleanly without the answer's end: the gateway's
                    # stream itself ended so (its source failed); asking again would get
                    # the same. A cut connection is a network error, not this.
                    raise
                if not self._lost(exc):
                    raise
                if assembly.last_event > before:
                    tries = 0  # it got further: the backoff starts over
                lost = exc
                continue
            self.timings.done = timings.done
            self.timings.bytes += timings.bytes
            return completion

    def _resume_request(self, after: int) -> HTTPRequest:
        """The resume: the same credentials and client id as the request that started
        the stream (the gateway gives a stream only to whoever made it)."""
        assert self.stream_id is not None
        headers = {**self._stream_headers(), "accept": "text/event-stream"}
        return HTTPRequest("GET", events_url(self.settings.base_url, self.stream_id, after), headers, b"")

    def _stream_headers(self) -> dict[str, str]:
        settings = self.settings
        headers = dict(settings.headers)
        if self._client_id is not None:
            headers[CLIENT_HEADER] = self._client_id
        headers.update(dialects.credentials(settings, self.api))
        return headers

    async def _wait_or_nudge(self, seconds: float) -> None:
        """Wait `seconds`, or until `chat.reconnect`, or Stop (in short steps)."""
        deadline = self.session.clock() + seconds * 1000.0
        while not self.signal.aborted and not self._nudge.is_set():
            left = (deadline - self.session.clock()) / 1000.0
            if left <= 0:
                break
            await self.session.sleep(min(left, 0.1))

    def _cancel_stream(self) -> None:
        """Stop: the gateway stops generating (and aborts its upstream request), beside
        the request's end; a cancel that fails leaves a stream the gateway reaps."""
        assert self.stream_id is not None
        request = HTTPRequest("POST", cancel_url(self.settings.base_url, self.stream_id),
                              {**self._stream_headers(), "content-type": "application/json"}, b"{}")

        async def cancel() -> None:
            signal = AbortSignal()
            try:
                response = await asyncio.wait_for(self.session.transport.send(request, signal), CANCEL_TIMEOUT_S)
                await response.read(4096)
            except (FirstTokenError, asyncio.TimeoutError):
                signal.abort()

        task = asyncio.ensure_future(cancel())
        _cancels.add(task)
        task.add_done_callback(_cancels.discard)

    async def _until_cancelled(self, attempt: Awaitable[Completion], watch: StallWatch) -> Completion:
        # The watch cancels an attempt only after a timeout: that ends it as a timeout
        # (the text before it went out as deltas already).
        try:
            return await attempt
        except asyncio.CancelledError:
            if not watch.timed_out:
                raise
            raise StallTimeout(self._timeout_message(), timeout_s=self.settings.stall_timeout_s) from None

    async def _watch(self, attempt: asyncio.Future[Completion], watch: StallWatch, signal: AbortSignal) -> None:
        """Ask `watch`, when it says something may be new, what the silence means: a
        `chat.stall`, or past the limit the end of `attempt` (its signal, then after
        `ABORT_GRACE_S` the task)."""
        session = self.session
        # An attempt that needs no waiting (canned, or an answer already buffered) ends
        # in its first step, before this one's: no tick is spent on it.
        await asyncio.sleep(0)
        while not attempt.done():
            await session.sleep(watch.next_check_s(session.clock()))
            await asyncio.sleep(0)  # a fake sleep may not yield: let the attempt run
            if attempt.done():
                return
            said = watch.check(session.clock())
            if isinstance(said, Stalled):
                session.pacer.flush(self.id)  # the text before the silence goes first
                session.post_event(ChatStall(id=self.id, since=said.since, waiting_s=said.waiting_s,
                                          timeout_s=self.settings.stall_timeout_s, connected=said.connected))
            elif isinstance(said, TimedOut):  # `watch.timed_out`: however it ends, a timeout
                signal.abort()
                deadline = session.clock() + ABORT_GRACE_S * 1000.0
                while not attempt.done() and session.clock() < deadline:
                    await session.sleep(0.1)
                    await asyncio.sleep(0)
                attempt.cancel()
                return

    def _spoke(self, watch: StallWatch) -> None:
        stalled_s = watch.progress(self.session.clock())
        if stalled_s is not None:
            self.session.post_event(ChatResume(id=self.id, stalled_s=round(stalled_s, 3)))

    def _timeout_message(self) -> str:
        return f"The server sent nothing for {self.settings.stall_timeout_s:g} s."

    async def _request(self, messages: list[dict[str, Any]], lead: list[Entry], *, full: bool = False) -> HTTPRequest:
        """The HTTP request, with leading system messages as gateway references where
        `firsttoken.cache.refs` allows (never to a server not known to take them);
        `full`: none (the re-send after an unknown reference)."""
        session, base_url = self.session, self.settings.base_url
        client_id = await self._identity()
        self.plan = session.refs.plan(base_url, lead, client_id, full=full)
        self._client_id = self.plan.headers.get(CLIENT_HEADER)
        return build_request(messages, self.settings, api=self.api, refs=self.plan.refs, headers=self.plan.headers,
                             gateway=session.refs.capable(base_url), gzip=session.refs.takes_gzip(base_url),
                             reasoning=self.reasoning)

    def _response(self, response: Response) -> None:
        status, headers = response.status, response.headers
        if self.stream_id is not None:
            return  # a resume: its headers are the gateway's, not the model's
        self.governor.observe(status, headers, self._now())
        self.session.refs.observe(self.settings.base_url, status, headers, self.plan)
        if 200 <= status < 300:
            stream_id = stream_id_of(headers)
            if stream_id is not None:
                self.stream_id = stream_id
                self.session.post_event(ChatStreamed(
                    id=self.id, stream=stream_id, status_url=status_url(self.settings.base_url, stream_id),
                    client=self._client_id or "",
                ))

    def _now(self) -> float:
        return self.session.clock() / 1000.0

    def _quota(self) -> dict[str, Any]:
        return self.governor.quota(self._now())

    async def _pause(self, seconds: float) -> None:
        """Wait `seconds`, in short steps so that Stop ends the wait at once."""
        deadline = self.session.clock() + seconds * 1000.0
        while not self.signal.aborted:
            left = (deadline - self.session.clock()) / 1000.0
            if left <= 0:
                break
            await self.session.sleep(min(left, 0.1))
        self.signal.raise_if_aborted()

    def _post_notices(self) -> None:
        for notice in self.session.notices.take(self.id):
            self.session.post_event(notice)

    async def _settle(self) -> None:
        # Background cache writes end before the request does (each is time-bounded),
        # so that a failure they meet is reported with this request.
        if self.session.cache is not None:
            await self.session.cache.settle()
        self._post_notices()
