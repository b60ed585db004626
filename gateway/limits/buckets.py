"""Where the buckets' `tat`s live: this process's memory, or Redis shared by processes.

Both run `gcra.decide` over a request's buckets as one step: in memory nothing else
runs between the read and the write (one event loop, no await inside); in Redis the
whole decision is one Lua script, which Redis runs atomically, with Redis's own `TIME`
as the clock, so processes on different hosts agree on "now" without synchronised
clocks.
"""

from __future__ import annotations

import dataclasses
import time
from collections import OrderedDict
from typing import Callable, Protocol, Sequence

from ..shared import SharedState
from .gcra import BucketView, Rate, Verdict, decide, reconcile

__all__ = ["Buckets", "MemoryBuckets", "RedisBuckets"]


class Buckets(Protocol):
    async def acquire(
        self, ids: Sequence[str], rates: Sequence[Rate], costs: Sequence[float], within: float = 0.0
    ) -> Verdict:
        """Decide, and spend the buckets if admitted (for a slot up to `within` s ahead)."""

    async def peek(self, ids: Sequence[str], rates: Sequence[Rate], costs: Sequence[float]) -> Verdict:
        """Decide without spending (a dry run)."""

    async def adjust(self, ids: Sequence[str], rates: Sequence[Rate], deltas: Sequence[float]) -> None:
        """Charge (or refund, when negative) what a request cost beyond its reservation."""


class MemoryBuckets:
    """`tat`s in a dict, least recently used first out past `max_buckets` (a forgotten
    bucket reads as full, so the bound errs towards admitting, never towards refusing)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, max_buckets: int = 100_000) -> None:
        self.clock = clock
        self.max_buckets = max_buckets
        # Slot times are reported on the wall clock from one fixed pairing of the two
        # clocks (not a fresh time.time() per decision, whose distance from `now` would
        # vary with preemption and squeeze slots together).
        self._origin = clock()
        self._origin_wall_us = time.time_ns() // 1000
        self._tats: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._tats)

    def _decide(
        self, ids: Sequence[str], rates: Sequence[Rate], costs: Sequence[float], commit: bool, within: float = 0.0
    ) -> Verdict:
        now = self.clock()
        tats = [self._tats.get(i, now) for i in ids]
        verdict, final = decide(rates, tats, costs, now, within)
        if verdict.admitted:
            slot = now + verdict.wait_s - self._origin
            verdict = dataclasses.replace(verdict, at_us=self._origin_wall_us + round(slot * 1e6))
        if commit and verdict.admitted:
            for bucket, tat in zip(ids, final):
                self._tats[bucket] = tat
                self._tats.move_to_end(bucket)
            while len(self._tats) > self.max_buckets:
                self._tats.popitem(last=False)
        return verdict

    async def acquire(
        self, ids: Sequence[str], rates: Sequence[Rate], costs: Sequence[float], within: float = 0.0
    ) -> Verdict:
        return self._decide(ids, rates, costs, True, within)

    async def peek(self, ids: Sequence[str], rates: Sequence[Rate], costs: Sequence[float]) -> Verdict:
        return self._decide(ids, rates, costs, False)

    async def adjust(self, ids: Sequence[str], rates: Sequence[Rate], deltas: Sequence[float]) -> None:
        now = self.clock()
        for bucket, rate, delta in zip(ids, rates, deltas):
            if delta:
                self._tats[bucket] = reconcile(rate, self._tats.get(bucket, now), delta)


# The same arithmetic as gcra.decide / gcra.reconcile, in microseconds of Redis TIME.
# KEYS: the buckets. ARGV[1]: "acquire", "peek" or "adjust"; ARGV[2]: how far ahead a
# slot may be reserved (us); then per bucket: interval (us per unit), tolerance (us),
# cost (units; for "adjust" the delta). Replies are
# integers (Redis truncates Lua numbers), so times come back in whole microseconds.
# A key expires when its bucket is full again: a full bucket and a missing key read
# the same, so Redis holds only buckets that are in use.
_GCRA_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local mode = ARGV[1]
local within = tonumber(ARGV[2])
local n = #KEYS
local tats, moved = {}, {}
local wait, never = 0, 0
for i = 1, n do
  local interval = tonumber(ARGV[3 * i])
  local tolerance = tonumber(ARGV[3 * i + 1])
  local cost = tonumber(ARGV[3 * i + 2])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  tats[i] = tat
  if mode == 'adjust' then
    if cost ~= 0 then
      local new = tat + cost * interval
      if new > now then
        redis.call('SET', KEYS[i], string.format('%.0f', new), 'PX', math.ceil((new - now) / 1000) + 1)
      else
        redis.call('DEL', KEYS[i])
      end
    end
  else
    if cost * interval > tolerance + 0.001 then never = 1 end
    local new = math.max(tat, now) + cost * interval
    moved[i] = new
    if cost > 0 then wait = math.max(wait, new - tolerance - now) end
  end
end
if mode == 'adjust' then return {} end
local admitted = (never == 0 and wait <= within + 0.001) and 1 or 0
local slot = 0
if admitted == 1 then slot = math.floor(now + math.max(wait, 0) + 0.5) end
local reply = {admitted, math.floor(math.max(wait, 0)), never, slot}
for i = 1, n do
  local interval = tonumber(ARGV[3 * i])
  local tolerance = tonumber(ARGV[3 * i + 1])
  local tat = tats[i]
  if admitted == 1 then
    tat = moved[i]
    if mode == 'acquire' then
      redis.call('SET', KEYS[i], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
    end
  end
  local start = math.max(tat, now)
  reply[#reply + 1] = math.floor((now + tolerance - start) / interval + 0.000001)
  reply[#reply + 1] = math.floor(start - now)
end
return reply
"""


class RedisBuckets:
    """`tat`s in Redis under `prefix`, shared by every gateway process using it.

    Raises `SharedStateDown` when Redis does not answer; the caller decides whether
    that admits or refuses (`--redis-fail`)."""

    def __init__(self, shared: SharedState, *, prefix: str = "ft:rl:") -> None:
        self.shared = shared
        self.prefix = prefix
        shared.script("gcra", _GCRA_LUA)

    def _args(self, mode: str, rates: Sequence[Rate], costs: Sequence[float], within: float = 0.0) -> list[str]:
        args = [mode, repr(within * 1e6)]
        for rate, cost in zip(rates, costs):
            args += [repr(rate.interval * 1e6), repr(rate.tolerance * 1e6), repr(float(cost))]
        return args

    async def _decide(
        self, mode: str, ids: Sequence[str], rates: Sequence[Rate], costs: Sequence[float], within: float = 0.0
    ) -> Verdict:
        keys = [self.prefix + i for i in ids]
        reply = await self.shared.run("gcra", keys, self._args(mode, rates, costs, within))
        admitted, wait_us, never, slot_us = (int(x) for x in reply[:4])
        views = tuple(
            BucketView(rate.limit, max(0, min(rate.limit, int(reply[4 + 2 * k]))), int(reply[5 + 2 * k]) / 1e6)
            for k, rate in enumerate(rates)
        )
        return Verdict(bool(admitted), wait_us / 1e6, bool(never), views, slot_us if admitted else None)

    async def acquire(
        self, ids: Sequence[str], rates: Sequence[Rate], costs: Sequence[float], within: float = 0.0
    ) -> Verdict:
        return await self._decide("acquire", ids, rates, costs, within)

    async def peek(self, ids: Sequence[str], rates: Sequence[Rate], costs: Sequence[float]) -> Verdict:
        return await self._decide("peek", ids, rates, costs)

    async def adjust(self, ids: Sequence[str], rates: Sequence[Rate], deltas: Sequence[float]) -> None:
        if any(deltas):
            await self.shared.run("gcra", [self.prefix + i for i in ids], self._args("adjust", rates, deltas))
