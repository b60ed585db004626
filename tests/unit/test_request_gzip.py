"""Gzipped request bodies from the core's side, with canned responses: to the page's own
origin from the first request (the largest), to another server only once it said
`request-gzip=1`, never a small body, and a 415 answered by the same request plain, at
once, and plain to that server from then on. (Against a real gateway:
tests/gateway/test_request_gzip.py.)"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from firsttoken.cache import Cache, MemoryStore
from firsttoken.core import Core
from firsttoken.ratelimit import Governor
from firsttoken.stream.client import GZIP_MIN_BYTES
from tests.unit.fakes import OK_STREAM, SSE, Canned, CannedTransport, FakeTime, sent_json

SYSTEM = (Path(__file__).resolve().parents[1] / "corpus" / "compress" / "system-prompt-01.md").read_text()
ADVERT = {**SSE, "x-firsttoken-gateway": "cache-refs=1, request-gzip=1"}


def chat(i: str, base: str, system: str = SYSTEM) -> dict:
    return {"type": "chat.send", "id": i,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": f"question {i}"}],
            "settings": {"base_url": base, "model": "gpt-4o", "compress": "off"}}


def drive(transport: CannedTransport, *messages: dict, origin: str | None = "http://gw.test") -> list[dict]:
    events: list[dict] = []
    t = FakeTime()
    core = Core(post=lambda x: events.append(json.loads(x)), transport=transport, clock=t.clock, sleep=t.sleep,
                governor=lambda: Governor(max_attempts=1), cache=Cache(MemoryStore()), page_origin=origin)

    async def main() -> None:
        for m in messages:
            await core.handle(json.dumps(m))

    asyncio.run(main())
    return events


def coding(request) -> str | None:  # type: ignore[no-untyped-def]
    return request.headers.get("content-encoding")


def test_the_pages_own_gateway_gets_gzip_from_the_first_request() -> None:
    transport = CannedTransport(Canned(200, ADVERT, OK_STREAM), Canned(200, ADVERT, OK_STREAM))
    events = drive(transport, chat("a", "http://gw.test/v1"), chat("b", "http://gw.test/v1", system="Be brief."))
    first, second = transport.sent
    assert coding(first) == "gzip" and sent_json(first)["messages"][0]["content"] == SYSTEM
    # What is reported sent is what went: the compressed bytes.
    prepared = [e for e in events if e["type"] == "chat.prepared"]
    assert prepared[0]["request_bytes"] == len(first.body) < 0.6 * len(json.dumps(sent_json(first)))
    # A body under GZIP_MIN_BYTES goes plain: its frame would cost more than it saves.
    assert len(second.body) < GZIP_MIN_BYTES and coding(second) is None
    assert json.loads(second.body)["messages"][0]["content"] == "Be brief."


def test_another_server_gets_gzip_only_once_it_said_so() -> None:
    plain, advert = Canned(200, SSE, OK_STREAM), Canned(200, ADVERT, OK_STREAM)
    transport = CannedTransport(plain, advert, Canned(200, ADVERT, OK_STREAM))
    drive(transport, *(chat(i, "https://api.example/v1") for i in "abc"))
    assert [coding(r) for r in transport.sent] == [None, None, "gzip"]
    # Never to a server that has not said so, however large the body.
    other = CannedTransport(Canned(200, SSE, OK_STREAM), Canned(200, SSE, OK_STREAM))
    drive(other, chat("a", "https://api.openai.test/v1"), chat("b", "https://api.openai.test/v1"), origin=None)
    assert [coding(r) for r in other.sent] == [None, None]


def test_a_415_is_sent_again_plain_at_once_and_plain_after() -> None:
    refused = Canned(415, {"content-type": "application/json"},
                     b'{"error": {"message": "Unsupported Media Type", "type": "invalid_request_error"}}')
    transport = CannedTransport(refused, Canned(200, SSE, OK_STREAM), Canned(200, SSE, OK_STREAM))
    events = drive(transport, chat("a", "http://gw.test/v1"), chat("b", "http://gw.test/v1"))
    assert [coding(r) for r in transport.sent] == ["gzip", None, None]
    assert sent_json(transport.sent[0]) == json.loads(transport.sent[1].body)
    mine = [e["type"] for e in events if e["id"] == "a"]
    assert mine == ["chat.prepared", "chat.delta", "chat.done"]  # no error, no retry shown
