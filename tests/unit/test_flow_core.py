"""Flow control's pure core on a fake clock: GCRA over several buckets, and the fair
queue. The ASGI adapter is tested over HTTP in tests/gateway/test_flow.py."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.limits.answers import go_duration, rate_headers
from gateway.limits.fairqueue import FairQueue
from gateway.limits.gcra import Rate, decide, reconcile, view
from gateway.dialects import CHAT
from gateway.limits.usage import UsageMeter
from firsttoken.ratelimit import parse_duration, parse_rate_limit_headers


def test_a_full_bucket_takes_its_burst_then_the_rate() -> None:
    rate = Rate(60, 60.0, burst=3)  # 1/s, 3 at once
    tat, now = 0.0, 100.0
    admitted = []
    for _ in range(5):
        verdict, (tat,) = decide([rate], [tat], [1], now)
        admitted.append(verdict.admitted)
    assert admitted == [True, True, True, False, False]
    verdict, _ = decide([rate], [tat], [1], now)
    assert verdict.wait_s == pytest.approx(1.0) and verdict.views[0].remaining == 0
    verdict, (tat2,) = decide([rate], [tat], [1], now + 1.0)
    assert verdict.admitted and verdict.views[0].remaining == 0
    assert verdict.views[0].reset_s == pytest.approx(3.0)  # until full again


def test_all_buckets_or_none_move_and_wait_is_the_longest() -> None:
    requests, tokens = Rate(600, burst=1), Rate(6000, burst=100)  # 10 req/s, 100 tok/s
    tats = (0.0, 0.0)
    verdict, tats = decide([requests, tokens], tats, [1, 80], 10.0)
    assert verdict.admitted
    verdict, after = decide([requests, tokens], tats, [1, 50], 10.0)
    assert not verdict.admitted and after == tats  # nothing spent by a refusal
    assert verdict.wait_s == pytest.approx(0.3)  # tokens: 30 more units at 100/s; requests: 0.1 s
    verdict, _ = decide([requests, tokens], tats, [1, 101], 10.0)
    assert verdict.never  # more than the tokens bucket can ever hold


def test_zero_cost_only_reports_and_reconcile_charges_or_refunds() -> None:
    tokens = Rate(6000, burst=100)
    verdict, (tat,) = decide([tokens], [0.0], [100], 5.0)
    assert verdict.admitted and verdict.views[0].remaining == 0
    verdict, _ = decide([tokens], [tat], [0], 5.0)
    assert verdict.admitted  # a request that costs no tokens is not held up by them
    refunded = reconcile(tokens, tat, -60)  # reserved 100, used 40
    assert view(tokens, refunded, 5.0).remaining == 60
    assert view(tokens, reconcile(tokens, refunded, -1000), 5.0).remaining == 100  # never fuller than full


@settings(max_examples=200, deadline=None)
@given(
    limit=st.integers(1, 600),
    burst=st.integers(1, 20),
    gaps=st.lists(st.floats(0, 0.5, allow_nan=False), min_size=1, max_size=300),
)
def test_no_window_admits_more_than_burst_plus_rate(limit: int, burst: int, gaps: list[float]) -> None:
    """GCRA's guarantee: in any closed interval of length d, at most burst + floor(d * rate)
    requests conform (ITU-T I.371's bound, with tolerance (burst - 1) * T)."""
    rate = Rate(limit, 60.0, burst=burst)
    tat, now, times = 0.0, 1000.0, []
    for gap in gaps:
        now += gap
        verdict, (tat,) = decide([rate], [tat], [1], now)
        if verdict.admitted:
            times.append(now)
    per_s = limit / 60.0
    for i, start in enumerate(times):
        for d in (0.5, 1.0, 5.0):
            inside = sum(1 for t in times[i:] if t <= start + d)
            assert inside <= burst + math.floor(d * per_s + 1e-6)


def test_steady_rate_with_burst_one_is_exact_per_second() -> None:
    """The benchmark's case: 10/s, burst 1, clients always waiting: 10 in every second."""
    rate = Rate(600, 60.0, burst=1)
    tat, now, admitted = 0.0, 0.0, []
    while now < 10.0:
        verdict, (tat,) = decide([rate], [tat], [1], now)
        if verdict.admitted:
            admitted.append(now)
            continue
        now += verdict.wait_s  # the dispatcher sleeps exactly this long
    # Rounded to the microsecond: ten float steps of 0.1 sum to 0.9999999999999999.
    windows = [sum(1 for t in admitted if s <= round(t, 6) < s + 1) for s in range(10)]
    assert windows == [10] * 10


def test_headers_read_back_by_the_pages_governor() -> None:
    requests, tokens = Rate(100, burst=100), Rate(10_000)
    verdict, _ = decide([requests, tokens], [0.0, 0.0], [1, 400], 50.0)
    headers = rate_headers(["requests", "tokens"], verdict.views)
    snap = parse_rate_limit_headers(headers, 0.0)
    assert (snap.limit_requests, snap.remaining_requests) == (100, 99)
    assert (snap.limit_tokens, snap.remaining_tokens) == (10_000, 9_600)
    assert snap.reset_requests_at == pytest.approx(0.6, abs=1e-3)
    assert snap.reset_tokens_at == pytest.approx(2.4, abs=1e-3)


@pytest.mark.parametrize(
    "seconds, text",
    [(0, "0ms"), (0.02, "20ms"), (0.0004, "1ms"), (1, "1s"), (1.5, "1.5s"), (59.9996, "1m0s"), (360, "6m0s"),
     (3723.5, "1h2m3.5s"), (179.56, "2m59.56s")],
)
def test_go_durations_as_openai_writes_them(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
    parsed = parse_duration(text)
    assert parsed is not None and parsed >= seconds - 1e-9  # rounded up: never an early retry


@given(st.floats(0, 86_000, allow_nan=False))
def test_go_duration_round_trips_through_the_parser(seconds: float) -> None:
    parsed = parse_duration(go_duration(seconds))
    assert parsed is not None and seconds - 1e-9 <= parsed <= seconds + 0.001 + 1e-9


# ---- the fair queue -----------------------------------------------------------------------


def serve(queue: FairQueue[str], rounds: int) -> list[str]:
    """One admission per round, to whichever head is next: a shared bucket of 1 per tick."""
    out = []
    for _ in range(rounds):
        heads = list(queue.heads())
        if not heads:
            break
        key, _ = heads[0]
        out.append(queue.pop(key))
    return out


def test_fifo_within_a_key_round_robin_across_keys() -> None:
    queue: FairQueue[str] = FairQueue(100)
    for i in range(5):
        queue.push("a", f"a{i}")
    queue.push("b", "b0")
    queue.push("b", "b1")
    queue.push("c", "c0")
    assert serve(queue, 20) == ["a0", "b0", "c0", "a1", "b1", "a2", "a3", "a4"]
    assert len(queue) == 0


def test_a_late_key_is_served_within_one_round() -> None:
    queue: FairQueue[str] = FairQueue(100)
    for i in range(50):
        queue.push("hog", f"h{i}")
    assert serve(queue, 3) == ["h0", "h1", "h2"]
    queue.push("late", "l0")
    assert serve(queue, 3) == ["h3", "l0", "h4"]  # one of the hog's, then the newcomer


def test_bounded_and_removal_keeps_order() -> None:
    queue: FairQueue[str] = FairQueue(3)
    assert queue.push("a", "a0") and queue.push("a", "a1") and queue.push("b", "b0")
    assert not queue.push("c", "c0") and len(queue) == 3  # full: refused, nothing queued
    assert queue.remove("a", "a0") and not queue.remove("a", "a0")
    assert queue.depth("a") == 1 and "c" not in queue
    assert serve(queue, 5) == ["a1", "b0"]
    with pytest.raises(ValueError):
        FairQueue(-1)


@given(st.lists(st.tuples(st.sampled_from("abcd"), st.booleans()), max_size=80))
def test_every_key_is_fifo_and_a_served_key_goes_to_the_back(ops: list[tuple[str, bool]]) -> None:
    queue: FairQueue[tuple[str, int]] = FairQueue(1000)
    served: list[tuple[str, int]] = []
    for n, (key, pop) in enumerate(ops):
        if pop and len(queue):
            first, _ = next(queue.heads())
            others = [k for k, _ in queue.heads() if k != first]
            served.append(queue.pop(first))
            # every other waiting key now comes before `first` again
            order = [k for k, _ in queue.heads()]
            assert order == others + ([first] if first in queue else [])
        else:
            queue.push(key, (key, n))
    for key in "abcd":
        mine = [n for k, n in served if k == key]
        assert mine == sorted(mine)


# ---- what an answer cost -------------------------------------------------------------------


def _sse(*chunks: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def _delta(text: str) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


@given(st.integers(1, 400))
def test_usage_meter_reads_the_same_whatever_the_chunking(cut: int) -> None:
    body = _sse(_delta("hello "), _delta("world"), {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}})
    meter = UsageMeter(CHAT, streaming=True, head_bytes=64, tail_bytes=128)  # the tail holds the usage object
    for i in range(0, len(body), cut):
        meter.feed(body[i : i + cut])
    assert meter.settle(7, len) == {"total_tokens": 9, "exact": True}


def test_usage_meter_counts_streamed_text_without_usage_and_extrapolates_past_its_head() -> None:
    body = _sse(*(_delta("ab") for _ in range(10)))
    meter = UsageMeter(CHAT, streaming=True)
    meter.feed(body)
    assert meter.settle(5, len) == {"total_tokens": 5 + 20, "exact": True}
    small = UsageMeter(CHAT, streaming=True, head_bytes=len(body) // 2, tail_bytes=16)
    for i in range(0, len(body), 7):
        small.feed(body[i : i + 7])
    settled = small.settle(5, len)
    assert not settled["exact"] and 5 + 14 <= settled["total_tokens"] <= 5 + 26
    whole = UsageMeter(CHAT, streaming=False)
    whole.feed(json.dumps({"choices": [{"message": {"content": "abc"}}]}).encode())
    assert whole.settle(1, len) == {"total_tokens": 4, "exact": True}
