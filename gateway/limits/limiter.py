"""The limiter: buckets plus the fair queue, as an async service (the queue's adapter).

`admit()` asks the buckets; a request that does not fit now waits in the `FairQueue`
when its wait is within `max_wait_s` and the queue has room, else it is refused at
once with the wait as its retry-after. One dispatcher task serves the queue: each pass
asks the buckets for every key's head in turn and reserves a slot for each that fits
within `lookahead_s` (GCRA virtual scheduling: the slot is exact, and a dispatcher
that wakes late loses no capacity, which matters most when several processes share
Redis), releases each at its slot, and sleeps until the soonest head could be
reserved or a new request arrives.
"""

from __future__ import annotations

import asyncio
import logging
import math
from dataclasses import dataclass, field
from typing import Sequence

from .buckets import Buckets
from .fairqueue import FairQueue
from .gcra import Rate, Verdict

__all__ = ["Ask", "Limiter", "Refused"]

log = logging.getLogger("firsttoken.gateway.limits")


@dataclass(eq=False, slots=True)
class Ask:
    """One request's claim: which buckets, at which rates, for how much."""

    key: str
    ids: Sequence[str]
    rates: Sequence[Rate]
    costs: Sequence[float]
    #: Indexes of buckets shared by every key (the gateway's own limits).
    shared: frozenset[int] = frozenset()
    future: asyncio.Future[Verdict] | None = field(default=None, repr=False)
    #: A slot is reserved for it: it will be admitted within the lookahead.
    reserved: bool = False

    def blocking(self, verdict: Verdict) -> list[int]:
        """The buckets that keep this request out."""
        return [i for i, (v, c) in enumerate(zip(verdict.views, self.costs)) if c > v.remaining]

    def step_s(self) -> float:
        """How much later each request queued ahead makes this one, at most."""
        return max((r.interval * c for r, c in zip(self.rates, self.costs) if c > 0), default=0.0)


class Refused(Exception):
    """Not admitted: `verdict.never` (too large for a bucket) or wait `wait_s` first."""

    def __init__(self, verdict: Verdict, wait_s: float, reason: str) -> None:
        super().__init__(reason)
        self.verdict = verdict
        self.wait_s = wait_s
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Outlook:
    """What `admit` would do now (a dry run): "admit", "queue" or "refuse"."""

    action: str
    wait_s: float
    verdict: Verdict


class Limiter:
    def __init__(
        self,
        buckets: Buckets,
        *,
        max_wait_s: float,
        max_queue: int,
        lookahead_s: float = 0.5,
    ) -> None:
        self.buckets = buckets
        self.lookahead_s = lookahead_s
        self.max_wait_s = max_wait_s
        self.queue: FairQueue[Ask] = FairQueue(max_queue)
        self._wake = asyncio.Event()
        self._dispatcher: asyncio.Task[None] | None = None

    def _ahead(self, ask: Ask) -> int:
        """Requests that go before `ask`: its key's line, and every line when it shares
        a bucket with them."""
        return len(self.queue) if ask.shared else self.queue.depth(ask.key)

    def _estimate(self, ask: Ask, verdict: Verdict) -> float:
        return verdict.wait_s + self._ahead(ask) * ask.step_s()

    async def outlook(self, ask: Ask) -> Outlook:
        verdict = await self.buckets.peek(ask.ids, ask.rates, ask.costs)
        if verdict.never:
            return Outlook("refuse", math.inf, verdict)
        if verdict.admitted and not self._ahead(ask):
            return Outlook("admit", 0.0, verdict)
        wait = self._estimate(ask, verdict)
        if wait <= self.max_wait_s and len(self.queue) < self.queue.max_len:
            return Outlook("queue", wait, verdict)
        return Outlook("refuse", wait, verdict)

    async def admit(self, ask: Ask) -> Verdict:
        """The verdict that admitted `ask` (its buckets are spent), after waiting in the
        queue if need be; raises `Refused`, or `SharedStateDown` from the buckets."""
        if not self._ahead(ask):
            verdict = await self.buckets.acquire(ask.ids, ask.rates, ask.costs)
            if verdict.admitted:
                return verdict
        else:
            verdict = await self.buckets.peek(ask.ids, ask.rates, ask.costs)
        if verdict.never:
            raise Refused(verdict, math.inf, "too large")
        wait = self._estimate(ask, verdict)
        if wait > self.max_wait_s:
            raise Refused(verdict, wait, "wait too long")
        ask.future = asyncio.get_running_loop().create_future()
        if not self.queue.push(ask.key, ask):
            raise Refused(verdict, wait, "queue full")
        self._wake.set()
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.create_task(self._dispatch())
        deadline = self.max_wait_s
        try:
            try:
                return await asyncio.wait_for(asyncio.shield(ask.future), deadline)
            except asyncio.TimeoutError:
                if not ask.reserved:
                    raise Refused(verdict, max(ask.step_s(), self._estimate(ask, verdict)), "wait too long") from None
                return await ask.future  # its slot is at most the lookahead away: keep it
        finally:
            # Timed out or the client left: its place goes to the next in line.
            if not ask.future.done():
                ask.future.cancel()
            self.queue.remove(ask.key, ask)

    async def _dispatch(self) -> None:
        try:
            await self._serve()
        except Exception:  # noqa: BLE001 - a bug here must not strand the waiters silently
            log.exception("the flow-control dispatcher stopped; waiters are refused")
            for key, _ask in self.queue.heads():
                while key in self.queue:
                    waiting = self.queue.pop(key)
                    if waiting.future is not None and not waiting.future.done():
                        waiting.future.set_exception(Refused(Verdict(False, 1.0, False, ()), 1.0, "limiter error"))

    async def _serve(self) -> None:
        while len(self.queue):
            self._wake.clear()
            soonest = math.inf
            admitted = False
            for key, ask in self.queue.heads():
                assert ask.future is not None
                if ask.future.done():  # cancelled: its waiter removes it, skip it here
                    self.queue.remove(key, ask)
                    continue
                try:
                    verdict = await self.buckets.acquire(ask.ids, ask.rates, ask.costs, self.lookahead_s)
                except Exception as exc:  # noqa: BLE001 - the waiter answers it (fail open/closed)
                    self.queue.remove(key, ask)
                    if not ask.future.done():
                        ask.future.set_exception(exc)
                    continue
                if ask.future.done():  # left while we asked: its slot, if any, goes unused
                    continue
                if verdict.admitted or verdict.never:
                    self.queue.pop(key)
                    if verdict.never:
                        ask.future.set_exception(Refused(verdict, math.inf, "too large"))
                    elif verdict.wait_s > 0:
                        ask.reserved = True
                        asyncio.get_running_loop().call_later(verdict.wait_s, self._release, ask, verdict)
                        admitted = True
                    else:
                        ask.future.set_result(verdict)
                        admitted = True
                    continue
                soonest = min(soonest, max(0.0, verdict.wait_s - self.lookahead_s))
                if any(i in ask.shared for i in ask.blocking(verdict)):
                    break  # a shared bucket is empty: nobody behind can go either
            if admitted or not len(self.queue):
                continue
            try:
                await asyncio.wait_for(self._wake.wait(), None if math.isinf(soonest) else soonest)
            except asyncio.TimeoutError:
                pass

    def _release(self, ask: Ask, verdict: Verdict) -> None:
        """A reserved slot has come. A waiter that left before it leaves the slot unused:
        giving it back would move the buckets' `tat` back under slots reserved after
        it, and two requests would share one slot."""
        assert ask.future is not None
        if not ask.future.done():
            ask.future.set_result(verdict)
