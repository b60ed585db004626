"""Flow control over HTTP, in process: every /v1 request is limited, queued fairly or
refused with OpenAI's 429; dry runs; settling what answers really cost; Redis down."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from firsttoken import tokens
from firsttoken.ratelimit import Governor, parse_rate_limit_headers
from gateway.app import GatewayConfig, create_app
from gateway.cache_refs import CLIENT_HEADER
from gateway.limits import FlowLimits, MemoryBuckets
from gateway.limits.gcra import Rate
from gateway.limits.limiter import Ask, Limiter, Refused
from gateway.simulator import SimParams

FAST = SimParams(ttft_ms=0, tps=1_000_000, tokens=20)
MESSAGES = [{"role": "user", "content": "tell me about frames and buffers"}]
CHAT = {"model": "firsttoken-sim", "messages": MESSAGES}


def app_with(**limits: Any) -> Any:
    return create_app(GatewayConfig(sim=FAST, limits=FlowLimits(**limits)))


def client_for(app: Any, ident: str = "client-0123456789abcdef") -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1",
        # A JSON body says so, as every client of the real API does (gateway/guard.py).
        headers={CLIENT_HEADER: ident, "content-type": "application/json"}, timeout=30,
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ---- admission, 429, headers ----------------------------------------------------------------


def test_over_the_limit_is_a_429_the_pages_governor_understands() -> None:
    async def go() -> None:
        async with client_for(app_with(rpm=2, queue_wait_s=0)) as c:
            first = await c.post("/v1/chat/completions", json=CHAT)
            assert first.status_code == 200
            assert first.headers["x-ratelimit-limit-requests"] == "2"
            assert first.headers["x-ratelimit-remaining-requests"] == "1"
            assert first.headers["x-ratelimit-reset-requests"] == "30s"  # one request back in 30 s
            assert (await c.post("/v1/chat/completions", json=CHAT)).status_code == 200
            refused = await c.post("/v1/chat/completions", json=CHAT)
            assert refused.status_code == 429
            error = refused.json()["error"]
            assert error["code"] == "rate_limit_exceeded" and error["type"] == "requests"
            assert refused.headers["retry-after"] == "30" and 29_000 < int(refused.headers["retry-after-ms"]) <= 30_000
            assert refused.headers["x-ratelimit-remaining-requests"] == "0"
            snap = parse_rate_limit_headers(refused.headers, 0.0)
            assert snap.retry_after_s is not None and 29 < snap.retry_after_s <= 30
            gov = Governor(max_retry_after=60)
            assert 29 < gov.retry_delay(1, 429, refused.headers, 0.0) <= 30  # type: ignore[operator]
            # /v1/models is a /v1 request too
            assert (await c.get("/v1/models")).status_code == 429
            # another client has its own buckets
            async with client_for(c._transport.app, "client-fedcba9876543210") as other:  # type: ignore[attr-defined]
                assert (await other.post("/v1/chat/completions", json=CHAT)).status_code == 200

    run(go())


def test_tokens_reserved_from_max_tokens_and_refunded_from_usage() -> None:
    async def go() -> None:
        async with client_for(app_with(tpm=1000, queue_wait_s=0)) as c:
            prompt = tokens.count_chat(MESSAGES, "firsttoken-sim")
            r = await c.post("/v1/chat/completions", json={**CHAT, "max_tokens": 500})
            assert r.status_code == 200
            assert int(r.headers["x-ratelimit-remaining-tokens"]) == 1000 - prompt - 500
            usage = r.json()["usage"]
            # settled after the answer: the bucket holds the unused reservation again
            for _ in range(100):
                dry = (await c.post("/v1/chat/completions?dry_run=true", json={**CHAT, "max_tokens": 1})).json()
                if dry["limiter"]["action"] == "admit":
                    break
                await asyncio.sleep(0)  # let the settling task run (it is scheduled, not timed)
            after = await c.post("/v1/chat/completions?dry_run=true", json=CHAT)
            remaining = int(after.headers["x-ratelimit-remaining-tokens"])
            # the bucket also refilled a little (1000/min) meanwhile
            assert 1000 - usage["total_tokens"] <= remaining <= 1000 - usage["total_tokens"] + 5
            too_big = await c.post("/v1/chat/completions", json={**CHAT, "max_tokens": 5000})
            assert too_big.status_code == 429 and "retry-after" not in too_big.headers
            assert too_big.headers["x-should-retry"] == "false"

    run(go())


def test_a_streamed_answer_without_usage_is_counted_from_its_text() -> None:
    async def go() -> None:
        app = app_with(tpm=10_000, queue_wait_s=0)
        async with client_for(app) as c:
            prompt = tokens.count_chat(MESSAGES, "firsttoken-sim")
            r = await c.post("/v1/chat/completions", json={**CHAT, "stream": True, "max_tokens": 3000})
            text = "".join(
                json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
                for line in r.text.split("\n") if line.startswith("data: {")
            )
            spent = prompt + tokens.count(text, "firsttoken-sim")
            for _ in range(200):
                dry = await c.post("/v1/chat/completions?dry_run=true", json=CHAT)
                if int(dry.headers["x-ratelimit-remaining-tokens"]) >= 10_000 - spent - 1024 - prompt:
                    break
                await asyncio.sleep(0)
            remaining = int(dry.headers["x-ratelimit-remaining-tokens"])
            assert 10_000 - spent - 1024 - prompt <= remaining  # reservation gone, text charged
            assert remaining <= 10_000 - spent + 5

    run(go())


# ---- the queue ---------------------------------------------------------------------------------


def test_a_request_over_the_rate_waits_in_the_queue_instead_of_a_429() -> None:
    async def go() -> None:
        # 600/min with a bucket of one: one request every 100 ms
        async with client_for(app_with(rpm=600, burst_s=0.1, queue_wait_s=2, queue_max=10)) as c:
            t0 = time.monotonic()
            answers = await asyncio.gather(*(c.post("/v1/chat/completions", json=CHAT) for _ in range(4)))
            took = time.monotonic() - t0
            assert [a.status_code for a in answers] == [200] * 4
            assert took >= 0.3  # three of them waited their turn
            # admitted one slot apart, to the microsecond, whenever they were released
            slots = sorted(int(a.headers["x-firsttoken-admitted-at"].replace(".", "")) for a in answers)
            assert all(b - a >= 100_000 for a, b in zip(slots, slots[1:]))
            assert slots[-1] - slots[0] < 1_000_000

    run(go())


def test_a_full_queue_or_a_wait_past_the_limit_is_a_429_saying_when() -> None:
    async def go() -> None:
        async with client_for(app_with(rpm=60, burst_s=1, queue_wait_s=1.5, queue_max=1)) as c:
            answers = await asyncio.gather(*(c.post("/v1/chat/completions", json=CHAT) for _ in range(4)))
            codes = sorted(a.status_code for a in answers)
            assert codes == [200, 200, 429, 429]  # one now, one queued ~1 s, the rest told
            for a in answers:
                if a.status_code == 429:
                    assert int(a.headers["retry-after"]) >= 1 and int(a.headers["retry-after-ms"]) > 0

    run(go())


def test_the_dispatcher_serves_keys_in_turn_under_a_shared_bucket() -> None:
    async def go() -> list[str]:
        buckets = MemoryBuckets()
        limiter = Limiter(buckets, max_wait_s=10, max_queue=100, lookahead_s=0)  # no slots reserved ahead
        shared = Rate(1200, 60.0, burst=1)  # the gateway's: one per 50 ms

        def ask(key: str) -> Ask:
            return Ask(key, ["gateway:r"], [shared], [1], frozenset({0}))

        order: list[str] = []

        async def one(key: str, n: int) -> None:
            await limiter.admit(ask(key))
            order.append(f"{key}{n}")

        await limiter.admit(ask("warm"))  # empties the bucket: everything below queues
        tasks = [asyncio.create_task(one("a", i)) for i in range(4)]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(one("b", i)) for i in range(2)]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(one("c", 0))]
        await asyncio.gather(*tasks)
        return order

    assert run(go()) == ["a0", "b0", "c0", "a1", "b1", "a2", "a3"]


def test_a_waiter_that_gives_up_frees_its_place() -> None:
    async def go() -> None:
        limiter = Limiter(MemoryBuckets(), max_wait_s=10, max_queue=1)
        rate = Rate(60, 60.0, burst=1)
        await limiter.admit(Ask("k", ["k:r"], [rate], [1]))
        waiting = asyncio.create_task(limiter.admit(Ask("k", ["k:r"], [rate], [1])))
        await asyncio.sleep(0)
        assert len(limiter.queue) == 1
        with pytest.raises(Refused):
            await limiter.admit(Ask("k", ["k:r"], [rate], [1]))  # queue full
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert len(limiter.queue) == 0

    run(go())


# ---- dry run -------------------------------------------------------------------------------------


def test_dry_run_counts_exactly_spends_nothing_and_says_what_the_limiter_would_do() -> None:
    async def go() -> None:
        # One request per 10 s, so that the queue's answer does not depend on how fast
        # this machine gets from the request to the dry run after it.
        async with client_for(app_with(rpm=6, burst_s=10, queue_wait_s=30)) as c:
            body = {**CHAT, "max_tokens": 100}
            for _ in range(3):
                dry = await c.post("/v1/chat/completions?dry_run=true", json=body)
                assert dry.status_code == 200
                data = dry.json()
                assert data["prompt_tokens"] == data["estimated_tokens"] == tokens.count_chat(MESSAGES, "firsttoken-sim")
                assert data["fits"] is True and data["context_window"] == 128_000
                assert data["limiter"]["action"] == "admit"  # dry runs spend nothing
            assert (await c.post("/v1/chat/completions", json=body)).status_code == 200
            dry = (await c.post("/v1/chat/completions?dry_run=true", json=body)).json()
            assert dry["limiter"]["action"] == "queue" and 0 < dry["limiter"]["wait_s"] <= 10
            huge = (await c.post("/v1/chat/completions?dry_run=true", json={**CHAT, "max_tokens": 200_000})).json()
            assert huge["fits"] is False

    run(go())


def test_dry_run_refuses_like_a_real_request_and_bad_bodies_get_the_same_4xx() -> None:
    async def go() -> None:
        async with client_for(app_with(rpm=60, burst_s=1, queue_wait_s=0)) as c:
            for bad in (b"{", json.dumps({"model": "firsttoken-sim"}).encode(), json.dumps({**CHAT, "stream": "yes"}).encode()):
                real = await c.post("/v1/chat/completions", content=bad)
                dry = await c.post("/v1/chat/completions?dry_run=true", content=bad)
                assert real.status_code == dry.status_code == 400
                assert real.json() == dry.json()
            assert (await c.post("/v1/chat/completions", json=CHAT)).status_code == 200
            dry = (await c.post("/v1/chat/completions?dry_run=true", json=CHAT)).json()
            assert dry["limiter"]["action"] == "refuse" and dry["limiter"]["retry_after_s"] == 1

    run(go())


def test_dry_run_counts_the_expanded_cache_reference() -> None:
    system = {"role": "system", "content": "You are terse. " * 50}

    async def go() -> None:
        async with client_for(app_with()) as c:
            full = [system, *MESSAGES]
            assert (await c.post("/v1/chat/completions", json={**CHAT, "messages": full})).status_code == 200
            import hashlib

            ref = "sha256:" + hashlib.sha256(system["content"].encode()).hexdigest()
            by_ref = [{"role": "system", "x_firsttoken_ref": ref}, *MESSAGES]
            dry = (await c.post("/v1/chat/completions?dry_run=true", json={**CHAT, "messages": by_ref})).json()
            assert dry["prompt_tokens"] == tokens.count_chat(full, "firsttoken-sim")

    run(go())


# ---- Redis down -----------------------------------------------------------------------------------


def _dead_redis() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"redis://127.0.0.1:{s.getsockname()[1]}/0"  # closed at once: nothing listens


@pytest.mark.parametrize("fail_open, status", [(True, 200), (False, 503), (None, 200)])
def test_redis_down_fails_open_or_closed_and_healthz_says_so(fail_open: bool | None, status: int) -> None:
    async def go() -> None:
        app = create_app(GatewayConfig(sim=FAST, redis=_dead_redis(), limits=FlowLimits(fail_open=fail_open)))
        async with client_for(app) as c:
            r = await c.post("/v1/chat/completions", json=CHAT)
            assert r.status_code == status
            if status == 503:
                assert r.json()["error"]["code"] == "rate_limiter_unavailable" and r.headers["retry-after"] == "1"
            health = await c.get("/healthz")
            assert health.status_code == 200 and health.json()["redis"] == "down"
            # cache references read as unknown: the client sends the text again
            ref = [{"role": "system", "x_firsttoken_ref": "sha256:" + "0" * 64}, *MESSAGES]
            unknown = await c.post("/v1/chat/completions", json={**CHAT, "messages": ref})
            assert unknown.status_code == 409 and unknown.json()["error"]["code"] == "cache_ref_unknown"

    run(go())


def test_redis_down_is_closed_by_default_in_front_of_an_upstream() -> None:
    async def go() -> None:
        app = create_app(GatewayConfig(upstream="http://127.0.0.1:9/v1", redis=_dead_redis()))
        async with client_for(app) as c:
            r = await c.post("/v1/chat/completions", json=CHAT)
            assert r.status_code == 503 and r.json()["error"]["code"] == "rate_limiter_unavailable"

    run(go())


def test_an_upstream_is_limited_the_same_way() -> None:
    from harness.servers import serve_app

    with serve_app(create_app(GatewayConfig(sim=FAST))) as origin:
        async def go() -> None:
            app = create_app(GatewayConfig(upstream=origin + "/v1", limits=FlowLimits(rpm=1, tpm=100_000, queue_wait_s=0)))
            async with app.router.lifespan_context(app), client_for(app) as c:
                first = await c.post("/v1/chat/completions", json={**CHAT, "max_tokens": 50})
                assert first.status_code == 200
                # ours, not the origin's (whose own limit is 5000)
                assert first.headers["x-ratelimit-limit-requests"] == "1"
                assert first.headers["x-ratelimit-limit-tokens"] == "100000"
                refused = await c.post("/v1/chat/completions", json=CHAT)
                assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limit_exceeded"

        run(go())


def test_the_public_surface_is_what_all_says() -> None:
    import gateway.limits as limits

    assert sorted(limits.__all__) == sorted(n for n in dir(limits) if not n.startswith("_") and n[0].isupper())
    for name in limits.__all__:
        assert hasattr(limits, name), name


def test_whose_buckets_client_id_then_key_then_peer_never_raw() -> None:
    from starlette.datastructures import Headers

    from gateway.access import identify

    def limit_key(headers: Headers, peer: str) -> str:
        return identify(headers, peer).limit_key

    ident = "client-0123456789abcdef"
    with_id = limit_key(Headers({"authorization": "Bearer sk-secret", CLIENT_HEADER: ident}), "10.0.0.1")
    other_key = limit_key(Headers({"authorization": "Bearer sk-other", CLIENT_HEADER: ident}), "10.0.0.1")
    key_only = limit_key(Headers({"authorization": "Bearer sk-secret"}), "10.0.0.1")
    bad_id = limit_key(Headers({"authorization": "Bearer sk-secret", CLIENT_HEADER: "short"}), "10.0.0.1")
    assert with_id.startswith("c") and with_id != other_key  # an id is scoped by its key
    assert key_only.startswith("k") and bad_id == key_only
    assert limit_key(Headers({}), "10.0.0.1") == "p10.0.0.1"
    assert all("sk-" not in k for k in (with_id, other_key, key_only))
    with pytest.raises(ValueError):
        FlowLimits(rpm=30, burst_s=1)  # a bucket of half a request admits nothing
