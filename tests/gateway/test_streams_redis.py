"""Resumable streams shared by gateway processes through one Redis (Debian's
redis-server, started by the `redis_url` fixture): started on one process, resumed,
polled and cancelled on another."""

from __future__ import annotations

import socket
from typing import Iterator

import httpx
import pytest

from firsttoken.stream.sse import ServerSentEvent, SSEDecoder
from gateway.streams.redis import PREFIX, stream_hash
from tests.gateway.stream_client import (
    CHAT, FAST, NEVER, OTHER, SIM, STREAM, HangingUpstream, cancel, content, contents, me, numbered, read, start,
    status, whole_answer,
)
from harness.servers import gateway, serve_app


@pytest.fixture
def redis(redis_url: str) -> Iterator[str]:
    """The session's Redis, emptied for this test."""
    import redis as redis_py

    with redis_py.Redis.from_url(redis_url) as r:
        r.flushall()
    yield redis_url


#: Slow enough (6 s) that the answer is still in progress when B is asked, on a machine
#: loaded by the rest of the suite (at SLOW's 1.2 s it once had ended already).
PACED = "ttft_ms=0,tps=10,tokens=60"


def test_a_stream_started_on_one_process_is_resumed_and_polled_on_another(redis: str) -> None:
    with gateway("--redis", redis, "--resume-ttl-s", "60") as a, gateway("--redis", redis) as b:
        with httpx.Client(base_url=a, timeout=30) as client:
            with start(client, PACED) as r:
                stream_id = r.headers[STREAM]
                first = read(r, until=contents(3))
        after = int(first[-1].id)
        assert status(b, stream_id).json()["status"] == "in_progress"
        # B follows A's generation live, through Redis, to its end.
        with httpx.Client(base_url=b, timeout=30) as client:
            with client.stream("GET", f"/v1/streams/{stream_id}/events", params={"after": after}, headers=me()) as r:
                assert r.status_code == 200 and r.headers[STREAM] == stream_id
                rest = read(r)
        ids = [int(e.id) for e in first + rest]
        assert ids == list(range(1, len(ids) + 1)) and rest[-1].data == "[DONE]"
        text = content(first + rest)
        assert text == whole_answer(a, PACED)
        done = status(b, stream_id).json()
        assert done["status"] == "completed" and done["characters"] == len(text) and done["finish_reason"] == "stop"
        assert done["last_event"] == ids[-1] and status(a, stream_id).json() == done
        # The whole stream replays byte for byte from either process.
        whole_a = httpx.get(f"{a}/v1/streams/{stream_id}/events", headers=me(), timeout=30).content
        whole_b = httpx.get(f"{b}/v1/streams/{stream_id}/events", headers=me(), timeout=30).content
        assert whole_a == whole_b and numbered(whole_b) == ids
        # Only its client may read it, and `after` is checked against what Redis holds.
        assert status(b, stream_id, me(OTHER)).status_code == 404
        late = httpx.get(f"{b}/v1/streams/{stream_id}/events?after={ids[-1] + 1}", headers=me(), timeout=30)
        assert late.status_code == 400 and late.json()["error"]["code"] == "after_out_of_range"
        # Its keys expire `--resume-ttl-s` after its end; Redis never holds the id itself.
        import redis as redis_py

        with redis_py.Redis.from_url(redis) as r:
            for suffix in (":m", ":e"):
                assert 0 < r.pttl(f"{PREFIX}{stream_hash(stream_id)}{suffix}") <= 60_000
            assert not [key for key in r.keys("*") if stream_id.encode() in key]


def test_a_cancel_on_another_process_aborts_the_owners_upstream_request(redis: str) -> None:
    upstream = HangingUpstream()
    with serve_app(upstream) as origin, \
            gateway("--upstream", origin + "/v1", "--redis", redis, env={"OPENAI_API_KEY": "sk-test"}) as a, \
            gateway("--redis", redis) as b:
        with httpx.Client(base_url=a, timeout=30) as client:
            with start(client, FAST) as r:
                stream_id = r.headers[STREAM]
                assert content(read(r, until=contents(1))) == "Hi"
                assert status(b, stream_id).json()["status"] == "in_progress"
                cancelled = cancel(b, stream_id)
                assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
                assert upstream.closed.wait(10), "the owner never aborted its upstream request"
                assert content(read(r)) == ""  # A's own response ends, without [DONE]
        assert status(a, stream_id).json()["status"] == "cancelled"
        resumed = httpx.get(f"{a}/v1/streams/{stream_id}/events", headers=me(), timeout=30)
        assert resumed.status_code == 409 and resumed.json()["error"]["code"] == "stream_cancelled"
        assert cancel(a, stream_id).json() == cancelled.json()  # idempotent, from anywhere


def test_a_reader_on_another_process_ends_when_the_stream_is_cancelled(redis: str) -> None:
    with gateway("--redis", redis) as a, gateway("--redis", redis) as b:
        with httpx.Client(base_url=a, timeout=30) as client:
            with start(client, NEVER) as r:
                stream_id = r.headers[STREAM]
                read(r, until=contents(1))
        with httpx.Client(base_url=b, timeout=30) as client:
            with client.stream("GET", f"/v1/streams/{stream_id}/events", headers=me()) as r:
                assert content(read(r, until=contents(1)))
                assert cancel(a, stream_id).json()["status"] == "cancelled"
                rest = read(r)
        assert "[DONE]" not in [e.data for e in rest]


def test_the_per_client_bound_holds_across_processes(redis: str) -> None:
    with gateway("--redis", redis, "--resume-streams-per-client", "1") as a, \
            gateway("--redis", redis, "--resume-streams-per-client", "1") as b:
        done = httpx.post(a + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST}), timeout=30)
        with httpx.Client(base_url=b, timeout=30) as client:
            with start(client, NEVER) as r:  # drops the ended one, made on A
                live = r.headers[STREAM]
                read(r, until=contents(1))
        assert status(a, done.headers[STREAM]).status_code == 404
        refused = httpx.post(a + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST}), timeout=30)
        assert refused.status_code == 200 and STREAM not in refused.headers and b"\nid: " not in refused.content
        assert cancel(a, live).json()["status"] == "cancelled"


def test_a_process_stopped_mid_answer_leaves_a_failed_stream_behind(redis: str) -> None:
    with gateway("--redis", redis) as b:
        with gateway("--redis", redis) as a, httpx.Client(base_url=a, timeout=30) as client:
            with start(client, NEVER) as r:
                stream_id = r.headers[STREAM]
                first = read(r, until=contents(2))
        # A was terminated with nobody reading: it stopped the answer and said why.
        assert status(b, stream_id).json()["status"] == "failed"
        replay = httpx.get(f"{b}/v1/streams/{stream_id}/events", headers=me(), timeout=30)
        events = read_all(replay.content)
        assert content(first) and content(events).startswith(content(first))
        assert '"gateway_shutdown"' in events[-1].data


def read_all(body: bytes) -> list[ServerSentEvent]:
    return SSEDecoder().feed(body)


def dead_redis() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"redis://127.0.0.1:{s.getsockname()[1]}/0"  # bound, never listening: refused


def test_redis_down_and_failing_open_serves_without_resume() -> None:
    with gateway("--redis", dead_redis()) as url:
        r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST}), timeout=30)
        assert r.status_code == 200 and STREAM not in r.headers and b"\nid: " not in r.content
        assert content(read_all(r.content)) == whole_answer(url)
        down = status(url, "fts_" + "a" * 22)
        assert down.status_code == 503 and down.json()["error"]["code"] == "stream_store_unavailable"


def test_redis_down_and_failing_closed_is_a_503() -> None:
    no_limits = ("--rpm", "0", "--tpm", "0")  # so that flow control itself never asks Redis
    with gateway("--redis", dead_redis(), "--redis-fail", "closed", *no_limits) as url:
        r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST}), timeout=30)
        assert r.status_code == 503 and r.json()["error"]["code"] == "stream_store_unavailable"
        assert r.headers["retry-after"] == "1"
        plain = httpx.post(url + "/v1/chat/completions", json=CHAT, headers={SIM: FAST}, timeout=30)
        assert plain.status_code == 200  # a client that asks for no resume needs no Redis
