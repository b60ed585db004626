"""Resumable streams (gateway/streams) over real sockets: a firsttoken client's answer
outlives its connection, and can be resumed, polled and cancelled; every other client
sees the stream as before. Gateways run as processes (`python -m gateway`); the
upstream that records its request being aborted is an ASGI app (tests/gateway/stream_client.py)."""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firsttoken.stream.sse import SSEDecoder
from tests.gateway.stream_client import (
    CHAT, CLIENT_HEADER, FAST, NEVER, OTHER, SIM, SLOW, STREAM, STREAM_ID, HangingUpstream, Reader, cancel, content,
    contents, me, numbered, read, start, status, whole_answer,
)
from harness.servers import gateway, serve_app


@pytest.fixture(scope="module")
def url() -> Any:
    with gateway("--ttft-ms", "0", "--tps", "2000") as base:
        yield base
    # Readers that left, cancels, drops and failed streams are all ordinary: no tracebacks.
    assert "Traceback" not in "".join(base.log), "".join(base.log)


# ---- who gets what -------------------------------------------------------------------


def test_a_firsttoken_client_gets_the_stream_id_and_every_event_numbered(url: str) -> None:
    r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST + ",tokens=30"}), timeout=30)
    assert r.status_code == 200 and STREAM_ID.match(r.headers[STREAM])
    assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
    ids = numbered(r.content)
    assert ids == list(range(1, len(ids) + 1)) and len(ids) == 1 + 30 + 1 + 1  # role, content, finish, [DONE]
    events = SSEDecoder().feed(r.content)
    assert events[-1].data == "[DONE]" and events[-1].id == str(len(ids))
    assert content(events) == whole_answer(url, FAST + ",tokens=30")
    assert "x-ratelimit-remaining-requests" in r.headers  # flow control's headers pass as before


def test_the_official_openai_client_sees_the_stream_exactly_as_before(url: str) -> None:
    client = openai.OpenAI(base_url=url + "/v1", api_key="not-needed", max_retries=0)
    with client.chat.completions.with_streaming_response.create(
        model="firsttoken-sim", messages=CHAT["messages"], stream=True, extra_headers={SIM: FAST},
    ) as response:
        assert STREAM not in response.headers
        lines = list(response.iter_lines())
    assert not [line for line in lines if line.startswith("id:")]
    assert [line for line in lines if line][-1] == "data: [DONE]"
    assert all(line.startswith("data: ") for line in lines if line)
    raw = httpx.post(url + "/v1/chat/completions", json=CHAT, headers={SIM: FAST}, timeout=30)
    assert STREAM not in raw.headers and b"\nid: " not in raw.content
    assert content(SSEDecoder().feed(raw.content)) == whole_answer(url)


@pytest.mark.parametrize("why", ["not streamed", "an error status", "an invalid client id", "no client id"])
def test_other_answers_are_never_resumable(url: str, why: str) -> None:
    chat, headers = CHAT, me(**{SIM: FAST})
    if why == "not streamed":
        chat = {**CHAT, "stream": False}
    elif why == "an error status":
        headers[SIM] = "status=429"
    elif why == "an invalid client id":
        headers[CLIENT_HEADER] = "short"
    else:
        del headers[CLIENT_HEADER]
    r = httpx.post(url + "/v1/chat/completions", json=chat, headers=headers, timeout=30)
    assert STREAM not in r.headers and b"\nid: " not in r.content


# ---- resume -----------------------------------------------------------------------------


def test_an_answer_cut_mid_way_is_resumed_after_the_last_event_seen(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        with start(client, SLOW) as r:
            stream_id = r.headers[STREAM]
            first = read(r, until=contents(3))
        # The connection is closed: the gateway goes on generating.
        after = int(first[-1].id)
        with client.stream("GET", f"/v1/streams/{stream_id}/events", params={"after": after}, headers=me()) as r:
            assert r.status_code == 200 and r.headers[STREAM] == stream_id
            assert r.headers["content-type"] == "text/event-stream; charset=utf-8"
            assert r.headers["cache-control"] == "no-cache"
            second = read(r, until=contents(3))
        after2 = int(second[-1].id)
        # Resume again, as an EventSource would: with Last-Event-ID.
        with client.stream("GET", f"/v1/streams/{stream_id}/events", headers=me(**{"last-event-id": str(after2)})) as r:
            rest = read(r)
    ids = [int(e.id) for e in first + second + rest]
    assert ids == list(range(1, len(ids) + 1))
    assert rest[-1].data == "[DONE]"
    assert content(first + second + rest) == whole_answer(url, SLOW)


def test_a_replay_from_the_start_is_the_whole_stream_byte_for_byte(url: str) -> None:
    r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST + ",tokens=20"}), timeout=30)
    replay = httpx.get(f"{url}/v1/streams/{r.headers[STREAM]}/events", headers=me(), timeout=30)
    assert replay.content == r.content
    tail = httpx.get(f"{url}/v1/streams/{r.headers[STREAM]}/events?after=21", headers=me(), timeout=30)
    assert numbered(tail.content) == [22, 23]
    # The query wins over Last-Event-ID.
    both = httpx.get(f"{url}/v1/streams/{r.headers[STREAM]}/events?after=22",
                     headers=me(**{"last-event-id": "3"}), timeout=30)
    assert numbered(both.content) == [23]
    at_end = httpx.get(f"{url}/v1/streams/{r.headers[STREAM]}/events?after=23", headers=me(), timeout=30)
    assert at_end.status_code == 200 and at_end.content == b""


def test_a_client_that_stops_reading_does_not_hold_the_answer_back(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        with start(client, FAST + ",tokens=25000") as r:  # about 6 MB of events
            stream_id = r.headers[STREAM]
            next(r.iter_raw())  # one chunk; then this client reads nothing more
            # A second reader gets the whole answer, which ends while the first still stalls.
            whole = httpx.get(f"{url}/v1/streams/{stream_id}/events", headers=me(), timeout=60)
            assert status(url, stream_id).json()["status"] == "completed"
    assert len(whole.content) > 5_000_000 and SSEDecoder().feed(whole.content)[-1].data == "[DONE]"


def test_status_is_in_progress_then_completed_with_the_answer_facts(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        with start(client, SLOW) as r:
            stream_id = r.headers[STREAM]
            events = read(r, until=contents(1))
            live = status(url, stream_id).json()
            assert live["status"] == "in_progress" and live["ended_at"] is None
            assert live["last_event"] >= int(events[-1].id) and live["finish_reason"] is None
            events += read(r)
    done = status(url, stream_id).json()
    text = content(events)
    assert text == whole_answer(url, SLOW)
    assert done == {
        "id": stream_id, "object": "firsttoken.stream", "status": "completed", "last_event": int(events[-1].id),
        "characters": len(text), "finish_reason": "stop", "created_at": done["created_at"], "ended_at": done["ended_at"],
    }
    assert done["created_at"] <= done["ended_at"]


def test_an_error_in_the_stream_fails_it_and_a_dropped_one_cuts_the_post_as_before(url: str) -> None:
    r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST + ",error_after=3"}), timeout=30)
    assert json.loads(SSEDecoder().feed(r.content)[-1].data)["error"]["code"] == "simulated"
    assert status(url, r.headers[STREAM]).json()["status"] == "failed"
    with httpx.Client(base_url=url, timeout=30) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            with start(client, FAST + ",drop_after=4") as r:
                stream_id = r.headers[STREAM]
                reader = Reader(r)
                reader()
    cut = reader.seen
    gone = status(url, stream_id).json()
    assert gone["status"] == "failed" and gone["finish_reason"] is None
    replay = httpx.get(f"{url}/v1/streams/{stream_id}/events", headers=me(), timeout=30)
    assert replay.status_code == 200 and content(SSEDecoder().feed(replay.content)) == content(cut) != ""
    assert b"[DONE]" not in replay.content


# ---- who may ask --------------------------------------------------------------------------


def test_another_client_or_key_gets_the_same_404_as_an_unknown_id(url: str) -> None:
    r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST}), timeout=30)
    stream_id = r.headers[STREAM]
    unknown = "fts_" + secrets.token_urlsafe(16)
    answers = []
    for sid, who in [
        (unknown, me()), (stream_id, me(OTHER)), (stream_id, me(authorization="Bearer sk-someone-else")),
        (stream_id, {}), ("not-an-id", me()), ("fts_" + "x" * 300, me()),
    ]:
        for method, path in [("GET", ""), ("GET", "/events"), ("POST", "/cancel")]:
            got = httpx.request(method, f"{url}/v1/streams/{sid}{path}", headers={**who, "content-type": "application/json"},
                                timeout=30)
            answers.append((got.status_code, got.json()))
    assert answers[0][0] == 404 and answers[0][1]["error"]["code"] == "stream_not_found"
    assert all(answer == answers[0] for answer in answers), answers
    assert status(url, stream_id).json()["status"] == "completed"  # the owner still can


@pytest.mark.parametrize("after", ["-1", "x", "1.5", " 1", "1e3", "", "٣", "99999999999999999999"])
def test_after_must_be_a_non_negative_integer(url: str, after: str) -> None:
    r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST + ",tokens=3"}), timeout=30)
    got = httpx.get(f"{url}/v1/streams/{r.headers[STREAM]}/events", params={"after": after}, headers=me(), timeout=30)
    assert got.status_code == 400
    assert got.json()["error"] | {"message": ""} == {
        "message": "", "type": "invalid_request_error", "param": "after", "code": "invalid_after"}


def test_after_past_the_last_event_is_out_of_range(url: str) -> None:
    r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST + ",tokens=3"}), timeout=30)
    last = numbered(r.content)[-1]
    for ask in ({"params": {"after": last + 1}}, {"headers": me(**{"last-event-id": str(last + 1)})}):
        got = httpx.get(f"{url}/v1/streams/{r.headers[STREAM]}/events", **{"headers": me(), **ask}, timeout=30)
        assert got.status_code == 400 and got.json()["error"]["code"] == "after_out_of_range"
    bad_header = httpx.get(f"{url}/v1/streams/{r.headers[STREAM]}/events", headers=me(**{"last-event-id": "abc"}))
    assert bad_header.status_code == 400 and bad_header.json()["error"]["code"] == "invalid_after"


@pytest.fixture(scope="module")
def finished(url: str) -> str:
    r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST + ",tokens=5"}), timeout=30)
    return r.headers[STREAM]


# What a header may carry (h11 refuses surrounding spaces, as RFC 9110 §5.5 trims them).
_printable = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=24).filter(
    lambda value: value == value.strip())


@settings(max_examples=60)
@given(query=st.one_of(st.none(), st.text(max_size=24)), header=st.one_of(st.none(), _printable))
def test_no_after_or_last_event_id_crashes_the_route(url: str, finished: str, query: str | None, header: str | None) -> None:
    headers = me() if header is None else me(**{"last-event-id": header})
    params = {} if query is None else {"after": query}
    got = httpx.get(f"{url}/v1/streams/{finished}/events", params=params, headers=headers, timeout=30)
    assert got.status_code in (200, 400), got.text
    if got.status_code == 400:
        assert got.json()["error"]["code"] in ("invalid_after", "after_out_of_range")


# ---- cancel -------------------------------------------------------------------------------


def test_a_cancelled_stream_ends_its_readers_and_cannot_be_resumed(url: str) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        with start(client, NEVER) as r:
            stream_id = r.headers[STREAM]
            seen = read(r, until=contents(1))
            cancelled = cancel(url, stream_id)
            assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
            rest = read(r)  # the POST's own response ends: no [DONE]
    assert "[DONE]" not in [e.data for e in seen + rest]
    again = cancel(url, stream_id)
    assert again.status_code == 200 and again.json() == cancelled.json()  # idempotent
    resumed = httpx.get(f"{url}/v1/streams/{stream_id}/events?after=1", headers=me(), timeout=30)
    assert resumed.status_code == 409 and resumed.json()["error"]["code"] == "stream_cancelled"
    assert status(url, stream_id).json()["status"] == "cancelled"


def test_cancelling_an_ended_stream_returns_its_final_status(url: str) -> None:
    r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST + ",tokens=3"}), timeout=30)
    got = cancel(url, r.headers[STREAM])
    assert got.status_code == 200 and got.json()["status"] == "completed"


def test_cancel_aborts_the_upstream_request_which_a_disconnect_does_not() -> None:
    upstream = HangingUpstream()
    with serve_app(upstream) as origin, gateway("--upstream", origin + "/v1", env={"OPENAI_API_KEY": "sk-test"}) as url:
        with httpx.Client(base_url=url, timeout=30) as client:
            with start(client, FAST) as r:
                stream_id = r.headers[STREAM]
                assert content(read(r, until=contents(1))) == "Hi"
            # The client left; the upstream request goes on (resumable), until cancelled.
            with client.stream("GET", f"/v1/streams/{stream_id}/events", headers=me()) as resumed:
                assert content(read(resumed, until=contents(1))) == "Hi"
                assert status(url, stream_id).json()["status"] == "in_progress"
                assert not upstream.closed.is_set()
                assert cancel(url, stream_id).json()["status"] == "cancelled"
                assert upstream.closed.wait(10), "the upstream never saw its request aborted"
                assert read(resumed) == []  # and the reader's stream ends
    assert upstream.answering.is_set()


# ---- bounds ----------------------------------------------------------------------------------


def test_a_stream_over_its_byte_cap_fails_with_a_stream_too_large_event() -> None:
    with gateway("--resume-stream-bytes", "3000") as url:
        r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST + ",tokens=200"}), timeout=30)
        events = SSEDecoder().feed(r.content)
        assert json.loads(events[-1].data)["error"]["code"] == "stream_too_large"
        assert "[DONE]" not in [e.data for e in events]
        assert len(r.content) < 3000 + 500
        got = status(url, r.headers[STREAM]).json()
        assert got["status"] == "failed" and got["last_event"] == len(numbered(r.content))
        replay = httpx.get(f"{url}/v1/streams/{r.headers[STREAM]}/events", headers=me(), timeout=30)
        assert replay.content == r.content


def test_a_client_over_its_stream_count_drops_its_oldest_ended_stream_then_goes_without() -> None:
    with gateway("--resume-streams-per-client", "2") as url, httpx.Client(base_url=url, timeout=30) as client:
        def post(sim: str) -> str:
            with start(client, sim) as r:
                stream_id = r.headers.get(STREAM)
                if sim == NEVER:
                    read(r, until=contents(1))
                else:
                    read(r)
            return stream_id

        one, two = post(FAST), post(FAST)
        three = post(NEVER)  # drops `one`, the oldest ended
        assert status(url, one).status_code == 404
        assert status(url, two).json()["status"] == "completed"
        four = post(NEVER)  # drops `two`
        assert status(url, two).status_code == 404
        # Both kept streams are live: the next answer is served without resume.
        r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST}), timeout=30)
        assert r.status_code == 200 and STREAM not in r.headers and b"\nid: " not in r.content
        # Another client has its own share.
        other = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(OTHER, **{SIM: FAST}), timeout=30)
        assert STREAM in other.headers
        for live in (three, four):
            assert cancel(url, live).json()["status"] == "cancelled"


def test_a_detached_answer_still_counts_as_the_clients_request_until_it_ends() -> None:
    with gateway("--streams-per-client", "1") as url, httpx.Client(base_url=url, timeout=30) as client:
        with start(client, NEVER) as r:
            stream_id = r.headers[STREAM]
            read(r, until=contents(1))
        # Its client left, but the answer is still being generated (and metered).
        busy = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST}), timeout=30)
        assert busy.status_code == 429 and busy.json()["error"]["code"] == "too_many_concurrent_requests"
        assert cancel(url, stream_id).json()["status"] == "cancelled"


def test_a_generation_stops_after_max_s_and_its_stream_expires_after_the_ttl() -> None:
    # A TTL of 2.5 s: long enough that the ended stream is still seen on a busy machine
    # (0.5 s was not), short enough that a few one-second streams outlive it.
    with gateway("--resume-max-s", "1", "--resume-ttl-s", "2.5") as url, httpx.Client(base_url=url, timeout=30) as client:
        with start(client, NEVER) as r:
            first = r.headers[STREAM]
            events = read(r)  # ends when the gateway stops it, a second in
        assert content(events) and "[DONE]" not in [e.data for e in events]
        assert status(url, first).json()["status"] == "cancelled"
        # Time passes on the gateway's own clock, a stopped second at a time, until the
        # first stream's TTL has passed (never more than a handful: each is a second).
        for _ in range(8):
            with start(client, NEVER) as r:
                second = r.headers[STREAM]
                read(r)
            assert status(url, second).json()["status"] == "cancelled"
            if status(url, first).status_code == 404:
                break
        assert status(url, first).status_code == 404


def test_no_resume_turns_it_off() -> None:
    with gateway("--no-resume") as url:
        r = httpx.post(url + "/v1/chat/completions", json=CHAT, headers=me(**{SIM: FAST}), timeout=30)
        assert r.status_code == 200 and STREAM not in r.headers and b"\nid: " not in r.content
        assert status(url, "fts_" + secrets.token_urlsafe(16)).json()["error"]["code"] == "unknown_url"


def test_streams_kept_in_memory_die_with_their_process() -> None:
    with gateway() as first, httpx.Client(base_url=first, timeout=30) as client:
        with start(client, NEVER) as r:
            stream_id = r.headers[STREAM]
            read(r, until=contents(2))
        assert status(first, stream_id).json()["status"] == "in_progress"
    # The process was terminated mid-answer; a new one knows nothing of it.
    with gateway() as second:
        assert status(second, stream_id).status_code == 404
        got = httpx.get(f"{second}/v1/streams/{stream_id}/events?after=1", headers=me(), timeout=30)
        assert got.status_code == 404 and got.json()["error"]["code"] == "stream_not_found"
