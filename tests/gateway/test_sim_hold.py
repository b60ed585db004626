"""The built-in model's held stall (`hold=K`, gateway/simulator.py `Holds`), which the
render tests use to look at an answer mid-stream: the stream waits at `stall_after`
until the test posts /sim/release/K, whenever that comes, over a real socket."""

from __future__ import annotations

import json
import secrets
import time

import httpx
import pytest

from harness.servers import gateway

SIM = "x-firsttoken-sim"
TOKENS, STALL_AFTER = 12, 5
#: The stall's bound: far longer than any run of these tests, so that an answer that
#: ends is one the release let go (pytest's own timeout, 300 s, is the backstop).
STALL_MS = 600_000
CHAT = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "hold me"}], "stream": True}


def content_chunks(lines: list[str]) -> list[str]:
    out = []
    for line in lines:
        if line.startswith("data: ") and line != "data: [DONE]":
            choices = json.loads(line[len("data: "):])["choices"]
            if choices and choices[0]["delta"].get("content"):
                out.append(choices[0]["delta"]["content"])
    return out


def header(key: int) -> str:
    return f"ttft_ms=0,tps=1000,tokens={TOKENS},stall_ms={STALL_MS},stall_after={STALL_AFTER},hold={key}"


def test_a_held_stream_waits_mid_way_until_the_test_releases_it(gateway_url: str) -> None:
    key = secrets.randbelow(10**9) + 1
    with httpx.Client(base_url=gateway_url, timeout=None) as client:
        with client.stream("POST", "/v1/chat/completions", headers={SIM: header(key)}, json=CHAT) as r:
            assert r.status_code == 200
            lines = r.iter_lines()
            seen: list[str] = []
            while len(content_chunks(seen)) < STALL_AFTER:
                seen.append(next(lines))
            # Mid-way: what came before the stall; the rest only once released (its
            # bound is longer than this test may run).
            assert len(content_chunks(seen)) == STALL_AFTER
            assert client.post(f"/sim/release/{key}").status_code == 204
            seen += list(lines)
    assert len(content_chunks(seen)) == TOKENS
    assert "data: [DONE]" in seen


def test_a_hold_never_released_ends_with_its_stall(gateway_url: str) -> None:
    key = secrets.randbelow(10**9) + 1
    sim = f"ttft_ms=0,tps=1000,tokens={TOKENS},stall_ms=400,stall_after={STALL_AFTER},hold={key}"
    started = time.monotonic()
    r = httpx.post(gateway_url + "/v1/chat/completions", headers={SIM: sim}, json=CHAT, timeout=60)
    # A lower bound only: a loaded machine makes it longer, never shorter.
    assert time.monotonic() - started >= 0.4
    assert len(content_chunks(r.text.splitlines())) == TOKENS


def test_a_release_that_comes_first_lets_the_stall_pass(gateway_url: str) -> None:
    key = secrets.randbelow(10**9) + 1
    with httpx.Client(base_url=gateway_url, timeout=None) as client:
        assert client.post(f"/sim/release/{key}").status_code == 204
        r = client.post("/v1/chat/completions", headers={SIM: header(key)}, json=CHAT)
    assert r.status_code == 200
    assert len(content_chunks(r.text.splitlines())) == TOKENS


def test_a_hold_is_a_number_and_releases_only_on_the_built_in_model(gateway_url: str) -> None:
    with httpx.Client(base_url=gateway_url, timeout=30) as client:
        bad = client.post("/v1/chat/completions", headers={SIM: "hold=x"}, json=CHAT)
        assert bad.status_code == 400 and "hold" in bad.json()["error"]["message"]
        assert client.post("/sim/release/not-a-number").status_code in (404, 405)
    # A gateway in front of an upstream has no simulator, and so no releases.
    with gateway("--upstream", "http://127.0.0.1:9/v1") as url:
        assert httpx.post(url + "/sim/release/1", timeout=30).status_code in (404, 405)


@pytest.mark.parametrize("key", [-1, 1_000_000_001])
def test_a_hold_key_out_of_range_is_a_400(gateway_url: str, key: int) -> None:
    r = httpx.post(gateway_url + "/v1/chat/completions", headers={SIM: f"hold={key}"}, json=CHAT, timeout=30)
    assert r.status_code == 400


def test_each_release_lets_one_stall_go(gateway_url: str) -> None:
    key = secrets.randbelow(10**9) + 1
    with httpx.Client(base_url=gateway_url, timeout=60) as client:
        assert client.post(f"/sim/release/{key}").status_code == 204
        first = client.post("/v1/chat/completions", headers={SIM: header(key)}, json=CHAT)  # let go
        assert len(content_chunks(first.text.splitlines())) == TOKENS
        # The one release is spent: the second stream on the key stalls for its bound.
        sim = f"ttft_ms=0,tps=1000,tokens={TOKENS},stall_ms=400,stall_after={STALL_AFTER},hold={key}"
        started = time.monotonic()
        second = client.post("/v1/chat/completions", headers={SIM: sim}, json=CHAT)
        assert time.monotonic() - started >= 0.4  # a lower bound: load only lengthens it
    assert len(content_chunks(second.text.splitlines())) == TOKENS
