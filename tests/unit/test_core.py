"""The core's request loop with canned responses and a fake clock: pacing, retries,
abort during a wait. (The same core against a real gateway: tests/gateway.)"""

from __future__ import annotations

import asyncio
import json
from typing import AsyncIterator

from firsttoken.stream.client import AbortSignal, HTTPRequest
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
    return core, [e for e in events if e["type"] != "chat.prepared"]


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
    events = [e for e in events if e["type"] != "chat.prepared"]
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


def test_prompt_is_compressed_counted_and_fitted_before_it_leaves() -> None:
    t = FakeTime()
    transport = CannedTransport(Canned(200, SSE, OK_STREAM))
    pretty = "Please fix:\n\n```json\n{\n    \"a\": 1,\n    \"b\": [\n        2,\n        3\n    ]\n}\n```\n"
    msg = {**send(), "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": pretty}]}
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=t.sleep)
    asyncio.run(core.handle(json.dumps(msg)))
    prepared = events[0]
    assert prepared["type"] == "chat.prepared" and prepared["saved_unit"] == "tokens"
    assert prepared["saved"][0] == 0 and prepared["saved"][1] > 0
    assert prepared["compression"]["saved_tokens"] == prepared["saved"][1]
    sent = json.loads(transport.sent[0].body)
    assert '{"a":1,"b":[2,3]}' in sent["messages"][1]["content"]
    from firsttoken import tokens
    assert prepared["prompt_tokens"] == tokens.count_chat(sent["messages"], "gpt-4o") and prepared["exact"]
    assert prepared["budget"] == 128_000 - 4096 and prepared["dropped"] == []


def test_compression_can_be_switched_off() -> None:
    t = FakeTime()
    transport = CannedTransport(Canned(200, SSE, OK_STREAM))
    text = "a   b\n\n\n\nc"
    msg = {**send(), "messages": [{"role": "user", "content": text}]}
    msg["settings"] = {**msg["settings"], "compress": "off"}
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=t.sleep)
    asyncio.run(core.handle(json.dumps(msg)))
    assert json.loads(transport.sent[0].body)["messages"][0]["content"] == text
    assert events[0]["compression"] is None


def test_old_turns_that_do_not_fit_are_left_out_and_reported() -> None:
    t = FakeTime()
    transport = CannedTransport(Canned(200, SSE, OK_STREAM))
    history = [{"role": "system", "content": "Be brief."}]
    for i in range(30):
        history += [{"role": "user", "content": f"question {i} " + "word " * 40},
                    {"role": "assistant", "content": f"answer {i} " + "word " * 40}]
    history.append({"role": "user", "content": "the newest question"})
    msg = {**send(), "messages": history}
    msg["settings"] = {**msg["settings"], "context_window": 600, "max_tokens": 100}
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=t.sleep)
    asyncio.run(core.handle(json.dumps(msg)))
    prepared = events[0]
    sent = json.loads(transport.sent[0].body)["messages"]
    assert prepared["dropped"] and 0 not in prepared["dropped"]
    assert sent[0]["content"] == "Be brief." and sent[-1]["content"] == "the newest question"
    assert prepared["prompt_tokens"] <= 500 and len(sent) < len(history)


def test_live_count_reports_tokens_and_budget() -> None:
    t = FakeTime()
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=CannedTransport(), clock=t.clock, sleep=t.sleep)
    messages = [{"role": "user", "content": "hello world"}]
    asyncio.run(core.handle(json.dumps({"type": "tokens.count", "id": "c1", "messages": messages,
                                        "settings": {"model": "gpt-4o"}})))
    from firsttoken import tokens
    assert events == [{"v": 1, "type": "tokens.counted", "id": "c1", "tokens": tokens.count_chat(messages, "gpt-4o"),
                       "budget": 128_000 - 4096, "exact": True}]


def test_text_in_the_same_chunk_as_an_error_is_still_delivered() -> None:
    t = FakeTime()
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"one "}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"two"}}]}\n\n'
        b'data: {"error": {"message": "boom", "code": "x"}}\n\n'
    )
    _, events = run(CannedTransport(Canned(200, SSE, body)), t, send())
    assert [e["type"] for e in events] == ["chat.delta", "chat.error"]
    assert events[0]["text"] == "one two"
    assert events[1]["error"]["code"] == "upstream_error" and events[1]["error"]["partial"] == "one two"


# ---- delta flow control (hello with flow: true; bridge/PROTOCOL.md) -----------------------

def chunk(text: str) -> bytes:
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode() + b"\n\n"


class Chunked:
    """A 200 stream in separate network chunks; `between(i)` runs before chunk i (i >= 1)."""

    def __init__(self, parts: list[bytes], between=None) -> None:
        self.status, self.headers, self.parts, self.between = 200, SSE, parts, between

    async def chunks(self) -> AsyncIterator[bytes]:
        for i, part in enumerate(self.parts):
            if i and self.between:
                await self.between(i)
            yield part

    async def read(self, limit: int) -> bytes:
        return b"".join(self.parts)[:limit]


WORDS = ["one", " two", " three", " four", " five"]
END = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


def stream_events(hello: dict | None, ack_before: tuple[int, ...] = ()) -> list[dict]:
    """Stream WORDS, a chunk each; the page acknowledges just before the chunks named."""
    events: list[dict] = []
    t = FakeTime()

    async def between(i: int) -> None:
        if i in ack_before:
            await core.handle(json.dumps({"type": "delta.ack"}))

    core = Core(post=lambda text: events.append(json.loads(text)), clock=t.clock, sleep=t.sleep,
                transport=CannedTransport(Chunked([chunk(w) for w in WORDS] + [END], between)))

    async def main():
        if hello is not None:
            await core.handle(json.dumps(hello))
        await core.handle(json.dumps(send()))

    asyncio.run(main())
    return [e for e in events if e["type"] in ("chat.delta", "chat.done", "chat.error")]


def test_without_flow_every_chunk_is_its_own_delta() -> None:
    events = stream_events({"type": "hello", "id": "h"})
    assert [e["text"] for e in events[:-1]] == WORDS
    assert [e["seq"] for e in events[:-1]] == [1, 2, 3, 4, 5]


def test_with_flow_text_waits_for_the_ack_and_is_merged_never_lost_or_reordered() -> None:
    # No ack at all: the first chunk goes out at once, the rest is held, and all of it
    # goes out, in one delta, before chat.done.
    events = stream_events({"type": "hello", "id": "h", "flow": True})
    assert [e["type"] for e in events] == ["chat.delta", "chat.delta", "chat.done"]
    assert events[0]["text"] == "one" and events[0]["seq"] == 1
    assert events[1]["text"] == " two three four five" and events[1]["seq"] == 5
    assert "".join(e["text"] for e in events[:-1]) == events[-1]["content"]


def test_with_flow_each_ack_releases_what_was_held() -> None:
    # The page acknowledges before chunks 3 and 5: what arrived in between goes out then.
    events = stream_events({"type": "hello", "id": "h", "flow": True}, ack_before=(3, 5))
    deltas = [e for e in events if e["type"] == "chat.delta"]
    assert [d["text"] for d in deltas] == ["one", " two three", " four five"]
    assert [d["seq"] for d in deltas] == [1, 3, 5]
    assert events[-1]["type"] == "chat.done"


def test_held_text_is_bounded() -> None:
    events: list[str] = []
    from firsttoken.core import _DeltaPacer
    pacer = _DeltaPacer(events.append)
    pacer.enabled = True
    big = "x" * (pacer.HOLD_LIMIT // 4)
    for seq in range(1, 10):
        pacer.delta("a", {"seq": seq, "text": big, "t": 0.0})
    assert len(events) >= 2  # went out without an ack once the bound was passed
    assert pacer.held_chars <= pacer.HOLD_LIMIT


def test_flow_is_only_on_when_hello_says_true() -> None:
    for flow in ("true", 1, None):
        events = stream_events({"type": "hello", "id": "h", "flow": flow})
        assert [e["text"] for e in events[:-1]] == WORDS, flow  # every chunk as it came


def test_counting_that_fails_is_announced_once_and_sending_goes_on() -> None:
    from firsttoken.cache import Cache, MemoryStore
    from firsttoken.errors import TokenizerError

    events: list[dict] = []
    t = FakeTime()
    loads: list[str] = []

    async def no_encoder(encoding: str) -> None:
        loads.append(encoding)
        raise TokenizerError("no JavaScript tokenizer here")

    core = Core(post=lambda text: events.append(json.loads(text)),
                transport=CannedTransport(*(Canned(200, SSE, OK_STREAM) for _ in range(2))),
                clock=t.clock, sleep=t.sleep, prepare_encoder=no_encoder, cache=Cache(MemoryStore()))
    with_system = {**send("a"), "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
    count = {"type": "tokens.count", "id": "c1", "messages": with_system["messages"], "settings": with_system["settings"]}

    async def main() -> None:
        for m in (count, with_system, {**with_system, "id": "b"}):
            await core.handle(json.dumps({"v": 1, **m}))

    asyncio.run(main())
    assert loads == ["o200k_base"] * 3  # tried again each time: a later load may work
    [counted] = [e for e in events if e["type"] == "tokens.counted"]
    assert counted["exact"] is False
    [notice] = [e for e in events if e["type"] == "notice"]
    # Posted with the first chat (the composer's count has nowhere to show it), once.
    assert notice["id"] == "a" and notice["code"] == "tokens_estimated" and notice["reason"] == "tokenizer_error"
    assert "no JavaScript tokenizer here" in notice["message"] and "cache" in notice["message"]
    prepared = [e for e in events if e["type"] == "chat.prepared"]
    assert [p["prompt_tokens"] for p in prepared] == [None, None] and "cache" not in prepared[0]
    assert [e["type"] for e in events if e["type"] == "chat.done"] == ["chat.done", "chat.done"]


def test_exact_counting_posts_no_notice() -> None:
    events: list[dict] = []
    t = FakeTime()

    async def encoder(encoding: str) -> None:
        return None

    core = Core(post=lambda text: events.append(json.loads(text)), transport=CannedTransport(Canned(200, SSE, OK_STREAM)),
                clock=t.clock, sleep=t.sleep, prepare_encoder=encoder)
    asyncio.run(core.handle(json.dumps({"v": 1, **send("a")})))
    assert not [e for e in events if e["type"] == "notice"]
    [prepared] = [e for e in events if e["type"] == "chat.prepared"]
    assert isinstance(prepared["prompt_tokens"], int) and prepared["exact"] is True
