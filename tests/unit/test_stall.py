"""Stalls and timeouts on fake time: the pure watch (`firsttoken.stall`), then the core's
request loop driving it with scripted responses whose bytes arrive at given moments."""

from __future__ import annotations

import asyncio
import heapq
import json
import math
from typing import AsyncIterator, Awaitable

import pytest

from firsttoken.attempt import ABORT_GRACE_MS
from firsttoken.core import Core
from firsttoken.errors import Aborted
from firsttoken.stall import Stalled, StallWatch, TimedOut
from firsttoken.settings import ChatSettings
from firsttoken.stream.client import AbortSignal, HTTPRequest
from tests.unit.fakes import SSE

START = 1_000_000.0


# ---- the watch alone -----------------------------------------------------------------


def test_silence_is_shown_past_the_threshold_then_once_per_whole_second() -> None:
    watch = StallWatch(10, 60, START)
    assert watch.check(START + 9_999) is None
    assert watch.check(START + 10_000) == Stalled(START, 10)
    assert watch.check(START + 10_700) is None  # the same whole second: nothing new
    assert watch.check(START + 11_000) == Stalled(START, 11)
    assert watch.check(START + 12_400) == Stalled(START, 12)


def test_text_ends_the_stall_and_restarts_the_count() -> None:
    watch = StallWatch(10, 60, START)
    assert watch.progress(START + 5_000) is None  # no stall was shown: nothing to end
    watch.check(START + 17_000)
    assert watch.stalled
    assert watch.progress(START + 18_500) == 13_500  # ms, the watch's unit
    assert not watch.stalled
    assert watch.check(START + 27_000) is None
    assert watch.check(START + 28_500) == Stalled(START + 18_500, 10)


def test_bytes_without_text_prove_the_connection_not_the_model() -> None:
    # A reasoning model thinking silently behind keep-alives: the silence of text is
    # shown, as connected; the bytes hold the timeout off for as long as they come.
    watch = StallWatch(10, 60, START)
    watch.byte(START + 200)  # the headers
    assert watch.check(START + 10_000) == Stalled(START, 10, connected=True)
    for ping_s in range(15, 600, 15):
        watch.byte(START + ping_s * 1000)
        assert watch.check(START + ping_s * 1000 + 500) == Stalled(START, ping_s, connected=True)
    assert not watch.timed_out
    assert watch.progress(START + 601_000) == 601_000  # the model speaks
    assert not watch.stalled and watch.check(START + 610_000) is None


def test_a_silence_with_no_byte_is_not_connected_until_one_comes_and_times_out_without() -> None:
    watch = StallWatch(10, 60, START)
    watch.progress(START)
    assert watch.check(START + 10_000) == Stalled(START, 10)  # not connected: nothing came
    assert watch.check(START + 14_000) == Stalled(START, 14)
    watch.byte(START + 15_000)  # a keep-alive: the server is there
    assert watch.check(START + 15_000) == Stalled(START, 15, connected=True)
    # ... and it is still the last byte 60 s later: the connection is dead.
    assert watch.check(START + 74_999) == Stalled(START, 74, connected=True)
    assert watch.check(START + 75_000) == TimedOut(60000.0)
    assert watch.timed_out


@pytest.mark.parametrize("ping_s", [1, 9, 15, 59])
def test_asked_when_told_a_kept_alive_silence_says_each_second_once_and_never_times_out(ping_s: float) -> None:
    watch = StallWatch(10, 60, START)
    now, said, next_ping = START, [], START + ping_s * 1000
    while now < START + 900_000:
        now += watch.next_check_ms(now)
        while next_ping <= now:  # the pings due by now, at their moments
            watch.byte(next_ping)
            next_ping += ping_s * 1000
        out = watch.check(now)
        assert not isinstance(out, TimedOut)
        if out is not None:
            said.append((out.waiting_s, out.connected))
    assert [s for s, _ in said] == list(range(10, 901))
    assert all(connected for s, connected in said if s >= ping_s)


def test_the_limit_ends_it_whatever_was_shown() -> None:
    watch = StallWatch(10, 30, START)
    assert watch.check(START + 29_999) == Stalled(START, 29)
    assert watch.check(START + 30_000) == TimedOut(30000.0)
    # A limit under the threshold times out without a note first.
    assert StallWatch(10, 5, START).check(START + 5_000) == TimedOut(5000.0)


def test_a_threshold_under_a_second_still_says_a_whole_second() -> None:
    watch = StallWatch(0.3, 60, START)
    assert watch.check(START + 300) == Stalled(START, 1)
    assert watch.check(START + 900) is None
    assert watch.check(START + 1_000) is None  # "1 s" was said already
    assert watch.check(START + 2_000) == Stalled(START, 2)


@pytest.mark.parametrize(("notice", "timeout"), [(10, 60), (0.3, 2.5), (5, 3), (1, 1)])
def test_asking_when_told_never_misses_a_second_nor_spins(notice: float, timeout: float) -> None:
    watch = StallWatch(notice, timeout, START)
    now, said = START, []
    for _ in range(10_000):
        step = watch.next_check_ms(now)
        assert step >= 1
        now += step
        out = watch.check(now)
        if isinstance(out, TimedOut):
            break
        if out is not None:
            said.append(out.waiting_s)
    else:
        pytest.fail("never timed out")
    assert (now - START) / 1000 == pytest.approx(timeout, abs=0.01)
    first = max(1, math.floor(notice))
    assert said == list(range(first, math.ceil(timeout))) if notice < timeout else said == []


# ---- the core: scripted responses on virtual time -----------------------------------

CHUNK = 'data: {{"choices":[{{"index":0,"delta":{{"content":"{}"}}}}]}}\n\n'
END = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
NEVER = math.inf


class VirtualTime:
    """A clock that jumps to the next timer whenever every task waits: sleeps and
    scripted bytes happen at their exact moments, and a test of minutes runs at once."""

    def __init__(self) -> None:
        self.now_ms = START
        self.timers: list[tuple[float, int, asyncio.Future[None]]] = []
        self.count = 0

    def clock(self) -> float:
        return self.now_ms

    def wake_at(self, at_ms: float, future: asyncio.Future[None]) -> None:
        self.count += 1
        heapq.heappush(self.timers, (at_ms, self.count, future))

    async def sleep(self, seconds: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self.wake_at(self.now_ms + seconds * 1000, future)
        await future

    async def run(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        while True:
            for _ in range(20):  # let every task run until it waits
                await asyncio.sleep(0)
            if task.done():
                return task.result()
            while self.timers and self.timers[0][2].done():
                heapq.heappop(self.timers)  # a cancelled sleep
            assert self.timers and self.timers[0][0] < math.inf, "every task waits for ever"
            at_ms, _, future = heapq.heappop(self.timers)
            self.now_ms = max(self.now_ms, at_ms)
            future.set_result(None)


class Scripted:
    """A 200 whose body arrives as `(at_s, bytes)` pieces, each at its moment (seconds
    after the request left). Like the page's fetch, it ends at once with `Aborted` when
    its signal is aborted."""

    def __init__(self, t: VirtualTime, abort: AbortSignal, pieces: list[tuple[float, bytes]]) -> None:
        self.status, self.headers = 200, SSE
        self.t, self.abort, self.pieces = t, abort, pieces
        self.start = t.clock()

    async def chunks(self) -> AsyncIterator[bytes]:
        for at_s, data in self.pieces:
            at_ms = self.start + at_s * 1000
            if at_ms > self.t.clock():
                woken = asyncio.get_running_loop().create_future()
                self.abort.on_abort(lambda woken=woken: woken.done() or woken.set_result(None))
                self.t.wake_at(at_ms, woken)
                await woken
            if self.abort.aborted:
                raise Aborted("stopped")
            yield data

    async def read(self, limit: int) -> bytes:
        return b""


class ScriptedTransport:
    """Answers each request with the next script; `None`: no answer at all, not even
    headers, and deaf to its signal (only cancelling ends it)."""

    def __init__(self, t: VirtualTime, *scripts: list[tuple[float, bytes]] | None) -> None:
        self.t, self.scripts = t, list(scripts)
        self.sent: list[HTTPRequest] = []

    async def send(self, request: HTTPRequest, abort: AbortSignal) -> Scripted:
        self.sent.append(request)
        script = self.scripts.pop(0)
        if script is None:
            await asyncio.get_running_loop().create_future()
        return Scripted(self.t, abort, script)


def chat(t: VirtualTime, transport: ScriptedTransport | RefusingTransport, on_event=None, **settings: float) -> list[dict]:
    events: list[dict] = []

    def post(text: str) -> None:
        events.append(json.loads(text))
        if on_event is not None:
            on_event(core, events[-1])

    core = Core(post=post, transport=transport, clock=t.clock, sleep=t.sleep)
    msg = {"type": "chat.send", "id": "a", "messages": [{"role": "user", "content": "hello"}],
           "settings": {"base_url": "http://api.test/v1", "model": "gpt-4o", **settings}}
    asyncio.run(t.run(core.handle(json.dumps(msg))))
    return [e for e in events if e["type"] != "chat.prepared"]


def text(s: str) -> bytes:
    return CHUNK.format(s).encode()


def seconds_since_start(t: VirtualTime) -> float:
    return (t.clock() - START) / 1000


def test_a_stall_mid_stream_is_said_each_second_and_ends_when_bytes_resume() -> None:
    t = VirtualTime()
    transport = ScriptedTransport(t, [(0, text("hi")), (13.5, text(" there")), (13.5, END)])
    events = chat(t, transport)
    kinds = [e["type"] for e in events]
    assert kinds == ["chat.delta", *["chat.stall"] * 4, "chat.stall.cleared", "chat.delta", "chat.done"], kinds
    stalls = [e for e in events if e["type"] == "chat.stall"]
    assert [e["waiting_s"] for e in stalls] == [10, 11, 12, 13]
    assert {e["since"] for e in stalls} == {START} and stalls[0]["timeout_s"] == 60
    assert events[kinds.index("chat.stall.cleared")]["stalled_s"] == 13.5


def test_silence_before_the_first_byte_counts_too_and_a_short_threshold_is_taken() -> None:
    t = VirtualTime()
    transport = ScriptedTransport(t, [(3.2, text("late")), (3.2, END)])
    events = chat(t, transport, stall_notice_s=2)
    assert [(e["type"], e.get("waiting_s")) for e in events] == [
        ("chat.stall", 2), ("chat.stall", 3), ("chat.stall.cleared", None), ("chat.delta", None), ("chat.done", None)]


KEEP_ALIVE = b": keep-alive\n\n"
#: A chunk that brings no text (a role, as Chat Completions opens): bytes, not progress.
NO_TEXT = b'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'


def reasoning(s: str) -> bytes:
    return ('data: {"choices":[{"index":0,"delta":{"reasoning_content":"%s"}}]}\n\n' % s).encode()


def test_a_model_thinking_silently_behind_keep_alives_is_connected_for_minutes_never_timed_out() -> None:
    # The gateway's `: keep-alive` after each 15 s of silence, for 10 minutes; then the
    # answer. The notice says the silence, connected (the headers came at once); the
    # timeout never fires; the answer's first text ends the note.
    t = VirtualTime()
    pings = [(15.0 * i, KEEP_ALIVE) for i in range(1, 41)]
    transport = ScriptedTransport(t, [*pings, (610, text("ok")), (610, END)])
    events = chat(t, transport)
    kinds = [e["type"] for e in events]
    assert kinds == [*["chat.stall"] * 600, "chat.stall.cleared", "chat.delta", "chat.done"], kinds[-5:]
    stalls = events[:600]
    assert [e["waiting_s"] for e in stalls] == list(range(10, 610))
    assert all(e["connected"] is True and e["since"] == START for e in stalls)
    assert events[600]["stalled_s"] == 610
    assert len(transport.sent) == 1 and seconds_since_start(t) == 610


def test_a_silence_mid_answer_turns_connected_at_the_first_keep_alive_and_reasoning_is_progress() -> None:
    t = VirtualTime()
    script = [
        *[(5.0 * i, reasoning(f"step {i}")) for i in range(8)],  # thinking aloud: no stall
        (35, text("so")),
        (50, KEEP_ALIVE), (52, NO_TEXT), (65, KEEP_ALIVE),
        (70, text(" yes")), (70, END),
    ]
    events = chat(t, ScriptedTransport(t, script))
    stalls = [e for e in events if e["type"] == "chat.stall"]
    assert [e["waiting_s"] for e in stalls] == list(range(10, 35))
    # Nothing in 10-14 s after the text: not said connected (the key is left out).
    assert [("connected" in e) for e in stalls] == [False] * 5 + [True] * 20
    assert {e["since"] for e in stalls} == {START + 35_000}
    kinds = [e["type"] for e in events]
    assert kinds[kinds.index("chat.stall.cleared") + 1:] == ["chat.delta", "chat.done"]
    assert events[kinds.index("chat.stall.cleared")]["stalled_s"] == 35


def test_a_connection_that_dies_after_a_keep_alive_still_times_out() -> None:
    t = VirtualTime()
    transport = ScriptedTransport(t, [(0, text("par")), (15, KEEP_ALIVE), (NEVER, END)])
    events = chat(t, transport)
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["code"] == "timeout"
    assert events[-1]["error"]["partial"] == "par"
    assert seconds_since_start(t) == 75  # 60 s after the last byte, not the last text
    assert len(transport.sent) == 1


def test_the_limit_ends_the_request_with_timeout_keeping_the_partial_text_and_no_retry() -> None:
    t = VirtualTime()
    transport = ScriptedTransport(t, [(0, text("par")), (NEVER, END)], [(0, text("never sent"))])
    events = chat(t, transport, stall_notice_s=10, stall_timeout_s=30)
    error = events[-1]
    assert error["type"] == "chat.error"
    assert error["error"]["code"] == "timeout" and error["error"]["timeout_s"] == 30
    assert error["error"]["partial"] == "par"
    assert [e["waiting_s"] for e in events if e["type"] == "chat.stall"] == list(range(10, 30))
    assert len(transport.sent) == 1  # a timeout is never sent again by the core
    assert seconds_since_start(t) == 30


def test_a_transport_deaf_to_its_signal_is_cancelled_after_a_grace() -> None:
    t = VirtualTime()
    transport = ScriptedTransport(t, None)
    events = chat(t, transport, stall_notice_s=100, stall_timeout_s=5)
    assert [e["type"] for e in events] == ["chat.error"]
    assert events[0]["error"]["code"] == "timeout" and events[0]["error"]["partial"] == ""
    assert seconds_since_start(t) == pytest.approx(5 + ABORT_GRACE_MS / 1000)


def test_stop_during_a_stall_is_a_stop_not_a_timeout() -> None:
    t = VirtualTime()
    transport = ScriptedTransport(t, [(0, text("hi")), (NEVER, END)])

    def stop_at_12(core: Core, event: dict) -> None:
        if event["type"] == "chat.stall" and event["waiting_s"] == 12:
            core._active["a"].signal.abort()

    events = chat(t, transport, on_event=stop_at_12)
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["code"] == "aborted"
    assert events[-1]["error"]["partial"] == "hi" and seconds_since_start(t) == 12


def test_settings_take_positive_seconds_and_default_otherwise() -> None:
    assert ChatSettings.from_dict({}).stall_notice_s == 10 and ChatSettings.from_dict({}).stall_timeout_s == 60
    s = ChatSettings.from_dict({"stall_notice_s": 0.5, "stall_timeout_s": 3})
    assert (s.stall_notice_s, s.stall_timeout_s) == (0.5, 3.0)
    for bad in (0, -1, "5", True, None, float("nan"), float("inf")):
        s = ChatSettings.from_dict({"stall_notice_s": bad, "stall_timeout_s": bad})
        assert (s.stall_notice_s, s.stall_timeout_s) == (10, 60), bad


class Refused:
    """A 429 that asks for a retry in 30 s."""

    status, headers = 429, {"retry-after": "30"}

    async def chunks(self) -> AsyncIterator[bytes]:
        yield b""

    async def read(self, limit: int) -> bytes:
        return b"{}"


class RefusingTransport:
    def __init__(self) -> None:
        self.sent: list[HTTPRequest] = []

    async def send(self, request: HTTPRequest, abort: AbortSignal) -> Refused:
        self.sent.append(request)
        return Refused()


def test_stop_ends_a_retry_wait_the_moment_it_comes_on_the_session_clock() -> None:
    # The retry's 30 s wait is one wait on the session's clock that Stop ends: stopped
    # 5 s in, the request ends at 5 s, not at the next step of a polling loop or at 30 s.
    t = VirtualTime()
    transport = RefusingTransport()

    def stop_5_s_into_the_wait(core: Core, event: dict) -> None:
        if event["type"] == "chat.retry":
            async def stop() -> None:
                await t.sleep(5)
                core._active["a"].signal.abort()
            asyncio.ensure_future(stop())

    events = chat(t, transport, on_event=stop_5_s_into_the_wait)
    assert [e["type"] for e in events] == ["chat.retry", "chat.error"]
    assert events[0]["wait_s"] == 30 and events[-1]["error"]["code"] == "aborted"
    assert seconds_since_start(t) == 5 and len(transport.sent) == 1
