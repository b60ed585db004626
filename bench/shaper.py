"""A phone's network link in user space: a TCP proxy that gives every byte through it a
mobile link's delay and bandwidth (issue 26: `netem` is not available on these machines).

    async with Link(PROFILES["slow4g"], target=("127.0.0.1", 8000)) as (host, port): ...
    with LinkThread(PROFILES["slow4g"], target=("127.0.0.1", 8000)) as (host, port): ...
    .venv/bin/python bench/shaper.py --profile slow4g --target 127.0.0.1:8000 --listen 127.0.0.1:9000

The model, per proxy (one `Link` is one phone: a phone has one radio link, which all its
connections share):

- **Bandwidth.** Each direction is one serialiser (`Pipe`) shared by every connection:
  a segment leaves once the segments offered before it have left, `size / rate` each (a
  token bucket with no burst, which is what a link of that rate is). The uplink carries
  what the client sends, the downlink what the target sends.
- **Delay.** A segment arrives half a round trip after it has left (`Profile.one_way_s`):
  a request and its reply on a warm connection cost one round trip plus their bytes.
- **Connect.** The kernel completes a loopback handshake before the proxy can accept it,
  so the client's `connect()` returns at once; the handshake is charged to the first
  bytes instead. Nothing the client sends leaves before one RTT after it connected (when
  its `connect()` would have returned), nor anything the target sends before one RTT and
  a half (when the client's ACK would have reached it). A request on a new connection
  thus costs two round trips, as over TCP. `tls=True` adds one more round trip, TLS 1.3's
  full handshake (RFC 8446 §2: the client's first data follows the server's Finished).
- **Loss, as delay.** With `loss=p`, each MSS-sized packet is lost with probability p
  (seeded, reproducible); a segment holding a lost packet arrives one retransmission
  timeout late, and as TCP delivers in order, everything behind it on its connection
  waits too (head-of-line blocking). Nothing is dropped: the bytes are the point of the
  benchmarks, the delay is what loss costs them. An RTO is the cost when too few packets
  follow for fast retransmit (three duplicate ACKs, RFC 5681 §3.2), the case of a short
  request or a reply's tail, which is what a chat sends; deep in a long transfer fast
  retransmit would cost about one RTT. Loss costs latency here, not throughput: the pipe
  goes on serialising while a segment waits, so only a loss near a transfer's end makes
  it longer.
- **In order, half-closed, closed.** Bytes keep their order; an EOF (FIN) is forwarded
  after the bytes before it, one-way delay later, and the other direction goes on until
  its own EOF; then both sockets close. A reset (or `cut()`) aborts both sides.

Why a proxy rather than DevTools' `Network.emulateNetworkConditions`: the page's
requests to the API leave from its PyScript worker, and Chromium 156 answers that command
on a worker's own target with "Not supported", while emulation set on the page's target
leaves the worker's fetches alone (measured: a reply's first byte came no later under
the 3G profile than under 4G). A proxy shapes every byte, whoever sends it.

Not modelled: slow start and congestion control (a phone's flows are short, but a cold
connection's first flight is larger here than TCP's initial window of 10 segments, and
a loss does not halve the sender's window), the radio's own wake-up from idle (RRC
promotion), jitter, and retransmissions' share of the bandwidth.

Each connection's direction holds at most `MAX_BUFFERED` bytes; past that it stops
reading, so the sender's socket fills and TCP's flow control pushes back, as at a real
bottleneck whose queue is full.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

if __name__ == "__main__":  # run as a script: bench/ is on sys.path, the repository is not
    import bench_paths  # noqa: F401

from bench.profiles import PROFILES, Profile

__all__ = ["Link", "LinkThread", "Loss", "MAX_BUFFERED", "MSS", "Pipe", "RTO_MIN_S", "shaped_url"]

#: A TCP segment's payload on a 1500-byte MTU (IPv4 and TCP headers without options take
#: 40 bytes): the unit a radio loses.
MSS = 1460
#: Linux's lowest retransmission timeout, TCP_RTO_MIN (include/net/tcp.h: HZ / 5). Its RTO
#: is the smoothed RTT plus at least this (RFC 6298 §2.3 adds 4 × RTTVAR, which Linux
#: floors here), so a lost packet costs about one RTT plus 200 ms.
RTO_MIN_S = 0.2
#: The most one direction of one connection holds before it stops reading: larger than a
#: bandwidth-delay product of every profile (9 Mbit/s × 85 ms is 96 kB), so the bound
#: never limits a profile's throughput, and small enough to bound memory.
MAX_BUFFERED = 256 * 1024
#: A segment's share of the link in time: bytes are delivered in pieces that take this
#: long to serialise, so a reply's first bytes arrive before its last, at a few hundred
#: timer wake-ups a second at most.
SEGMENT_S = 0.005
READ = 64 * 1024


class Pipe:
    """One direction of the link: a serialiser shared by all connections. Pure: the
    caller gives the time, so the schedule is tested without sockets or clocks."""

    def __init__(self) -> None:
        self.free_at = 0.0

    def transmit(self, size: int, rate_bytes_s: float, now: float) -> float:
        """Offer `size` bytes at `now`; returns when their last byte has left."""
        start = max(now, self.free_at)
        self.free_at = start + size / rate_bytes_s
        return self.free_at


class Loss:
    """Packet loss as delay: which segments wait for a retransmission, and how long."""

    def __init__(self, probability: float, seed: int = 0) -> None:
        if not 0 <= probability < 1:
            raise ValueError(f"loss must be in [0, 1), not {probability}")
        self.probability = probability
        self.rng = random.Random(seed)

    def penalty_s(self, size: int, rtt_s: float) -> float:
        """Extra delay of a segment of `size` bytes: one RTO (RTT + RTO_MIN_S) if any of
        its MSS-sized packets is lost, else 0."""
        if self.probability == 0:
            return 0.0
        packets = max(1, math.ceil(size / MSS))
        lost = self.rng.random() < 1 - (1 - self.probability) ** packets
        return rtt_s + RTO_MIN_S if lost else 0.0


# What a direction's queue carries besides bytes.
_EOF = b""
_RESET = None


class _Direction:
    """One direction of one connection: reads the sender, schedules each segment on the
    link's pipe, writes it to the receiver when it is due."""

    def __init__(self, link: Link, pipe: Pipe, upload: bool, not_before: float) -> None:
        self.link = link
        self.pipe = pipe
        self.upload = upload
        self.not_before = not_before
        # First in, first out: a segment held back by a loss holds back those behind it,
        # as TCP's in-order delivery does (head-of-line blocking).
        self.queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()
        self.buffered = 0
        self.drained = asyncio.Event()

    def _due(self, size: int, now: float) -> float:
        profile = self.link.profile
        if profile is None:
            due = now
        else:
            rate = (profile.up_mbps if self.upload else profile.down_mbps) * 1e6 / 8
            due = self.pipe.transmit(size, rate, now) + profile.one_way_s
            due += self.link.loss.penalty_s(size, profile.rtt_ms / 1000)
        return due

    def _segment_size(self) -> int:
        profile = self.link.profile
        if profile is None:
            return READ
        rate = (profile.up_mbps if self.upload else profile.down_mbps) * 1e6 / 8
        return max(MSS, int(rate * SEGMENT_S))

    async def read(self, reader: asyncio.StreamReader) -> None:
        """Sender → queue, until EOF or a reset."""
        wait = self.not_before - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        try:
            while True:
                # Room for a whole read first: so the bound holds, and no chunk is held
                # outside it.
                while self.buffered > MAX_BUFFERED - READ:
                    self.drained.clear()
                    await self.drained.wait()
                if not (data := await reader.read(READ)):
                    break
                size = self._segment_size()
                for offset in range(0, len(data), size):
                    piece = data[offset : offset + size]
                    self.buffered += len(piece)
                    self.queue.put_nowait((self._due(len(piece), time.monotonic()), piece))
        except (ConnectionError, OSError):
            self.queue.put_nowait((self._fin_due(), _RESET))
            return
        self.queue.put_nowait((self._fin_due(), _EOF))

    def _fin_due(self) -> float:
        """A FIN or RST is a packet too: one-way delay, and (the queue being FIFO) after
        the bytes before it."""
        profile = self.link.profile
        return time.monotonic() + (profile.one_way_s if profile else 0.0)

    async def write(self, writer: asyncio.StreamWriter) -> bool:
        """Queue → receiver, each segment when due. False if the connection was reset."""
        while True:
            due, piece = await self.queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if piece is _RESET:
                return False
            if piece == _EOF:
                if writer.can_write_eof():
                    writer.write_eof()
                return True
            writer.write(piece)
            self.buffered -= len(piece)
            self.drained.set()
            await writer.drain()


class Link:
    """A shaped link in front of `target` (host, port), listening on `listen` (port 0:
    any free port). `profile` is read for every segment and may be changed, or set to
    None (unshaped), while the link runs; the handshake delay is taken when a connection
    is accepted. Use `async with Link(...) as (host, port)`, or `start()` and `close()`."""

    def __init__(self, profile: Profile | None, target: tuple[str, int], *, listen: tuple[str, int] = ("127.0.0.1", 0),
                 tls: bool = False, loss: float = 0.0, seed: int = 0) -> None:
        self.profile = profile
        self.target = target
        self.listen = listen
        #: Round trips before the client's first byte may leave: TCP's, and TLS 1.3's.
        self.handshake_rtts = 2 if tls else 1
        self.loss = Loss(loss, seed)
        self.up = Pipe()
        self.down = Pipe()
        #: While True the link is down: new connections are reset at once (`cut`).
        self.is_down = False
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> tuple[str, int]:
        assert self._server is not None, "the link is not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return host, port

    async def start(self) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._accept, *self.listen)
        return self.address

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        self.cut(stay_down=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()
        self._server = None

    async def __aenter__(self) -> tuple[str, int]:
        return await self.start()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    def cut(self, *, stay_down: bool = True) -> None:
        """The link goes down, as a phone's does when it loses its network: every open
        connection is reset, and with `stay_down` new ones are too, until `restore()`."""
        self.is_down = stay_down
        for writer in list(self._open):
            _reset(writer)
        self._open.clear()

    def restore(self) -> None:
        """The link is back: new connections go through."""
        self.is_down = False

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(self._connection(reader, writer, time.monotonic()))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connection(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter, accepted: float) -> None:
        if self.is_down:
            _reset(client_writer)
            return
        try:
            target_reader, target_writer = await asyncio.open_connection(*self.target)
        except OSError:  # refused: so is the client
            _reset(client_writer)
            return
        pair = (client_writer, target_writer)
        self._open.update(pair)
        for writer in pair:
            sock = writer.get_extra_info("socket")
            if sock is not None:  # each segment leaves when due, not when Nagle allows
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        profile = self.profile
        handshake = self.handshake_rtts * profile.rtt_ms / 1000 if profile else 0.0
        up = _Direction(self, self.up, True, accepted + handshake)
        down = _Direction(self, self.down, False, accepted + handshake + (profile.one_way_s if profile else 0.0))

        async def carry(direction: _Direction, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            reading = asyncio.ensure_future(direction.read(reader))
            try:
                if not await direction.write(writer):
                    raise ConnectionResetError
            finally:
                reading.cancel()

        try:
            async with asyncio.TaskGroup() as both:
                both.create_task(carry(up, client_reader, target_writer))
                both.create_task(carry(down, target_reader, client_writer))
        except* (ConnectionError, OSError):
            # One side reset or vanished: so does the other, as a router's RST would.
            for writer in pair:
                _reset(writer)
        finally:
            for writer in pair:
                self._open.discard(writer)
                writer.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a RST, not a FIN: `abort()` alone closes the socket, which sends a FIN
    unless unread data happens to be waiting. A zero linger time makes close() reset
    (socket(7), SO_LINGER), so the peer's next read fails as over a broken link."""
    if writer.transport.is_closing():  # closed already (by a cut, or by its peer)
        return
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class LinkThread:
    """A `Link` on an event loop of its own thread, for callers that run loops of their
    own (one `asyncio.run` per phase, as bench/e2e.py; Playwright's sync API):

        with LinkThread(PROFILES["3g"], target=("127.0.0.1", 8000)) as (host, port): ...

    `link` is the running Link; `profile`, `cut()` and `restore()` may be used from any
    thread."""

    def __init__(self, profile: Profile | None, target: tuple[str, int], **options: Any) -> None:
        self.link = Link(profile, target, **options)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="shaped-link", daemon=True)

    def __enter__(self) -> tuple[str, int]:
        self._thread.start()
        return asyncio.run_coroutine_threadsafe(self.link.start(), self._loop).result(timeout=10)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.link.close(), self._loop).result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop.close()

    @property
    def profile(self) -> Profile | None:
        return self.link.profile

    @profile.setter
    def profile(self, profile: Profile | None) -> None:
        # One attribute, read by the link's loop for each segment: the write is atomic.
        self.link.profile = profile

    def cut(self, *, stay_down: bool = True) -> None:
        """`Link.cut`, done by the link's loop; returns once every connection is reset."""
        done = threading.Event()
        self._loop.call_soon_threadsafe(lambda: (self.link.cut(stay_down=stay_down), done.set()))
        done.wait(10)

    def restore(self) -> None:
        self.link.restore()  # one flag, read when a connection is accepted


@contextmanager
def shaped_url(target_url: str, profile: Profile | None = None, **options: Any) -> Iterator[tuple[str, LinkThread]]:
    """A `LinkThread` in front of `target_url` (`http://127.0.0.1:8000`); yields the URL
    that reaches it through the link, and the link (to change its profile, cut it)."""
    parts = urlsplit(target_url)
    link = LinkThread(profile, (parts.hostname or "127.0.0.1", parts.port or 80), **options)
    with link as (host, port):
        yield f"{parts.scheme or 'http'}://{host}:{port}", link


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


async def _serve(args: argparse.Namespace) -> None:
    # `--links N`: N phones, each its own link (bench/e2e.py's users), on N ports from
    # `--listen`'s (0: any free ones); one line each, as it comes up.
    host, port = _address(args.listen)
    links = []
    try:
        for i in range(args.links):
            link = Link(PROFILES[args.profile], _address(args.target), listen=(host, port + i if port else 0),
                        tls=args.tls, loss=args.loss, seed=args.seed + i)
            links.append(link)
            at_host, at_port = await link.start()
            p = link.profile
            assert p is not None
            print(f"shaped link {args.profile} ({p.down_mbps} Mbit/s down, {p.up_mbps} up, {p.rtt_ms:g} ms RTT"
                  f"{', TLS' if args.tls else ''}{f', loss {args.loss}' if args.loss else ''}): "
                  f"http://{at_host}:{at_port}/ -> {args.target}", flush=True)
        await asyncio.Event().wait()  # until Ctrl-C or SIGTERM
    finally:
        for link in links:
            await link.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A TCP proxy shaped as a mobile link (bench/profiles.py).")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="slow4g")
    parser.add_argument("--target", required=True, help="host:port to forward to, e.g. 127.0.0.1:8000")
    parser.add_argument("--listen", default="127.0.0.1:9000", help="host:port to listen on (default 127.0.0.1:9000)")
    parser.add_argument("--tls", action="store_true", help="charge a new connection one more round trip (TLS 1.3)")
    parser.add_argument("--loss", type=float, default=0.0, help="packet loss probability, paid as retransmission delay")
    parser.add_argument("--seed", type=int, default=0, help="the loss model's seed")
    parser.add_argument("--links", type=int, default=1, help="how many links (phones), each on its own port")
    args = parser.parse_args(argv)
    try:
        asyncio.run(_serve(args))
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
