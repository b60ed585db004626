"""The core: protocol messages in, protocol events out.

`Core.handle` takes one raw message (JSON text) and answers through `post`. It knows
nothing of workers or WebViews: `firsttoken.browser` wires it to PyScript's worker
channel, tests wire it to a list and a socket transport. Each `chat.send` runs until its
answer is complete; the adapter runs each `handle` call as its own task so that a
`chat.abort` can arrive while a reply streams.
"""

from __future__ import annotations

import platform
import sys
from typing import Any, Awaitable, Callable

from . import __version__
from .cache.prepare import leading_system_count, prepare_with_cache
from .cache.refs import GatewayRefs, RefPlan, is_unknown_ref
from .cache import Cache, Entry
from .stream.client import AbortSignal, ChatSettings, HTTPRequest, Timings, Transport, build_request, stream_chat
from .errors import FirstTokenError, HTTPStatusError, InvalidMessage, TransportError
from .protocol import PROTOCOL_VERSION, encode, parse_message
from .compress import compress_messages
from .ratelimit import Governor
from . import tokens

__all__ = ["Core"]


class Core:
    def __init__(
        self,
        *,
        post: Callable[[str], Any],
        transport: Transport,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[Any]],
        boot: dict[str, Any] | None = None,
        governor: Callable[[], Governor] = Governor,
        prepare_encoder: Callable[[str], Awaitable[Any]] | None = None,
        cache: Cache | None = None,
        page_origin: str | None = None,
    ) -> None:
        self.prepare_encoder = prepare_encoder
        # Prepared system messages (firsttoken.cache) and what each gateway holds of them
        # (firsttoken.cache.refs). `page_origin`: where the page came from, whose
        # gateway may be sent our client id before it has answered once.
        self.cache = cache
        self.refs = GatewayRefs(page_origin)
        self._notices: list[dict[str, Any]] = []
        self._estimating = False  # counting failed and the user was told (once a session)
        if cache is not None and cache.on_notice is None:
            cache.on_notice = self._notices.append
        self.calibration = tokens.Calibration()
        self.post = post
        self.transport = transport
        self.clock = clock
        self.sleep = sleep
        self.boot = boot or {}
        self._new_governor = governor
        self._governors: dict[str, Governor] = {}
        self._active: dict[str, AbortSignal] = {}
        self._pacer = _DeltaPacer(lambda text: self.post(text))

    async def handle(self, raw: str | dict[str, Any]) -> None:
        """Handle one message. Never raises: every failure becomes an event."""
        request_id = None
        try:
            if isinstance(raw, dict):
                request_id = raw.get("id") if isinstance(raw.get("id"), str) else None
            msg = parse_message(raw)
            request_id = msg.get("id")
            kind = msg["type"]
            if kind == "hello":
                self._pacer.enabled = msg.get("flow") is True
                self.post(encode("ready", request_id, **self._hello()))
            elif kind == "delta.ack":
                self._pacer.ack()
            elif kind == "ping":
                self.post(encode("pong", request_id, t=self.clock()))
            elif kind == "chat.abort":
                signal = self._active.get(request_id)  # type: ignore[arg-type]
                if signal is not None:
                    signal.abort()
            elif kind == "chat.send":
                await self._chat(msg)
            elif kind == "tokens.count":
                await self._count(msg)
        except InvalidMessage as exc:
            self.post(encode("error", request_id, error=exc.to_dict()))
        except Exception as exc:  # noqa: BLE001 - the core must outlive any bug
            error = {"code": "internal", "message": f"{type(exc).__name__}: {exc}", "partial": ""}
            self.post(encode("error", request_id, error=error))

    def _hello(self) -> dict[str, Any]:
        return {
            "protocol": PROTOCOL_VERSION,
            "versions": {
                "firsttoken": __version__,
                "python": platform.python_version(),
                "platform": sys.platform,
            },
            "boot": self.boot,
        }

    async def _counter(self, model: str) -> Callable[[str], int] | None:
        """An exact counter for `model`'s encoding, or None when none can be had (the
        page loads its encoder on first use, and tries again on the next if that failed).
        Without one, counts are estimates and the cache is off (its entries hold exact
        counts): never silently, a `tokens_estimated` notice says so once a session."""
        encoding, _ = tokens.encoding_for_model(model)
        try:
            if self.prepare_encoder is not None:
                await self.prepare_encoder(encoding)
            tokens.count("", encoding)
        except Exception as exc:  # noqa: BLE001 - counting is an aid: sending must not fail on it
            if not self._estimating:
                self._estimating = True
                self._notices.append(counting_notice(exc, cache=self.cache is not None))
            return None
        return lambda text: tokens.count(text, encoding)

    async def _prepare(
        self, messages: list[dict[str, Any]], settings: ChatSettings
    ) -> tuple[list[dict[str, Any]], dict[str, Any], list[Entry]]:
        """Compress, count and fit the conversation before it leaves the device.
        Also returns the cache entries of its leading system messages (for references)."""
        started = self.clock()
        messages, prepared, lead = await self._prepare_messages(messages, settings)
        prepared["prepare_ms"] = round(self.clock() - started, 3)
        return messages, prepared, lead

    async def _prepare_messages(
        self, messages: list[dict[str, Any]], settings: ChatSettings
    ) -> tuple[list[dict[str, Any]], dict[str, Any], list[Entry]]:
        counter = await self._counter(settings.model)
        budget, window_known = budget_for(settings)
        if self.cache is not None and counter is not None and leading_system_count(messages):
            # The leading system messages from the cache: the same result, less work.
            done = await prepare_with_cache(
                messages, model=settings.model, level=settings.compress, budget=budget,
                counter=counter, cache=self.cache, now=lambda: self.clock() / 1000.0,
            )
            return done.messages, {
                "budget": budget,
                "window_known": window_known,
                **done.fields,
            }, done.lead
        report: dict[str, Any] | None = None
        per_message: list[int | None] = []
        if settings.compress != "off":
            compressed = compress_messages(messages, level=settings.compress, count=counter)
            messages = compressed.messages
            report = compressed.report.to_dict()
            per_message = [r.saved_tokens if counter else r.saved_chars for r in compressed.reports]
        prepared: dict[str, Any] = {
            "compression": report,
            "saved": per_message,
            "saved_unit": "tokens" if counter else "chars",
            "budget": budget,
            "window_known": window_known,
            "prompt_tokens": None,
            "exact": False,
            "dropped": [],
            "truncated": [],
        }
        if counter is None:
            return messages, prepared, []
        fit = tokens.fit_messages(messages, budget, settings.model, reserve_for_reply=0)
        prepared.update(
            prompt_tokens=fit.total,
            exact=fit.exact,
            dropped=list(fit.dropped),
            truncated=[{"index": t.index, "tokens_cut": t.tokens_cut} for t in fit.truncated],
        )
        return fit.messages, prepared, []

    def _calibrate(self, model: str, prepared: dict[str, Any], usage: dict[str, Any] | None) -> dict[str, Any]:
        """Record estimate vs the server's count, and report both (and the next adjustment)."""
        estimate = prepared.get("prompt_tokens")
        actual = (usage or {}).get("prompt_tokens")
        if isinstance(estimate, int) and isinstance(actual, int):
            self.calibration.record(model, estimate, actual)
        return {
            "estimate": estimate,
            "actual": actual,
            "adjusted": self.calibration.adjust(model, estimate) if isinstance(estimate, int) else None,
        }

    async def _count(self, msg: dict[str, Any]) -> None:
        """Live count for the composer: the conversation plus the draft, and the budget."""
        settings = ChatSettings.from_dict(msg["settings"])
        counter = await self._counter(settings.model)
        budget, _ = budget_for(settings)
        if counter is None:
            count, exact = estimate_tokens(msg["messages"], settings.model), False
        else:
            count, exact = tokens.count_chat(msg["messages"], settings.model), True
            count = self.calibration.adjust(settings.model, count)
        self.post(encode("tokens.counted", msg.get("id"), tokens=count, budget=budget, exact=exact))

    async def _request(
        self, messages: list[dict[str, Any]], settings: ChatSettings, lead: list[Entry], *, full: bool = False
    ) -> tuple[RefPlan, HTTPRequest]:
        """The HTTP request, with leading system messages as gateway references where
        `firsttoken.cache.refs` allows (never to a server not known to take them)."""
        client_id = None
        if self.cache is not None and self.refs.identifies(settings.base_url):
            client_id = await self.cache.client_id()
        plan = self.refs.plan(settings.base_url, lead, client_id, full=full)
        return plan, build_request(messages, settings, refs=plan.refs, headers=plan.headers)

    def _post_notices(self, request_id: str) -> None:
        """Things the user should know that are not errors (the cache fell back to
        memory), shown beside the request during which they happened."""
        notices, self._notices[:] = list(self._notices), []
        for notice in notices:
            self.post(encode("notice", request_id, **notice))

    async def _settle_cache(self, request_id: str) -> None:
        # Background cache writes end before the request does (each is time-bounded),
        # so that a failure they meet is reported with this request.
        if self.cache is not None:
            await self.cache.settle()
        self._post_notices(request_id)

    def _governor(self, base_url: str) -> Governor:
        # One governor per API: limits are per server (and per key, which a page
        # talking to one base URL does not change mid-session).
        governor = self._governors.get(base_url)
        if governor is None:
            governor = self._governors[base_url] = self._new_governor()
        return governor

    async def _pause(self, seconds: float, signal: AbortSignal) -> None:
        """Wait `seconds`, in short steps so that Stop ends the wait at once."""
        deadline = self.clock() + seconds * 1000.0
        while not signal.aborted:
            left = (deadline - self.clock()) / 1000.0
            if left <= 0:
                return
            await self.sleep(min(left, 0.1))

    async def _chat(self, msg: dict[str, Any]) -> None:
        request_id: str = msg["id"]
        if request_id in self._active:
            raise InvalidMessage(f"request {request_id!r} is already running")
        settings = ChatSettings.from_dict(msg["settings"])
        governor = self._governor(settings.base_url)
        signal = AbortSignal()
        self._active[request_id] = signal
        timings = Timings()
        seq = 0

        def on_text(text: str, reasoning: str, sent_ms: list[float]) -> None:
            nonlocal seq
            seq += 1
            fields: dict[str, Any] = {"seq": seq, "text": text, "t": self.clock()}
            if reasoning:
                fields["reasoning"] = reasoning
            if sent_ms:
                fields["stamps"] = sent_ms
            self._pacer.delta(request_id, fields)

        plan: RefPlan | None = None

        def on_response(status: int, headers: Any) -> None:
            governor.observe(status, headers, self.clock() / 1000.0)
            self.refs.observe(settings.base_url, status, headers, plan)

        def quota() -> dict[str, Any]:
            return governor.quota(self.clock() / 1000.0)

        try:
            messages, prepared, lead = await self._prepare(msg["messages"], settings)
            plan, request = await self._request(messages, settings, lead)
            prepared["request_bytes"] = len(request.body)
            self.post(encode("chat.prepared", request_id, **prepared))
            self._post_notices(request_id)
            resent = False
            prompt_estimate = prepared["prompt_tokens"]
            if prompt_estimate is None:
                prompt_estimate = estimate_tokens(messages, settings.model)
            estimate = prompt_estimate + (settings.max_tokens or 0)
            attempt = 1
            while True:
                # Wait out an exhausted window here rather than in the server's queue.
                wait = governor.wait_before(estimate, self.clock() / 1000.0)
                if wait > 0:
                    self.post(encode("chat.wait", request_id, wait_s=round(wait, 3), reason="rate_limit", quota=quota()))
                    await self._pause(wait, signal)
                    signal.raise_if_aborted()
                timings = Timings()
                try:
                    completion = await stream_chat(
                        self.transport, request, abort=signal, on_text=on_text, clock=self.clock,
                        timings=timings, on_response=on_response,
                    )
                    break
                except (HTTPStatusError, TransportError) as exc:
                    # Only a request that showed nothing may be sent again: a retry after
                    # text arrived would paint the answer twice.
                    if seq or signal.aborted:
                        raise
                    if plan is not None and plan.refs and not resent and is_unknown_ref(exc):
                        # The gateway lost what we referred to (a restart, an eviction):
                        # send the text once, which it stores again. No backoff: nothing
                        # is overloaded.
                        self.refs.forget(settings.base_url, list(plan.refs.values()))
                        plan, request = await self._request(messages, settings, lead, full=True)
                        resent = True
                        continue
                    status = exc.status if isinstance(exc, HTTPStatusError) else None
                    headers = exc.headers if isinstance(exc, HTTPStatusError) else {}
                    delay = governor.retry_delay(attempt, status, headers, self.clock() / 1000.0)
                    if delay is None:
                        raise
                    self.post(encode("chat.retry", request_id, attempt=attempt, status=status,
                                     wait_s=round(delay, 3), error=exc.to_dict(), quota=quota()))
                    await self._pause(delay, signal)
                    signal.raise_if_aborted()
                    attempt += 1
            await self._settle_cache(request_id)
            self._pacer.flush(request_id)
            self.post(
                encode(
                    "chat.done",
                    request_id,
                    finish_reason=completion.finish_reason,
                    usage=completion.usage,
                    content=completion.content,
                    timings=timings.to_dict(),
                    quota=quota(),
                    attempts=attempt,
                    prompt=self._calibrate(settings.model, prepared, completion.usage),
                    request_bytes=len(request.body),
                )
            )
        except FirstTokenError as exc:
            await self._settle_cache(request_id)
            self._pacer.flush(request_id)
            self.post(encode("chat.error", request_id, error=exc.to_dict(), timings=timings.to_dict(), quota=quota()))
        finally:
            # Should a bug end the request (handle() then reports it), its text still goes
            # out ahead of that report.
            self._pacer.flush(request_id)
            self._active.pop(request_id, None)


class _DeltaPacer:
    """Delta flow control: at most one `chat.delta` the page has not yet taken.

    A slow phone's main thread handles each message as a task of its own, and at
    hundreds of chunks a second those tasks crowd out the frames that paint them. A page
    that says `hello` with `flow: true` answers each `chat.delta` it takes with a
    `delta.ack`; until then, text arriving here is held and merged (one message per
    request, in order), and goes out, all of it, with the ack. So the page gets one
    message per turn of its event loop however fast the model streams, and a page that
    keeps up gets every chunk at once, with no added wait. A page that never says
    `flow` gets every delta as it comes (bridge/PROTOCOL.md).

    Held text is bounded: past HOLD_LIMIT characters it goes out without waiting.
    `t` of a merged delta is that of its first part (when the oldest text in it was
    parsed), so the page's latency figures count the holding; its `seq` is the last's.
    """

    HOLD_LIMIT = 256 * 1024

    def __init__(self, post: Callable[[str], None]) -> None:
        self.post = post
        self.enabled = False
        self.waiting = False  # a delta is out that the page has not acknowledged
        self.held: dict[str, dict[str, Any]] = {}
        self.held_chars = 0

    def delta(self, request_id: str, fields: dict[str, Any]) -> None:
        if not self.enabled or (not self.waiting and not self.held):
            self.waiting = self.enabled
            self.post(encode("chat.delta", request_id, **fields))
            return
        held = self.held.get(request_id)
        if held is None:
            self.held[request_id] = dict(fields, stamps=list(fields.get("stamps", ())))
        else:
            held["seq"] = fields["seq"]
            held["text"] += fields["text"]
            if fields.get("reasoning"):
                held["reasoning"] = held.get("reasoning", "") + fields["reasoning"]
            held["stamps"].extend(fields.get("stamps", ()))
        self.held_chars += len(fields["text"]) + len(fields.get("reasoning", ""))
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
        if not held["stamps"]:
            del held["stamps"]
        self.held_chars = sum(len(h["text"]) + len(h.get("reasoning", "")) for h in self.held.values())
        self.waiting = True
        self.post(encode("chat.delta", request_id, **held))


def budget_for(settings: ChatSettings) -> tuple[int, bool]:
    """`(prompt budget, window known)`: the model's context window (the user's setting
    wins over our table) less a reserve for the reply: `max_tokens`, else 4,096 or a
    quarter of the window, whichever is smaller."""
    window, known = tokens.context_window(settings.model)
    if settings.context_window:
        window, known = settings.context_window, True
    return window - (settings.max_tokens or min(4096, window // 4)), known


def counting_notice(exc: Exception, *, cache: bool) -> dict[str, Any]:
    """The `notice` that says counts have become estimates, and why."""
    reason = exc.code if isinstance(exc, FirstTokenError) else "tokenizer_error"
    detail = exc.message if isinstance(exc, FirstTokenError) else f"{type(exc).__name__}: {exc}"
    off = " The prompt cache and its gateway references are off until it does." if cache else ""
    return {
        "code": "tokens_estimated",
        "reason": reason,
        "message": f"Token counts are estimates: the tokenizer did not load ({detail}).{off}",
    }


def estimate_tokens(messages: list[dict[str, Any]], model: str) -> int:
    """Prompt tokens, exactly when an encoder is at hand, else about 4 bytes a token
    (only used to decide whether a request fits the server's remaining quota)."""
    try:
        from . import tokens

        return tokens.count_chat(messages, model)
    except Exception:  # noqa: BLE001 - no encoder yet (the page loads it lazily)
        size = sum(len(str(m.get("content") or "")) for m in messages)
        return size // 4 + 4 * len(messages) + 3
