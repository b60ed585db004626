"""Benchmark pieces: the gateway's flow control under load, on loopback, bounded in time.

    .venv/bin/python bench/gateway_limits.py [--clients 200] [--seconds 10] [--limit 10]

(a) `admitted_exact`: 200 clients hammer one gateway whose limit is 10 requests/s
    (`--gateway-rpm 600 --burst-s 0.1`: a bucket of one request, refilled every 100 ms,
    so any one-second window can take 10). Every client loops: send; on 200 count an
    admission at the time the gateway says it admitted it (`x-firsttoken-admitted-at`,
    by the deciding clock: network and client scheduling do not smear it); on 429
    check `retry-after` and wait it out. Admissions are counted per one-second window,
    the whole windows from the first admission to the end of the run. True when every
    window admitted at most the limit, every window under full load at least limit - 1,
    and every other answer was a 200 that had waited in the queue or a 429 with
    `retry-after`. A window is under full load when some request was waiting in the
    gateway's queue throughout it (gaps under one slot aside), known from each queued
    request's send time and admission time: then the limiter had work at every slot,
    and admitting fewer would be its fault, not the clients'.
(b) `redis_admitted_exact`: the same against two gateway processes sharing one Redis
    (the clients split between them, no balancer), with a tolerance of 2.

Functions for bench/gateway.py: `measure_limits(urls, ...)`, `single_gateway(...)`,
`redis_gateways(...)`, `run_all(...)`. Prints human lines, then LAST one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

import httpx  # noqa: E402

from firsttoken.ratelimit import parse_retry_after  # noqa: E402
from harness.servers import gateway, redis_server  # noqa: E402

CHAT = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "ping"}], "max_tokens": 5}
SIM = {"x-firsttoken-sim": "ttft_ms=0,tps=100000,tokens=5"}


def gateway_args(limit_per_s: int, queue_wait_s: float = 2.0, queue_max: int = 64) -> list[str]:
    """A gateway limited to `limit_per_s` requests/s in all, with a bucket of one."""
    return [
        "--rpm", "0", "--tpm", "0",
        "--gateway-rpm", str(limit_per_s * 60), "--burst-s", f"{1 / limit_per_s:g}",
        "--queue-wait-s", str(queue_wait_s), "--queue-max", str(queue_max),
    ]


def _micros(stamp: str) -> int:
    """`1796131471.201133` as whole microseconds: windows are cut in integers, since
    floats near 1.8e9 s are only good to a quarter of a microsecond."""
    whole, _, frac = stamp.partition(".")
    return int(whole) * 1_000_000 + int((frac + "000000")[:6])


async def _client(
    http: httpx.AsyncClient, url: str, ident: str, until: float, log: dict[str, Any]
) -> None:
    headers = {**SIM, "x-firsttoken-client": ident}
    while time.monotonic() < until:
        sent_us = time.time_ns() // 1000
        try:
            r = await http.post(url + "/v1/chat/completions", json=CHAT, headers=headers)
        except httpx.TransportError as exc:
            # No answer at all (e.g. a keep-alive connection the server closed as we
            # reused it): reported, and the client tries again.
            log["transport_errors"].append(type(exc).__name__)
            continue
        if r.status_code == 200:
            # The gateway's own admission time (its deciding clock: Redis TIME with
            # --redis), so that network and client scheduling do not smear the windows.
            if "x-firsttoken-admitted-at" not in r.headers:  # admitted without limits (fail-open)
                log["other"].append("200 unlimited")
                continue
            admitted = _micros(r.headers["x-firsttoken-admitted-at"])
            log["admitted"].append(admitted)
            if admitted - sent_us > 50_000:
                log["queued"] += 1
                log["waiting"].append((sent_us, admitted))
            continue
        wait = parse_retry_after(r.headers["retry-after"], time.time()) if "retry-after" in r.headers else None
        if r.status_code == 429 and wait is not None:
            log["refused"] += 1
            await asyncio.sleep(min(wait, max(0.0, until - time.monotonic())))
        else:
            log["other"].append(str(r.status_code))


async def _load(urls: Sequence[str], clients: int, seconds: float) -> tuple[float, dict[str, Any]]:
    log: dict[str, Any] = {"admitted": [], "queued": 0, "refused": 0, "other": [], "transport_errors": [], "waiting": []}
    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
    async with httpx.AsyncClient(limits=limits, timeout=30) as http:
        # A first request per gateway loads what a process loads once (the tokenizer
        # for the built-in model's usage): not part of what is measured.
        for url in urls:
            await http.post(url + "/v1/chat/completions", json=CHAT, headers={**SIM, "x-firsttoken-client": "bench-warm-up-0000"})
        start = time.monotonic()
        until = start + seconds
        await asyncio.gather(*(
            _client(http, urls[i % len(urls)], f"bench-client-{i:08d}", until, log) for i in range(clients)
        ))
        log["ended"] = time.time_ns() // 1000 - round(max(0.0, time.monotonic() - until) * 1e6)  # at `until`
    return start, log


def measure_limits(urls: Sequence[str], *, clients: int = 200, seconds: float = 10.0, limit_per_s: int = 10,
                   tolerance: int = 1) -> dict[str, Any]:
    """Drive `urls` (gateways started with `gateway_args(limit_per_s)`) and judge them."""
    _, log = asyncio.run(_load(urls, clients, seconds))
    # Windows from the first admission: before it, the clients were still connecting.
    start = min(log["admitted"], default=0)
    windows = [0] * max(1, (log["ended"] - start) // 1_000_000)
    for t in log["admitted"]:
        k = (t - start) // 1_000_000
        if 0 <= k < len(windows):
            windows[k] += 1
    second = 1_000_000
    full = [_covered(log["waiting"], start + k * second, start + (k + 1) * second, second // limit_per_s)
            for k in range(len(windows))]
    exact = all(w <= limit_per_s and (w >= limit_per_s - tolerance or not busy) for w, busy in zip(windows, full))
    accounted = not log["other"]
    return {
        "windows": windows,
        "full_load": full,
        "admitted": len(log["admitted"]),
        "queued": log["queued"],
        "refused_with_retry_after": log["refused"],
        "other": len(log["other"]),
        "other_kinds": sorted(set(log["other"]))[:5],
        "transport_errors": len(log["transport_errors"]),
        "exact": exact and accounted,
    }


def _covered(intervals: list[tuple[int, int]], start: int, end: int, gap: int) -> bool:
    """Whether someone was waiting in the gateway's queue throughout [start, end), but
    for gaps shorter than `gap` (one admission slot): a window under full load, where
    the limiter had a request to admit at every slot."""
    reach = start
    for begin, finish in sorted(intervals):
        if begin > reach + gap:
            return False
        reach = max(reach, finish)
        if reach >= end - gap:
            return True
    return False


@contextmanager
def single_gateway(limit_per_s: int = 10) -> Iterator[list[str]]:
    with gateway(*gateway_args(limit_per_s)) as url:
        yield [url]


@contextmanager
def redis_gateways(limit_per_s: int = 10, processes: int = 2) -> Iterator[list[str]]:
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-redis-"))
        redis = stack.enter_context(redis_server(Path(tmp)))
        yield [stack.enter_context(gateway(*gateway_args(limit_per_s), "--redis", redis)) for _ in range(processes)]


def run_all(clients: int = 200, seconds: float = 10.0, limit_per_s: int = 10) -> dict[str, Any]:
    """Both measurements; the keys bench/gateway.py puts in its JSON line."""
    with single_gateway(limit_per_s) as urls:
        one = measure_limits(urls, clients=clients, seconds=seconds, limit_per_s=limit_per_s, tolerance=1)
    with redis_gateways(limit_per_s) as urls:
        two = measure_limits(urls, clients=clients, seconds=seconds, limit_per_s=limit_per_s, tolerance=2)
    return {
        "limit_per_s": limit_per_s,
        "clients": clients,
        "admitted_windows": one["windows"],
        "full_load_windows": sum(one["full_load"]),
        "admitted_exact": one["exact"],
        "limits_other_answers": one["other"],
        "redis_admitted_windows": two["windows"],
        "redis_full_load_windows": sum(two["full_load"]),
        "redis_other_kinds": two["other_kinds"],
        "redis_admitted_exact": two["exact"],
        "redis_other_answers": two["other"],
        "transport_errors": one["transport_errors"] + two["transport_errors"],
        "queued": one["queued"] + two["queued"],
        "refused_with_retry_after": one["refused_with_retry_after"] + two["refused_with_retry_after"],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--limit", type=int, default=10, help="requests per second")
    args = p.parse_args()
    result = run_all(args.clients, args.seconds, args.limit)
    print(f"one gateway:   admitted per second {result['admitted_windows']}")
    print(f"two via Redis: admitted per second {result['redis_admitted_windows']}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
