"""Benchmark: does the shaped link (bench/shaper.py) give what its profile says?

    .venv/bin/python bench/link.py [--profiles 4g,slow4g,3g] [--bytes 300000] [--pings 5]
                                   [--tls] [--loss P] [--smoke]

For each profile of bench/profiles.py, a fresh `Link` (idle pipes) in front of a small
server in this process, measured by a client in this process, all on one event loop:

- `connect_ms`: connect, then one ping-pong; its time less the warm round trip below. A
  new connection's first exchange pays the handshake (one RTT; two with `--tls`) on top
  of its round trip;
- `rtt_ms`: the median of `--pings` one-byte ping-pongs on the warm connection;
- `up_mbps`: `--bytes` sent to the server, from the first byte written to the server's
  one-byte acknowledgement, less one measured round trip (the last byte's way there and
  the acknowledgement's way back);
- `down_mbps`: `--bytes` asked of the server, from the request to the last byte read,
  less one measured round trip.

The peer is the configuration itself (`configured_*`, and `*_ratio` = measured ÷
configured; 1.0 is a faithful link, throughput a little under 1 is the proxy's own
time), and the same link unshaped (`unshaped`: what the proxy costs on loopback).
Timings on a loaded machine only grow: `loadavg_1m` is printed beside them. With
`--loss P` the figures include what the loss costs (the configured ones do not).

Prints one line per profile, then LAST one JSON line:
    {"profiles": {"slow4g": {"rtt_ms", "configured_rtt_ms", "rtt_ratio", "connect_ms", ...}},
     "unshaped": {...}, "bytes", "loadavg_1m"}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import struct
import time
from typing import Any

import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from bench.profiles import PROFILES, Profile  # noqa: E402
from bench.shaper import Link  # noqa: E402

# The measuring protocol: one command byte, then for upload and download an 8-byte length.
PING, UPLOAD, DOWNLOAD = b"p", b"u", b"d"
ACK = b"k"
LENGTH = struct.Struct("!Q")
BLOCK = 64 * 1024


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """The far end: answers a ping, acknowledges an upload once it is all in, sends a
    download of the length asked."""
    try:
        while command := await reader.read(1):
            if command == PING:
                writer.write(PING)
            elif command == UPLOAD:
                (size,) = LENGTH.unpack(await reader.readexactly(LENGTH.size))
                await reader.readexactly(size)
                writer.write(ACK)
            elif command == DOWNLOAD:
                (size,) = LENGTH.unpack(await reader.readexactly(LENGTH.size))
                block = bytes(BLOCK)
                for offset in range(0, size, BLOCK):
                    writer.write(block[: min(BLOCK, size - offset)])
                    await writer.drain()
            await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def _ping(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> float:
    start = time.perf_counter()
    writer.write(PING)
    await reader.readexactly(1)
    return time.perf_counter() - start


async def measure(profile: Profile | None, target: tuple[str, int], size: int, pings: int, **options: Any) -> dict[str, float]:
    """One profile's figures, in ms and Mbit/s, through a fresh link (`options`: Link's)."""
    async with Link(profile, target, **options) as address:
        start = time.perf_counter()
        reader, writer = await asyncio.open_connection(*address)
        writer.write(PING)
        await reader.readexactly(1)
        first = time.perf_counter() - start
        rtt = statistics.median([await _ping(reader, writer) for _ in range(pings)])

        start = time.perf_counter()
        writer.write(UPLOAD + LENGTH.pack(size))
        payload = os.urandom(size)
        for offset in range(0, size, BLOCK):
            writer.write(payload[offset : offset + BLOCK])
            await writer.drain()
        await reader.readexactly(1)
        up = time.perf_counter() - start

        start = time.perf_counter()
        writer.write(DOWNLOAD + LENGTH.pack(size))
        await reader.readexactly(size)
        down = time.perf_counter() - start

        writer.close()
        await writer.wait_closed()
    return {
        "rtt_ms": rtt * 1000,
        "connect_ms": (first - rtt) * 1000,
        "up_mbps": size * 8 / max(up - rtt, 1e-9) / 1e6,
        "down_mbps": size * 8 / max(down - rtt, 1e-9) / 1e6,
    }


def compare(measured: dict[str, float], profile: Profile, tls: bool = False) -> dict[str, float]:
    """The measured figures beside the configured ones, with their ratios."""
    configured = {"rtt_ms": profile.rtt_ms, "connect_ms": profile.rtt_ms * (2 if tls else 1),
                  "up_mbps": profile.up_mbps, "down_mbps": profile.down_mbps}
    row: dict[str, float] = {}
    for key, value in measured.items():
        row[key] = round(value, 3)
        row[f"configured_{key}"] = configured[key]
        row[f"{key.rsplit('_', 1)[0]}_ratio"] = round(value / configured[key], 3)
    return row


async def run(names: list[str], size: int, pings: int, tls: bool = False, loss: float = 0.0) -> dict[str, Any]:
    server = await asyncio.start_server(_serve, "127.0.0.1", 0)
    target = server.sockets[0].getsockname()[:2]
    try:
        unshaped = {k: round(v, 3) for k, v in (await measure(None, target, size, pings)).items()}
        print(f"unshaped: rtt {unshaped['rtt_ms']:.2f} ms, up {unshaped['up_mbps']:.0f} Mbit/s, "
              f"down {unshaped['down_mbps']:.0f} Mbit/s", flush=True)
        profiles: dict[str, dict[str, float]] = {}
        for name in names:
            measured = await measure(PROFILES[name], target, size, pings, tls=tls, loss=loss)
            row = profiles[name] = compare(measured, PROFILES[name], tls)
            print(f"{name}: rtt {row['rtt_ms']:.1f} ms ({row['rtt_ratio']:.3f}x of {row['configured_rtt_ms']:g}), "
                  f"connect {row['connect_ms']:.1f} ms ({row['connect_ratio']:.3f}x), "
                  f"up {row['up_mbps']:.3f} Mbit/s ({row['up_ratio']:.3f}x of {row['configured_up_mbps']:g}), "
                  f"down {row['down_mbps']:.3f} Mbit/s ({row['down_ratio']:.3f}x of {row['configured_down_mbps']:g})",
                  flush=True)
    finally:
        server.close()
        await server.wait_closed()
    return {"profiles": profiles, "unshaped": unshaped, "bytes": size, "pings": pings, "tls": tls, "loss": loss,
            "loadavg_1m": round(os.getloadavg()[0], 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default=",".join(PROFILES), help="comma-separated, of " + ", ".join(PROFILES))
    parser.add_argument("--bytes", type=int, default=300_000, help="bytes each way per transfer (default 300000)")
    parser.add_argument("--pings", type=int, default=5, help="ping-pongs on the warm connection (default 5)")
    parser.add_argument("--tls", action="store_true", help="new connections pay TLS 1.3's round trip too")
    parser.add_argument("--loss", type=float, default=0.0, help="packet loss probability, paid as delay (seed 0)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, for a test that the benchmark runs")
    args = parser.parse_args()
    names = [name for name in args.profiles.split(",") if name]
    for name in names:
        if name not in PROFILES:
            parser.error(f"unknown profile {name!r}")
    size, pings = (16_000, 1) if args.smoke else (args.bytes, args.pings)
    result = asyncio.run(run(names, size, pings, args.tls, args.loss))
    print(json.dumps({**result, "smoke": args.smoke}))


if __name__ == "__main__":
    main()
