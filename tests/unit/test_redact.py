"""The upstream redactor (gateway/redact.py): secrets are cut out however the stream is
split, everything else passes unchanged, and it never holds more than a secret's length."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.redact import REDACTED, Redactor

KEYS = ("sk-proj-abc123/XYZ", "gw-client-key-1")


def run(redactor: Redactor, chunks: list[bytes]) -> bytes:
    out = [redactor.feed(c) for c in chunks]
    return b"".join(out) + redactor.flush()


@settings(max_examples=300)
@given(
    parts=st.lists(st.sampled_from([b"data: ", b"sk-proj-abc123/XYZ", b"sk-proj-abc123\\/XYZ", b"gw-client-key-1",
                                    b"sk-proj", b"abc", b"\n\n", b"\xc3\xa9", b"gw-"]), max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_secrets_are_cut_out_however_the_stream_is_split(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    chunks = [data[a:b] for a, b in zip(points, points[1:])]
    whole = run(Redactor(KEYS), [data])
    assert run(Redactor(KEYS), chunks) == whole
    assert run(Redactor(KEYS), [data[i : i + 1] for i in range(len(data))]) == whole
    for key in KEYS:
        assert key.encode() not in whole and key.replace("/", "\\/").encode() not in whole
    assert whole.replace(REDACTED, b"") == data.replace(b"sk-proj-abc123\\/XYZ", b"").replace(
        b"sk-proj-abc123/XYZ", b"").replace(b"gw-client-key-1", b"")


def test_without_secrets_it_passes_everything_at_once() -> None:
    redactor = Redactor([None, ""])
    assert not redactor and redactor.feed(b"abc") == b"abc" and redactor.flush() == b""


def test_it_holds_back_no_more_than_a_secret_can_span() -> None:
    redactor = Redactor(["sk-0123456789"])
    assert redactor.feed(b"x" * 100) == b"x" * 88
    assert redactor.text("Bearer sk-0123456789") == "Bearer [redacted]"
