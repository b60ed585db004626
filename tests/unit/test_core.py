"""The core's request loop with canned responses and a fake clock: pacing, retries,
abort during a wait. (The same core against a real gateway: tests/gateway.)"""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

import pytest

from firsttoken.stream.client import AbortSignal, HTTPRequest
from firsttoken.core import Core
from firsttoken.pacing import DeltaPacer
from firsttoken.protocol import ChatDelta
from firsttoken.ratelimit import Governor
from tests.unit.fakes import OK_STREAM, SSE, Canned, CannedTransport, FakeTime, run_core

def run(transport, time_: FakeTime, *messages, governor=lambda: Governor(rng=__import__("random").Random(1))):
    core, events = run_core(transport, time_, *messages, governor=governor)
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


@pytest.mark.parametrize("max_tokens, waits", [(None, False), (5000, True)])
def test_the_window_must_hold_the_completion_the_server_reserves(max_tokens: int | None, waits: bool) -> None:
    # 3,000 tokens left: enough for the prompt, not for a prompt with 5,000 more reserved
    # for its answer, which the server counts against the window as it admits it.
    t = FakeTime()
    limits = {"x-ratelimit-limit-tokens": "10000", "x-ratelimit-remaining-tokens": "3000",
              "x-ratelimit-reset-tokens": "4s", **SSE}
    transport = CannedTransport(Canned(200, limits, OK_STREAM), Canned(200, SSE, OK_STREAM))
    b = send("b")
    if max_tokens:
        b["settings"]["max_tokens"] = max_tokens
    _, events = run(transport, t, send("a"), b)
    mine = [e for e in events if e["id"] == "b"]
    assert mine[-1]["type"] == "chat.done"
    assert (mine[0]["type"] == "chat.wait") is waits
    assert sum(t.slept) == pytest.approx(4 if waits else 0)


MESSAGES_OK = b"".join(b"event: %s\ndata: %s\n\n" % (e.encode(), json.dumps({"type": e, **f}).encode()) for e, f in [
    ("message_start", {"message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                                   "model": "claude-sonnet-4-5", "usage": {"input_tokens": 9, "output_tokens": 1}}}),
    ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
    ("content_block_stop", {"index": 0}),
    ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
    ("message_stop", {}),
])


def test_messages_always_reserve_their_max_tokens() -> None:
    # Anthropic Messages always sends max_tokens (4,096 here, the reply reserve): a window
    # with 3,000 tokens left cannot hold the next request, whose prompt alone would fit.
    t = FakeTime()
    limits = {"x-ratelimit-limit-tokens": "10000", "x-ratelimit-remaining-tokens": "3000",
              "x-ratelimit-reset-tokens": "4s", **SSE}
    transport = CannedTransport(Canned(200, limits, MESSAGES_OK), Canned(200, SSE, MESSAGES_OK))
    a, b = send("a"), send("b")
    for msg in (a, b):
        msg["settings"].update(model="claude-sonnet-4-5", api="anthropic_messages")
    _, events = run(transport, t, a, b)
    mine = [e for e in events if e["id"] == "b"]
    assert mine[0]["type"] == "chat.wait" and mine[0]["wait_s"] == 4
    assert mine[-1]["type"] == "chat.done"
    assert json.loads(transport.sent[1].body)["max_tokens"] == 4096


def test_stop_during_a_wait_ends_it_at_once_and_sends_nothing() -> None:
    t = FakeTime()
    transport = CannedTransport(Canned(429, {"retry-after": "30"}, b"{}"))
    core_box = {}

    def stop_on_first_sleep():
        core_box["core"]._active["a"].signal.abort()

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
    n = tokens.count_chat(messages, "gpt-4o")
    assert events == [{"v": 2, "type": "tokens.counted", "id": "c1", "tokens": n, "uncompressed": n, "calibrated": n,
                       "budget": 128_000 - 4096, "exact": True, "dropped": []}]


def live_count_and_send(messages: list[dict], settings: dict, cache: Any = None) -> tuple[dict, dict, list[dict]]:
    """The live count of `messages`, then sending them: (tokens.counted, chat.prepared, what was sent)."""
    t = FakeTime()
    transport = CannedTransport(Canned(200, SSE, OK_STREAM))
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=t.sleep,
                cache=cache)
    asyncio.run(core.handle(json.dumps({"type": "tokens.count", "id": "c1", "messages": messages, "settings": settings})))
    asyncio.run(core.handle(json.dumps({**send(), "messages": messages, "settings": {**send()["settings"], **settings}})))
    counted = next(e for e in events if e["type"] == "tokens.counted")
    prepared = next(e for e in events if e["type"] == "chat.prepared")
    return counted, prepared, json.loads(transport.sent[0].body)["messages"]


def test_live_count_is_the_count_of_what_is_sent() -> None:
    pretty = "Please fix:\n\n```json\n{\n    \"a\": 1,\n    \"b\": [\n        2,\n        3\n    ]\n}\n```\n"
    history: list[dict] = [{"role": "system", "content": "Be brief."}]
    for i in range(12):
        history += [{"role": "user", "content": f"question {i} " + pretty}, {"role": "assistant", "content": f"answer {i} " + "word " * 40}]
    history.append({"role": "user", "content": "the newest question, the draft"})
    from firsttoken import tokens
    from firsttoken.cache import Cache, MemoryStore
    for settings, cache in (({"model": "gpt-4o"}, None), ({"model": "gpt-4o"}, Cache(MemoryStore())),
                            ({"model": "gpt-4o", "compress": "off"}, Cache(MemoryStore())),
                            ({"model": "gpt-4o", "context_window": 900, "max_tokens": 100}, None)):
        counted, prepared, sent = live_count_and_send(history, settings, cache)
        assert counted["tokens"] == prepared["prompt_tokens"] == tokens.count_chat(sent, "gpt-4o")
        assert counted["budget"] == prepared["budget"] and counted["exact"] == prepared["exact"]
        assert counted["dropped"] == prepared["dropped"]
        assert counted["uncompressed"] == tokens.count_chat(history, "gpt-4o")
        if settings.get("compress") == "off" and "context_window" not in settings:
            assert counted["tokens"] == counted["uncompressed"]
        else:
            assert counted["tokens"] < counted["uncompressed"]
        if "context_window" in settings:
            assert counted["dropped"] and counted["tokens"] <= counted["budget"] == 800


def test_live_count_over_the_budget_says_so() -> None:
    t = FakeTime()
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=CannedTransport(), clock=t.clock, sleep=t.sleep)
    messages = [{"role": "system", "content": "rule " * 400}, {"role": "user", "content": "hello"}]
    asyncio.run(core.handle(json.dumps({"type": "tokens.count", "id": "c1", "messages": messages,
                                        "settings": {"model": "gpt-4o", "context_window": 300, "max_tokens": 100}})))
    assert events[0]["type"] == "tokens.counted" and events[0]["tokens"] > events[0]["budget"] == 200


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
    assert "".join(e["text"] for e in events[:-1]) == "".join(WORDS)
    assert "content" not in events[-1]  # the deltas carried it; chat.done does not repeat it


def test_with_flow_each_ack_releases_what_was_held() -> None:
    # The page acknowledges before chunks 3 and 5: what arrived in between goes out then.
    events = stream_events({"type": "hello", "id": "h", "flow": True}, ack_before=(3, 5))
    deltas = [e for e in events if e["type"] == "chat.delta"]
    assert [d["text"] for d in deltas] == ["one", " two three", " four five"]
    assert [d["seq"] for d in deltas] == [1, 3, 5]
    assert events[-1]["type"] == "chat.done"


def test_held_text_is_bounded() -> None:
    events: list[ChatDelta] = []
    pacer = DeltaPacer(events.append)
    pacer.enabled = True
    big = "x" * (pacer.HOLD_LIMIT // 4)
    for seq in range(1, 10):
        pacer.delta(ChatDelta(id="a", seq=seq, text=big, t=0.0))
    assert len(events) >= 2  # went out without an ack once the bound was passed
    assert pacer.held_chars <= pacer.HOLD_LIMIT


def test_flow_is_only_on_when_hello_says_true() -> None:
    for flow in ("true", 1, None):
        events = stream_events({"type": "hello", "id": "h", "flow": flow})
        assert [e["text"] for e in events[:-1]] == WORDS, flow  # every chunk as it came


# ---- the answer is assembled once (firsttoken.stream.assembly._Text) ----------------------

def joins_for(n_chunks: int, end: bytes, monkeypatch, *, flow: bool) -> tuple[int, list[dict]]:
    """How often the answer's text is joined while the core streams `n_chunks` chunks."""
    from firsttoken.stream import assembly

    joins = 0
    value = assembly._Text.value

    def counted(self):
        nonlocal joins
        joins += 1
        return value(self)

    monkeypatch.setattr(assembly._Text, "value", counted)
    events: list[dict] = []
    t = FakeTime()
    parts = [chunk(f" w{i}") for i in range(n_chunks)] + [end]
    core = Core(post=lambda text: events.append(json.loads(text)), clock=t.clock, sleep=t.sleep,
                transport=CannedTransport(Chunked(parts)))

    async def main():
        await core.handle(json.dumps({"type": "hello", "id": "h", "flow": flow}))
        await core.handle(json.dumps(send()))

    asyncio.run(main())
    return joins, events


@pytest.mark.parametrize("flow", [False, True])
@pytest.mark.parametrize("end", [END, b""], ids=["done", "cut"])
def test_per_chunk_cost_does_not_grow_with_the_answer(monkeypatch, flow: bool, end: bytes) -> None:
    # Joining the whole answer at every chunk (as `text_so_far` once was) is quadratic:
    # the answer is joined a fixed number of times per request, however long it is.
    few, _ = joins_for(10, end, monkeypatch, flow=flow)
    many, events = joins_for(1000, end, monkeypatch, flow=flow)
    assert few == many <= 3
    text = "".join(e["text"] for e in events if e["type"] == "chat.delta")
    assert text == "".join(f" w{i}" for i in range(1000))
    last = events[-1]
    if end:
        assert last["type"] == "chat.done" and "content" not in last
    else:  # what is kept on an error comes from the one assembler, and is all of it
        assert last["type"] == "chat.error" and last["error"]["partial"] == text


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


class FailingTransport:
    """Every attempt fails to connect, as a fetch does; `offline` says how."""

    def __init__(self, offline: bool) -> None:
        self.offline = offline
        self.sent: list[HTTPRequest] = []

    async def send(self, request: HTTPRequest, abort: AbortSignal) -> Canned:
        from firsttoken.errors import Offline, TransportError

        self.sent.append(request)
        raise Offline("the device is offline") if self.offline else TransportError("Failed to fetch")


def test_no_retry_is_spent_while_offline() -> None:
    t = FakeTime()
    transport = FailingTransport(offline=True)
    _, events = run(transport, t, send())
    assert [e["type"] for e in events] == ["chat.error"]
    assert events[0]["error"]["code"] == "offline"
    assert len(transport.sent) == 1 and t.slept == []


def test_a_network_failure_while_online_keeps_the_governor_rules() -> None:
    t = FakeTime()
    transport = FailingTransport(offline=False)
    _, events = run(transport, t, send())
    assert [e["type"] for e in events] == ["chat.retry"] * 3 + ["chat.error"]
    assert events[-1]["error"]["code"] == "network" and len(transport.sent) == 4


def test_an_image_estimate_is_calibrated_from_usage_apart_from_the_text() -> None:
    """gpt-5-mini's image rule is an estimate (its documented ×1.62 multiplier is billed
    about ×1.2: `firsttoken.tokens.images`). The server's usage after one photo teaches
    the calibration the images' error; the text's count, exact, is left as it was."""
    from firsttoken import tokens
    from tests.unit.image_files import data_url, png

    photo = {"type": "image_url", "image_url": {"url": data_url(png(1024, 1024, pixels=False)), "detail": "high"}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "what is this?"}, photo]}]
    settings = {"base_url": "http://api.test/v1", "model": "gpt-5-mini"}
    counted = tokens.count_chat_detailed(messages, "gpt-5-mini")
    assert counted.images > 0 and not counted.exact
    actual = counted.total - counted.images + round(counted.images * 1.2 / 1.62)
    usage = b'data: {"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":1,"total_tokens":%d}}\n\n' % (actual, actual + 1)
    transport = CannedTransport(Canned(200, SSE, OK_STREAM.replace(b"data: [DONE]", usage + b"data: [DONE]")))
    t = FakeTime()
    events: list[dict] = []
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=t.sleep)
    asyncio.run(core.handle(json.dumps({"type": "chat.send", "id": "a", "messages": messages, "settings": settings})))
    done = next(e for e in events if e["type"] == "chat.done")
    assert done["usage"]["prompt_tokens"] == actual and done["prompt"]["estimate"] == counted.total
    # The next count of the same prompt is calibrated to what the server billed; a
    # text-only one is not moved by it.
    asyncio.run(core.handle(json.dumps({"type": "tokens.count", "id": "c1", "messages": messages, "settings": settings})))
    text_only = [{"role": "user", "content": "what is this?"}]
    asyncio.run(core.handle(json.dumps({"type": "tokens.count", "id": "c2", "messages": text_only, "settings": settings})))
    c1, c2 = (next(e for e in events if e.get("id") == i) for i in ("c1", "c2"))
    assert c1["tokens"] == counted.total and c1["calibrated"] == actual
    assert c2["calibrated"] == c2["tokens"] == tokens.count_chat(text_only, "gpt-5-mini")
