"""`x-firsttoken-prepare` (gateway/prepare.py), over real sockets: the gateway prepares a
conversation as the page's core does on CPython (firsttoken.prepare through the core's
Preparer), sends the prepared body to its backend (the built-in model; an upstream of the
test's own that keeps what it got, with the client's key), and leads the stream with the
core's `chat.prepared` as a named event, which the official `openai` client skips. Flow
control counts the prepared prompt; bad input is refused with OpenAI's error object."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Iterator

import httpx
import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from firsttoken.notices import Notices
from firsttoken.prepare import Prepared
from firsttoken.prepare.preparer import Preparer
from firsttoken.protocol import PROTOCOL_VERSION
from firsttoken.settings import ChatSettings
from gateway.app import GatewayConfig, create_app
from gateway.prepare import PREPARE_HEADER, PREPARED_EVENT
from harness.servers import serve_app
from harness.sse import sse_events as events

SIM = "x-firsttoken-sim"
USER_KEY = "sk-user-own-key-4e8a1c"
#: Pretty JSON and commented code, which compression shortens, under a system prompt.
CONVERSATION = [
    {"role": "system", "content": "You are terse.\n\n\n\nAnswer   in   one   line."},
    {"role": "user", "content": 'Config:\n```json\n{\n    "retries": 3,\n    "backoff": [1, 2, 4]\n}\n```'},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "Now this:\n```python\n# a comment that goes\ndef f(x):\n\n    return x  # and this\n```"},
]


def prepared(messages: list[dict[str, Any]], model: str = "firsttoken-sim", level: str = "balanced",
             max_tokens: int | None = None) -> Prepared:
    """What the page's core makes of `messages`, on CPython."""
    preparer = Preparer(clock=lambda: 0.0, notices=Notices())
    settings = ChatSettings(model=model, compress=level, max_tokens=max_tokens)
    return asyncio.run(preparer.prepare(messages, settings))


def report_of(p: Prepared, body: bytes) -> dict[str, Any]:
    """The `chat.prepared` the core would send for `p`, sent as `body` (prepare_ms aside)."""
    return {"v": PROTOCOL_VERSION, "type": "chat.prepared", "compression": p.compression, "saved": p.saved,
            "saved_unit": p.saved_unit, "budget": p.budget, "window_known": p.window_known,
            "prompt_tokens": p.prompt_tokens, "exact": p.exact, "dropped": p.dropped, "truncated": p.truncated,
            "request_bytes": len(body), "images_dropped": p.images_dropped}


@pytest.fixture(scope="module")
def sim() -> Iterator[str]:
    with serve_app(create_app(GatewayConfig(precompressed=None))) as url:
        yield url


def test_the_built_in_model_answers_the_prepared_prompt_led_by_the_core_s_report(sim: str) -> None:
    p = prepared(CONVERSATION)
    assert p.messages != CONVERSATION and p.compression is not None and p.compression["saved_tokens"] > 0
    r = httpx.post(sim + "/v1/chat/completions", headers={PREPARE_HEADER: "balanced", SIM: "ttft_ms=0,tps=100000"},
                   json={"model": "firsttoken-sim", "messages": CONVERSATION, "stream": True,
                         "stream_options": {"include_usage": True}}, timeout=30)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    (name, first), *rest = events(r.text)
    assert name == PREPARED_EVENT
    report = json.loads(first)
    assert report.pop("prepare_ms") >= 0
    body = json.dumps({"model": "firsttoken-sim", "messages": p.messages, "stream": True,
                       "stream_options": {"include_usage": True}}, ensure_ascii=False, separators=(",", ":")).encode()
    assert report == report_of(p, body)
    assert all(name is None for name, _ in rest) and rest[-1][1] == "[DONE]"
    chunks = [json.loads(data) for _, data in rest[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    # The built-in model is deterministic: the answer to the prepared prompt, which it
    # counted as the core did.
    direct = httpx.post(sim + "/v1/chat/completions", headers={SIM: "ttft_ms=0"},
                        json={"model": "firsttoken-sim", "messages": p.messages}, timeout=30).json()
    assert text == direct["choices"][0]["message"]["content"]
    assert chunks[-1]["usage"]["prompt_tokens"] == p.prompt_tokens == direct["usage"]["prompt_tokens"]


def test_flow_control_counts_the_prepared_prompt(sim: str) -> None:
    p = prepared(CONVERSATION)
    as_written = httpx.post(sim + "/v1/chat/completions?dry_run=true",
                            json={"model": "firsttoken-sim", "messages": CONVERSATION}).json()
    dry = httpx.post(sim + "/v1/chat/completions?dry_run=true", headers={PREPARE_HEADER: "balanced"},
                     json={"model": "firsttoken-sim", "messages": CONVERSATION}).json()
    assert dry["prompt_tokens"] == p.prompt_tokens < as_written["prompt_tokens"]


def test_the_official_openai_client_skips_the_report(sim: str) -> None:
    client = openai.OpenAI(base_url=sim + "/v1", api_key="unused", max_retries=0)
    stream = client.chat.completions.create(
        model="firsttoken-sim", messages=CONVERSATION, stream=True,
        extra_headers={PREPARE_HEADER: "max", SIM: "ttft_ms=0,tps=100000"})
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    expected = httpx.post(sim + "/v1/chat/completions", headers={SIM: "ttft_ms=0"},
                          json={"model": "firsttoken-sim", "messages": prepared(CONVERSATION, level="max").messages},
                          timeout=30).json()["choices"][0]["message"]["content"]
    assert text == expected


def test_a_conversation_that_cannot_fit_is_refused_with_the_core_s_code(sim: str) -> None:
    huge = [{"role": "system", "content": "word " * 140_000}, {"role": "user", "content": "hi"}]
    r = httpx.post(sim + "/v1/chat/completions", headers={PREPARE_HEADER: "off"},
                   json={"model": "gpt-4o", "messages": huge, "stream": True}, timeout=60)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "context_budget_exceeded"
    assert r.json()["error"]["param"] == "messages"


def test_what_fitting_did_is_reported(sim: str) -> None:
    messages = [{"role": "user", "content": "old " * 3000}, {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "new question"}]
    p = prepared(messages, model="gpt-4o", level="safe", max_tokens=125_000)
    # The budget (128k less the reply's 125k) leaves the old turn out, or cuts it.
    assert p.dropped or p.truncated
    r = httpx.post(sim + "/v1/chat/completions", headers={PREPARE_HEADER: "safe", SIM: "ttft_ms=0,tps=100000"},
                   json={"model": "gpt-4o", "messages": messages, "stream": True, "max_completion_tokens": 125_000},
                   timeout=30)
    report = json.loads(events(r.text)[0][1])
    assert (report["dropped"], report["truncated"], report["prompt_tokens"]) == (p.dropped, p.truncated, p.prompt_tokens)


@pytest.mark.parametrize("path, body, value, code", [
    # Every dialect takes the header (issue 45: tests/gateway/test_prepare_dialects.py).
    ("/v1/responses", {"model": "firsttoken-sim", "input": "hi", "stream": True}, "huge", "invalid_value"),
    ("/v1/chat/completions", {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "hi"}]}, "huge", "invalid_value"),
])
def test_bad_use_of_the_header_is_a_typed_400(sim: str, path: str, body: dict, value: str, code: str) -> None:
    r = httpx.post(sim + path, headers={PREPARE_HEADER: value}, json=body)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == code and r.json()["error"]["param"] == PREPARE_HEADER


def test_without_the_header_nothing_changes(sim: str) -> None:
    r = httpx.post(sim + "/v1/chat/completions", headers={SIM: "ttft_ms=0,tps=100000"},
                   json={"model": "firsttoken-sim", "messages": CONVERSATION, "stream": True})
    assert all(name is None for name, _ in events(r.text))


# ---- in front of an upstream -----------------------------------------------------------


class Replay:
    """An upstream that keeps each request it got and answers with a stream of its own,
    cut in 7-byte pieces (a multibyte character split)."""

    ANSWER = ["Déjà", " vu", " 🙂"]

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/chat/completions", self.answer, methods=["POST"])])

    async def answer(self, request: Request) -> Response:
        self.seen.append({"headers": dict(request.headers), "body": await request.body()})
        chunks = [{"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]} for piece in self.ANSWER]
        data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
        return StreamingResponse(_pieces(data, 7), media_type="text/event-stream")


async def _pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, Replay]]:
    replay = Replay()
    with serve_app(replay.app) as url:
        yield url, replay


def test_an_upstream_gets_the_prepared_body_and_the_user_s_key(upstream: tuple[str, Replay]) -> None:
    url, replay = upstream
    # No key of the gateway's own: the user's goes upstream, as without the header.
    with serve_app(create_app(GatewayConfig(upstream=url + "/v1", precompressed=None))) as proxy:
        sent = {"model": "gpt-4o", "messages": CONVERSATION, "stream": True, "temperature": 0.2}
        r = httpx.post(proxy + "/v1/chat/completions", json=sent, timeout=30,
                       headers={PREPARE_HEADER: "balanced", "authorization": f"Bearer {USER_KEY}"})
    assert r.status_code == 200
    got = replay.seen[-1]
    p = prepared(CONVERSATION, model="gpt-4o")
    assert json.loads(got["body"]) == {**sent, "messages": p.messages}
    assert got["headers"]["authorization"] == f"Bearer {USER_KEY}"
    assert PREPARE_HEADER not in got["headers"]
    (name, first), *rest = events(r.text)
    assert name == PREPARED_EVENT
    report = json.loads(first)
    report.pop("prepare_ms")
    assert report == report_of(p, got["body"])
    # Then the upstream's stream, byte for byte.
    assert r.content.split(b"\n\n", 1)[1] == b"".join(
        b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}).encode()
        + b"\n\n" for piece in Replay.ANSWER) + b"data: [DONE]\n\n"
