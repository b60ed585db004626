"""The core's request loop with canned responses and a fake clock: pacing, retries,
abort during a wait. (The same core against a real gateway: tests/gateway.)"""

from __future__ import annotations

import asyncio
import json
from typing import AsyncIterator

from firsttoken.client import AbortSignal, HTTPRequest
from firsttoken.core import Core
from firsttoken.ratelimit import Governor

OK_STREAM = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


class Canned:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self._body = status, headers, body

    async def chunks(self) -> AsyncIterator[bytes]:
        yield self._body

    async def read(self, limit: int) -> bytes:
        return self._body[:limit]


class CannedTransport:
    def __init__(self, *responses: Canned) -> None:
        self.responses = list(responses)
        self.sent: list[HTTPRequest] = []

    async def send(self, request: HTTPRequest, abort: AbortSignal) -> Canned:
        self.sent.append(request)
        return self.responses.pop(0)


class FakeTime:
    def __init__(self) -> None:
        self.now_ms = 1_000_000.0
        self.slept: list[float] = []
        self.on_sleep = None

    def clock(self) -> float:
        return self.now_ms

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now_ms += seconds * 1000
        if self.on_sleep:
            self.on_sleep()


SSE = {"content-type": "text/event-stream"}


def run(transport, time_: FakeTime, *messages, governor=lambda: Governor(rng=__import__("random").Random(1))):
    events: list[dict] = []
    core = Core(post=lambda t: events.append(json.loads(t)), transport=transport,
                clock=time_.clock, sleep=time_.sleep, governor=governor)

    async def main():
        for m in messages:
            await core.handle(m if isinstance(m, str) else json.dumps(m))

    asyncio.run(main())
    return core, events


def send(i: str = "a") -> dict:
    return {"type": "chat.send", "id": i, "messages": [{"role": "user", "content": "hello"}],
            "settings": {"base_url": "http://api.test/v1", "model": "gpt-4o"}}


def test_a_429_is_retried_after_retry_after_and_then_succeeds() -> None:
    t = FakeTime()
    transport = CannedTransport(
        Canned(429, {"retry-after": "2", "content-type": "application/json"}, b'{"error": {"message": "slow down"}}'),
        Canned(200, SSE, OK_STREAM),
    )
    _, events = run(transport, t, send())
    kinds = [e["type"] for e in events]
    assert kinds == ["chat.retry", "chat.delta", "chat.done"]
    assert events[0]["wait_s"] == 2 and events[0]["status"] == 429
    assert abs(sum(t.slept) - 2) < 1e-6
    assert events[-1]["attempts"] == 2 and len(transport.sent) == 2


def test_exhausted_quota_waits_before_sending() -> None:
    t = FakeTime()
    limits = {"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "0",
              "x-ratelimit-reset-requests": "3s", **SSE}
    transport = CannedTransport(Canned(200, limits, OK_STREAM), Canned(200, SSE, OK_STREAM))
    _, events = run(transport, t, send("a"), send("b"))
    b = [e for e in events if e["id"] == "b"]
    assert b[0]["type"] == "chat.wait" and b[0]["wait_s"] == 3
    assert b[-1]["type"] == "chat.done"
    assert abs(sum(t.slept) - 3) < 1e-6
    first_done = next(e for e in events if e["id"] == "a" and e["type"] == "chat.done")
    assert first_done["quota"]["requests"] == {"limit": 10, "remaining": 0, "reset_in_s": 3}


def test_stop_during_a_wait_ends_it_at_once_and_sends_nothing() -> None:
    t = FakeTime()
    transport = CannedTransport(Canned(429, {"retry-after": "30"}, b"{}"))
    core_box = {}

    def stop_on_first_sleep():
        core_box["core"]._active["a"].abort()

    t.on_sleep = stop_on_first_sleep
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=t.sleep)
    core_box["core"] = core
    asyncio.run(core.handle(json.dumps(send("a"))))
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["code"] == "aborted"
    assert len(t.slept) == 1 and len(transport.sent) == 1


def test_no_retry_once_text_was_shown() -> None:
    t = FakeTime()
    broken = b'data: {"choices":[{"index":0,"delta":{"content":"par"}}]}\n\n'
    transport = CannedTransport(Canned(200, SSE, broken), Canned(200, SSE, OK_STREAM))
    _, events = run(transport, t, send())
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["code"] == "truncated"
    assert events[-1]["error"]["partial"] == "par" and len(transport.sent) == 1


def test_client_errors_are_not_retried() -> None:
    t = FakeTime()
    transport = CannedTransport(Canned(400, {}, b'{"error": {"message": "bad", "param": "messages"}}'))
    _, events = run(transport, t, send())
    assert [e["type"] for e in events] == ["chat.error"]
    assert events[0]["error"]["message"] == "bad" and t.slept == []
