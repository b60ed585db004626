"""GCRA, the Generic Cell Rate Algorithm, over several buckets at once. Pure: no clock.

GCRA (ITU-T I.371, the "virtual scheduling" form) keeps one number per bucket, the
theoretical arrival time `tat`: when the bucket would be full again if nothing else came.
A rate of `limit` units per `period_s` gives an emission interval `T = period_s / limit`
per unit; a bucket that may take `burst` units at once has a tolerance `tau = burst * T`.
A request of cost `n` at `now` conforms when

    max(tat, now) + n * T - tau <= now

and then moves `tat` to `max(tat, now) + n * T`. That is a token bucket of size `burst`
refilled at `limit / period_s`, exact, in O(1) state, without a timer.

A request spends several buckets (requests per minute, tokens per minute, per client and
for the whole gateway): it is admitted only when every bucket conforms, and then all of
them move together; otherwise none moves and the answer says how long until all conform.
`gateway/limits/buckets.py` runs the same arithmetic in memory or as one Redis script.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

__all__ = ["Rate", "BucketView", "Verdict", "decide", "reconcile", "view"]

#: Float slack when comparing times: 10 ms of schedule spread over a day still conforms.
_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class Rate:
    """`limit` units per `period_s` seconds; at most `burst` units at once (default: a
    whole period's worth, the way OpenAI's per-minute limits read)."""

    limit: int
    period_s: float = 60.0
    burst: float | None = None

    def __post_init__(self) -> None:
        if self.limit < 1 or not self.period_s > 0 or (self.burst is not None and not self.burst > 0):
            raise ValueError("a rate needs limit >= 1, period_s > 0 and burst > 0")

    @property
    def interval(self) -> float:
        """Seconds per unit."""
        return self.period_s / self.limit

    @property
    def capacity(self) -> float:
        return float(self.limit) if self.burst is None else float(self.burst)

    @property
    def tolerance(self) -> float:
        return self.capacity * self.interval


@dataclass(frozen=True, slots=True)
class BucketView:
    """One bucket as the rate-limit headers report it."""

    limit: int
    remaining: int
    #: Seconds until the bucket is full again (OpenAI's x-ratelimit-reset-*).
    reset_s: float


@dataclass(frozen=True, slots=True)
class Verdict:
    admitted: bool
    #: Seconds until every bucket would take the request; when admitted, until its
    #: reserved slot (0 unless reserving). Meaningless when `never`.
    wait_s: float
    #: The request costs more than some bucket can ever hold: waiting will not help.
    never: bool
    #: The buckets after the decision, in the order they were given.
    views: tuple[BucketView, ...]
    #: When admitted: the Unix time of its slot in whole microseconds, by the clock of
    #: whoever decided (Redis's own `TIME` with --redis), for `x-firsttoken-admitted-at`.
    #: Integers, so that slots one interval apart stay exactly that apart. None from the
    #: pure core.
    at_us: int | None = None


def view(rate: Rate, tat: float, now: float) -> BucketView:
    """What `rate`'s bucket at `tat` reports at `now`."""
    start = max(tat, now)
    remaining = math.floor((now + rate.tolerance - start) / rate.interval + _EPSILON)
    return BucketView(rate.limit, max(0, min(rate.limit, remaining)), start - now)


def decide(
    rates: Sequence[Rate], tats: Sequence[float], costs: Sequence[float], now: float, within: float = 0.0
) -> tuple[Verdict, tuple[float, ...]]:
    """Admit a request costing `costs[i]` of bucket i, or say how long to wait.

    Returns the verdict and the buckets' new `tat`s (unchanged unless admitted). A cost
    of 0 never blocks: a request only *reports* such a bucket.

    `within` > 0 reserves: a request that would conform within that many seconds is
    admitted now for its slot, `wait_s` from now (GCRA's virtual scheduling). The
    buckets move from their own `tat`, not from a late caller's `now`, so a caller that
    wakes a little late for each slot loses no capacity.
    """
    if not len(rates) == len(tats) == len(costs):
        raise ValueError("one tat and one cost per rate")
    never = any(cost > rate.capacity + _EPSILON for rate, cost in zip(rates, costs))
    wait = 0.0
    moved: list[float] = []
    for rate, tat, cost in zip(rates, tats, costs):
        new_tat = max(tat, now) + cost * rate.interval
        if cost > 0:
            wait = max(wait, new_tat - rate.tolerance - now)
        moved.append(new_tat)
    admitted = not never and wait <= within + _EPSILON
    final = tuple(moved) if admitted else tuple(tats)
    views = tuple(view(rate, tat, now) for rate, tat in zip(rates, final))
    return Verdict(admitted, max(0.0, wait), never, views), final


def reconcile(rate: Rate, tat: float, delta: float) -> float:
    """`tat` after a request turned out to cost `delta` units more (less, if negative)
    than it reserved. A refund never makes a bucket fuller than full."""
    return tat + delta * rate.interval
