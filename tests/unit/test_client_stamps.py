"""`client.sent_stamps`: the built-in model's per-chunk send stamps, picked out of raw
bytes; and the one seam they pass through (`Core(stamps=...)`, `Session.stamps`)."""

from __future__ import annotations

import json
from typing import Callable

from hypothesis import given
from hypothesis import strategies as st

from firsttoken.core import Core
from firsttoken.stream.client import sent_stamps
from tests.unit.fakes import SSE, Canned, CannedTransport, FakeTime


def event(stamp: float) -> bytes:
    return b'data: {"choices":[],"x_firsttoken_sent_ms":' + repr(stamp).encode() + b"}\n\n"


def test_every_stamp_in_a_chunk_in_order() -> None:
    chunk = event(1764512345678.125) + event(1764512345679.5) + b"data: [DONE]\n\n"
    assert sent_stamps(chunk) == [1764512345678.125, 1764512345679.5]


def test_no_stamps_no_cost_no_error() -> None:
    assert sent_stamps(b'data: {"choices":[]}\n\n') == []
    assert sent_stamps(b"") == []


@given(st.binary(max_size=200))
def test_garbage_never_raises(data: bytes) -> None:
    for chunk in (data, b'"x_firsttoken_sent_ms":' + data):
        assert all(isinstance(s, float) for s in sent_stamps(chunk))


STAMPED = (b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}],"x_firsttoken_sent_ms":1764512345678.5}\n\n'
           b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')


def deltas(stamps: Callable[[bytes], list[float]] | None = None) -> list[dict]:
    import asyncio

    events: list[dict] = []
    t = FakeTime()
    c = Core(post=lambda text: events.append(json.loads(text)), transport=CannedTransport(Canned(200, SSE, STAMPED)),
             clock=t.clock, sleep=t.sleep, stamps=stamps)
    send = {"type": "chat.send", "id": "a", "messages": [{"role": "user", "content": "x"}],
            "settings": {"base_url": "http://api.test/v1", "model": "gpt-4o"}}
    asyncio.run(c.handle(json.dumps(send)))
    assert events[-1]["type"] == "chat.done", events[-1]
    return [e for e in events if e["type"] == "chat.delta"]


def test_stamps_reach_the_delta_only_through_the_seam() -> None:
    [plain] = deltas()
    assert plain["text"] == "hi" and "stamps" not in plain  # nothing scanned, nothing sent
    [stamped] = deltas(stamps=sent_stamps)
    assert stamped["text"] == "hi" and stamped["stamps"] == [1764512345678.5]
