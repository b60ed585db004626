"""The built-in model's `echo=1` and `stamp=1` settings, which the render tests and the
render benchmark rely on: the model says given text, and every chunk says when it left."""

from __future__ import annotations

import json
import time

import httpx
import pytest

SIM = "x-firsttoken-sim"
HOSTILE = 'Hi <img src=x onerror="alert(1)">\n\n```js\nlet a = 1;\n```\n\n| a |\n|---|\n| 1 |\n\n  trailing  '


@pytest.fixture
def client(gateway_url: str):
    with httpx.Client(base_url=gateway_url, timeout=30) as c:
        yield c


def chunks(body: str) -> list[dict]:
    lines = [line[len("data: "):] for line in body.split("\n") if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def test_echo_streams_the_last_user_message_verbatim_in_pieces(client: httpx.Client) -> None:
    messages = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"},
                {"role": "user", "content": HOSTILE}]
    r = client.post("/v1/chat/completions", headers={SIM: "ttft_ms=0,tps=100000,echo=1"},
                    json={"model": "firsttoken-sim", "messages": messages, "stream": True})
    assert r.status_code == 200
    pieces = [c["choices"][0]["delta"].get("content") for c in chunks(r.text) if c["choices"]]
    pieces = [p for p in pieces if p]
    assert "".join(pieces) == HOSTILE
    assert len(pieces) > 10  # streamed in word pieces, not in one chunk


def test_echo_is_the_same_answer_without_streaming(client: httpx.Client) -> None:
    r = client.post("/v1/chat/completions", headers={SIM: "ttft_ms=0,echo=1"},
                    json={"model": "firsttoken-sim", "messages": [{"role": "user", "content": HOSTILE}]})
    assert r.json()["choices"][0]["message"]["content"] == HOSTILE


def test_stamp_marks_every_chunk_with_its_send_time(client: httpx.Client) -> None:
    before = time.time() * 1000
    r = client.post("/v1/chat/completions", headers={SIM: "ttft_ms=0,tps=2000,tokens=40,stamp=1"},
                    json={"model": "firsttoken-sim", "messages": [{"role": "user", "content": "x"}], "stream": True})
    after = time.time() * 1000
    stamps = [c["x_firsttoken_sent_ms"] for c in chunks(r.text)]
    assert len(stamps) >= 40
    assert stamps == sorted(stamps) and before <= stamps[0] and stamps[-1] <= after


@pytest.mark.parametrize("value", ["2", "-1", "yes"])
def test_bad_echo_is_400(client: httpx.Client, value: str) -> None:
    r = client.post("/v1/chat/completions", headers={SIM: f"echo={value}"},
                    json={"model": "firsttoken-sim", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 400
