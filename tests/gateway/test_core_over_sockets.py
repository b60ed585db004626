"""The Python core (protocol in, events out) driving real requests to a real gateway:
what the page's worker does, minus the browser."""

from __future__ import annotations

import asyncio
import json

import pytest

from firsttoken.ratelimit import Governor
from harness.socket_transport import run_core

SIM = "x-firsttoken-sim"


def send(request_id: str, url: str, sim: str, content: str = "stream to me") -> str:
    return json.dumps({
        "v": 1, "type": "chat.send", "id": request_id,
        "messages": [{"role": "user", "content": content}],
        "settings": {"base_url": url + "/v1", "model": "firsttoken-sim", "headers": {SIM: sim}},
    })


def test_hello_then_a_streamed_answer(gateway_url: str) -> None:
    async def script(core, events, wait_for):
        await core.handle(json.dumps({"v": 1, "type": "hello", "id": "h"}))
        await core.handle(send("a", gateway_url, "ttft_ms=0,tps=2000,tokens=40"))

    events = run_core(gateway_url, script)
    assert events[0]["type"] == "ready" and events[0]["protocol"] == 2
    deltas = [e for e in events if e["type"] == "chat.delta"]
    done = events[-1]
    assert done["type"] == "chat.done" and done["finish_reason"] == "stop"
    assert len(deltas) > 1
    assert [d["seq"] for d in deltas] == list(range(1, len(deltas) + 1))
    assert "content" not in done  # the answer is what the deltas carried, sent once
    assert "".join(d["text"] for d in deltas).startswith("You said: stream to me")
    assert done["usage"]["completion_tokens"] == 40
    t = done["timings"]
    assert t["send"] <= t["headers"] <= t["first_byte"] <= t["first_delta"] <= t["done"]


def test_abort_mid_stream_keeps_the_partial_answer(gateway_url: str) -> None:
    async def script(core, events, wait_for):
        task = asyncio.ensure_future(core.handle(send("b", gateway_url, "ttft_ms=0,tps=20,tokens=400")))
        await wait_for(lambda e: e["type"] == "chat.delta" and e["seq"] >= 3)
        await core.handle(json.dumps({"v": 1, "type": "chat.abort", "id": "b"}))
        await task

    events = run_core(gateway_url, script)
    end = events[-1]
    assert end["type"] == "chat.error" and end["error"]["code"] == "aborted"
    streamed = "".join(e["text"] for e in events if e["type"] == "chat.delta")
    assert streamed and end["error"]["partial"] == streamed


def test_error_event_mid_stream_is_typed_and_keeps_text(gateway_url: str) -> None:
    async def script(core, events, wait_for):
        await core.handle(send("c", gateway_url, "ttft_ms=0,tps=5000,error_after=5"))

    events = run_core(gateway_url, script)
    end = events[-1]
    assert end["type"] == "chat.error" and end["error"]["code"] == "upstream_error"
    assert end["error"]["error"]["code"] == "simulated"
    assert end["error"]["partial"] == "".join(e["text"] for e in events if e["type"] == "chat.delta") != ""


def test_dropped_connection_is_reported_with_the_partial_text(gateway_url: str) -> None:
    async def script(core, events, wait_for):
        await core.handle(send("d", gateway_url, "ttft_ms=0,tps=5000,drop_after=6"))

    events = run_core(gateway_url, script)
    end = events[-1]
    assert end["type"] == "chat.error" and end["error"]["code"] in ("network", "truncated")
    assert end["error"]["partial"]


def test_http_status_error_carries_status_and_retry_after(gateway_url: str) -> None:
    async def script(core, events, wait_for):
        await core.handle(send("e", gateway_url, "status=429,retry_after=4"))

    end = run_core(gateway_url, script)[-1]
    assert end["type"] == "chat.error" and end["error"]["code"] == "http_status"
    assert end["error"]["status"] == 429 and end["error"]["retry_after_s"] == 4


@pytest.mark.parametrize("raw", [
    "not json", "[]", '{"type": 5}', '{"type": "warp"}', '{"v": 3, "type": "hello"}',
    '{"type": "chat.send", "id": "x"}', '{"type": "chat.send", "id": "x", "messages": [], "settings": {}}',
    '{"type": "chat.send", "messages": [{"role": "user", "content": "x"}], "settings": {}}',
])
def test_invalid_messages_get_a_typed_error_event(gateway_url: str, raw: str) -> None:
    async def script(core, events, wait_for):
        await core.handle(raw)

    events = run_core(gateway_url, script)
    assert len(events) == 1 and events[0]["type"] == "error"
    assert events[0]["error"]["code"] == "invalid_message"


def test_unreachable_server_is_a_network_error(gateway_url: str) -> None:
    async def script(core, events, wait_for):
        await core.handle(send("f", "http://127.0.0.1:9", "ttft_ms=0"))

    end = run_core(gateway_url, script)[-1]
    assert end["type"] == "chat.error" and end["error"]["code"] == "network"


def test_retryable_status_is_retried_with_backoff_then_given_up(gateway_url: str) -> None:
    async def script(core, events, wait_for):
        await core.handle(send("g", gateway_url, "status=503,retry_after=0.05"))

    events = run_core(gateway_url, script, governor=lambda: Governor(max_attempts=3, base_delay=0.01))
    retries = [e for e in events if e["type"] == "chat.retry"]
    assert [r["attempt"] for r in retries] == [1, 2]
    assert all(r["status"] == 503 and r["wait_s"] == 0.05 for r in retries)
    assert events[-1]["type"] == "chat.error" and events[-1]["error"]["status"] == 503


def test_quota_from_rate_limit_headers_comes_with_the_answer(gateway_url: str) -> None:
    async def script(core, events, wait_for):
        await core.handle(send("h", gateway_url, "ttft_ms=0,tps=10000,tokens=5"))

    done = run_core(gateway_url, script)[-1]
    assert done["type"] == "chat.done"
    assert done["quota"]["requests"]["limit"] == 5000
    # The gateway's buckets refill continuously (GCRA): one request is back in 12 ms, so
    # by the time the answer is done the requests bucket may read full again, as
    # OpenAI's own `x-ratelimit-reset-requests: 6ms` does; the tokens bucket (prompt and
    # reserved completion) in about 30 ms.
    assert 0 < done["quota"]["requests"]["remaining"] <= 5000
    assert 0 < done["quota"]["tokens"]["remaining"] <= done["quota"]["tokens"]["limit"] == 2_000_000
