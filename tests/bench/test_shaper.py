"""The shaped link (bench/shaper.py): the schedule as pure logic, then the real proxy on
loopback sockets. Delays and durations are asserted as lower bounds only (a loaded
machine only makes them longer); how close the link comes to its profile is
`make bench-link`'s figure (tests/bench/test_link_smoke.py runs it)."""

from __future__ import annotations

import asyncio
import os
import random
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.profiles import Profile
from bench.shaper import MAX_BUFFERED, MSS, RTO_MIN_S, Link, Loss, Pipe, _Direction, shaped_url

# Timers may fire a hair early (the event loop's clock resolution); a delay is "at least"
# the configured one less this.
EARLY = 0.002
# Small and fast, so that the tests take well under a second each.
FAST = Profile(down_mbps=40.0, up_mbps=20.0, rtt_ms=40)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Echoes until EOF, then half-closes in turn (or until the link resets it)."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.write_eof()
        await writer.drain()
    except ConnectionResetError:
        pass
    finally:
        writer.close()


def run(handler: Handler, body: Callable[[tuple[str, int]], Awaitable[None]]) -> None:
    """Starts a server with `handler`, runs `body(target)`, stops the server."""

    async def main() -> None:
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        try:
            await body(server.sockets[0].getsockname()[:2])
        finally:
            server.close()

    asyncio.run(main())


# ---- the schedule, without sockets ----------------------------------------------------

def test_a_pipe_serialises_what_is_offered_together_and_idles_between() -> None:
    pipe = Pipe()
    assert pipe.transmit(1000, 1000.0, now=10.0) == 11.0
    assert pipe.transmit(500, 1000.0, now=10.0) == 11.5  # behind the first
    assert pipe.transmit(1000, 1000.0, now=20.0) == 21.0  # the link was idle meanwhile


@given(st.lists(st.tuples(st.integers(1, 100_000), st.floats(0, 1)), min_size=1, max_size=50),
       st.floats(1e3, 1e8))
def test_a_pipe_never_carries_more_than_its_rate(offers: list[tuple[int, float]], rate: float) -> None:
    pipe, now, left = Pipe(), 0.0, 0.0
    first = None
    for size, gap in offers:
        now += gap
        first = now if first is None else first
        departed = pipe.transmit(size, rate, now)
        assert departed >= max(now, left) + size / rate - 1e-9  # after its offer, and after those before it
        left = departed
    total = sum(size for size, _ in offers)
    assert left >= first + total / rate - 1e-6  # the whole never faster than the rate


def test_no_loss_costs_nothing() -> None:
    loss = Loss(0.0)
    assert all(loss.penalty_s(size, 0.1) == 0.0 for size in range(1, 100_000, 997))


def test_a_lost_packet_costs_one_retransmission_timeout() -> None:
    penalties = {round(Loss(0.5, seed).penalty_s(MSS, 0.15), 9) for seed in range(50)}
    assert penalties == {0.0, round(0.15 + RTO_MIN_S, 9)}


def test_loss_is_per_packet_and_reproducible() -> None:
    def lost(size: int, seed: int) -> int:
        loss = Loss(0.02, seed)
        return sum(loss.penalty_s(size, 0.1) > 0 for _ in range(5000))

    assert lost(MSS, 1) == lost(MSS, 1)
    # 1 packet: 2%; 10 packets: 1 − 0.98^10 ≈ 18%. Seeded, so not a flaky draw.
    assert 50 < lost(MSS, 1) < 150
    assert 700 < lost(10 * MSS, 1) < 1100
    with pytest.raises(ValueError):
        Loss(1.0)


class _RecordingWriter:
    """A receiver that takes everything at once and notes how much the link held."""

    def __init__(self, direction: _Direction) -> None:
        self.direction = direction
        self.received = bytearray()
        self.peak = 0
        self.eof = False

    def write(self, data: bytes) -> None:
        self.peak = max(self.peak, self.direction.buffered)
        self.received += data

    async def drain(self) -> None:
        pass

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        self.eof = True


def test_a_direction_holds_at_most_its_bound() -> None:
    payload = os.urandom(4 * MAX_BUFFERED)

    async def main() -> None:
        # A sender with everything ready at once: only the bound stops the direction
        # from reading it all before the first byte is delivered.
        reader = asyncio.StreamReader(limit=len(payload) + 1)
        reader.feed_data(payload)
        reader.feed_eof()
        direction = _Direction(Link(None, ("127.0.0.1", 9)), Pipe(), True, 0.0)
        writer = _RecordingWriter(direction)
        reading = asyncio.create_task(direction.read(reader))
        assert await direction.write(writer) is True  # type: ignore[arg-type]
        await reading
        assert bytes(writer.received) == payload and writer.eof
        assert MAX_BUFFERED // 2 <= writer.peak <= MAX_BUFFERED

    asyncio.run(main())


# ---- bytes --------------------------------------------------------------------------

def test_a_large_random_payload_comes_back_intact_both_ways() -> None:
    payload = os.urandom(1_000_000)

    async def body(target: tuple[str, int]) -> None:
        async with Link(Profile(down_mbps=400.0, up_mbps=400.0, rtt_ms=4), target) as address:
            reader, writer = await asyncio.open_connection(*address)

            async def send() -> None:
                writer.write(payload)
                await writer.drain()
                writer.write_eof()

            sending = asyncio.create_task(send())
            assert await reader.read() == payload
            await sending
            writer.close()

    run(echo, body)


def test_many_small_writes_keep_their_order_even_with_loss() -> None:
    rng = random.Random(7)
    pieces = [os.urandom(rng.randint(1, 300)) for _ in range(2000)]

    async def body(target: tuple[str, int]) -> None:
        # A third of the packets "lost": segments are held back, and must not be overtaken.
        async with Link(Profile(down_mbps=400.0, up_mbps=400.0, rtt_ms=2), target, loss=0.3, seed=3) as address:
            reader, writer = await asyncio.open_connection(*address)
            for piece in pieces:
                writer.write(piece)
            await writer.drain()
            writer.write_eof()
            assert await reader.read() == b"".join(pieces)
            writer.close()

    run(echo, body)


# ---- half-close, close, reset ---------------------------------------------------------

def test_half_close_goes_through_each_way() -> None:
    got: asyncio.Queue[bytes] = asyncio.Queue()

    async def reads_then_answers(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await got.put(await reader.read())  # until the client's EOF
        writer.write(b"answer after your EOF")
        writer.write_eof()
        await writer.drain()
        writer.close()

    async def body(target: tuple[str, int]) -> None:
        async with Link(FAST, target) as address:
            reader, writer = await asyncio.open_connection(*address)
            writer.write(b"question")
            writer.write_eof()
            assert await got.get() == b"question"
            assert await reader.read() == b"answer after your EOF"  # then EOF
            writer.close()

    run(reads_then_answers, body)


def test_the_server_half_closing_first_still_hears_the_client() -> None:
    got: asyncio.Queue[bytes] = asyncio.Queue()

    async def greets_and_listens(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello")
        writer.write_eof()
        await got.put(await reader.read())
        writer.close()

    async def body(target: tuple[str, int]) -> None:
        async with Link(FAST, target) as address:
            reader, writer = await asyncio.open_connection(*address)
            assert await reader.read() == b"hello"
            writer.write(b"still talking")
            writer.write_eof()
            assert await got.get() == b"still talking"
            writer.close()

    run(greets_and_listens, body)


def test_a_close_on_either_side_reaches_the_other() -> None:
    closed: asyncio.Queue[bytes] = asyncio.Queue()

    async def closes_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if await reader.read(1) == b"c":  # the client asks the server to close
            writer.close()
            return
        await closed.put(await reader.read())  # else: wait for the client's close
        writer.close()

    async def body(target: tuple[str, int]) -> None:
        async with Link(FAST, target) as address:
            reader, writer = await asyncio.open_connection(*address)
            writer.write(b"c")
            assert await reader.read() == b""
            writer.close()

            reader, writer = await asyncio.open_connection(*address)
            writer.write(b"x")
            writer.close()
            assert await closed.get() == b""

    run(closes_at_once, body)


def test_a_reset_reaches_the_other_side() -> None:
    async def resets(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)
        # A zero linger time: close() sends a RST (socket(7), SO_LINGER); abort() alone sends a FIN.
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async def body(target: tuple[str, int]) -> None:
        async with Link(FAST, target) as address:
            reader, writer = await asyncio.open_connection(*address)
            writer.write(b"x")
            with pytest.raises(ConnectionResetError):
                await reader.read()
            writer.close()

    run(resets, body)


def test_a_cut_link_resets_connections_until_restored() -> None:
    async def body(target: tuple[str, int]) -> None:
        link = Link(FAST, target)
        address = await link.start()
        try:
            reader, writer = await asyncio.open_connection(*address)
            writer.write(b"ping")
            assert await reader.readexactly(4) == b"ping"
            link.cut()
            with pytest.raises(ConnectionResetError):
                await reader.read()
            writer.close()

            reader, writer = await asyncio.open_connection(*address)
            with pytest.raises(ConnectionResetError):
                await reader.read()
            writer.close()

            link.restore()
            reader, writer = await asyncio.open_connection(*address)
            writer.write(b"back")
            assert await reader.readexactly(4) == b"back"
            writer.close()
        finally:
            await link.close()

    run(echo, body)


# ---- delay and bandwidth: lower bounds ----------------------------------------------

@pytest.mark.parametrize("tls", [False, True])
def test_a_new_connection_pays_its_handshake_then_a_round_trip(tls: bool) -> None:
    profile = Profile(down_mbps=100.0, up_mbps=100.0, rtt_ms=60)
    rtt = profile.rtt_ms / 1000
    arrived: asyncio.Queue[float] = asyncio.Queue()

    async def stamps(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(1):
            await arrived.put(time.monotonic())
            writer.write(data)
            await writer.drain()
        writer.close()

    async def body(target: tuple[str, int]) -> None:
        async with Link(profile, target, tls=tls) as address:
            handshake = (2 if tls else 1) * rtt
            start = time.monotonic()
            reader, writer = await asyncio.open_connection(*address)
            writer.write(b"a")
            assert await arrived.get() - start >= handshake + rtt / 2 - EARLY  # one way, after the handshake
            await reader.readexactly(1)
            assert time.monotonic() - start >= handshake + rtt - EARLY

            start = time.monotonic()  # warm: one round trip, no handshake
            writer.write(b"b")
            assert await arrived.get() - start >= rtt / 2 - EARLY
            await reader.readexactly(1)
            assert time.monotonic() - start >= rtt - EARLY
            writer.close()

    run(stamps, body)


def test_a_server_that_speaks_first_is_heard_after_the_handshake_and_one_way() -> None:
    profile = Profile(down_mbps=100.0, up_mbps=100.0, rtt_ms=60)

    async def greets(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 ready")
        await writer.drain()
        await reader.read()
        writer.close()

    async def body(target: tuple[str, int]) -> None:
        async with Link(profile, target) as address:
            start = time.monotonic()
            reader, writer = await asyncio.open_connection(*address)
            assert await reader.readexactly(9) == b"220 ready"
            # SYN, SYN-ACK, ACK: the server accepts 1.5 RTT in, its greeting lands at 2.
            assert time.monotonic() - start >= 2 * profile.rtt_ms / 1000 - EARLY
            writer.close()

    run(greets, body)


def sink_or_source(size: int) -> Handler:
    """A server that takes `size` bytes after a b"u" (an upload) and answers b"k", or
    sends `size` bytes after anything else (a download)."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if await reader.readexactly(1) == b"u":
            await reader.readexactly(size)
            writer.write(b"k")
        else:
            writer.write(bytes(size))
        await writer.drain()
        writer.close()

    return serve


@pytest.mark.parametrize("upload", [True, False])
def test_n_bytes_take_at_least_n_over_the_rate(upload: bool) -> None:
    profile = Profile(down_mbps=8.0, up_mbps=4.0, rtt_ms=10)
    size = 100_000  # 0.2 s up, 0.1 s down
    rate = (profile.up_mbps if upload else profile.down_mbps) * 1e6 / 8

    async def body(target: tuple[str, int]) -> None:
        async with Link(profile, target) as address:
            start = time.monotonic()
            reader, writer = await asyncio.open_connection(*address)
            if upload:
                writer.write(b"u" + bytes(size))
                await reader.readexactly(1)
            else:
                writer.write(b"d")
                await reader.readexactly(size)
            assert time.monotonic() - start >= size / rate - EARLY
            writer.close()

    run(sink_or_source(size), body)


@pytest.mark.parametrize("upload", [True, False])
def test_connections_of_one_link_share_its_bandwidth(upload: bool) -> None:
    profile = Profile(down_mbps=8.0, up_mbps=8.0, rtt_ms=4)
    size = 50_000  # each alone: 0.05 s; together: 0.1 s

    async def body(target: tuple[str, int]) -> None:
        async with Link(profile, target) as address:
            async def transfer() -> None:
                reader, writer = await asyncio.open_connection(*address)
                if upload:
                    writer.write(b"u" + bytes(size))
                    await reader.readexactly(1)
                else:
                    writer.write(b"d")
                    await reader.readexactly(size)
                writer.close()

            start = time.monotonic()
            await asyncio.gather(transfer(), transfer())
            assert time.monotonic() - start >= 2 * size / (profile.down_mbps * 1e6 / 8) - EARLY

    run(sink_or_source(size), body)


# ---- from synchronous code ------------------------------------------------------------

class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)
        self.request.shutdown(socket.SHUT_WR)


def test_a_link_thread_serves_callers_that_run_loops_of_their_own() -> None:
    async def exchange(address: tuple[str, int], data: bytes) -> bytes:
        reader, writer = await asyncio.open_connection(*address)
        writer.write(data)
        writer.write_eof()
        echoed = await reader.read()
        writer.close()
        return echoed

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        host, port = server.server_address[:2]
        try:
            with shaped_url(f"http://{host}:{port}", None) as (url, link):
                parts = urlsplit(url)
                address = (parts.hostname, parts.port)
                # A loop per call, as bench/e2e.py's phases: the link's own loop outlives them.
                assert asyncio.run(exchange(address, b"one")) == b"one"
                link.profile = FAST  # switched while it runs, from this thread
                start = time.monotonic()
                assert asyncio.run(exchange(address, b"two")) == b"two"
                assert time.monotonic() - start >= 2 * FAST.rtt_ms / 1000 - EARLY  # handshake and round trip
        finally:
            server.shutdown()


def test_the_public_surface_is_what_all_says() -> None:
    import bench.shaper as shaper

    # Classes and functions defined there, less the command line; constants have no module.
    defined = {name for name, value in vars(shaper).items()
               if not name.startswith("_") and getattr(value, "__module__", None) == shaper.__name__}
    assert defined - {"main"} == set(shaper.__all__) - {"MAX_BUFFERED", "MSS", "RTO_MIN_S"}
    assert all(hasattr(shaper, name) for name in shaper.__all__)
