"""Upstream mode: a gateway forwarding to another OpenAI-compatible server (here a second
gateway on its built-in model that demands a key), over real sockets."""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from harness.servers import gateway

KEY = "sk-test-upstream-7f3a9c1e5b"
SIM = "x-firsttoken-sim"
CHAT = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "relay me"}]}


@pytest.fixture(scope="module")
def origin():
    with gateway("--client-key-env", "ORIGIN_KEY", env={"ORIGIN_KEY": KEY}) as url:
        yield url


@pytest.fixture(scope="module")
def proxy(origin: str):
    with gateway("--upstream", origin + "/v1", "--log-level", "info", env={"OPENAI_API_KEY": KEY}) as url:
        yield url


def test_upstream_adds_the_key_and_streams_the_answer_back(origin: str, proxy: str) -> None:
    headers = {SIM: "ttft_ms=0,tps=10000,error_after=1000"}
    direct = httpx.post(origin + "/v1/chat/completions", json=CHAT, headers={**headers, "authorization": f"Bearer {KEY}"})
    relayed = httpx.post(proxy + "/v1/chat/completions", json={**CHAT, "stream": True}, headers=headers, timeout=30)
    assert relayed.status_code == 200
    assert relayed.headers["content-type"].startswith("text/event-stream")
    assert "x-ratelimit-remaining-tokens" in relayed.headers
    events = [line[6:] for line in relayed.text.split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    text = "".join(json.loads(e)["choices"][0]["delta"].get("content") or "" for e in events[:-1])
    assert text == direct.json()["choices"][0]["message"]["content"]
    assert KEY not in relayed.text and KEY not in str(relayed.headers)


def test_upstream_errors_mid_stream_pass_through_unchanged(proxy: str) -> None:
    r = httpx.post(proxy + "/v1/chat/completions", json={**CHAT, "stream": True},
                   headers={SIM: "ttft_ms=0,tps=10000,error_after=2"}, timeout=30)
    events = [line[6:] for line in r.text.split("\n") if line.startswith("data: ")]
    assert json.loads(events[-1])["error"]["code"] == "simulated"


def test_upstream_status_errors_pass_through(proxy: str) -> None:
    r = httpx.post(proxy + "/v1/chat/completions", json=CHAT, headers={SIM: "status=429,retry_after=3"}, timeout=30)
    assert r.status_code == 429
    assert r.headers["retry-after"] == "3"
    assert r.json()["error"]["code"] == "rate_limit_exceeded"


def test_without_the_key_the_origin_refuses(origin: str) -> None:
    with gateway("--upstream", origin + "/v1", env={"OPENAI_API_KEY": ""}) as keyless:
        r = httpx.post(keyless + "/v1/chat/completions", json=CHAT, timeout=30)
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"


def test_unreachable_upstream_is_a_502_that_never_names_the_key() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]  # bound but never listening: connections are refused
        with gateway("--upstream", f"http://127.0.0.1:{dead_port}/v1", "--log-level", "debug",
                     env={"OPENAI_API_KEY": KEY}) as url:
            r = httpx.post(url + "/v1/chat/completions", json=CHAT, timeout=30)
            assert r.status_code == 502
            assert r.json()["error"]["code"] == "upstream_unreachable"
            assert KEY not in r.text
        assert KEY not in "".join(url.log)


def test_proxy_never_logs_the_key(proxy: str) -> None:
    httpx.post(proxy + "/v1/chat/completions", json=CHAT, headers={SIM: "ttft_ms=0"}, timeout=30)
    assert KEY not in "".join(proxy.log)
