"""gateway/streams/events.py: event blocks split from any byte stream, numbered, read.

Every stream is fed whole, one byte at a time and cut in two at every offset, and
must give the same blocks. The page's own SSE decoder (firsttoken.stream.sse, itself
tested against the spec) is the oracle: a stamped stream decodes to the events the
original did, each carrying its block's number as its id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firsttoken.stream.sse import SSEDecoder
from gateway.streams.errors import EventTooLarge
from gateway.streams.events import (
    DEFAULT_MAX_BLOCK_BYTES,
    NO_FACTS,
    EventFacts,
    EventSplitter,
    error_event,
    event_facts,
    stamp,
)


def splits(data: bytes) -> Iterator[list[bytes]]:
    """Whole, one byte at a time, and cut in two at every offset."""
    yield [data]
    yield [data[i : i + 1] for i in range(len(data))]
    for i in range(1, len(data)):
        yield [data[:i], data[i:]]


def run(chunks: list[bytes], cap: int = DEFAULT_MAX_BLOCK_BYTES) -> tuple[list[bytes], EventTooLarge | None]:
    splitter = EventSplitter(cap)
    out: list[bytes] = []
    try:
        for chunk in chunks:
            out.extend(splitter.feed(chunk))
    except EventTooLarge as exc:
        return out + exc.blocks, exc
    return out, None


def blocks(data: bytes, cap: int = DEFAULT_MAX_BLOCK_BYTES) -> list[bytes]:
    """The blocks of `data`, the same however it is cut; raises on an error."""
    expected, error = run([data], cap)
    for chunks in splits(data):
        got, got_error = run(chunks, cap)
        assert got == expected and (got_error is None) == (error is None), chunks
    if error is not None:
        raise error
    return expected


def chunk(content: str, finish: str | None = None) -> bytes:
    body = {"choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}
    return b"data: " + json.dumps(body, ensure_ascii=False).encode()


SIM = chunk("Hello") + b"\n\n" + chunk(" world") + b"\n\n" + chunk("", "stop") + b"\n\ndata: [DONE]\n\n"


def test_blocks_of_a_model_stream() -> None:
    assert blocks(SIM) == [chunk("Hello"), chunk(" world"), chunk("", "stop"), b"data: [DONE]"]


@pytest.mark.parametrize("eol", [b"\r\n", b"\r"])
def test_every_line_ending_gives_the_same_blocks(eol: bytes) -> None:
    assert blocks(SIM.replace(b"\n", eol)) == blocks(SIM)


def test_mixed_line_endings() -> None:
    assert blocks(b"event: a\r\ndata: 1\rdata: 2\n\r\ndata: 3\r\r") == [b"event: a\ndata: 1\ndata: 2", b"data: 3"]


def test_crlf_cut_between_chunks_is_one_line_ending() -> None:
    assert run([b"data: 1\r", b"\ndata: 2\r\n\r\n"])[0] == [b"data: 1\ndata: 2"]
    assert run([b"data: 1\r", b"", b"\n\r", b"\n"])[0] == [b"data: 1"]


def test_cr_then_crlf_is_two_line_endings() -> None:
    assert run([b"data: 1\r", b"\r\n"])[0] == [b"data: 1"]


def test_only_cr_and_lf_end_lines() -> None:
    # U+2028, U+0085, VT and FF are line ends to str.splitlines(), never to SSE (§9.2.5).
    data = "data: {\"a\": \"x\u2028y\u0085z\x0b\x0c\"}\n\n".encode()
    assert blocks(data) == [data[:-2]]


def test_a_multibyte_character_split_anywhere_survives() -> None:
    data = chunk("naïve 日本 🎉") + b"\n\n"
    assert blocks(data) == [chunk("naïve 日本 🎉")]


def test_blank_lines_between_events_make_no_blocks() -> None:
    assert blocks(b"\n\n\ndata: 1\n\n\n\n\ndata: 2\n\n\n") == [b"data: 1", b"data: 2"]


def test_comments_and_unknown_fields_are_blocks_too() -> None:
    assert blocks(b": keep-alive\n\nretry: 10\nid: 7\ndata: x\n\n") == [b": keep-alive", b"retry: 10\nid: 7\ndata: x"]


def test_a_leading_bom_is_dropped_once() -> None:
    bom = b"\xef\xbb\xbf"
    assert blocks(bom + b"data: 1\n\n" + bom + b"data: 2\n\n") == [b"data: 1", bom + b"data: 2"]
    assert blocks(bom[:2] + b"data: 1\n\n") == [bom[:2] + b"data: 1"]  # not a BOM: kept


def test_an_unterminated_block_at_the_end_is_not_given() -> None:
    # §9.2.6: an event the stream ends in the middle of is not dispatched.
    assert blocks(b"data: 1\n\ndata: 2\n") == [b"data: 1"]


def test_a_block_at_the_cap_is_fine() -> None:
    block = b"data: " + b"x" * 94
    assert blocks(block + b"\n\n", cap=100) == [block]
    assert blocks(b"\r\n" + block + b"\r\n\r\n", cap=100) == [block]


def test_a_block_over_the_cap_is_a_typed_error_wherever_the_cuts_fall() -> None:
    block = b"data: " + b"x" * 95
    with pytest.raises(EventTooLarge) as caught:
        blocks(b"data: ok\n\n" + block + b"\n\n", cap=100)
    assert caught.value.limit == 100 and caught.value.size > 100


def test_an_endless_line_is_refused_while_the_buffer_stays_bounded() -> None:
    splitter = EventSplitter(1000)
    with pytest.raises(EventTooLarge):
        for _ in range(10_000):
            splitter.feed(b"data: " + b"x" * 100)
            assert len(splitter._buffer) <= 1002


def test_an_error_keeps_the_blocks_completed_before_it() -> None:
    with pytest.raises(EventTooLarge) as caught:
        EventSplitter(50).feed(b"data: 1\n\ndata: 2\n\n" + b"data: " + b"y" * 100)
    assert caught.value.blocks == [b"data: 1", b"data: 2"]


def test_the_cap_must_be_positive() -> None:
    with pytest.raises(ValueError):
        EventSplitter(0)


# ---- numbering, against the page's decoder -------------------------------------------


def decoded(data: bytes) -> list[tuple[str, str, str]]:
    decoder = SSEDecoder()
    return [(e.event, e.data, e.id) for e in decoder.feed(data) + decoder.close()]


def test_our_id_is_the_last_field_and_wins() -> None:
    stamped = stamp(b"id: 99\ndata: x", 3)
    assert stamped == b"id: 99\ndata: x\nid: 3\n\n"
    assert decoded(stamped) == [("message", "x", "3")]


def test_a_keep_alive_is_numbered_and_moves_the_last_event_id() -> None:
    # §9.2.6, dispatch step 1: the last event ID is set even when no event is dispatched.
    stream = stamp(b"data: a", 1) + stamp(b": keep-alive", 2) + stamp(b"data: b", 3)
    assert decoded(stream) == [("message", "a", "1"), ("message", "b", "3")]
    decoder = SSEDecoder()
    decoder.feed(stamp(b"data: a", 1) + stamp(b": keep-alive", 2))
    assert decoder.last_event_id == "2"


line = st.one_of(
    st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12).map(
        lambda t: "data: " + t),
    st.sampled_from(["event: error", ": ping", "id: 5", "retry: 100", "data", "data:", "field without colon"]),
)
event = st.lists(line, min_size=1, max_size=4)
eol = st.sampled_from(["\n", "\r\n", "\r"])


@given(st.lists(st.tuples(event, eol, st.integers(0, 2)), max_size=6), st.data())
def test_stamped_streams_decode_to_the_same_events_numbered(events, data) -> None:
    text = "".join(e.join(lines) + e + e * (1 + extra) for lines, e, extra in events)
    raw = text.encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=5)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)])]
    found, error = run(pieces)
    assert error is None and found == run([raw])[0]
    stamped = b"".join(stamp(block, n) for n, block in enumerate(found, 1))
    original = decoded(raw)
    numbered = decoded(stamped)
    assert [(kind, payload) for kind, payload, _ in numbered] == [(kind, payload) for kind, payload, _ in original]
    # Each dispatched event carries its own block's number.
    numbers = [n for n, block in enumerate(found, 1) if decoded(stamp(block, n))]
    assert [int(i) for _, _, i in numbered] == numbers


# ---- facts ----------------------------------------------------------------------------


def test_facts_of_content_count_characters_not_bytes() -> None:
    assert event_facts(chunk("naïve 🎉")) == EventFacts(characters=7)
    assert event_facts(chunk("", "length")) == EventFacts(finish_reason="length")


def test_facts_of_other_choices_and_other_events_are_nothing() -> None:
    other = b'data: {"choices": [{"index": 1, "delta": {"content": "abc"}}]}'
    for block in (other, b"data: [DONE]", b": ping", b"data: not json", b"data: [1, 2]", b"data: {",
                  b'data: {"choices": "x"}', b'data: {"choices": [5, {"index": 0, "delta": 3}]}', b"id: 4"):
        assert event_facts(block) is NO_FACTS, block


def test_facts_of_multi_line_data_join_lines() -> None:
    assert event_facts(b'data: {"choices": [{"index": 0,\ndata: "delta": {"content": "ab"}}]}').characters == 2


def test_errors_in_the_stream_are_seen() -> None:
    assert event_facts(b'data: {"error": {"message": "x", "code": "simulated"}}').error
    assert event_facts(b"event: error\ndata: boom").error
    assert event_facts(error_event("stream_too_large", "too big")).error
    assert json.loads(error_event("stream_too_large", "m")[6:])["error"] == {
        "message": "m", "type": "server_error", "param": None, "code": "stream_too_large"}


@given(st.binary(max_size=200))
def test_facts_never_raise(block: bytes) -> None:
    assert isinstance(event_facts(block), EventFacts)
    assert isinstance(event_facts(b"data: " + block), EventFacts)
