"""SSEDecoder against WHATWG HTML §9.2.5-9.2.6, fed whole, byte by byte, split anywhere.

Most cases go through `decode()`, which feeds the stream every way and insists that
the events (and any error) are the same whichever way the bytes arrived.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import firsttoken.stream.sse as sse_module
from firsttoken.errors import SSEBufferOverflow, SSEError
from firsttoken.stream.sse import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    ServerSentEvent,
    SSEDecoder,
)

E = ServerSentEvent


def splits(data: bytes) -> Iterator[list[bytes]]:
    """Whole, one byte at a time, and cut in two at every offset."""
    yield [data]
    yield [data[i : i + 1] for i in range(len(data))]
    for i in range(1, len(data)):
        yield [data[:i], data[i:]]


def run(chunks: list[bytes], **bounds: int) -> tuple[list[ServerSentEvent], type | None]:
    """Events decoded (including those before an error) and the error's type."""
    decoder = SSEDecoder(**bounds)
    out: list[ServerSentEvent] = []
    try:
        for chunk in chunks:
            decoder.decode_into(chunk, out)
        out.extend(decoder.close())
    except SSEError as exc:
        return out, type(exc)
    return out, None


def decode(data: bytes, **bounds: int) -> list[ServerSentEvent]:
    """Decode `data` fed every way; all ways must agree. Raises if the stream errs."""
    expected = run([data], **bounds)
    for chunks in splits(data):
        assert run(chunks, **bounds) == expected, chunks
    events, error = expected
    if error is not None:
        raise error()
    return events


# ---- §9.2.6: the spec's own examples ------------------------------------------------


def test_spec_example_messages() -> None:
    stream = (
        b"data: This is the first message.\n\n"
        b"data: This is the second message, it\n"
        b"data: has two lines.\n\n"
        b"data: This is the third message.\n\n"
    )
    assert [e.data for e in decode(stream)] == [
        "This is the first message.",
        "This is the second message, it\nhas two lines.",
        "This is the third message.",
    ]


def test_spec_example_event_types() -> None:
    stream = b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\nevent: add\ndata: 113411\n\n"
    assert decode(stream) == [E("add", "73857293"), E("remove", "2153"), E("add", "113411")]


def test_spec_example_ids_and_unterminated_block() -> None:
    # "The first block fires events with the data set to "first event" [...] The second
    # block has an id field with no value, which resets the last event ID [...]. The
    # third block [...] has no blank line after it, so it is not dispatched."
    stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n"
    assert decode(stream) == [E(data="first event", id="1"), E(data="second event", id="")]


def test_spec_example_empty_data_and_trailing_field() -> None:
    # "The first block fires an event whose data is the empty string, the second whose
    # data is a single newline; the last is discarded (no blank line follows it)."
    assert decode(b"data\n\ndata\ndata\n\ndata:") == [E(data=""), E(data="\n")]


def test_spec_example_space_after_colon_is_optional() -> None:
    assert decode(b"data:test\n\ndata: test\n\n") == [E(data="test"), E(data="test")]


# ---- §9.2.5: lines ------------------------------------------------------------------


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_each_line_ending(eol: bytes) -> None:
    stream = b"data: a" + eol + b"data: b" + eol + eol + b"data: c" + eol + eol
    assert decode(stream) == [E(data="a\nb"), E(data="c")]


def test_mixed_line_endings() -> None:
    assert decode(b"data: a\r\ndata: b\rdata: c\n\r\n") == [E(data="a\nb\nc")]


def test_crlf_cut_between_feeds_is_one_line_ending() -> None:
    # Were the LF a line of its own, it would dispatch "a" alone, then "b".
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\ndata: b\r") == []
    assert decoder.feed(b"\n\r") == [E(data="a\nb")]
    assert decoder.feed(b"\n") == []


def test_cr_then_cr_lf_is_two_line_endings() -> None:
    assert decode(b"data: a\r\r\ndata: b\n\n") == [E(data="a"), E(data="b")]


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\u0085", "\v", "\f", "\x1c", "\x1e"])
def test_only_cr_and_lf_end_lines(char: str) -> None:
    # str.splitlines() would cut here: the classic bug that corrupts JSON.
    text = f"a{char}b"
    assert decode(f"data: {text}\n\n".encode()) == [E(data=text)]


def test_u2028_inside_json_survives() -> None:
    payload = {"choices": [{"delta": {"content": "line\u2028sep\u2029para\u0085nel"}}]}
    body = json.dumps(payload, ensure_ascii=False).encode()
    (event,) = decode(b"data: " + body + b"\n\n")
    assert json.loads(event.data) == payload


# ---- §9.2.5: UTF-8 decode -----------------------------------------------------------


@pytest.mark.parametrize("char", ["é", "€", "東", "🙂"])
def test_multibyte_character_split_at_every_byte(char: str) -> None:
    # decode() cuts the stream at every offset, so inside the character at each byte.
    assert decode(f"data: {char}{char}\nevent: {char}\n\n".encode()) == [E(char, char * 2)]


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"\xff", "\ufffd"),
        (b"a\x80b", "a\ufffdb"),
        (b"\xe2\x82", "\ufffd"),  # truncated by the end of the line
        (b"\xe2\x82x", "\ufffdx"),
        (b"\xf0\x9f\x99", "\ufffd"),
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),  # a surrogate is not UTF-8
        (b"\xc0\xaf", "\ufffd\ufffd"),  # overlong
    ],
)
def test_invalid_utf8_becomes_replacement_characters(raw: bytes, text: str) -> None:
    assert decode(b"data: " + raw + b"\n\n") == [E(data=text)]


def test_one_leading_bom_is_stripped() -> None:
    assert decode(b"\xef\xbb\xbfdata: x\n\n") == [E(data="x")]


def test_a_second_bom_is_kept() -> None:
    # The second BOM is U+FEFF in the field name "\ufeffdata", an unknown field.
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\ndata: y\n\n") == [E(data="y")]


def test_bom_only_at_stream_start() -> None:
    assert decode(b"data: x\n\n\xef\xbb\xbfdata: y\n\n") == [E(data="x")]
    assert decode(b"data: \xef\xbb\xbfx\n\n") == [E(data="\ufeffx")]


# ---- §9.2.6: fields -----------------------------------------------------------------


def test_comments_are_ignored() -> None:
    assert decode(b": keep-alive\n:\ndata: x\n: more\n\n:\n\n") == [E(data="x")]


def test_field_without_colon_has_empty_value() -> None:
    assert decode(b"data\n\n") == [E(data="")]
    assert decode(b"event\ndata: x\n\n") == [E("message", "x")]


def test_exactly_one_leading_space_is_stripped() -> None:
    assert decode(b"data:  two\n\ndata:x\n\ndata: \n\n") == [E(data=" two"), E(data="x"), E(data="")]
    assert decode(b"event:  add\ndata: x\n\n") == [E(" add", "x")]


def test_only_first_colon_separates() -> None:
    assert decode(b"data: a: b:c\n\n") == [E(data="a: b:c")]


def test_field_names_are_case_sensitive_and_unknown_ignored() -> None:
    assert decode(b"Data: x\nDATA: y\nfoo: bar\ndata : z\ndata: w\n\n") == [E(data="w")]


def test_event_type_applies_to_one_event() -> None:
    stream = b"event: a\ndata: 1\n\ndata: 2\n\nevent: b\n\ndata: 3\n\n"
    # The dataless block with "event: b" dispatches nothing and resets the type.
    assert decode(stream) == [E("a", "1"), E("message", "2"), E("message", "3")]


def test_no_data_no_event() -> None:
    assert decode(b"event: x\n\nid: 1\n\nretry: 5\n\n\n\n") == []


def test_id_persists_across_events() -> None:
    stream = b"id: 7\ndata: a\n\ndata: b\n\nid: 8\n\ndata: c\n\nid:\ndata: d\n\n"
    assert [e.id for e in decode(stream)] == ["7", "7", "8", ""]


def test_id_with_nul_is_ignored() -> None:
    assert decode(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n") == [E(data="a", id="1"), E(data="b", id="1")]


def test_last_event_id_updates_only_on_dispatch() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"id: 1\ndata: a\n\nid: 2\n")
    assert decoder.last_event_id == "1"
    decoder.feed(b"\n")  # a dataless dispatch still sets the last event ID string
    assert decoder.last_event_id == "2"


@pytest.mark.parametrize("value", [b"1.5", b"-1", b"", b"  1", b"1 ", b"1e3", b"\xef\xbc\x91", b"0x10", b"+1"])
def test_retry_must_be_ascii_digits(value: bytes) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"retry: 100\n\nretry:" + value + b"\ndata: x\n\n") == [E(data="x")]
    assert decoder.retry == 100


def test_retry_sets_reconnection_time() -> None:
    decoder = SSEDecoder()
    assert decoder.retry is None
    assert decoder.feed(b"retry: 0100\ndata: x\n\ndata: y\n\n") == [E(data="x", retry=100), E(data="y")]
    assert decoder.retry == 100
    decoder.feed(b"retry: 5\n\n")  # no event, the reconnection time still changes
    assert decoder.retry == 5


def test_absurd_retry_saturates_instead_of_raising() -> None:
    # int() refuses strings of more than 4300 digits by default.
    stream = b"retry: " + b"9" * 5000 + b"\ndata: x\n\nretry: 0000000000000000000042\ndata: y\n\n"
    huge, small = decode(stream)
    assert huge.retry is not None and huge.retry >= 10**14
    assert small == E(data="y", retry=42)  # leading zeros are not "too many digits"


# ---- end of stream --------------------------------------------------------------------


def test_close_discards_the_unterminated_event() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: b\n") == [E(data="a")]
    assert decoder.close() == []
    # The decoder is fresh again: nothing of "b" leaks into the next stream.
    assert decoder.feed(b"data: c\n\n") == [E(data="c")]


def test_reset_forgets_last_event_id() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"id: 9\ndata: a\n\n")
    decoder.reset()
    assert decoder.last_event_id == "" and decoder.retry is None
    assert decoder.feed(b"data: b\n\n") == [E(data="b")]


# ---- bounds -----------------------------------------------------------------------


def test_defaults_are_documented_bounds() -> None:
    decoder = SSEDecoder()
    assert (decoder.max_line_bytes, decoder.max_event_bytes) == (DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_EVENT_BYTES)
    assert DEFAULT_MAX_LINE_BYTES == 1 << 20 and DEFAULT_MAX_EVENT_BYTES == 4 << 20


@pytest.mark.parametrize("bad", [0, -1])
def test_bounds_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError):
        SSEDecoder(max_line_bytes=bad)
    with pytest.raises(ValueError):
        SSEDecoder(max_event_bytes=bad)


def test_ten_megabyte_line_overflows_and_memory_stays_bounded() -> None:
    decoder = SSEDecoder()
    piece = b"x" * (64 * 1024)
    with pytest.raises(SSEBufferOverflow) as info:
        for _ in range(10 * 1024 * 1024 // len(piece)):
            decoder.feed(piece)
            assert decoder.buffered_bytes <= DEFAULT_MAX_LINE_BYTES
    assert info.value.limit == DEFAULT_MAX_LINE_BYTES
    assert info.value.code == "sse_buffer_overflow"
    assert decoder.buffered_bytes == 0  # the oversized line was let go
    with pytest.raises(SSEBufferOverflow):  # and the decoder stays failed
        decoder.feed(b"\n\ndata: x\n\n")
    decoder.reset()
    assert decoder.feed(b"data: x\n\n") == [E(data="x")]


def test_ten_megabyte_line_in_one_feed_overflows() -> None:
    with pytest.raises(SSEBufferOverflow):
        SSEDecoder().feed(b"data: " + b"x" * (10 << 20))
    with pytest.raises(SSEBufferOverflow):
        SSEDecoder().feed(b"data: " + b"x" * (10 << 20) + b"\n\n")


@pytest.mark.parametrize(
    "stream",
    [
        b"data: ok\n\n" + b"x" * 33 + b"\n\n",  # complete line too long
        b"data: ok\n\n" + b"x" * 33,  # unterminated line too long
        b"data: ok\n\n" + b"data: 0123456789\n" * 4,  # event data too long
        b"data: ok\n\n: a comment longer than the bound\n\n",  # a comment line counts too
    ],
)
def test_overflow_wherever_the_cuts_fall(stream: bytes) -> None:
    # decode() also checks that "ok" is delivered before the error, every way.
    assert run([stream], max_line_bytes=32, max_event_bytes=40) == ([E(data="ok")], SSEBufferOverflow)
    with pytest.raises(SSEBufferOverflow):
        decode(stream, max_line_bytes=32, max_event_bytes=40)


def test_line_at_the_bound_is_fine() -> None:
    line = b"data: " + b"x" * 26  # 32 bytes
    assert decode(line + b"\r\n\r\n", max_line_bytes=32) == [E(data="x" * 26)]


def test_long_line_is_linear_time() -> None:
    # An 8 MiB line in 64 KiB pieces: re-joining the buffer on every feed would scan
    # 8 MiB * 128 / 2 = 512 MiB; the decoder keeps pieces and joins once.
    size, piece = 8 << 20, 64 << 10
    line = b"data: " + b"y" * size + b"\n\n"
    decoder = SSEDecoder(max_line_bytes=size + 6, max_event_bytes=size + 1)
    events: list[ServerSentEvent] = []
    for i in range(0, len(line), piece):
        events += decoder.feed(line[i : i + piece])
    assert len(events) == 1 and len(events[0].data) == size
    assert decoder.scanned_bytes <= 2 * len(line)


# ---- the event type ---------------------------------------------------------------


def test_event_is_frozen_slotted_dataclass() -> None:
    (event,) = SSEDecoder().feed(b"data: x\n\n")
    assert type(event) is ServerSentEvent and dataclasses.is_dataclass(event)
    assert not hasattr(event, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.data = "y"  # type: ignore[misc]
    assert event == E(data="x") and hash(event) == hash(E(data="x"))
    assert E() == E("message", "", "", None)


def test_fast_constructor_matches_the_dataclass_layout() -> None:
    fields = tuple(f.name for f in dataclasses.fields(ServerSentEvent))
    assert sse_module._EventBuilder.__slots__ == fields == ServerSentEvent.__slots__


def test_public_surface() -> None:
    assert sorted(sse_module.__all__) == sorted(
        ["DEFAULT_MAX_EVENT_BYTES", "DEFAULT_MAX_LINE_BYTES", "SSEDecoder", "ServerSentEvent"]
    )
    for name in sse_module.__all__:
        assert hasattr(sse_module, name)


# ---- properties ---------------------------------------------------------------------


def reference_decode(data: bytes) -> tuple[list[ServerSentEvent], str, int | None]:
    """The spec read literally, on the whole stream at once: an oracle, not fast."""
    text = data.decode("utf-8-sig", "replace")  # UTF-8 decode: strips one BOM
    *lines, _unterminated = re.split(r"\r\n|\r|\n", text)
    events, data_buf, etype, id_buf, last_id = [], "", "", "", ""
    retry: int | None = None
    block_retry: int | None = None
    for line in lines:
        if line == "":
            last_id = id_buf
            if data_buf:
                events.append(E(etype or "message", data_buf[:-1], id_buf, block_retry))
            data_buf, etype, block_retry = "", "", None
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            etype = value
        elif name == "data":
            data_buf += value + "\n"
        elif name == "id" and "\0" not in value:
            id_buf = value
        elif name == "retry" and value and all(c in "0123456789" for c in value):
            retry = block_retry = int(value)
    return events, last_id, retry


_line = st.one_of(
    st.sampled_from([b"", b":", b": ping", b"data", b"data:", b"data: ", b"id", b"id:", b"event:", b"retry: 10"]),
    st.builds(
        lambda name, sep, value: name + sep + value,
        st.sampled_from([b"data", b"event", b"id", b"retry", b"dat", b"\xef\xbb\xbfdata", b""]),
        st.sampled_from([b":", b": ", b":  "]),
        st.one_of(
            st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=8).map(str.encode),
            st.binary(max_size=6).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
            st.sampled_from([b"1\x002", b"42", b"\xe2\x80\xa8", b"{\"a\": \"\\u2028\"}"]),
        ),
    ),
)
_stream = st.builds(
    lambda bom, lines, eols, tail: bom + b"".join(l + e for l, e in zip(lines, eols)) + tail,
    st.sampled_from([b"", b"\xef\xbb\xbf"]),
    st.lists(_line, max_size=14),
    st.lists(st.sampled_from([b"\n", b"\r", b"\r\n"]), min_size=14, max_size=14),
    st.sampled_from([b"", b"data: unterminated", b"\r"]),
)


def _random_cuts(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=_stream, cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_property_any_split_matches_the_spec_oracle(stream: bytes, cuts: list[int]) -> None:
    expected, last_id, retry = reference_decode(stream)
    for chunks in ([stream], _random_cuts(stream, cuts), [stream[i : i + 1] for i in range(len(stream))]):
        decoder = SSEDecoder()
        events = [e for c in chunks for e in decoder.feed(c)]
        assert events == expected
        assert (decoder.last_event_id, decoder.retry) == (last_id, retry)


_chat_like = st.lists(
    st.one_of(
        st.text(max_size=12).map(lambda t: b"data: " + json.dumps(t, ensure_ascii=False).encode() + b"\n\n"),
        st.sampled_from([b": keep-alive\n\n", b"data: [DONE]\n\n", b"id: 3\n", b"event: error\n", b"\n"]),
    ),
    max_size=20,
).map(b"".join)


@settings(max_examples=200, deadline=None)
@given(stream=_chat_like, cuts=st.lists(st.integers(min_value=0), max_size=6))
def test_property_chat_streams_take_the_fast_path_correctly(stream: bytes, cuts: list[int]) -> None:
    decoder = SSEDecoder()
    events = [e for c in _random_cuts(stream, cuts) for e in decoder.feed(c)]
    assert events == reference_decode(stream)[0]


# The firsttoken gateway's numbered events (a resumable stream): `id: n` as the last
# field of each, mixed with the shapes the fast path must hand to the line loop.
_numbered = st.lists(
    st.one_of(
        st.builds(
            lambda t, n: b"data: " + json.dumps(t, ensure_ascii=False).encode() + b"\nid: " + n + b"\n\n",
            st.text(max_size=12), st.sampled_from([b"1", b"2", b"17", b"007", b" 3", b"x", b"1\x002", b""]),
        ),
        st.sampled_from([b": keep-alive\nid: 9\n\n", b"data: [DONE]\nid: 40\n\n", b"data: a\n\n", b"id: 3\n", b"\n"]),
    ),
    max_size=20,
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(stream=_numbered, cuts=st.lists(st.integers(min_value=0), max_size=6))
def test_property_numbered_streams_take_the_fast_path_correctly(stream: bytes, cuts: list[int]) -> None:
    expected, last_id, _ = reference_decode(stream)
    for chunks in ([stream], _random_cuts(stream, cuts)):
        decoder = SSEDecoder()
        events = [e for c in chunks for e in decoder.feed(c)]
        assert events == expected
        assert decoder.last_event_id == last_id


# The typed dialects' shape (Responses, Messages: `event: T` then `data: P`), mixed with
# everything the vectorised block path must tell apart and hand to the line loop: untyped
# events, a type with no data, two data lines, a type after its data, an empty type, an
# `id`, a comment, a stray blank line, a field with no space.
_typed = st.lists(
    st.one_of(
        st.builds(
            lambda t, p: b"event: " + t + b"\ndata: " + json.dumps(p, ensure_ascii=False).encode() + b"\n\n",
            st.sampled_from([b"response.output_text.delta", b"content_block_delta", b"ping", b"", b" x", b"event: y"]),
            st.text(max_size=12),
        ),
        st.sampled_from([
            b"data: {}\n\n", b"event: a\n\n", b"event: a\ndata: 1\ndata: 2\n\n", b"data: 1\nevent: b\n\n",
            b"event: a\ndata: 1\nid: 7\n\n", b": ping\n\n", b"\n", b"event:a\ndata:1\n\n", b"event: a\ndata: \n\n",
            b"event: a\n: note\ndata: 1\n\n", b"event: a\r\ndata: 1\r\n\r\n", b"event: a\n: note\n\n",
            b"event: a\nid: 7\n\n",
        ]),
    ),
    max_size=24,
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(stream=_typed, cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_property_typed_streams_take_the_fast_path_correctly(stream: bytes, cuts: list[int]) -> None:
    expected, last_id, _ = reference_decode(stream)
    for chunks in ([stream], _random_cuts(stream, cuts), [stream[i : i + 1] for i in range(len(stream))]):
        decoder = SSEDecoder()
        events = [e for c in chunks for e in decoder.feed(c)]
        assert events == expected
        assert decoder.last_event_id == last_id


@pytest.mark.parametrize("stream", [
    # Blocks whose lines count like n typed events (3n-1 lines, n `event:` and n `data:`
    # lines, or n-1 blank ones) without being them: each check of the block path alone.
    b"event: a\n\nevent: b\ndata: 1\ndata: 2\n\n",
    b"event: a\n: note\n\nevent: b\ndata: 1\n\n",
    b"event: a\nid: 7\n\nevent: b\ndata: 1\n\n",
    b"event: a\ndata: 1\n\ndata: 2\nevent: b\n\n",
    b"event: a\ndata: 1\n\nevent: b\n\n\n\n",
    b": a note\ndata: 2\n\nevent: b\ndata: 3\n\n",
])
def test_typed_blocks_that_only_count_like_typed_events(stream: bytes) -> None:
    assert SSEDecoder().feed(stream) == reference_decode(stream)[0]
    decoder = SSEDecoder()
    assert decoder.feed(b"event: t\n") + decoder.feed(b"data: 0\n\n" + stream) == reference_decode(b"event: t\ndata: 0\n\n" + stream)[0]


def test_numbered_events_carry_their_number_and_it_stays() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"data: a\nid: 1\n\ndata: b\nid: 2\n\n")
    assert [(e.data, e.id) for e in events] == [("a", "1"), ("b", "2")]
    assert [(e.data, e.id) for e in decoder.feed(b"data: c\n\n")] == [("c", "2")]


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(st.binary(max_size=40), max_size=10),
    max_line=st.integers(min_value=1, max_value=40),
    max_event=st.integers(min_value=1, max_value=60),
)
def test_fuzz_random_bytes_raise_only_sse_errors(data: list[bytes], max_line: int, max_event: int) -> None:
    decoder = SSEDecoder(max_line_bytes=max_line, max_event_bytes=max_event)
    try:
        for chunk in data:
            for event in decoder.feed(chunk):
                assert isinstance(event.data, str) and isinstance(event.id, str)
                assert len(event.data.encode("utf-8", "surrogatepass")) <= 3 * max_event
            assert decoder.buffered_bytes <= max_line + max_event
        decoder.close()
    except SSEError:
        pass
