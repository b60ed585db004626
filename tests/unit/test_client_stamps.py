"""`client.sent_stamps`: the built-in model's per-chunk send stamps, picked out of raw bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from firsttoken.stream.client import sent_stamps


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
