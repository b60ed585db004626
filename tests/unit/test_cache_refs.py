"""Cache references from the core's side, with canned responses: when a system message
goes as a reference, to whom the client id goes, the unknown-reference re-send, and the
notice when the cache falls back to memory. (Against a real gateway:
tests/gateway/test_cache_refs.py; in Chromium: tests/e2e/test_cache_page.py.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from firsttoken.cache.refs import CLIENT_HEADER, GatewayRefs, RefPlan
from firsttoken.cache import Cache, MemoryStore
from firsttoken.errors import CacheQuotaExceeded
from firsttoken.core import Core
from firsttoken.ratelimit import Governor
from tests.unit.fakes import BrokenStore, entry
from tests.unit.fakes import OK_STREAM, SSE, Canned, CannedTransport, FakeTime, sent_json

SYSTEM = (Path(__file__).resolve().parents[1] / "corpus" / "compress" / "system-prompt-01.md").read_text()
GATEWAY = {**SSE, "x-firsttoken-gateway": "cache-refs=1"}
UNKNOWN = Canned(409, {"content-type": "application/json", "x-firsttoken-gateway": "cache-refs=1"},
                 b'{"error": {"message": "unknown", "type": "invalid_request_error", "code": "cache_ref_unknown"}}')


def chat(i: str, base: str = "http://gw.test/v1", system: str = SYSTEM) -> dict:
    return {"type": "chat.send", "id": i,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": f"question {i}"}],
            "settings": {"base_url": base, "model": "gpt-4o"}}


def ok(headers: dict | None = None) -> Canned:
    return Canned(200, headers if headers is not None else GATEWAY, OK_STREAM)


def drive(transport: CannedTransport, *messages: dict, cache: Cache | None = None, origin: str | None = "http://gw.test"):
    events: list[dict] = []
    t = FakeTime()
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=t.sleep,
                governor=lambda: Governor(max_attempts=1), cache=cache or Cache(MemoryStore()), page_origin=origin)

    async def main() -> None:
        for m in messages:
            await core.handle(json.dumps(m))

    asyncio.run(main())
    return events, [(sent_json(r), r.headers) for r in transport.sent]


def test_same_origin_gateway_full_text_once_then_a_reference() -> None:
    transport = CannedTransport(ok(), ok(), ok())
    events, sent = drive(transport, chat("a"), chat("b"), chat("c"))
    (first, h1), (second, h2), (third, _) = sent
    assert first["messages"][0] == {"role": "system", "content": first["messages"][0]["content"]}
    assert h1[CLIENT_HEADER] == h2[CLIENT_HEADER] and len(h1[CLIENT_HEADER]) >= 16
    ref = second["messages"][0]
    assert set(ref) == {"role", "x_firsttoken_ref"} and ref["x_firsttoken_ref"].startswith("sha256:")
    assert third["messages"][0] == ref
    prepared = [e for e in events if e["type"] == "chat.prepared"]
    assert [p["cache"]["system"] for p in prepared] == ["miss", "hit", "hit"]
    sizes = [p["request_bytes"] for p in prepared]
    # The bytes as sent (gzipped: this is the page's own gateway) ...
    assert sizes == [len(r.body) for r in transport.sent] and all(isinstance(p["prepare_ms"], (int, float)) for p in prepared)
    # ... and the JSON the gateway reads: a reference for the whole system prompt.
    json_sizes = [len(json.dumps(body)) for body, _ in sent]
    assert json_sizes[1] < json_sizes[0] / 5
    done = [e for e in events if e["type"] == "chat.done"]
    assert [d["request_bytes"] for d in done] == sizes


def test_an_unknown_reference_is_sent_again_once_in_full() -> None:
    transport = CannedTransport(ok(), UNKNOWN, ok(), ok())
    events, sent = drive(transport, chat("a"), chat("b"), chat("c"))
    kinds = [e["type"] for e in events if e["id"] == "b"]
    assert kinds == ["chat.prepared", "chat.delta", "chat.done"]  # no retry shown, no wait
    assert "x_firsttoken_ref" in sent[1][0]["messages"][0]
    assert sent[2][0]["messages"][0]["content"] and CLIENT_HEADER in sent[2][1]
    assert "x_firsttoken_ref" in sent[3][0]["messages"][0]  # stored again: references resume
    done_b = next(e for e in events if e["id"] == "b" and e["type"] == "chat.done")
    assert done_b["request_bytes"] == len(transport.sent[2].body)


def test_an_unknown_reference_twice_is_an_error_not_a_loop() -> None:
    unknown_full = Canned(409, UNKNOWN.headers, UNKNOWN._body)
    events, sent = drive(CannedTransport(ok(), UNKNOWN, unknown_full), chat("a"), chat("b"))
    assert len(sent) == 3
    end = events[-1]
    assert end["type"] == "chat.error" and end["error"]["status"] == 409


def test_other_servers_get_full_text_and_no_client_id() -> None:
    plain = {**SSE}
    events, sent = drive(CannedTransport(ok(plain), ok(plain), ok(plain)),
                         chat("a", "https://api.other.test/v1"), chat("b", "https://api.other.test/v1"),
                         chat("c", "https://api.other.test/v1"))
    for body, headers in sent:
        assert body["messages"][0] == sent[0][0]["messages"][0] and len(body["messages"][0]["content"]) > 1000
        assert CLIENT_HEADER not in headers
    assert [e["cache"]["system"] for e in events if e["type"] == "chat.prepared"] == ["miss", "hit", "hit"]


def test_a_gateway_on_another_origin_is_identified_only_after_it_answered() -> None:
    base = "https://gw.elsewhere.test/v1"
    _, sent = drive(CannedTransport(ok(), ok(), ok()), chat("a", base), chat("b", base), chat("c", base))
    assert CLIENT_HEADER not in sent[0][1] and "content" in sent[0][0]["messages"][0]
    assert CLIENT_HEADER in sent[1][1] and "content" in sent[1][0]["messages"][0]
    assert "x_firsttoken_ref" in sent[2][0]["messages"][0]


def test_a_success_without_the_header_revokes_references() -> None:
    _, sent = drive(CannedTransport(ok(), ok(SSE), ok()), chat("a"), chat("b"), chat("c"))
    assert "x_firsttoken_ref" in sent[1][0]["messages"][0]
    assert "x_firsttoken_ref" not in sent[2][0]["messages"][0]  # the 2xx without the header said so


def test_short_system_messages_always_go_in_full() -> None:
    _, sent = drive(CannedTransport(ok(), ok()), chat("a", system="Be brief."), chat("b", system="Be brief."))
    assert sent[1][0]["messages"][0] == {"role": "system", "content": "Be brief."}


def test_a_failing_store_is_reported_beside_the_request_and_sending_goes_on() -> None:
    notices_cache = Cache(BrokenStore(CacheQuotaExceeded("QuotaExceededError: full"), {"put"}))
    events, sent = drive(CannedTransport(ok(), ok()), chat("a"), chat("b"), cache=notices_cache)
    a = [e for e in events if e["id"] == "a"]
    kinds = [e["type"] for e in a]
    assert kinds[0] == "chat.prepared" and kinds[-1] == "chat.done" and kinds.count("notice") == 1
    notice = next(e for e in a if e["type"] == "notice")
    assert notice["code"] == "cache_degraded" and notice["reason"] == "cache_quota_exceeded"
    assert "memory" in notice["message"]
    b = [e for e in events if e["id"] == "b"]
    assert b[0]["cache"] == {"system": "hit", "messages": 1, "store": "memory", "source": "memory"}
    assert "notice" not in [e["type"] for e in b]  # said once
    assert "x_firsttoken_ref" in sent[1][0]["messages"][0]


def test_ref_plan_rules() -> None:
    refs = GatewayRefs("http://gw.test")
    e = entry("x" * 300)
    assert refs.plan("http://gw.test/v1", [e], "client-id-0123456789").headers  # same origin: id at once
    assert refs.plan("https://other.test/v1", [e], "client-id-0123456789") == RefPlan(full=[e.ref])
    plan = refs.plan("http://gw.test/v1", [e], "client-id-0123456789")
    refs.observe("http://gw.test/v1", 500, {"x-firsttoken-gateway": "cache-refs=1"}, plan)
    assert not refs.capable("http://gw.test/v1")  # only a success teaches
    refs.observe("http://gw.test/v1", 200, {"X-Firsttoken-Gateway": "cache-refs=1"}, plan)
    assert refs.plan("http://gw.test/v1", [e], "client-id-0123456789").refs == {0: e.ref}
    assert refs.plan("http://gw.test/v1", [e], "client-id-0123456789", full=True).refs == {}
    assert refs.plan("http://gw.test/v1", [e], None).refs == {}  # no id, no reference
    refs.forget("http://gw.test/v1", [e.ref])
    assert refs.plan("http://gw.test/v1", [e], "client-id-0123456789").refs == {}
