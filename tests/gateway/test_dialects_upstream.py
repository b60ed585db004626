"""The Responses and Messages routes in front of an upstream, over real sockets: a small
upstream of the tests' own replays recorded answers (tests/corpus/dialects), cut in
7-byte pieces (multibyte characters split), and the client receives through the
gateway exactly the bytes the upstream sent; the official clients read them; each
route goes to the upstream's route of the same name with the key the way its API
wants it; upstream errors pass in their own shape; the keys never come back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import anthropic
import httpx
import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from gateway.app import GatewayConfig, create_app
from gateway.dialects import MESSAGES, RESPONSES
from gateway.limits.usage import UsageMeter
from harness.servers import gateway, serve_app

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "dialects"
TEXT = "A frame at 60 Hz lasts 16.7 ms — keep work under 8 ms. 🙂"
OPENAI_KEY = "sk-upstream-openai-5b1e9d"
ANTHROPIC_KEY = "sk-ant-upstream-7c2f4a"
CLIENT_KEY = "sk-gateway-client-3d9f1a7c"
INPUT = {"model": "gpt-4.1-mini", "instructions": "Be brief.", "input": "How long is a frame?"}
TURNS = {"model": "claude-sonnet-4-20250514", "max_tokens": 200, "system": "Be brief.",
         "messages": [{"role": "user", "content": "How long is a frame?"}]}


def recorded(name: str) -> bytes:
    return (CORPUS / name).read_bytes()


class Replay:
    """The upstream: answers `/v1/responses` and `/v1/messages` with the recorded bytes,
    and keeps what each request brought."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.app = Starlette(routes=[Route("/v1/responses", self.answer, methods=["POST"]),
                                     Route("/v1/messages", self.answer, methods=["POST"])])

    async def answer(self, request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw)
        self.seen.append({"path": request.url.path, "headers": request.headers, "body": raw})
        name = request.url.path.rsplit("/", 1)[1]
        ids = {"request-id": "req_upstream_1"} if name == "messages" else {"x-request-id": "req_upstream_1"}
        limits = {"anthropic-ratelimit-requests-remaining": "49", "x-ratelimit-remaining-requests": "49"}
        if body["model"] == "echo":  # a hostile or broken upstream sends back what it got
            got = dict(request.headers)
            return JSONResponse({"headers": got}, headers={"x-request-id": got.get("x-api-key", got.get("authorization", ""))})
        if body["model"] == "overloaded":
            return Response(recorded("messages-overloaded.json"), status_code=529, media_type="application/json",
                            headers={**ids, "x-should-retry": "true"})
        if not body.get("stream"):
            return Response(recorded(f"{name}.json"), media_type="application/json", headers={**ids, **limits})
        return StreamingResponse(_pieces(recorded(f"{name}-stream.sse"), 7), media_type="text/event-stream; charset=utf-8",
                                 headers={**ids, **limits})


async def _pieces(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[str, Replay]]:
    replay = Replay()
    with serve_app(replay.app) as url:
        yield url, replay


def gateway_of(upstream: str, **config: Any) -> Any:
    return serve_app(create_app(GatewayConfig(upstream=upstream + "/v1", **config)))


@pytest.fixture(scope="module")
def proxy(upstream: tuple[str, Replay]) -> Iterator[str]:
    with gateway_of(upstream[0], upstream_key=OPENAI_KEY, anthropic_key=ANTHROPIC_KEY) as url:
        yield url


def last(replay: Replay) -> dict[str, Any]:
    return replay.seen[-1]


@pytest.mark.parametrize("path, body, name", [
    ("/v1/responses", INPUT, "responses"), ("/v1/messages", TURNS, "messages")])
@pytest.mark.parametrize("stream", [True, False])
def test_each_route_is_relayed_byte_for_byte_to_the_route_of_the_same_name(
        proxy: str, upstream: tuple[str, Replay], path: str, body: dict, name: str, stream: bool) -> None:
    sent = json.dumps({**body, "stream": stream}).encode()
    with httpx.Client() as http, http.stream("POST", proxy + path, content=sent,
                                             headers={"content-type": "application/json"}) as r:
        received = b"".join(r.iter_raw())
        assert r.status_code == 200
        headers = r.headers
    assert received == recorded(f"{name}-stream.sse" if stream else f"{name}.json")
    assert last(upstream[1])["path"] == path and last(upstream[1])["body"] == sent
    assert headers["anthropic-ratelimit-requests-remaining"] == "49"  # the upstream's own, passed on
    assert headers["request-id" if name == "messages" else "x-request-id"] == "req_upstream_1"
    assert headers["x-ratelimit-remaining-requests"] != "49"  # the gateway's own limits (gateway/limits)


def test_the_official_clients_read_the_relayed_answers(proxy: str) -> None:
    with openai.OpenAI(base_url=proxy + "/v1", api_key="unused", max_retries=0) as client:
        events = list(client.responses.create(**INPUT, stream=True))
        assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == TEXT
        assert events[-1].type == "response.completed" and events[-1].response.usage.total_tokens == 34  # type: ignore[union-attr]
        assert client.responses.create(**INPUT).output_text == TEXT
    with anthropic.Anthropic(base_url=proxy, api_key="unused", max_retries=0) as client:
        with client.messages.stream(**TURNS) as stream:
            assert "".join(stream.text_stream) == TEXT
            final = stream.get_final_message()
        assert final.stop_reason == "end_turn" and final.usage.output_tokens == 17
        assert client.messages.create(**TURNS).content[0].text == TEXT  # type: ignore[union-attr]


def test_keys_go_the_way_each_api_wants_them(proxy: str, upstream: tuple[str, Replay]) -> None:
    url, replay = upstream
    with httpx.Client(base_url=proxy, headers={"x-api-key": "sk-client", "authorization": "Bearer sk-client"}) as http:
        http.post("/v1/responses", json=INPUT)
        sent = last(replay)["headers"]
        assert sent["authorization"] == f"Bearer {OPENAI_KEY}" and "x-api-key" not in sent
        http.post("/v1/messages", json=TURNS, headers={"anthropic-beta": "prompt-caching-2024-07-31"})
        sent = last(replay)["headers"]
        assert sent["x-api-key"] == ANTHROPIC_KEY and "authorization" not in sent
        assert sent["anthropic-version"] == "2023-06-01"  # Anthropic refuses a request without one
        assert sent["anthropic-beta"] == "prompt-caching-2024-07-31"
        http.post("/v1/messages", json=TURNS, headers={"anthropic-version": "2099-01-01"})
        assert last(replay)["headers"]["anthropic-version"] == "2099-01-01"  # the client's, passed on
    with gateway_of(url, upstream_key=OPENAI_KEY) as one_key:  # one upstream, one key
        httpx.post(one_key + "/v1/messages", json=TURNS)
        assert last(replay)["headers"]["x-api-key"] == OPENAI_KEY
    with gateway_of(url) as keyless:  # no key of its own: the client's are passed on
        httpx.post(keyless + "/v1/messages", json=TURNS, headers={"x-api-key": "sk-client"})
        assert last(replay)["headers"]["x-api-key"] == "sk-client"
        httpx.post(keyless + "/v1/responses", json=INPUT, headers={"authorization": "Bearer sk-client"})
        assert last(replay)["headers"]["authorization"] == "Bearer sk-client"
    with gateway_of(url, client_key=CLIENT_KEY) as guarded:  # the gateway's own key stays at the gateway
        r = httpx.post(guarded + "/v1/messages", json=TURNS, headers={"x-api-key": CLIENT_KEY})
        assert r.status_code == 200
        sent = last(replay)["headers"]
        assert "x-api-key" not in sent and "authorization" not in sent


def test_the_cli_reads_each_key_from_its_environment_and_logs_neither(upstream: tuple[str, Replay]) -> None:
    url, replay = upstream
    keys = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    with gateway("--upstream", url + "/v1", "--log-level", "debug", env=keys) as proxy:
        assert httpx.post(proxy + "/v1/messages", json=TURNS, timeout=30).status_code == 200
        assert last(replay)["headers"]["x-api-key"] == ANTHROPIC_KEY
        assert httpx.post(proxy + "/v1/responses", json=INPUT, timeout=30).status_code == 200
        assert last(replay)["headers"]["authorization"] == f"Bearer {OPENAI_KEY}"
    assert OPENAI_KEY not in "".join(proxy.log) and ANTHROPIC_KEY not in "".join(proxy.log)


def test_upstream_errors_pass_in_their_own_shape(proxy: str) -> None:
    with anthropic.Anthropic(base_url=proxy, api_key="unused", max_retries=0) as client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(**{**TURNS, "model": "overloaded"})
    assert caught.value.status_code == 529 and caught.value.request_id == "req_upstream_1"
    assert caught.value.body == json.loads(recorded("messages-overloaded.json"))
    assert caught.value.response.headers["x-should-retry"] == "true"


@pytest.mark.parametrize("path, body", [("/v1/responses", INPUT), ("/v1/messages", TURNS)])
def test_the_keys_never_come_back(upstream: tuple[str, Replay], path: str, body: dict) -> None:
    with gateway_of(upstream[0], upstream_key=OPENAI_KEY, anthropic_key=ANTHROPIC_KEY, client_key=CLIENT_KEY) as url:
        r = httpx.post(url + path, json={**body, "model": "echo"}, headers={"x-api-key": CLIENT_KEY})
    assert r.status_code == 200 and "[redacted]" in r.text + str(r.headers)
    for key in (OPENAI_KEY, ANTHROPIC_KEY, CLIENT_KEY):
        assert key not in r.text and key not in str(r.headers)


@pytest.mark.parametrize("dialect, name, total", [(RESPONSES, "responses", 34), (MESSAGES, "messages", 21 + 17)])
def test_relayed_answers_settle_from_the_usage_they_report(dialect: Any, name: str, total: int) -> None:
    for streaming, data in ((True, recorded(f"{name}-stream.sse")), (False, recorded(f"{name}.json"))):
        meter = UsageMeter(dialect, streaming=streaming)
        for i in range(0, len(data), 7):
            meter.feed(data[i : i + 7])
        assert meter.settle(0, len) == {"total_tokens": total, "exact": True}
