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
from .prepare import ConversationMemory, Prepared, prepare
from .cache.refs import GatewayRefs, RefPlan, is_unknown_ref
from .cache import Cache, Entry
from .stream.client import AbortSignal, ChatSettings, HTTPRequest, Timings, Transport, build_request, stream_chat
from .errors import ContextBudgetExceeded, FirstTokenError, HTTPStatusError, InvalidMessage, TransportError
from .protocol import PROTOCOL_VERSION, encode, parse_message
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
        # The conversation's compression, kept between live counts and sends (firsttoken.prepare).
        self.memory = ConversationMemory()
        self._notices: list[dict[str, Any]] = []
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
        page loads its encoder lazily; until then, and if that fails, we go without)."""
        encoding, _ = tokens.encoding_for_model(model)
        try:
            if self.prepare_encoder is not None:
                await self.prepare_encoder(encoding)
            tokens.count("", encoding)
        except Exception:  # noqa: BLE001 - counting is an aid: sending must not fail on it
            return None
        return lambda text: tokens.count(text, encoding)

    async def _prepare(
        self, messages: list[dict[str, Any]], settings: ChatSettings
    ) -> tuple[list[dict[str, Any]], dict[str, Any], list[Entry]]:
        """Compress, count and fit the conversation before it leaves the device
        (`firsttoken.prepare`). Also returns the cache entries of its leading system
        messages (for references)."""
        done = await self._prepared(messages, settings)
        return done.messages, done.fields, done.lead

    async def _prepared(self, messages: list[dict[str, Any]], settings: ChatSettings, *, live: bool = False) -> Prepared:
        counter = await self._counter(settings.model)
        budget, window_known = budget_for(settings)
        done = await prepare(
            messages, settings, budget=budget, counter=counter, clock=self.clock,
            cache=self.cache, memory=self.memory, live=live,
        )
        done.fields.update(budget=budget, window_known=window_known)
        return done

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
        """Live count for the composer: the conversation plus the draft as it would be
        sent (compressed and fitted: the `prompt_tokens` a send would report), the
        count as written beside it, and the budget."""
        settings = ChatSettings.from_dict(msg["settings"])
        budget, _ = budget_for(settings)
        fields: dict[str, Any] = {"dropped": []}
        try:
            done = await self._prepared(msg["messages"], settings, live=True)
        except ContextBudgetExceeded as exc:
            # Even fitted it does not fit: the least it needs, which is over the budget.
            count, exact, uncompressed = exc.required, False, None
        except FirstTokenError as exc:  # e.g. an unknown compression level
            self.post(encode("error", msg.get("id"), error=exc.to_dict()))
            return
        else:
            count, exact, uncompressed = done.fields["prompt_tokens"], done.fields["exact"], done.uncompressed
            fields["dropped"] = done.fields["dropped"]
            if count is None:  # no encoder yet
                count, uncompressed = estimate_tokens(done.messages, settings.model), estimate_tokens(msg["messages"], settings.model)
        self.post(encode(
            "tokens.counted", msg.get("id"), tokens=count, budget=budget, exact=exact,
            uncompressed=uncompressed if uncompressed is not None else count,
            calibrated=self.calibration.adjust(settings.model, count), **fields,
        ))

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


def estimate_tokens(messages: list[dict[str, Any]], model: str) -> int:
    """Prompt tokens, exactly when an encoder is at hand, else about 4 bytes a token
    (only used to decide whether a request fits the server's remaining quota)."""
    try:
        from . import tokens

        return tokens.count_chat(messages, model)
    except Exception:  # noqa: BLE001 - no encoder yet (the page loads it lazily)
        size = sum(len(str(m.get("content") or "")) for m in messages)
        return size // 4 + 4 * len(messages) + 3
