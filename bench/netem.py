"""A loopback TCP proxy that gives everything through it a weak network's round trip and
bandwidth, switchable while it runs (for `make report`'s reply grid), and can cut the
link as a phone loses its network (`cut`, `restore`: the resume tests and
`make bench-resume`).

Why not DevTools' `Network.emulateNetworkConditions`: the page's requests to the API
leave from its PyScript worker, and Chromium 156 answers that command on a worker's own
target with "Not supported", while emulation set on the page's target leaves the
worker's fetches alone (measured: a reply's first byte came no later under the 3G
profile than under 4G). A proxy shapes every byte whoever sends it.

Model: each direction of the link is one pipe shared by all connections. A chunk read
from one side leaves the pipe once the chunks before it have (`len / rate` each) and
arrives `rtt / 2` later, so a request on a kept-alive connection costs a round trip plus
its bytes at the link's rate, as on a real link (no loss, no slow start).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from bench.profiles import Profile

__all__ = ["Profile", "ShapingProxy", "shaping_proxy"]

READ = 64 * 1024


class _Pipe:
    """One direction of the link: when the next chunk may leave."""

    def __init__(self) -> None:
        self.free_at = 0.0

    def schedule(self, size: int, rate_bytes_s: float | None, delay_s: float) -> float:
        now = time.monotonic()
        start = max(now, self.free_at)
        self.free_at = start + (size / rate_bytes_s if rate_bytes_s else 0.0)
        return self.free_at + delay_s


class ShapingProxy:
    """Forwards a loopback port to `target_port`; `profile` (None: unshaped) applies to
    bytes read from then on."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.profile: Profile | None = None
        self.down = _Pipe()
        self.up = _Pipe()
        #: While True the link is down: new connections are reset at once.
        self.down_link = False
        self._open: set[asyncio.StreamWriter] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    def cut(self, *, stay_down: bool = True) -> None:
        """The link goes down, as a phone's does when it loses its network: every open
        connection is reset (both ends see it), and with `stay_down` new ones are too,
        until `restore()`. Callable from any thread."""
        assert self.loop is not None

        def reset() -> None:
            self.down_link = stay_down
            for writer in list(self._open):
                writer.transport.abort()
            self._open.clear()

        done = threading.Event()
        self.loop.call_soon_threadsafe(lambda: (reset(), done.set()))
        done.wait(10)

    def restore(self) -> None:
        """The link is back: new connections go through."""
        self.down_link = False

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, pipe: _Pipe, upload: bool) -> None:
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()

        async def pump() -> None:
            try:
                while data := await reader.read(READ):
                    p = self.profile
                    if p is None:
                        await queue.put((0.0, data))
                        continue
                    rate = (p.up_mbps if upload else p.down_mbps) * 1e6 / 8
                    await queue.put((pipe.schedule(len(data), rate, p.rtt_ms / 2000), data))
            except (ConnectionError, OSError):
                pass
            finally:
                await queue.put(None)

        task = asyncio.ensure_future(pump())
        try:
            while (item := await queue.get()) is not None:
                due, data = item
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            task.cancel()
            try:
                writer.write_eof() if writer.can_write_eof() else writer.close()
            except (ConnectionError, OSError, RuntimeError):
                pass

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down_link:
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._open.update((writer, up_writer))
        for w in (writer, up_writer):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(self._relay(reader, up_writer, self.up, True), self._relay(up_reader, writer, self.down, False))
        for w in (writer, up_writer):
            self._open.discard(w)
            w.close()


@contextmanager
def shaping_proxy(target_url: str) -> Iterator[tuple[str, ShapingProxy]]:
    """A proxy in a thread of its own in front of `target_url` (http://127.0.0.1:PORT);
    yields (its URL, the proxy). Its event loop is made and run in that thread, so the
    caller's thread may run a loop of its own (Playwright's sync API does)."""
    port = int(target_url.rsplit(":", 1)[1].rstrip("/"))
    proxy = ShapingProxy(port)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    listening = threading.Event()
    stop: list[asyncio.Event] = []

    async def serve() -> None:
        stop.append(asyncio.Event())
        server = await asyncio.start_server(proxy._client, sock=sock)
        proxy.loop = asyncio.get_running_loop()
        listening.set()
        await stop[0].wait()
        server.close()
        for writer in list(proxy._open):
            writer.transport.abort()
        await server.wait_closed()

    thread = threading.Thread(target=asyncio.run, args=(serve(),), daemon=True)
    thread.start()
    if not listening.wait(10):
        raise RuntimeError("the shaping proxy did not start")
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", proxy
    finally:
        assert proxy.loop is not None
        proxy.loop.call_soon_threadsafe(stop[0].set)
        thread.join(timeout=10)
        sock.close()
