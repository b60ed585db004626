"""Flow control as ASGI middleware: every /v1/ request, whatever answers it.

Per request:

1. Who: the request's `Client.limit_key` (gateway/access.py: client id, else API key,
   else peer address).
2. Cost: one request, and for a request of any dialect (chat completions, responses,
   messages: gateway/dialects) its prompt's tokens (`firsttoken.tokens.count_chat`
   over the prompt the dialect read: system text or instructions, then the turns;
   exact for OpenAI's models, an estimate with o200k_base for others, Claude's among
   them, whose tokenizer is not public), off the event loop (gateway/offload.py),
   plus the completion reserved from its `max_tokens` (or `reserve_tokens`). An
   exact count goes on with the request (`ChatBody.prompt_tokens`), for the built-in
   model to bill rather than count again (gateway/counting.py).
3. `Limiter.admit`: now, after a wait in the fair queue, or a 429 saying when to come
   back. `?dry_run=true` stops before this and answers what would happen (`dryrun`).
4. The answer goes out with OpenAI's `x-ratelimit-*` headers from the buckets (on
   every route: they are the gateway's own limits); as it passes, `UsageMeter` reads
   what it really cost where its dialect says, and the tokens buckets are charged or
   refunded the difference once it ends.

Refusals go out in the route's error shape (`dialects.error_response`). The request
is the one `ReadChat` (gateway/chat_body.py) parsed, in front of this:
a body the app would refuse was refused there, so a dry run and a real request get the
same answer, and a bad request spends nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field, replace
from typing import Any, Awaitable, Callable, Sequence

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from firsttoken.ratelimit import parse_rate_limit_headers

from ..access import client_of
from ..chat_body import ChatBody, chat_of, set_chat
from ..counting import PromptCounter
from ..dialects import error_response
from ..errors import APIError
from ..options import option
from ..shared import SharedState, SharedStateDown
from ..validation import ChatRequest
from .answers import go_duration, rate_headers, retry_headers, too_large, too_many_requests
from .buckets import Buckets
from .gcra import BucketView, Rate, Verdict
from .dryrun import DryRun, wants_dry_run
from .limiter import Ask, Limiter, Refused
from .usage import UsageMeter

__all__ = ["ADMITTED_HEADER", "Flow", "FlowLimits", "FlowControl"]

log = logging.getLogger("firsttoken.gateway.limits")

ADMITTED_HEADER = "x-firsttoken-admitted-at"


@dataclass(frozen=True, slots=True)
class FlowLimits:
    """Limits per key (`rpm`, `tpm`) and for the whole gateway (`gateway_*`); 0 is
    unlimited. `burst_s`: a bucket holds `burst_s` seconds of its rate (60: a whole
    minute, as OpenAI's per-minute limits read); it also caps one request's tokens."""

    rpm: int = field(default=5_000, metadata=option("--rpm", "requests per minute, per client", section="flow control"))
    tpm: int = field(default=2_000_000, metadata=option("--tpm", "tokens per minute, per client", section="flow control"))
    gateway_rpm: int = field(default=0, metadata=option(
        "--gateway-rpm", "requests per minute, all clients together", section="flow control"))
    gateway_tpm: int = field(default=0, metadata=option(
        "--gateway-tpm", "tokens per minute, all clients together", section="flow control"))
    burst_s: float = field(default=60.0, metadata=option(
        "--burst-s", "a bucket holds this many seconds of its rate (60: a whole minute at once)", section="flow control"))
    queue_wait_s: float = field(default=5.0, metadata=option(
        "--queue-wait-s", "longest wait in the gateway's queue before a 429", section="flow control"))
    queue_max: int = field(default=256, metadata=option("--queue-max", "requests waiting at most, in all", section="flow control"))
    reserve_tokens: int = field(default=1024, metadata=option(
        "--reserve-tokens", "completion tokens reserved for a request without max_tokens", section="flow control"))
    #: None: decided in gateway/app.py, by the backend.
    fail_open: bool | None = field(default=None, metadata=option(
        "--redis-fail", "Redis down: admit without limits, or answer 503 (default: closed with --upstream, else open)",
        section="flow control", choices={"open": True, "closed": False}))

    def __post_init__(self) -> None:
        for name in ("rpm", "tpm", "gateway_rpm", "gateway_tpm"):
            per_minute = getattr(self, name)
            if per_minute < 0 or (per_minute and per_minute * self.burst_s / 60.0 < 1):
                raise ValueError(f"{name}={per_minute} with burst_s={self.burst_s:g} holds less than one unit")
        if self.queue_wait_s < 0 or self.queue_max < 0 or self.reserve_tokens < 0:
            raise ValueError("queue_wait_s, queue_max and reserve_tokens must be >= 0")

    def rate(self, per_minute: int) -> Rate:
        return Rate(per_minute, 60.0, per_minute * self.burst_s / 60.0)


@dataclass(slots=True)
class Claim:
    """What one request asks of the buckets, and what settling it needs."""

    ask: Ask
    kinds: list[str]  # "requests"/"tokens" per bucket
    prompt_tokens: int = 0
    reserved_tokens: int = 0
    model: str = ""
    #: The request's body as read, when it has one (a request of a dialect).
    read: ChatBody | None = None


class Flow:
    """Flow control's state and work: the limiter, the counting, the settling of
    answers. One per gateway, shared by `FlowControl` (its ASGI face) and `/healthz`.
    `counter` counts (gateway/counting.py: the gateway's one, else loaded here);
    `run(fn, *args)` runs CPU work (counting) off the event loop."""

    def __init__(
        self,
        *,
        limits: FlowLimits,
        buckets: Buckets,
        counter: PromptCounter | None = None,
        run: Callable[..., Awaitable[Any]],
        shared: SharedState | None = None,
        prefix: str = "/v1/",
    ) -> None:
        self.limits = limits
        self.limiter = Limiter(buckets, max_wait_s=limits.queue_wait_s, max_queue=limits.queue_max)
        self.counter = counter or PromptCounter.load()
        self.shared = shared
        self.prefix = prefix
        # Counting is CPU-bound (a 4 MiB prompt takes seconds).
        self._run = run
        self._settling: set[asyncio.Task[None]] = set()

    # ---- health --------------------------------------------------------------------

    async def health(self) -> dict[str, str]:
        if self.shared is None:
            return {}
        return {"redis": "ok" if await self.shared.ping() else "down"}

    # ---- the ASGI call ---------------------------------------------------------------

    async def serve(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await app(scope, receive, send)
            return
        try:
            claim = await self._claim(scope)
            read = claim.read
            if read is not None and wants_dry_run(scope):
                await DryRun(
                    read.chat, object=read.dialect.dry_run_object, ask=claim.ask, prompt_tokens=claim.prompt_tokens,
                    window=self.counter.window(read.chat.model), outlook=self.limiter.outlook,
                    fail_open=self.limits.fail_open, headers=lambda views: self._headers(claim, views),
                )(scope, receive, send)
                return
            verdict = await self._admit(claim)
        except APIError as error:
            await error_response(error, scope)(scope, receive, send)
            return
        await self._pass(app, scope, receive, send, claim, verdict)

    async def _claim(self, scope: Scope) -> Claim:
        key = client_of(scope).limit_key
        read = chat_of(scope)
        chat = read.chat if read is not None else None
        prompt = reserved = 0
        if read is not None and chat is not None:
            # Counting costs CPU: only when a tokens bucket needs it, or a dry run asks.
            if self.limits.tpm or self.limits.gateway_tpm or wants_dry_run(scope):
                prompt, counted = await self._run(_count_prompt, self.counter.chat, chat)
                if counted and self.counter.exact:
                    # The built-in model bills this count rather than counting again.
                    read = replace(read, prompt_tokens=prompt)
                    set_chat(scope, read)
            reserved = chat.max_tokens if chat.max_tokens is not None else self.limits.reserve_tokens
        ids: list[str] = []
        rates: list[Rate] = []
        costs: list[float] = []
        kinds: list[str] = []
        shared: set[int] = set()
        for scope_id, rpm, tpm in (("k" + key, self.limits.rpm, self.limits.tpm), ("gateway", self.limits.gateway_rpm, self.limits.gateway_tpm)):
            for kind, per_minute, cost in (("requests", rpm, 1), ("tokens", tpm, prompt + reserved)):
                if per_minute > 0:
                    if scope_id == "gateway":
                        shared.add(len(ids))
                    ids.append(f"{scope_id}:{kind[0]}")
                    rates.append(self.limits.rate(per_minute))
                    costs.append(cost)
                    kinds.append(kind)
        ask = Ask(key, ids, rates, costs, frozenset(shared))
        return Claim(ask, kinds, prompt, reserved, chat.model if chat else "", read)

    def _down(self) -> APIError | None:
        """What Redis being down means for a request: None (fail open) or a 503."""
        if self.limits.fail_open is not False:
            return None
        return APIError(
            503, "The gateway cannot reach its rate limiter; try again shortly.",
            type="server_error", code="rate_limiter_unavailable", headers=retry_headers(1),
        )

    async def _admit(self, claim: Claim) -> Verdict | None:
        """The admitting verdict, or None when admitted without limits (none set, or
        Redis down and failing open); raises `APIError` for a refusal."""
        ask = claim.ask
        if not ask.ids:
            return None
        try:
            return await self.limiter.admit(ask)
        except SharedStateDown:
            error = self._down()
            if error is None:
                return None
            raise error from None
        except Refused as refused:
            headers = self._headers(claim, refused.verdict.views)
            if refused.verdict.never:
                i = max(range(len(ask.ids)), key=lambda i: ask.costs[i] / ask.rates[i].capacity)
                raise too_large(claim.kinds[i], ask.rates[i].capacity, ask.costs[i], headers) from None
            blocking = ask.blocking(refused.verdict) or [0]
            kind = claim.kinds[blocking[0]]
            whose = "the gateway" if blocking[0] in ask.shared else "your client"
            raise too_many_requests(
                f"Rate limit reached for {whose} on {kind} per min ({refused.reason}). "
                f"Please try again in {refused.wait_s:.3g}s.",
                refused.wait_s, headers,
            ) from None

    def _headers(self, claim: Claim, views: Sequence[BucketView]) -> dict[str, str]:
        # Per kind, the tighter of the client's and the gateway's bucket.
        tightest: dict[str, BucketView] = {}
        for kind, v in zip(claim.kinds, views):
            if kind not in tightest or v.remaining < tightest[kind].remaining:
                tightest[kind] = v
        return rate_headers(list(tightest), list(tightest.values()))

    # ---- the answer ---------------------------------------------------------------------

    async def _pass(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send, claim: Claim, verdict: Verdict | None) -> None:
        meter: UsageMeter | None = None
        headers = self._headers(claim, verdict.views) if verdict is not None else {}
        if verdict is not None and verdict.at_us is not None:
            # When the limiter let this request through (after any wait in the queue),
            # by the deciding clock: lets a client or a benchmark see admission times
            # free of network and scheduling delays.
            headers[ADMITTED_HEADER] = f"{verdict.at_us // 1_000_000}.{verdict.at_us % 1_000_000:06d}"

        async def observe(message: Message) -> None:
            nonlocal meter
            if message["type"] == "http.response.start":
                out = MutableHeaders(scope=message)
                if message["status"] == 429:
                    _exhausted_unless_told(out, headers)
                elif headers:
                    for name in [n for n in out.keys() if n.startswith("x-ratelimit-")]:
                        del out[name]
                    for name, value in headers.items():
                        out[name] = value
                if claim.ask.ids and claim.read is not None:
                    meter = UsageMeter(claim.read.dialect,
                                       streaming=out.get("content-type", "").startswith("text/event-stream"))
            elif message["type"] == "http.response.body" and meter is not None:
                meter.feed(message.get("body", b""))
            await send(message)

        try:
            await app(scope, receive, observe)
        finally:
            if verdict is not None and claim.model and any(k == "tokens" for k in claim.kinds):
                # A task of its own: it must run even when this request was cancelled
                # (client gone) and must not delay the end of the answer.
                task = asyncio.create_task(self._settle(claim, meter))
                self._settling.add(task)
                task.add_done_callback(self._settling.discard)

    async def _settle(self, claim: Claim, meter: UsageMeter | None) -> None:
        reserved = claim.prompt_tokens + claim.reserved_tokens
        try:
            if meter is None:
                spent = claim.prompt_tokens
            else:
                count = lambda text: self.counter.text(text, claim.model)  # noqa: E731
                spent = (await self._run(meter.settle, claim.prompt_tokens, count))["total_tokens"]
            ask = claim.ask
            token_buckets = [i for i, k in enumerate(claim.kinds) if k == "tokens"]
            await self.limiter.buckets.adjust(
                [ask.ids[i] for i in token_buckets], [ask.rates[i] for i in token_buckets],
                [spent - reserved] * len(token_buckets),
            )
        except SharedStateDown:
            pass  # the reservation stands: it was the request's upper bound
        except Exception:  # noqa: BLE001 - settling must never take the gateway down
            log.warning("could not settle a request's token use", exc_info=False)

    async def aclose(self) -> None:
        if self._settling:
            await asyncio.gather(*self._settling, return_exceptions=True)


class FlowControl:
    """ASGI middleware: every request under the prefix goes through `flow`."""

    def __init__(self, app: ASGIApp, *, flow: Flow) -> None:
        self.app = app
        self.flow = flow

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.flow.serve(self.app, scope, receive, send)


def _count_prompt(count_chat: Callable[..., int], chat: ChatRequest) -> tuple[int, bool]:
    """The prompt's count (with its tools), and whether the counter made it: a count
    that fails must not fail the request, and stands in as an upper bound (UTF-8
    bytes: a BPE token is at least one byte)."""
    try:
        return count_chat(chat.messages, chat.model, chat.tools), True
    except Exception:  # noqa: BLE001 - see above
        return len(json.dumps(chat.messages, ensure_ascii=False).encode("utf-8", "replace")), False


def _exhausted_unless_told(out: MutableHeaders, ours: dict[str, str]) -> None:
    """An inner 429 (an upstream's or an injected one) keeps its own rate-limit headers;
    without any, it reports our limits with nothing remaining until its retry-after,
    which is what a 429 means (a bucket reopening sooner would contradict it)."""
    if any(name.startswith("x-ratelimit-") for name in out.keys()):
        return
    told = parse_rate_limit_headers(list(out.items()), 0.0).retry_after_s
    reset = go_duration(told if told is not None else 1.0)
    kinds = [n[len("x-ratelimit-limit-"):] for n in ours if n.startswith("x-ratelimit-limit-")] or ["requests"]
    for kind in kinds:
        if f"x-ratelimit-limit-{kind}" in ours:
            out[f"x-ratelimit-limit-{kind}"] = ours[f"x-ratelimit-limit-{kind}"]
        out[f"x-ratelimit-remaining-{kind}"] = "0"
        out[f"x-ratelimit-reset-{kind}"] = reset
