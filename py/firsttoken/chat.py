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

**The seams.** Each connection is one `firsttoken.attempt.Attempt`: one loop over the
client's typed events, each read awaited under the stall policy's deadline
(`firsttoken.stall`): `chat.stall` while text is silent past `stall_notice_s`,
`chat.stall.cleared` when it comes again, and past `stall_timeout_s` without a byte the
attempt's own signal aborted and the request ended with `timeout`, keeping its partial
text. A timeout is not retried here: the page offers Retry, and a server that said
nothing for a minute is unlikely to say more at once. Once the gateway names the
answer's stream (`chat.stream`), a lost connection is taken up again by
`firsttoken.reconnect.StreamResumer`, never sent again; a `chat.send` with `resume` (a
reload, a restarted WebView) starts there. Every wait (a rate-limit window, a retry's
backoff) is one `attempt.wait_ms` on the session's clock that Stop ends at once; the
clock is in milliseconds (`firsttoken.session` says why), seconds only at the edges.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .attempt import Attempt, wait_ms
from .cache import Entry
from .cache.refs import CLIENT_HEADER, RefPlan, is_unknown_ref
from .errors import (
    FirstTokenError,
    HTTPStatusError,
    Offline,
    StallTimeout,
    TransportError,
    UpstreamError,
)
from .notices import ReasoningRefused, ReplayDropped
from .prepare.preparer import decide
from .protocol import (
    ChatDelta,
    ChatDone,
    ChatError,
    ChatPrepared,
    ChatRetry,
    ChatSend,
    ChatStreamed,
    ResumeFrom,
    ChatWait,
)
from .reconnect import StreamResumer
from .replay import about_replay, without_replay
from .stream import dialects
from .stream.answer import AnswerStream
from .stream.client import AbortSignal, HTTPRequest, Response, Text, Timings, build_request
from .stream.resume import status_url, stream_id_of
from .stream.types import Completion

if TYPE_CHECKING:
    from .session import Session

__all__ = ["ChatRequest"]

#: Most (base URL, model) pairs remembered to refuse reasoning parameters in one core.
MAX_REFUSALS = 256


class ChatRequest:
    """One `chat.send`, run with `session` (the core's transport, clock, governors,
    cache, notices, delta pacing and preparation: `firsttoken.session`). `signal` stops it."""

    def __init__(self, session: Session, send: ChatSend) -> None:
        self.session = session
        self.id = send.id
        self.messages = send.messages
        self.settings = send.settings
        #: What its preparation depends on, decided once, here, and handed to it
        #: (`firsttoken.prepare.preparer.decide`): among them the API dialect the request
        #: speaks (`firsttoken.stream.dialects`), which a resumed answer needs unprepared.
        self.decided = decide(send.settings)
        self.api = self.decided.api
        self.governor = session.governor(send.settings.base_url)
        #: Whether the request asks for the settings' reasoning: not once the server
        #: refused it for this model (`_refuses_reasoning`).
        self.reasoning = (send.settings.base_url, send.settings.model) not in session.reasoning_refused
        self.signal = AbortSignal()
        #: Set with `signal`: what every wait of this request also waits for.
        self.stopped = asyncio.Event()
        self.signal.on_abort(self.stopped.set)
        self.timings = Timings()
        #: Deltas sent so far: once there is one, the request may not be sent again.
        self.seq = 0
        self.attempt = 1
        self.plan: RefPlan | None = None
        self.resume = send.resume
        #: The answer being assembled, kept across a resumed stream's connections.
        self.assembly: AnswerStream = dialects.stream_for(self.api, send.settings.model)
        if send.resume is not None:
            self.assembly = dialects.stream_for(self.api, send.settings.model, prefix=send.resume.text,
                                                after=send.resume.after, thinking=send.resume.thinking)
            self.assembly.sequenced = True
        #: The gateway's resumable stream of this answer, once named (`chat.stream`).
        self.resumer: StreamResumer | None = None
        #: The connection in flight, which the page's `chat.reconnect` may drop.
        self._connection: Attempt | None = None
        #: The client id sent with the request (a stream is given only to its maker).
        self._client_id: str | None = None

    async def run(self) -> None:
        """Run to the request's last event. Firsttoken errors become `chat.error`;
        anything else is a bug, which the core reports (after the text that arrived)."""
        session = self.session
        try:
            if self.resume is not None:
                await self._run_resumed(self.resume)
                return
            prepared = await session.prepare(self.messages, self.settings, self.decided)
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
            if self.signal.aborted and self.resumer is not None:
                self.resumer.cancel()
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

    async def _run_resumed(self, resume: ResumeFrom) -> None:
        """A `chat.send` with `resume`: the answer a previous core started (before a
        reload) goes on from its stream; nothing is prepared or sent again."""
        self._client_id = await self._identity()
        self.resumer = self._resumer(resume.stream)
        await self._done(await self.resumer.resume(None, self.timings), None, 0)

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
            wait = self.governor.wait_before(estimate, self._now_s())
            if wait > 0:
                self.session.post_event(ChatWait(id=self.id, wait_s=round(wait, 3), reason="rate_limit", quota=self._quota()))
                await self._pause(wait)
            self.timings = Timings()
            self.assembly = dialects.stream_for(self.api, self.settings.model)
            try:
                completion = await self._connect(request, self.timings)
                return completion, request
            except FirstTokenError as exc:
                if self.resumer is not None and self.resumer.lost(exc):
                    # The gateway runs the answer on: take its stream up again, never
                    # the prompt (billed once).
                    return await self.resumer.resume(exc, self.timings), request
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
                delay = self.governor.retry_delay(self.attempt, status, headers, self._now_s())
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

    async def _connect(self, request: HTTPRequest, timings: Timings) -> Completion:
        """One connection (`firsttoken.attempt`), which `reconnect` may drop."""
        connection = self._connection = Attempt(self.session, self.id, self.settings, self.signal)
        try:
            return await connection.run(request, stream=self.assembly, timings=timings,
                                        on_text=self._text, on_response=self._response)
        finally:
            self._connection = None

    def _text(self, text: Text) -> None:
        """One network chunk's text to the page, through the delta pacing."""
        self.seq += 1
        self.session.pacer.delta(ChatDelta(
            id=self.id, seq=self.seq, text=text.text, t=self.session.clock(),
            reasoning=text.reasoning, stamps=text.sent_ms, event=text.event,
        ))

    def reconnect(self) -> None:
        """The page's `chat.reconnect`: its connection may be dead (the page was frozen)
        or the network is back. A connection in flight is dropped and resumed; a wait
        for the next try ends now. Nothing happens without a stream to resume."""
        if self.resumer is None or self.signal.aborted:
            return
        self.resumer.nudge()
        if self._connection is not None:
            self._connection.drop()

    def _resumer(self, stream_id: str) -> StreamResumer:
        return StreamResumer(
            self.session, request_id=self.id, settings=self.settings, api=self.api, stream_id=stream_id,
            client_id=self._client_id, assembly=self.assembly, stop=self.signal, stopped=self.stopped,
            attempt=self._connect,
        )

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
        if self.resumer is not None:
            return  # a resume: its headers are the gateway's, not the model's
        self.governor.observe(status, headers, self._now_s())
        self.session.refs.observe(self.settings.base_url, status, headers, self.plan)
        if 200 <= status < 300:
            stream_id = stream_id_of(headers)
            if stream_id is not None:
                self.resumer = self._resumer(stream_id)
                self.session.post_event(ChatStreamed(
                    id=self.id, stream=stream_id, status_url=status_url(self.settings.base_url, stream_id),
                    client=self._client_id or "",
                ))

    def _now_s(self) -> float:
        # The governor reads HTTP's rate-limit headers, which speak seconds: the edge.
        return self.session.clock() / 1000.0

    def _quota(self) -> dict[str, Any]:
        return self.governor.quota(self._now_s())

    async def _pause(self, seconds: float) -> None:
        """Wait `seconds` (the governor's), or until Stop, which raises."""
        await wait_ms(self.session, seconds * 1000.0, self.stopped)
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
