"""Benchmark: the gateway under load and abuse, on loopback, bounded in time.

    .venv/bin/python bench/gateway.py [--quick]

One function per measurement, each starting its own gateway process(es) and returning
a dict of figures; `MEASUREMENTS` lists them in order, flow control's admission counts last
(`bench/gateway_limits.py`). Clients run in separate processes with bare sockets, so that what
is measured is the gateway, not a Python HTTP client sharing its CPU.

- `healthz_under_abuse`: `/healthz` latency p99, sampled every 10 ms, while one client
  asks the built-in model for 1,000,000 tokens at an unlimited rate and another sends a
  4 MiB message (`healthz_p99_ms_under_abuse`, target <= 50; the same p99 with nothing
  else running is the peer, `healthz_p99_ms_idle`; p50s beside them). One large
  message is sent first, so the worker process that counts large prompts is already
  running (it starts on first use, a one-time second of CPU on the other core).
- `streaming_throughput`: SSE events per second one gateway process streams to 200
  concurrent clients (`events_per_s`, target >= 50,000).
- `idle_connections`: seconds until idle and slowloris connections are closed
  (`idle_close_s`, target <= 30).
- `cross_origin`: a foreign page's no-cors POST, a foreign Origin and a rebinding Host
  are all refused (`cross_origin_blocked`: true).

Prints a few human lines, then LAST one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from harness.servers import gateway  # noqa: E402

SIM = "x-firsttoken-sim"
LOUD = ("--rpm", "100000000", "--tpm", "1000000000000", "--log-level", "error")


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _request(host: str, body: dict[str, Any], sim: str, extra: str = "") -> bytes:
    data = json.dumps(body).encode()
    return (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"{SIM}: {sim}\r\nContent-Length: {len(data)}\r\nConnection: close\r\n{extra}\r\n").encode() + data


def _read_all(address: tuple[str, int], request: bytes, deadline: float) -> int:
    """Send `request` on a new connection; read until the gateway closes or `deadline`."""
    size = 0
    with socket.create_connection(address) as s:
        s.sendall(request)
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            while time.monotonic() < deadline and (chunk := s.recv(1 << 20)):
                size += len(chunk)
        except (TimeoutError, OSError):
            pass
    return size


def _get_ms(conn: socket.socket, host: str) -> float:
    """One keep-alive `GET /healthz`; its latency in ms."""
    t = time.perf_counter()
    conn.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data or not data.endswith(b"}"):
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("gateway closed the health connection")
        data += chunk
    return (time.perf_counter() - t) * 1000


def _p50(samples: list[float]) -> float:
    return round(sorted(samples)[len(samples) // 2], 1)


def _p99(samples: list[float]) -> float:
    samples = sorted(samples)
    return round(samples[max(0, int(len(samples) * 0.99) - 1)], 1)


def _sample_healthz(address: tuple[str, int], until: Callable[[], bool], limit_s: float) -> list[float]:
    samples = []
    end = time.monotonic() + limit_s
    with socket.create_connection(address) as conn:
        while not until() and time.monotonic() < end:
            samples.append(_get_ms(conn, address[0]))
            time.sleep(0.01)  # sampled every 10 ms, as the issue asks
    return samples


# ---- measurements ------------------------------------------------------------------


def healthz_under_abuse(quick: bool) -> dict[str, Any]:
    with gateway(*LOUD) as url:
        address = _address(url)
        warm = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "warm " * 200_000}]}
        _read_all(address, _request(address[0], warm, "ttft_ms=0,tokens=1"), time.monotonic() + 60)
        idle = _sample_healthz(address, lambda: False, 2.0)
        limit_s = 15.0 if quick else 30.0
        deadline = time.monotonic() + limit_s
        chat = {"model": "firsttoken-sim", "stream": True, "messages": [{"role": "user", "content": "go"}]}
        big = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "word " * (4 * 1024 * 1024 // 5 - 64)}]}
        jobs = [
            _request(address[0], chat, "ttft_ms=0,tokens=1000000,tps=1000000"),
            _request(address[0], big, "ttft_ms=0,tokens=20"),
        ]
        sizes: list[int] = []
        threads = [threading.Thread(target=lambda r=r: sizes.append(_read_all(address, r, deadline))) for r in jobs]
        for t in threads:
            t.start()
        busy = _sample_healthz(address, lambda: not any(t.is_alive() for t in threads), limit_s)
        for t in threads:
            t.join()
    print(f"healthz p50/p99: {_p50(idle)}/{_p99(idle)} ms idle, {_p50(busy)}/{_p99(busy)} ms under abuse "
          f"({len(busy)} samples, {sum(sizes) / 1e6:.1f} MB streamed to the abusers)", file=sys.stderr)
    return {"healthz_p99_ms_idle": _p99(idle), "healthz_p99_ms_under_abuse": _p99(busy),
            "healthz_p50_ms_idle": _p50(idle), "healthz_p50_ms_under_abuse": _p50(busy)}


async def _stream_clients(address: tuple[str, int], n: int, request: bytes, until: float) -> tuple[int, int]:
    """`n` connections, each asking again as soon as its answer ends, until `until`;
    returns (events received, bytes received)."""
    events = size = 0

    async def one() -> None:
        nonlocal events, size
        while time.monotonic() < until:
            reader, writer = await asyncio.open_connection(*address)
            writer.write(request)
            tail = b""
            try:
                while chunk := await reader.read(1 << 18):
                    size += len(chunk)
                    data = tail + chunk
                    events += data.count(b"\n\ndata: ")
                    tail = data[-8:]
            finally:
                writer.close()

    await asyncio.gather(*(one() for _ in range(n)))
    return events, size


def _client_process(address: tuple[str, int], n: int, request: bytes, start: float, until: float, out: Any) -> None:
    time.sleep(max(0.0, start - time.time()))
    now = time.monotonic()
    out.put(asyncio.run(_stream_clients(address, n, request, now + (until - start))))


def streaming_throughput(quick: bool, streams: int = 200, processes: int = 2) -> dict[str, Any]:
    seconds = 4.0 if quick else 8.0
    with gateway(*LOUD, "--streams-per-client", "10000") as url:
        address = _address(url)
        chat = {"model": "firsttoken-sim", "stream": True, "messages": [{"role": "user", "content": "go"}]}
        request = _request(address[0], chat, "ttft_ms=0,tps=1000000,tokens=2000")
        queue: Any = multiprocessing.get_context("spawn").Queue()
        start = time.time() + 1.5  # every client process started and connected by then
        procs = [multiprocessing.get_context("spawn").Process(
            target=_client_process, args=(address, streams // processes, request, start, start + seconds, queue))
            for _ in range(processes)]
        for p in procs:
            p.start()
        results = [queue.get(timeout=seconds + 60) for _ in procs]
        for p in procs:
            p.join(timeout=30)
    events = sum(e for e, _ in results)
    rate = round(events / seconds)
    print(f"streaming: {events} events, {sum(b for _, b in results) / 1e6:.0f} MB in {seconds:g} s "
          f"over {streams} streams: {rate} events/s", file=sys.stderr)
    return {"events_per_s": rate, "streams": streams}


def idle_connections(quick: bool, n: int = 200) -> dict[str, Any]:
    with gateway("--log-level", "error") as url:
        address = _address(url)
        socks = [socket.create_connection(address) for _ in range(n)]
        for i, s in enumerate(socks):
            if i % 2:  # slowloris: a request head begun, never finished
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            s.settimeout(60)
        t = time.monotonic()
        closed = 0
        for s in socks:
            try:
                if s.recv(1) == b"":
                    closed += 1
            except OSError:
                closed += 1
            s.close()
        elapsed = round(time.monotonic() - t, 1)
    print(f"idle connections: {closed}/{n} closed by the gateway after {elapsed} s", file=sys.stderr)
    return {"idle_close_s": elapsed if closed == n else None}


def cross_origin(quick: bool) -> dict[str, Any]:
    import httpx

    with gateway("--log-level", "error") as url:
        body = json.dumps({"model": "firsttoken-sim", "messages": [{"role": "user", "content": "spend"}]})
        post = url + "/v1/chat/completions"
        no_cors = httpx.post(post, content=body, headers={"content-type": "text/plain;charset=UTF-8",
                                                          "origin": "https://evil.example"})
        stripped = httpx.post(post, content=body, headers={"content-type": "text/plain"})
        foreign = httpx.post(post, content=body, headers={"content-type": "application/json",
                                                          "origin": "https://evil.example"})
        rebound = httpx.post(post, content=body, headers={"content-type": "application/json",
                                                          "host": "attacker.example", "origin": "http://attacker.example"})
        own = httpx.post(post, content=body, headers={"content-type": "application/json", "origin": url,
                                                      SIM: "ttft_ms=0"})
    blocked = [no_cors.status_code, stripped.status_code, foreign.status_code, rebound.status_code]
    print(f"cross-origin: refused with {blocked}; own origin {own.status_code}", file=sys.stderr)
    return {"cross_origin_blocked": blocked == [403, 415, 403, 403] and own.status_code == 200}


def admission(quick: bool) -> dict[str, Any]:
    """200 clients against 10 requests/s, on one gateway and on two sharing Redis
    (`admitted_exact`, `redis_admitted_exact`: bench/gateway_limits.py)."""
    from bench.gateway_limits import run_all

    return run_all(clients=50 if quick else 200, seconds=3.0 if quick else 10.0)


MEASUREMENTS: list[Callable[[bool], dict[str, Any]]] = [
    cross_origin,
    idle_connections,
    healthz_under_abuse,
    streaming_throughput,
    admission,
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="shorter runs, for a smoke test")
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    for measure in MEASUREMENTS:
        figures.update(measure(args.quick))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
