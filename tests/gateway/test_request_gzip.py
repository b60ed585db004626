"""Gzipped request bodies (`Content-Encoding: gzip`, RFC 9110 §8.4): the gateway inflates
them within the body limit, refuses a bomb as it inflates, says what it takes in its
advert (references or not), answers a gzipped chat as the plain one, relays an upstream
the plain body, and answers a coding it does not take with a 415."""

from __future__ import annotations

import gzip
import json
import zlib
from typing import Any, Iterator

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from gateway.app import GatewayConfig, create_app
from gateway.errors import APIError
from gateway.simulator import SimParams
from gateway.validation import decode_content
from harness.servers import serve_app

BODY = json.dumps({"model": "firsttoken-sim", "stream": False,
                   "messages": [{"role": "system", "content": "Answer briefly. " * 200},
                                {"role": "user", "content": "what does gzip save on a phone?"}]}).encode()
FAST = {"x-firsttoken-sim": "ttft_ms=0,prefill_tps=0,tps=100000,tokens=12"}


def test_decode_content_inflates_within_the_limit_and_refuses_the_rest() -> None:
    assert decode_content(BODY, None, 1 << 20) == BODY
    assert decode_content(BODY, "identity", 1 << 20) == BODY
    assert decode_content(gzip.compress(BODY), "gzip", 1 << 20) == BODY
    assert decode_content(gzip.compress(BODY), " GZIP ", len(BODY)) == BODY  # exactly the limit
    bomb = gzip.compress(b"\0" * (8 << 20))  # 8 MiB of zeros in 8 KiB
    assert len(bomb) < 16 << 10

    def refused(body: bytes, coding: str, limit: int = 1 << 20) -> APIError:
        with pytest.raises(APIError) as caught:
            decode_content(body, coding, limit)
        return caught.value

    assert refused(bomb, "gzip").status == 413
    assert refused(gzip.compress(BODY), "gzip", len(BODY) - 1).status == 413
    assert refused(gzip.compress(BODY)[:-9], "gzip").status == 400  # cut before its end
    assert refused(gzip.compress(BODY) + b"junk", "gzip").status == 400  # bytes after its end
    assert refused(b"not gzip at all", "gzip").status == 400
    assert refused(zlib.compress(BODY), "gzip").status == 400  # zlib's frame is not gzip's
    assert refused(BODY, "br").status == 415
    assert refused(BODY, "gzip, gzip").status == 415


@pytest.fixture(scope="module")
def plain() -> Iterator[str]:
    with serve_app(create_app(GatewayConfig(sim=SimParams(ttft_ms=0, tps=100_000, tokens=12)))) as url:
        yield url


def test_a_gzipped_chat_is_answered_as_the_plain_one(plain: str) -> None:
    with httpx.Client(base_url=plain, timeout=30, headers=FAST) as client:
        sent = client.post("/v1/chat/completions", content=BODY, headers={"content-type": "application/json"})
        zipped = client.post("/v1/chat/completions", content=gzip.compress(BODY),
                             headers={"content-type": "application/json", "content-encoding": "gzip"})
        assert sent.status_code == zipped.status_code == 200, zipped.text
        assert zipped.json()["choices"] == sent.json()["choices"]
        assert zipped.json()["usage"]["prompt_tokens"] == sent.json()["usage"]["prompt_tokens"]
        assert "request-gzip=1" in zipped.headers["x-firsttoken-gateway"].split(", ")
        # A dry run counts the inflated prompt too.
        dry = client.post("/v1/chat/completions?dry_run=true", content=gzip.compress(BODY),
                          headers={"content-type": "application/json", "content-encoding": "gzip"})
        assert dry.status_code == 200 and dry.json()["prompt_tokens"] == sent.json()["usage"]["prompt_tokens"]


def test_a_bomb_and_an_unknown_coding_get_the_routes_own_errors(plain: str) -> None:
    with httpx.Client(base_url=plain, timeout=30) as client:
        bomb = gzip.compress(b'{"model": "m", "messages": [' + b" " * (8 << 20) + b"]}")
        r = client.post("/v1/chat/completions", content=bomb,
                        headers={"content-type": "application/json", "content-encoding": "gzip"})
        assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
        r = client.post("/v1/messages", content=BODY, headers={"content-type": "application/json", "content-encoding": "br",
                                                               "anthropic-version": "2023-06-01"})
        assert r.status_code == 415 and r.json()["type"] == "error"  # Anthropic's error shape
        assert r.json()["error"]["message"].startswith("Content-Encoding 'br'")


def test_without_references_the_advert_still_says_gzip() -> None:
    with serve_app(create_app(GatewayConfig(cache_refs=False))) as url, httpx.Client(base_url=url) as client:
        assert client.get("/v1/models").headers["x-firsttoken-gateway"] == "request-gzip=1"


def test_an_upstream_gets_the_plain_body() -> None:
    seen: list[dict[str, Any]] = []

    async def chat(request: Request) -> JSONResponse:
        seen.append({"headers": dict(request.headers), "body": await request.body()})
        return JSONResponse({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                          "finish_reason": "stop"}],
                             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    upstream = Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])
    with serve_app(upstream) as origin, \
            serve_app(create_app(GatewayConfig(upstream=origin + "/v1", upstream_key="sk-up"))) as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        r = client.post("/v1/chat/completions", content=gzip.compress(BODY),
                        headers={"content-type": "application/json", "content-encoding": "gzip"})
        assert r.status_code == 200, r.text
    assert json.loads(seen[0]["body"]) == json.loads(BODY)
    assert "content-encoding" not in seen[0]["headers"]
