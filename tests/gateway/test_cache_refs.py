"""Cache references at the gateway: the store's bounds and isolation (pure), the HTTP
extension over real sockets (advertised, expanded before validation and forwarding,
unknown → 409, per client), and the core's unknown-reference round trip against a real
gateway."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path

import httpx
import pytest

from firsttoken.cache import Cache, MemoryStore
from firsttoken.core import Core
from firsttoken.ratelimit import Governor
from gateway.access import client_key
from gateway.cache_refs import RefLimits, RefStore, chat_sites, expand_refs, referenced
from gateway.errors import APIError
from harness.socket_transport import run_core
from harness.servers import gateway
from harness.socket_transport import SocketTransport
from tests.unit.fakes import sent_json

SIM = "x-firsttoken-sim"
FAST = "ttft_ms=0,tps=20000,tokens=20"
CLIENT = "x-firsttoken-client"
SYSTEM = (Path(__file__).resolve().parents[1] / "corpus" / "compress" / "system-prompt-02.md").read_text()
REF = "sha256:" + hashlib.sha256(SYSTEM.encode()).hexdigest()


def body(system: dict, user: str = "hi") -> dict:
    return {"model": "firsttoken-sim", "messages": [system, {"role": "user", "content": user}]}


def full() -> dict:
    return {"role": "system", "content": SYSTEM}


def ref(value: str = REF) -> dict:
    return {"role": "system", "x_firsttoken_ref": value}


# ---- the store ----------------------------------------------------------------------------


def test_store_bounds_per_client_and_in_all_least_recently_used_first() -> None:
    # Text bytes only here (no per-entry overhead): the bounds themselves are under test.
    store = RefStore(RefLimits(entries_per_client=2, bytes_per_client=100, total_bytes=150, entry_overhead=0, client_overhead=0))
    a, b, c = "a" * 40, "b" * 40, "c" * 40
    da, db = store.put("one", a), store.put("one", b)
    assert store.get("one", da) == a  # a is now the most recent
    store.put("one", c)  # over 2 entries: b goes
    assert store.get("one", db) is None and store.get("one", da) == a
    store.put("two", "x" * 90)  # 80 + 90 > 150 in all: the oldest anywhere goes (a, read before c came)
    assert store.total_bytes <= 150 and len(store) == 2
    assert store.put("one", "y" * 101) is None  # larger than a client's share
    assert store.put("one", "\ud800") is None  # not valid UTF-8


def test_the_memory_bound_bounds_real_memory_and_the_number_of_clients() -> None:
    """The attack from issue 15: many tiny entries, each from a new client id. Counted as
    text they weighed 162 KB and cost 22 MB; counted with their overhead, the store
    stays within its bound in real memory, and within its client bound."""
    import tracemalloc

    limits = RefLimits(total_bytes=4 * 1024 * 1024, max_clients=5_000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        store = RefStore(limits)
        for i in range(30_000):  # ~45 MB unbounded; tracemalloc makes each put slow
            store.put(f"{i:064x}", str(i % 10))
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert store.total_bytes <= limits.total_bytes
    assert store.clients <= limits.max_clients
    assert used <= limits.total_bytes * 1.1, used
    one = RefStore(RefLimits(max_clients=1))
    one.put("a", "x")
    one.put("b", "y")
    assert one.clients == 1 and len(one) == 1  # the least recently used client went


def test_a_reference_resolves_only_for_the_client_that_sent_the_text() -> None:
    store = RefStore()
    mine = client_key("Bearer k1", "client-0123456789abcdef")
    digest = store.put(mine, SYSTEM)
    assert digest == REF.split(":")[1]

    def expand(owner: str | None) -> dict:
        data = body(ref())
        texts = {d: t for d in referenced(chat_sites(data)) if owner and (t := store.get(owner, d)) is not None}
        assert expand_refs(chat_sites(data), texts)
        return data

    for other in (client_key("Bearer k2", "client-0123456789abcdef"), client_key("Bearer k1", "client-fedcba9876543210"),
                  client_key(None, "client-0123456789abcdef")):
        with pytest.raises(APIError) as caught:
            expand(other)
        assert caught.value.status == 409 and caught.value.code == "cache_ref_unknown"
    assert expand(mine)["messages"][0] == full()
    assert client_key("Bearer k1", "short") is None and client_key("Bearer k1", None) is None


# ---- over HTTP ----------------------------------------------------------------------------------


@pytest.fixture
def client(gateway_url: str):
    with httpx.Client(base_url=gateway_url, timeout=30, headers={SIM: FAST}) as c:
        yield c


def answer(r: httpx.Response) -> str:
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"]


def test_v1_responses_advertise_references(client: httpx.Client) -> None:
    assert client.get("/v1/models").headers["x-firsttoken-gateway"] == "cache-refs=1, request-gzip=1"
    r = client.post("/v1/chat/completions", json={"model": "m"})
    assert r.status_code == 400 and r.headers["x-firsttoken-gateway"] == "cache-refs=1, request-gzip=1"
    assert "x-firsttoken-gateway" not in client.get("/").headers


def test_full_text_is_stored_then_a_reference_gives_the_same_answer(client: httpx.Client) -> None:
    me = {CLIENT: "test-client-full-then-ref-01"}
    unknown = client.post("/v1/chat/completions", json=body(ref()), headers=me)
    assert unknown.status_code == 409
    assert unknown.json()["error"] == {
        "message": unknown.json()["error"]["message"], "type": "invalid_request_error",
        "param": "messages[0]", "code": "cache_ref_unknown",
    }
    sent_in_full = answer(client.post("/v1/chat/completions", json=body(full()), headers=me))
    by_reference = answer(client.post("/v1/chat/completions", json=body(ref()), headers=me))
    assert by_reference == sent_in_full  # the built-in model's answer is a function of the prompt
    other = answer(client.post("/v1/chat/completions", json=body({"role": "system", "content": "Be brief."}), headers=me))
    assert other != sent_in_full
    # Another client, or no client id at all, cannot use it; full text without an id is not kept.
    assert client.post("/v1/chat/completions", json=body(ref()), headers={CLIENT: "test-client-someone-else"}).status_code == 409
    assert client.post("/v1/chat/completions", json=body(ref())).status_code == 409


@pytest.mark.parametrize(
    "message, param",
    [
        ({"role": "system", "x_firsttoken_ref": "sha256:abc"}, "messages[0].x_firsttoken_ref"),
        ({"role": "system", "x_firsttoken_ref": REF.upper()}, "messages[0].x_firsttoken_ref"),
        ({"role": "system", "x_firsttoken_ref": 7}, "messages[0].x_firsttoken_ref"),
        ({"role": "user", "x_firsttoken_ref": REF}, "messages[0].role"),
        ({"role": "system", "content": "both", "x_firsttoken_ref": REF}, "messages[0].content"),
    ],
)
def test_malformed_references_are_400(client: httpx.Client, message: dict, param: str) -> None:
    r = client.post("/v1/chat/completions", json=body(message), headers={CLIENT: "test-client-malformed-01"})
    assert r.status_code == 400 and r.json()["error"]["param"] == param


def test_upstreams_never_see_the_extension(gateway_url: str) -> None:
    # The far end is a plain gateway with references off in effect: a message without
    # content would be a 400 there. Through the proxy, it gets the text.
    with gateway("--upstream", gateway_url + "/v1", env={"OPENAI_API_KEY": ""}) as proxy:
        me = {SIM: FAST, CLIENT: "test-client-through-a-proxy"}
        first = httpx.post(proxy + "/v1/chat/completions", json=body(full()), headers=me, timeout=30)
        second = httpx.post(proxy + "/v1/chat/completions", json=body(ref()), headers=me, timeout=30)
        assert answer(second) == answer(first)
        assert second.json()["usage"]["prompt_tokens"] == first.json()["usage"]["prompt_tokens"]
        assert second.headers["x-firsttoken-gateway"] == "cache-refs=1, request-gzip=1"
        # The far end itself refuses the extension from a client it has never seen.
        direct = httpx.post(gateway_url + "/v1/chat/completions", json=body(ref()), headers={CLIENT: "test-client-never-seen-0"}, timeout=30)
        assert direct.status_code == 409


# ---- the core against a real gateway -------------------------------------------------------------


class Recording(SocketTransport):
    def __init__(self, client: httpx.AsyncClient) -> None:
        super().__init__(client)
        self.bodies: list[dict] = []

    async def send(self, request, abort):  # type: ignore[no-untyped-def]
        self.bodies.append(sent_json(request))
        return await super().send(request, abort)


def test_core_unknown_reference_round_trip_after_the_gateway_evicted_it(gateway_url: str) -> None:
    """The gateway keeps 32 texts per client: after 33 other system prompts, the first is
    gone; the core's reference gets 409 and it sends the text again, once, in full."""

    def chat(i: str, system: str) -> str:
        return json.dumps({
            "type": "chat.send", "id": i,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": "go"}],
            "settings": {"base_url": gateway_url + "/v1", "model": "firsttoken-sim", "headers": {SIM: FAST}},
        })

    async def main() -> tuple[list[dict], list[dict]]:
        events: list[dict] = []
        async with httpx.AsyncClient(timeout=30) as http:
            transport = Recording(http)
            core = Core(post=lambda t: events.append(json.loads(t)), transport=transport,
                        clock=lambda: time.time() * 1000, sleep=asyncio.sleep, governor=lambda: Governor(max_attempts=1),
                        cache=Cache(MemoryStore()), page_origin=gateway_url)
            await core.handle(chat("first", SYSTEM))
            await core.handle(chat("again", SYSTEM))
            for n in range(33):
                await core.handle(chat(f"fill{n}", f"Rule {n}: " + SYSTEM))
            await core.handle(chat("evicted", SYSTEM))
            await core.handle(chat("after", SYSTEM))
        return events, transport.bodies

    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        events, bodies = pool.submit(asyncio.run, main()).result()
    done = {e["id"]: e for e in events if e["type"] == "chat.done"}
    answer = {i: "".join(e["text"] for e in events if e["id"] == i and e["type"] == "chat.delta") for i in done}
    assert len(done) == 37 and not [e for e in events if e["type"] in ("chat.error", "error")]
    assert "content" in bodies[0]["messages"][0]
    assert bodies[1]["messages"][0] == {"role": "system", "x_firsttoken_ref": REF_OF(bodies[0])}
    tail = bodies[-3:]  # evicted: reference (409), then in full; after: a reference again
    assert "x_firsttoken_ref" in tail[0]["messages"][0]
    assert tail[1]["messages"][0] == bodies[0]["messages"][0]
    assert "x_firsttoken_ref" in tail[2]["messages"][0]
    assert answer["evicted"] == answer["first"] == answer["after"] != ""
    # The bytes sent: gzipped, as to any gateway that takes it; a reference is smaller still.
    assert done["again"]["request_bytes"] < done["first"]["request_bytes"] / 3


def REF_OF(request_body: dict) -> str:  # noqa: N802 - reads like the value it computes
    return "sha256:" + hashlib.sha256(request_body["messages"][0]["content"].encode()).hexdigest()


def test_core_over_sockets_without_a_cache_is_unchanged(gateway_url: str) -> None:
    async def script(core, events, wait_for):  # type: ignore[no-untyped-def]
        await core.handle(json.dumps({
            "type": "chat.send", "id": "x",
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}],
            "settings": {"base_url": gateway_url + "/v1", "model": "firsttoken-sim", "headers": {SIM: FAST}},
        }))

    events = run_core(gateway_url, script)
    prepared = next(e for e in events if e["type"] == "chat.prepared")
    assert "cache" not in prepared and events[-1]["type"] == "chat.done"
