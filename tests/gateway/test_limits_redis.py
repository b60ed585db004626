"""Gateway processes sharing one Redis (Debian's redis-server, started by the
`redis_url` fixture): one set of limits, one cache-reference store."""

from __future__ import annotations

import asyncio
import hashlib
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Iterator

import httpx
import pytest

from gateway.app import GatewayConfig, create_app
from gateway.cache_refs import CLIENT_HEADER, RefLimits, SharedRefStore, entry_of
from gateway.limits import FlowLimits, RedisBuckets
from gateway.limits.gcra import Rate, decide
from gateway.shared import SharedState
from gateway.simulator import SimParams
from harness.servers import gateway

FAST = SimParams(ttft_ms=0, tps=1_000_000, tokens=20)
CHAT = {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "hello"}]}
CLIENT = "client-0123456789abcdef"


@pytest.fixture
def redis(redis_url: str) -> Iterator[str]:
    """The session's Redis, emptied for this test."""
    import redis as redis_py

    with redis_py.Redis.from_url(redis_url) as r:
        r.flushall()
    yield redis_url


@asynccontextmanager
async def client_for(app: Any) -> AsyncIterator[httpx.AsyncClient]:
    """A client of `app` in process, with the app's lifespan run (it closes Redis)."""
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1",
                                     headers={CLIENT_HEADER: CLIENT}) as client:
            yield client


def test_two_gateways_share_one_set_of_buckets(redis: str) -> None:
    async def go() -> None:
        config = GatewayConfig(sim=FAST, redis=redis, limits=FlowLimits(rpm=2, queue_wait_s=0))
        async with client_for(create_app(config)) as one, client_for(create_app(config)) as two:
            assert (await one.post("/v1/chat/completions", json=CHAT)).status_code == 200
            r = await two.post("/v1/chat/completions", json=CHAT)
            assert r.status_code == 200 and r.headers["x-ratelimit-remaining-requests"] == "0"
            refused = await one.post("/v1/chat/completions", json=CHAT)
            assert refused.status_code == 429 and 29 <= int(refused.headers["retry-after"]) <= 30
            assert (await two.get("/healthz")).json()["redis"] == "ok"

    asyncio.run(go())


def test_the_lua_script_decides_as_the_pure_core_does(redis: str) -> None:
    async def go() -> None:
        shared = SharedState(redis)
        try:
            await decides(RedisBuckets(shared))
        finally:  # else its connections outlive the test, and warn in the next one
            await shared.aclose()

    async def decides(buckets: RedisBuckets) -> None:
        # Slow rates (a request in 10 s, ten tokens a second), so that what the calls
        # decide is the script's, never the machine's: on Redis's own clock, the buckets
        # refill by a request, or up to full tokens, only after longer (10 s) than a
        # loaded machine takes for all of them.
        requests, tokens = Rate(6, burst=3), Rate(600, burst=500)
        ids = ["t:r", "t:t"]
        seen = [await buckets.acquire(ids, [requests, tokens], [1, 100]) for _ in range(4)]
        assert [v.admitted for v in seen] == [True, True, True, False]
        assert [v.views[0].remaining for v in seen[:3]] == [2, 1, 0]
        assert 0 < seen[3].wait_s <= requests.interval  # the next request's slot, at most one interval on
        too_big = await buckets.peek(ids, [requests, tokens], [1, 501])
        assert too_big.never
        # the same over the pure core, on a fake clock
        tats: tuple[float, ...] = (0.0, 0.0)
        pure = []
        for _ in range(4):
            verdict, tats = decide([requests, tokens], tats, [1, 100], 1.0)
            pure.append(verdict.admitted)
        assert pure == [v.admitted for v in seen]
        # a refund puts tokens back; keys carry TTLs so Redis can drop idle buckets
        before = (await buckets.peek(ids, [requests, tokens], [0, 0])).views[1].remaining
        await buckets.adjust(["t:t"], [tokens], [-200])
        after = (await buckets.peek(ids, [requests, tokens], [0, 0])).views[1].remaining
        assert after >= before + 200 - 1
        import redis as redis_py

        with redis_py.Redis.from_url(redis) as r:
            # The key lives until its bucket is full again (three requests: 30 s), and not
            # past it; a key without TTL reads -1, a key gone -2.
            assert 0 < r.pttl("ft:rl:t:r") <= requests.tolerance * 1000 + 1

    asyncio.run(go())


def test_shared_reference_store_is_bounded_per_client_and_expires(redis: str) -> None:
    async def go() -> None:
        shared = SharedState(redis)
        store = SharedRefStore(shared, RefLimits(entries_per_client=2, bytes_per_client=10_000, ttl_s=60))
        entries = [entry_of(text) for text in ("one", "two", "three")]
        await store.remember("c1", entries)  # type: ignore[arg-type]
        digests = [digest for digest, _ in entries]  # type: ignore[misc]
        found = await store.get_many("c1", digests)
        assert found == {digests[1]: "two", digests[2]: "three"}  # the oldest went
        assert await store.get_many("c2", digests) == {}
        large = entry_of("x" * 20_000)
        await store.remember("c1", [large])  # type: ignore[list-item]
        assert await store.get_many("c1", [large[0]]) == {}  # type: ignore[index]  # larger than a client's share
        import redis as redis_py

        with redis_py.Redis.from_url(redis) as r:
            assert 0 < r.pttl("ft:refs:c1") <= 60_000
        await shared.aclose()

    asyncio.run(go())


def test_a_reference_stored_through_one_process_expands_on_the_other(redis: str) -> None:
    system = "You answer in haiku. " * 20
    ref = "sha256:" + hashlib.sha256(system.encode()).hexdigest()
    headers = {CLIENT_HEADER: CLIENT, "x-firsttoken-sim": "ttft_ms=0,tps=100000,echo=1"}
    with gateway("--redis", redis) as one, gateway("--redis", redis) as two:
        full = {**CHAT, "messages": [{"role": "system", "content": system}, *CHAT["messages"]]}
        assert httpx.post(one + "/v1/chat/completions", json=full, headers=headers, timeout=30).status_code == 200
        by_ref = {**CHAT, "messages": [{"role": "system", "x_firsttoken_ref": ref}, *CHAT["messages"]]}
        answer = httpx.post(two + "/v1/chat/completions", json=by_ref, headers=headers, timeout=30)
        assert answer.status_code == 200
        direct = httpx.post(two + "/v1/chat/completions", json=full, headers=headers, timeout=30)
        assert answer.json()["usage"]["prompt_tokens"] == direct.json()["usage"]["prompt_tokens"]
        # another client cannot use it
        other = httpx.post(two + "/v1/chat/completions", json=by_ref,
                           headers={**headers, CLIENT_HEADER: "client-fedcba9876543210"}, timeout=30)
        assert other.status_code == 409
        assert httpx.get(one + "/healthz").json()["redis"] == "ok"
