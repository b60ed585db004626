"""Resumable streams on `/v1/responses` and `/v1/messages`, over real sockets, as on
chat completions: a firsttoken client's answer (the thinking model's, reasoning
included) cut mid-way and resumed after the last event seen, every event once and in
order, its status read in the API's own events; in one process's memory and across two
processes through Redis; a cancel; and the gateway's own error events in each API's
shape."""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

import httpx
import pytest

from firsttoken.stream.sse import ServerSentEvent, SSEDecoder
from gateway.streams.events import error_event, event_facts
from tests.gateway.stream_client import NEVER, SIM, STREAM, cancel, me, numbered, read, status
from harness.servers import gateway

THINK = "firsttoken-sim-think"
#: Slow enough that a cut lands mid-answer on a loaded machine (thinking 10 tokens, then 40).
PACED = "ttft_ms=0,tps=20,tokens=40,think_tokens=10,summary_ms=0"
FAST = "ttft_ms=0,tps=100000,tokens=40,think_tokens=10,summary_ms=0"
BODIES = {
    "/v1/responses": {"model": THINK, "input": "resume me", "stream": True, "reasoning": {"summary": "auto"},
                      "include": ["reasoning.encrypted_content"]},
    "/v1/messages": {"model": THINK, "max_tokens": 4096, "stream": True, "thinking": {"type": "adaptive"},
                     "messages": [{"role": "user", "content": "resume me"}]},
}


def text_of(path: str, events: list[ServerSentEvent]) -> str:
    """The answer text (reasoning apart) of a stream's events."""
    out = []
    for event in events:
        if not event.data:
            continue
        data = json.loads(event.data)
        if path == "/v1/responses" and data.get("type") == "response.output_text.delta":
            out.append(data["delta"])
        elif path == "/v1/messages" and data.get("type") == "content_block_delta" and data["delta"]["type"] == "text_delta":
            out.append(data["delta"]["text"])
    return "".join(out)


def texts(path: str, n: int) -> Callable[[list[ServerSentEvent]], bool]:
    """`until` for: n events of answer text read (so the cut falls after the thinking)."""
    return lambda events: sum(1 for e in events if text_of(path, [e])) >= n


def last_type(events: list[ServerSentEvent]) -> str:
    return json.loads(events[-1].data)["type"]


def whole(base: str, path: str) -> str:
    """The same answer, not resumable (no client id), read whole."""
    r = httpx.post(base + path, json=BODIES[path], headers={SIM: FAST}, timeout=30)
    return text_of(path, SSEDecoder().feed(r.content))


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with gateway("--ttft-ms", "0") as base:
        yield base
    assert "Traceback" not in "".join(base.log), "".join(base.log)


def cut_and_resume(start_on: str, resume_on: str, path: str) -> tuple[list[ServerSentEvent], str]:
    """Start `path`'s answer on `start_on`, cut it after 3 events of answer text, resume
    on `resume_on` after the last event seen: every event, and the stream's id."""
    with httpx.Client(base_url=start_on, timeout=30) as client:
        with client.stream("POST", path, json=BODIES[path], headers=me(**{SIM: PACED})) as r:
            assert r.status_code == 200
            stream_id = r.headers[STREAM]
            first = read(r, until=texts(path, 3))
    after = int(first[-1].id)
    with httpx.Client(base_url=resume_on, timeout=30) as client:
        with client.stream("GET", f"/v1/streams/{stream_id}/events", params={"after": after}, headers=me()) as r:
            assert r.status_code == 200 and r.headers[STREAM] == stream_id
            rest = read(r)
    return first + rest, stream_id


@pytest.mark.parametrize("path", list(BODIES))
def test_an_answer_cut_mid_way_is_resumed_in_memory(url: str, path: str) -> None:
    events, stream_id = cut_and_resume(url, url, path)
    ids = [int(e.id) for e in events]
    assert ids == list(range(1, len(ids) + 1))  # every event once, in order
    assert last_type(events) == ("response.completed" if path == "/v1/responses" else "message_stop")
    text = text_of(path, events)
    assert text == whole(url, path)
    # The reasoning came with it: the summary or the thinking, and its seal.
    raw = "".join(e.data for e in events)
    assert ("reasoning_summary_text.delta" in raw and "encrypted_content" in raw) if path == "/v1/responses" \
        else ("thinking_delta" in raw and "signature_delta" in raw)
    done = status(url, stream_id).json()
    assert done["status"] == "completed" and done["finish_reason"] == "stop"
    assert done["characters"] == len(text) and done["last_event"] == ids[-1]
    # A replay from the start is the stream byte for byte, numbered.
    replay = httpx.get(f"{url}/v1/streams/{stream_id}/events", headers=me(), timeout=30)
    assert numbered(replay.content) == ids


@pytest.mark.parametrize("path", list(BODIES))
def test_a_cancel_ends_it_and_a_cut_while_thinking_reads_as_length(url: str, path: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        with client.stream("POST", path, json=BODIES[path], headers=me(**{SIM: NEVER})) as r:
            stream_id = r.headers[STREAM]
            read(r, until=lambda events: len(events) >= 2)
            assert cancel(url, stream_id).json()["status"] == "cancelled"
    body = dict(BODIES[path])
    body["max_output_tokens" if path == "/v1/responses" else "max_tokens"] = 20
    if path == "/v1/messages":
        body["thinking"] = {"type": "adaptive"}
    r = httpx.post(url + path, json=body, headers=me(**{SIM: FAST.replace("think_tokens=10", "think_tokens=50")}),
                   timeout=30)
    done = status(url, r.headers[STREAM]).json()
    assert done["status"] == "completed" and done["finish_reason"] == "length" and done["characters"] == 0


@pytest.mark.parametrize("path", list(BODIES))
def test_resumed_on_another_process_through_redis(redis_url: str, path: str) -> None:
    import redis as redis_py

    with redis_py.Redis.from_url(redis_url) as r:
        r.flushall()
    with gateway("--redis", redis_url, "--ttft-ms", "0") as a, gateway("--redis", redis_url, "--ttft-ms", "0") as b:
        events, stream_id = cut_and_resume(a, b, path)
        ids = [int(e.id) for e in events]
        assert ids == list(range(1, len(ids) + 1))
        text = text_of(path, events)
        assert text == whole(a, path)
        done = status(b, stream_id).json()
        assert done["status"] == "completed" and done["characters"] == len(text) and done["finish_reason"] == "stop"


@pytest.mark.parametrize("api, shape", [
    ("chat", lambda d: d["error"]["code"] == "stream_too_large"),
    ("responses", lambda d: d["type"] == "error" and d["code"] == "stream_too_large"),
    ("messages", lambda d: d["type"] == "error" and d["error"]["type"] == "api_error"),
])
def test_the_gateways_own_error_events_speak_each_api(api: str, shape: Callable[[Any], bool]) -> None:
    block = error_event("stream_too_large", "too large", api=api)
    event = SSEDecoder().feed(block + b"\n\n")[0]
    assert shape(json.loads(event.data)) and event_facts(block, api).error
    if api != "chat":
        assert event.event == "error"


@pytest.mark.parametrize("api, block, facts", [
    ("responses", b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","delta":"abc"}', (3, None, False)),
    ("responses", b'event: response.reasoning_summary_text.delta\ndata: {"type":"response.reasoning_summary_text.delta","delta":"abc"}', (0, None, False)),
    ("responses", b'event: response.completed\ndata: {"type":"response.completed","response":{}}', (0, "stop", False)),
    ("responses", b'event: response.incomplete\ndata: {"type":"response.incomplete","response":{"incomplete_details":{"reason":"max_output_tokens"}}}', (0, "length", False)),
    ("responses", b'event: response.failed\ndata: {"type":"response.failed","response":{}}', (0, None, True)),
    ("messages", b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"ab"}}', (2, None, False)),
    ("messages", b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"ab"}}', (0, None, False)),
    ("messages", b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"max_tokens"}}', (0, "length", False)),
    ("messages", b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}', (0, "stop", False)),
    ("messages", b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}', (0, None, True)),
    ("messages", b"event: ping\ndata: [1]", (0, None, False)),
])
def test_a_streams_status_reads_each_apis_own_events(api: str, block: bytes, facts: tuple) -> None:
    got = event_facts(block, api)
    assert (got.characters, got.finish_reason, got.error) == facts
