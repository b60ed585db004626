"""The pieces of resumable streams in process, on fake sources and a fake clock: a
stream's log and its followers, the process's registry (bounds, expiry) and the
generation (how each way of ending sets the status, and that the source is closed)."""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

import pytest

from gateway.streams import run
from gateway.streams.errors import StreamTooLarge
from gateway.streams.limits import ResumeLimits
from gateway.streams.log import StreamLog
from gateway.streams.memory import STREAM_OVERHEAD, LocalStreams


def go(coro) -> None:
    asyncio.run(coro)


def block(text: str) -> bytes:
    return b'data: {"choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":null}]}' % text.encode()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# ---- the log ---------------------------------------------------------------------------


def test_followers_get_what_is_there_at_once_then_live_events_then_the_end() -> None:
    async def main() -> None:
        log = StreamLog("s", "o", created_at=0, stream_bytes=1 << 20)
        log.append([block("a"), block("b")])
        follower = log.follow(1)
        assert await follower.__anext__() == log.events[1]
        waiting = asyncio.ensure_future(follower.__anext__())
        log.append([block("c"), block("d")])
        assert await waiting == log.events[2] + log.events[3]  # one batch
        log.end("completed", 1.0)
        with pytest.raises(StopAsyncIteration):
            await follower.__anext__()
        assert [batch async for batch in log.follow(0)] == [b"".join(log.events)]
        assert log.snapshot().body() == {
            "id": "s", "object": "firsttoken.stream", "status": "completed", "last_event": 4, "characters": 4,
            "finish_reason": None, "created_at": 0, "ended_at": 1,
        }

    go(main())


def test_a_mirrored_log_shows_only_what_its_mirror_revealed() -> None:
    async def main() -> None:
        log = StreamLog("s", "o", created_at=0, stream_bytes=1 << 20, mirrored=True)
        log.append([block("a"), block("b")])
        assert log.visible == 0 and log.wake.is_set()
        log.reveal(1)
        follower = log.follow(0)
        assert await follower.__anext__() == log.events[0]
        log.end("completed", 1.0)
        log.reveal(2, final=True)
        assert [batch async for batch in follower] == [log.events[1]]

    go(main())


def test_the_stream_cap_refuses_a_batch_whole_and_a_final_event_passes_it() -> None:
    async def main() -> None:
        log = StreamLog("s", "o", created_at=0, stream_bytes=100)
        log.append([block("a")])
        with pytest.raises(StreamTooLarge) as caught:
            log.append([block("b"), block("c")])
        assert len(log.events) == 1 and caught.value.limit == 100 and not caught.value.gateway_full
        log.append_last(b'data: {"error": {"code": "stream_too_large"}}')
        assert len(log.events) == 2 and log.error_seen and log.bytes > 100

    go(main())


# ---- the registry ----------------------------------------------------------------------


def test_a_client_over_its_count_drops_its_oldest_ended_stream_then_is_refused() -> None:
    async def main() -> None:
        streams = LocalStreams(ResumeLimits(streams_per_client=2))
        one, two = streams.open("1", "me", created_at=0), streams.open("2", "me", created_at=0)
        assert one and two and streams.open("x", "you", created_at=0)
        one.end("completed", 1)
        streams.ended(one)
        three = streams.open("3", "me", created_at=0)
        assert three is not None and streams.get("1", "me") is None and streams.get("2", "me") is two
        assert streams.open("4", "me", created_at=0) is None  # two and three are live
        assert streams.get("2", "you") is None  # found by its owner only
        streams.close()

    go(main())


def test_the_total_drops_ended_streams_first_and_then_fails_a_growing_one() -> None:
    async def main() -> None:
        streams = LocalStreams(ResumeLimits(total_bytes=2 * STREAM_OVERHEAD + 600))
        old = streams.open("old", "a", created_at=0)
        assert old is not None
        old.append([block("x" * 300)])
        old.end("completed", 1)
        streams.ended(old)
        live = streams.open("live", "b", created_at=0)
        assert live is not None
        live.append([block("y" * 300)])  # room made by dropping `old`
        assert streams.find("old") is None
        assert streams.open("more", "c", created_at=0) is not None
        with pytest.raises(StreamTooLarge) as caught:
            live.append([block("z" * 5000)])
        assert caught.value.gateway_full
        assert streams.open("none", "d", created_at=0) is None  # nothing ended to drop
        charged = streams.total_bytes
        streams.drop("live")
        assert streams.total_bytes == charged - STREAM_OVERHEAD - live.charged
        streams.close()

    go(main())


def test_ended_streams_expire_after_the_ttl_lazily_and_by_one_timer() -> None:
    async def main() -> None:
        clock = Clock()
        streams = LocalStreams(ResumeLimits(ttl_s=60), clock=clock)
        first, second = streams.open("1", "me", created_at=0), streams.open("2", "me", created_at=0)
        assert first and second
        first.end("completed", 1)
        streams.ended(first)
        timer = streams._reaper
        assert timer is not None and 59 < timer.when() - asyncio.get_running_loop().time() <= 60
        clock.now += 30
        second.end("completed", 1)
        streams.ended(second)
        assert streams._reaper is timer  # one timer, for the soonest expiry
        clock.now += 31
        assert streams.get("1", "me") is None and streams.get("2", "me") is second
        streams.close()

    go(main())


# ---- the generation --------------------------------------------------------------------


class Source:
    """A source that yields what it is given and records being closed."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes | Exception | None] = asyncio.Queue()
        self.closed = asyncio.Event()
        self.released = asyncio.Event()

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            while (item := await self.queue.get()) is not None:
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            self.closed.set()

    async def release(self) -> None:
        self.released.set()


def start(source: Source, limits: ResumeLimits = ResumeLimits()) -> tuple[StreamLog, list[StreamLog]]:
    log = StreamLog("s", "o", created_at=0, stream_bytes=limits.stream_bytes)
    ended: list[StreamLog] = []
    run.start(log, source.chunks(), source.release, limits, on_end=ended.append)
    return log, ended


async def finish(log: StreamLog) -> None:
    assert log.task is not None
    await asyncio.wait_for(log.task, 10)


def test_a_source_that_ends_completes_the_stream_or_fails_it_on_an_error_event() -> None:
    async def main() -> None:
        for tail, status in ((b"data: [DONE]\n\n", "completed"), (b'data: {"error": {"code": "x"}}\n\n', "failed")):
            source = Source()
            log, ended = start(source)
            source.queue.put_nowait(block("a") + b"\n\n" + block("b")[:9])
            source.queue.put_nowait(block("b")[9:] + b"\r\n\r\n" + tail)
            source.queue.put_nowait(None)
            await finish(log)
            assert log.status == status and ended == [log] and source.released.is_set()
            assert log.characters == 2 and len(log.events) == 3 and log.failure is None

    go(main())


def test_a_source_that_raises_fails_the_stream_and_keeps_the_exception() -> None:
    async def main() -> None:
        source = Source()
        log, _ = start(source)
        source.queue.put_nowait(block("a") + b"\n\n")
        boom = ConnectionError("cut")
        source.queue.put_nowait(boom)
        await finish(log)
        assert log.status == "failed" and log.failure is boom and len(log.events) == 1

    go(main())


@pytest.mark.parametrize("reason, status, last", [
    (run.STOP_CANCEL, "cancelled", None), (run.STOP_SHUTDOWN, "failed", b"gateway_shutdown"),
])
def test_a_stopped_generation_closes_its_source(reason: str, status: str, last: bytes | None) -> None:
    async def main() -> None:
        source = Source()
        log, _ = start(source)
        source.queue.put_nowait(block("a") + b"\n\n")
        await anext(log.follow(0))
        assert run.stop(log, reason)
        await finish(log)
        assert log.status == status and source.closed.is_set() and source.released.is_set()
        assert (last in log.events[-1]) if last else len(log.events) == 1
        assert not run.stop(log, reason)  # nothing left to stop

    go(main())


def test_a_generation_past_max_s_is_stopped_as_a_cancel() -> None:
    async def main() -> None:
        source = Source()
        log, _ = start(source, ResumeLimits(max_s=0.05))
        await finish(log)  # the source never ends by itself
        assert log.status == "cancelled" and log.stop_reason == run.STOP_EXPIRED and source.released.is_set()

    go(main())


def test_oversized_events_and_streams_fail_with_an_error_event() -> None:
    async def main() -> None:
        for limits, code in ((ResumeLimits(event_bytes=100), b"event_too_large"),
                             (ResumeLimits(stream_bytes=300), b"stream_too_large")):
            source = Source()
            log, _ = start(source, limits)
            source.queue.put_nowait(block("ok") + b"\n\n")
            source.queue.put_nowait(block("x" * 200) + b"\n\n")
            await finish(log)
            assert log.status == "failed" and code in log.events[-1] and source.released.is_set()
            assert b'"ok"' in log.events[0]  # what came whole before it is kept

    go(main())
