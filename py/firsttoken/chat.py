"""One chat request, from `chat.send` to its last event.

`ChatRequest.run` takes a conversation through, in order:

1. **prepare**: compress, count and fit it (the core's preparation, `Core._prepare`),
   then `chat.prepared`;
2. **request**: the HTTP request, its leading system messages sent as gateway
   references where `firsttoken.cache.refs` allows;
3. **pacing**: wait out an exhausted rate-limit window here (`chat.wait`) rather than in
   the server's queue (`firsttoken.ratelimit.Governor`);
4. **stream**: send and stream the answer (`firsttoken.stream.client`), each network
   chunk's text a `chat.delta` through the core's flow control (`firsttoken.flow`);
5. **retry**: an attempt that failed before any text may be sent again: at once and in
   full when the gateway lost a reference, else after the governor's backoff
   (`chat.retry`);
6. **end**: `chat.done` (with the calibration of the prompt's count against the
   server's), or `chat.error`, whose `partial` is what arrived.

Stop (`chat.abort`) ends any step at once through the request's `AbortSignal`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from .cache import Entry
from .cache.refs import RefPlan, is_unknown_ref
from .errors import FirstTokenError, HTTPStatusError, TransportError
from .protocol import ChatDelta, ChatDone, ChatError, ChatPrepared, ChatRetry, ChatSend, ChatWait
from .stream.client import AbortSignal, HTTPRequest, Timings, build_request, stream_chat
from .stream.completions import Completion
from .tokens import estimate_tokens

if TYPE_CHECKING:
    from .core import Core

__all__ = ["ChatRequest"]


class ChatRequest:
    """One `chat.send`, run by `core` (whose transport, clock, governors, cache, notices
    and flow control it uses). `signal` stops it."""

    def __init__(self, core: Core, send: ChatSend) -> None:
        self.core = core
        self.id = send.id
        self.messages = send.messages
        self.settings = send.settings
        self.governor = core.governor(send.settings.base_url)
        self.signal = AbortSignal()
        self.timings = Timings()
        #: Deltas sent so far: once there is one, the request may not be sent again.
        self.seq = 0
        self.attempt = 1
        self.plan: RefPlan | None = None

    async def run(self) -> None:
        """Run to the request's last event. Firsttoken errors become `chat.error`;
        anything else is a bug, which the core reports (after the text that arrived)."""
        core = self.core
        try:
            messages, prepared, lead = await core._prepare(self.messages, self.settings)
            request = await self._request(messages, lead)
            event = ChatPrepared(id=self.id, **prepared, request_bytes=len(request.body))
            core.post_event(event)
            self._post_notices()
            prompt_tokens = event.prompt_tokens
            if prompt_tokens is None:
                prompt_tokens = estimate_tokens(messages, self.settings.model)
            completion, request = await self._send(request, messages, lead, prompt_tokens + (self.settings.max_tokens or 0))
            await self._settle()
            core.pacer.flush(self.id)
            actual = (completion.usage or {}).get("prompt_tokens")
            core.post_event(
                ChatDone(
                    id=self.id,
                    finish_reason=completion.finish_reason,
                    usage=completion.usage,
                    timings=self.timings.to_dict(),
                    quota=self._quota(),
                    attempts=self.attempt,
                    prompt=core.calibration.compare(self.settings.model, event.prompt_tokens, actual),
                    request_bytes=len(request.body),
                )
            )
        except FirstTokenError as exc:
            await self._settle()
            core.pacer.flush(self.id)
            core.post_event(ChatError(id=self.id, error=exc.to_dict(), timings=self.timings.to_dict(), quota=self._quota()))
        finally:
            # Should a bug end the request (the core then reports it), its text still
            # goes out ahead of that report.
            core.pacer.flush(self.id)

    async def _send(
        self, request: HTTPRequest, messages: list[dict[str, Any]], lead: list[Entry], estimate: int
    ) -> tuple[Completion, HTTPRequest]:
        """Send until an attempt answers; returns the answer and the request that got it."""
        resent = False
        while True:
            # Wait out an exhausted window here rather than in the server's queue.
            wait = self.governor.wait_before(estimate, self._now())
            if wait > 0:
                self.core.post_event(ChatWait(id=self.id, wait_s=round(wait, 3), reason="rate_limit", quota=self._quota()))
                await self._pause(wait)
            self.timings = Timings()
            try:
                completion = await stream_chat(
                    self.core.transport, request, abort=self.signal, on_text=self._on_text,
                    clock=self.core.clock, timings=self.timings, on_response=self._on_response,
                )
                return completion, request
            except (HTTPStatusError, TransportError) as exc:
                # Only a request that showed nothing may be sent again: a retry after
                # text arrived would paint the answer twice.
                if self.seq or self.signal.aborted:
                    raise
                if self.plan is not None and self.plan.refs and not resent and is_unknown_ref(exc):
                    # The gateway lost what we referred to (a restart, an eviction): send
                    # the text once, which it stores again. No backoff: nothing is
                    # overloaded.
                    self.core.refs.forget(self.settings.base_url, list(self.plan.refs.values()))
                    request = await self._request(messages, lead, full=True)
                    resent = True
                    continue
                status = exc.status if isinstance(exc, HTTPStatusError) else None
                headers = exc.headers if isinstance(exc, HTTPStatusError) else {}
                delay = self.governor.retry_delay(self.attempt, status, headers, self._now())
                if delay is None:
                    raise
                self.core.post_event(
                    ChatRetry(id=self.id, attempt=self.attempt, status=status, wait_s=round(delay, 3),
                              error=exc.to_dict(), quota=self._quota())
                )
                await self._pause(delay)
                self.attempt += 1

    async def _request(self, messages: list[dict[str, Any]], lead: list[Entry], *, full: bool = False) -> HTTPRequest:
        """The HTTP request, with leading system messages as gateway references where
        `firsttoken.cache.refs` allows (never to a server not known to take them);
        `full`: none (the re-send after an unknown reference)."""
        core, base_url = self.core, self.settings.base_url
        client_id = None
        if core.cache is not None and core.refs.identifies(base_url):
            client_id = await core.cache.client_id()
        self.plan = core.refs.plan(base_url, lead, client_id, full=full)
        return build_request(messages, self.settings, refs=self.plan.refs, headers=self.plan.headers)

    def _on_text(self, text: str, reasoning: str, sent_ms: list[float]) -> None:
        self.seq += 1
        delta = ChatDelta(id=self.id, seq=self.seq, text=text, t=self.core.clock(), reasoning=reasoning, stamps=sent_ms)
        self.core.pacer.delta(delta)

    def _on_response(self, status: int, headers: Mapping[str, str]) -> None:
        self.governor.observe(status, headers, self._now())
        self.core.refs.observe(self.settings.base_url, status, headers, self.plan)

    def _now(self) -> float:
        return self.core.clock() / 1000.0

    def _quota(self) -> dict[str, Any]:
        return self.governor.quota(self._now())

    async def _pause(self, seconds: float) -> None:
        """Wait `seconds`, in short steps so that Stop ends the wait at once."""
        deadline = self.core.clock() + seconds * 1000.0
        while not self.signal.aborted:
            left = (deadline - self.core.clock()) / 1000.0
            if left <= 0:
                break
            await self.core.sleep(min(left, 0.1))
        self.signal.raise_if_aborted()

    def _post_notices(self) -> None:
        for notice in self.core.notices.take(self.id):
            self.core.post_event(notice)

    async def _settle(self) -> None:
        # Background cache writes end before the request does (each is time-bounded),
        # so that a failure they meet is reported with this request.
        if self.core.cache is not None:
            await self.core.cache.settle()
        self._post_notices()
