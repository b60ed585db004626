"""Benchmark: decoding a chat-completion SSE stream, ours against a peer, same run.

    .venv/bin/python bench/sse.py [--events N] [--repeat R] [--page-repeat R]

Builds a realistic `chat.completion.chunk` stream, cuts it the way a network would
(random 1-16 KiB reads, fixed seed), and decodes it to events with
`firsttoken.stream.sse.SSEDecoder` and with httpx-sse, consuming the chunks exactly as
`httpx_sse.EventSource.iter_sse()` does (httpx's incremental UTF-8 `TextDecoder`, then
`SSELineDecoder`, then `SSEDecoder`, through the same chain of generators), minus the
`httpx.Response` plumbing, which would only add per-chunk cost to httpx-sse's side.

Then in the page, where the decoder really runs: the same bytes, cut into the same
chunks, decoded by `SSEDecoder` in Pyodide and by npm `eventsource-parser` (behind a
streaming `TextDecoder`, since it takes strings and fetch() gives bytes), interleaved in
one headless Chromium page (bench/sse_page.mjs, served by harness/bench_page.py). Each side
is timed over decoding alone, chunk by chunk, counting events; the chunks are handed
over once before any timing. Both must agree event for event first.

Then each dialect's whole decoder (`firsttoken.stream.dialects.stream_for`: SSE, JSON,
the typed updates and the assembled answer) on a stream of its own format (Chat
Completions chunks, Responses events, Anthropic Messages events: the same words), against
httpx-sse with `json.loads` of each event's data (the least a client built on it does
with a stream), interleaved, on the same network cuts.

Prints a few human lines, then LAST one JSON line:
    {"events", "bytes", "cpython_events_per_s", "httpx_sse_events_per_s", "ratio",
     "pyodide_events_per_s", "eventsource_parser_events_per_s", "pyodide_ratio",
     "dialects": {api: {"events_per_s", "peer_events_per_s", "ratio", "sse_ratio"}}}
`ratio` is ours / httpx-sse on CPython; `pyodide_ratio` is ours in Pyodide /
eventsource-parser, same page; a dialect's `ratio` is its whole decoder / httpx-sse +
json, its `sse_ratio` the events alone on its stream / httpx-sse, as `ratio` (issue 25
asks ≥ 1.5 of each decoder). Speeds are from medians of the repetitions.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import string
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from firsttoken.stream.dialects import stream_for  # noqa: E402
from firsttoken.stream.sse import SSEDecoder  # noqa: E402

__all__ = ["build_stream", "build_responses_stream", "build_messages_stream", "split_like_network",
           "decode_firsttoken", "decode_httpx_sse", "decode_dialect"]

# Words an assistant streams, with enough non-ASCII to exercise UTF-8 decoding: Latin
# accents, CJK, an emoji, typographic punctuation, and a U+2028 that a splitlines()
# decoder would cut.
_WORDS = (
    "the of and to a in is that it for as with was on be by this are or from "
    "model token stream answer python browser worker response latency server "
    "naïve café résumé déjà Größe straße año 東京 日本語 模型 数据 🙂 — “quoted” "
    "x\u2028y 100% $5 {json} <tag> \\path"
).split(" ")


def build_stream(n_events: int = 100_000, seed: int = 1) -> bytes:
    """A chat-completion SSE body of `n_events` chunk events (a role chunk, content
    chunks, a finish chunk), then `data: [DONE]`: compact JSON shaped like OpenAI's,
    non-ASCII sent as raw UTF-8."""
    rng = random.Random(seed)
    base = {
        "id": "chatcmpl-" + "".join(rng.choices(string.ascii_letters + string.digits, k=29)),
        "object": "chat.completion.chunk",
        "created": 1_732_000_000 + rng.randrange(10_000_000),
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_0ba0d124f1",
    }

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        body = json.dumps({**base, "choices": [choice]}, ensure_ascii=False, separators=(",", ":"))
        return b"data: " + body.encode() + b"\n\n"

    parts = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for _ in range(max(0, n_events - 2)):
        words = rng.choices(_WORDS, k=rng.randint(1, 3))
        parts.append(chunk({"content": " " + " ".join(words)}))
    parts.append(chunk({}, "stop"))
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def _words(rng: random.Random) -> str:
    return " " + " ".join(rng.choices(_WORDS, k=rng.randint(1, 3)))


def build_responses_stream(n_events: int, seed: int = 1) -> bytes:
    """A Responses API stream (`event:` and `data:` lines, `sequence_number`s, as
    OpenAI sends it) of `n_events` events, most of them `response.output_text.delta`."""
    rng = random.Random(seed)
    parts: list[bytes] = []

    def event(kind: str, **fields: object) -> None:
        body = json.dumps({"type": kind, "sequence_number": len(parts), **fields}, ensure_ascii=False, separators=(",", ":"))
        parts.append(b"event: " + kind.encode() + b"\ndata: " + body.encode() + b"\n\n")

    response = {"id": "resp_" + "%032x" % rng.getrandbits(128), "object": "response", "created_at": 1_732_000_000,
                "status": "in_progress", "model": "gpt-5-2025-08-07", "output": []}
    item = {"id": "msg_" + "%032x" % rng.getrandbits(128), "type": "message", "role": "assistant"}
    where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
    event("response.created", response=response)
    event("response.output_item.added", output_index=0, item={**item, "status": "in_progress", "content": []})
    event("response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []})
    for _ in range(max(0, n_events - 5)):
        event("response.output_text.delta", **where, delta=_words(rng), logprobs=[])
    event("response.output_item.done", output_index=0, item={**item, "status": "completed", "content": []})
    usage = {"input_tokens": 12, "output_tokens": n_events, "total_tokens": n_events + 12}
    event("response.completed", response={**response, "status": "completed", "usage": usage})
    return b"".join(parts)


def build_messages_stream(n_events: int, seed: int = 1) -> bytes:
    """An Anthropic Messages stream of `n_events` events, most of them text deltas."""
    rng = random.Random(seed)
    parts: list[bytes] = []

    def event(kind: str, **fields: object) -> None:
        body = json.dumps({"type": kind, **fields}, ensure_ascii=False, separators=(",", ":"))
        parts.append(b"event: " + kind.encode() + b"\ndata: " + body.encode() + b"\n\n")

    message = {"id": "msg_01" + "%022x" % rng.getrandbits(88), "type": "message", "role": "assistant", "content": [],
               "model": "claude-sonnet-4-5-20250929", "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 12, "output_tokens": 1}}
    event("message_start", message=message)
    event("content_block_start", index=0, content_block={"type": "text", "text": ""})
    for _ in range(max(0, n_events - 5)):
        event("content_block_delta", index=0, delta={"type": "text_delta", "text": _words(rng)})
    event("content_block_stop", index=0)
    event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None}, usage={"output_tokens": n_events})
    event("message_stop")
    return b"".join(parts)


DIALECT_STREAMS: dict[str, Callable[[int, int], bytes]] = {
    "chat_completions": build_stream, "responses": build_responses_stream, "anthropic_messages": build_messages_stream,
}


def decode_dialect(api: str) -> Callable[[Iterable[bytes]], object]:
    """firsttoken's whole decoder of `api`: bytes in, the assembled answer out."""

    def decode(chunks: Iterable[bytes]) -> object:
        stream = stream_for(api)
        for chunk in chunks:
            stream.feed(chunk)
        return stream.close()

    return decode


def decode_httpx_sse_json(chunks: Iterable[bytes]) -> list[object]:
    """httpx-sse, then each event's JSON: the peer of a whole dialect decoder."""
    return [json.loads(data) for data in decode_httpx_sse(chunks) if data != "[DONE]"]


def dialect_ratios(n_events: int, repeat: int, seed: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for api, build in DIALECT_STREAMS.items():
        chunks = split_like_network(build(n_events, seed), seed)
        ours_fn = decode_dialect(api)
        answer = ours_fn(chunks)
        assert getattr(answer, "content", "").startswith(" "), f"{api}: no answer"
        t_ours, t_peer = [], []
        for _ in range(repeat):  # interleaved: drift hits both alike
            t_ours.append(_seconds(ours_fn, chunks))
            t_peer.append(_seconds(decode_httpx_sse_json, chunks))
        ours_s, peer_s = statistics.median(t_ours), statistics.median(t_peer)
        # The events alone, as the headline `ratio` (this format's `event:` lines too).
        assert decode_firsttoken(chunks) == decode_httpx_sse(chunks), f"{api}: decoders disagree"
        t_sse, t_httpx = [], []
        for _ in range(repeat):
            t_sse.append(_seconds(decode_firsttoken, chunks))
            t_httpx.append(_seconds(decode_httpx_sse, chunks))
        sse_ratio = statistics.median(t_httpx) / statistics.median(t_sse)
        out[api] = {"events_per_s": round(n_events / ours_s), "peer_events_per_s": round(n_events / peer_s),
                    "ratio": round(peer_s / ours_s, 2), "sse_ratio": round(sse_ratio, 2)}
        print(f"{api}: firsttoken {ours_s * 1e3:.1f} ms, httpx-sse + json {peer_s * 1e3:.1f} ms, "
              f"ratio {peer_s / ours_s:.2f}; events alone, ratio {sse_ratio:.2f} (medians of {repeat}, {n_events} events)")
    return out


def split_like_network(data: bytes, seed: int = 1) -> list[bytes]:
    """Cut `data` into reads of 1 B to 16 KiB, as TCP and fetch() hand them over."""
    rng = random.Random(seed)
    chunks = []
    pos = 0
    while pos < len(data):
        size = rng.randint(1, 16 * 1024)
        chunks.append(data[pos : pos + size])
        pos += size
    return chunks


def decode_firsttoken(chunks: Iterable[bytes]) -> list[str]:
    """Every event's data, decoded by firsttoken."""
    decoder = SSEDecoder()
    out = []
    for chunk in chunks:
        for event in decoder.feed(chunk):
            out.append(event.data)
    decoder.close()
    return out


def decode_httpx_sse(chunks: Iterable[bytes]) -> list[str]:
    """Every event's data, decoded by httpx-sse as `EventSource.iter_sse()` would."""
    from httpx._decoders import TextChunker, TextDecoder
    from httpx_sse._decoders import SSEDecoder as HttpxSSEDecoder
    from httpx_sse._decoders import SSELineDecoder

    def iter_text() -> Iterator[str]:  # httpx.Response.iter_text()
        decoder = TextDecoder(encoding="utf-8")
        chunker = TextChunker()
        for byte_content in chunks:
            yield from chunker.decode(decoder.decode(byte_content))
        yield from chunker.decode(decoder.flush())
        yield from chunker.flush()

    def iter_sse_lines() -> Iterator[str]:  # httpx_sse._api._iter_sse_lines()
        decoder = SSELineDecoder()
        for text in iter_text():
            yield from decoder.decode(text)
        yield from decoder.flush()

    def iter_sse() -> Iterator[object]:  # httpx_sse.EventSource.iter_sse()
        decoder = HttpxSSEDecoder()
        for line in iter_sse_lines():
            sse = decoder.decode(line.rstrip("\n"))
            if sse is not None:
                yield sse

    return [sse.data for sse in iter_sse()]  # type: ignore[attr-defined]


def _check_glue_matches_httpx_sse(chunks: list[bytes]) -> None:
    """Our re-wiring of httpx-sse must give what the real EventSource gives."""
    import httpx
    from httpx_sse import EventSource

    response = httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=iter(chunks)
    )
    real = [sse.data for sse in EventSource(response).iter_sse()]
    assert real == decode_httpx_sse(chunks), "bench glue diverges from httpx-sse"


def _seconds(fn: Callable[[list[bytes]], object], chunks: list[bytes]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn(chunks)
    return time.perf_counter() - start


def _long_line_seconds(size: int, piece: int = 64 * 1024) -> float:
    """One `size`-byte data line fed in 64 KiB pieces (bound raised to allow it)."""
    line = b"data: " + b"x" * size + b"\n\n"
    pieces = [line[i : i + piece] for i in range(0, len(line), piece)]
    decoder = SSEDecoder(max_line_bytes=2 * size, max_event_bytes=2 * size)
    start = time.perf_counter()
    for p in pieces:
        decoder.feed(p)
    return time.perf_counter() - start


def run_in_page(data: bytes, chunks: list[bytes], repeat: int) -> dict[str, Any]:
    """Time both in-page decoders on `chunks` (of `data`); the page's raw result."""
    from harness.bench_page import bench_page  # Playwright and the gateway: only for this part

    assert b"".join(chunks) == data
    files = {
        "stream.bin": data,
        "chunk_lengths.json": json.dumps([len(c) for c in chunks]).encode(),
    }
    with bench_page(files) as page:
        result: dict[str, Any] = page.run(f"/bench/sse_page.html?repeat={repeat}")
        result["chromium"] = page.browser_version
    return result


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--page-repeat", type=int, default=7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--dialect-events", type=int, default=30_000)
    args = parser.parse_args(argv)

    data = build_stream(args.events, args.seed)
    chunks = split_like_network(data, args.seed)
    _check_glue_matches_httpx_sse(split_like_network(build_stream(500, 7), 7))

    ours = decode_firsttoken(chunks)
    theirs = decode_httpx_sse(chunks)
    # httpx-sse also yields events without data, which the spec does not dispatch;
    # this stream has none, so both must agree event for event.
    assert ours == theirs, "decoders disagree on the benchmark stream"
    assert len(ours) == args.events + 1  # and [DONE]

    # Interleave the two so drift (thermal, other load) hits both alike.
    t_ours: list[float] = []
    t_theirs: list[float] = []
    for _ in range(args.repeat):
        t_ours.append(_seconds(decode_firsttoken, chunks))
        t_theirs.append(_seconds(decode_httpx_sse, chunks))
    ours_s = statistics.median(t_ours)
    theirs_s = statistics.median(t_theirs)

    long_4 = statistics.median(_long_line_seconds(4 << 20) for _ in range(5))
    long_8 = statistics.median(_long_line_seconds(8 << 20) for _ in range(5))

    # The same events with an `id:` line each and CRLF endings: no bulk fast path, so
    # this is the general line-by-line loop (informational, not in the JSON line).
    general = split_like_network(
        data.replace(b"data: ", b"id: 1\ndata: ").replace(b"\n", b"\r\n"), args.seed
    )
    general_ours = statistics.median(_seconds(decode_firsttoken, general) for _ in range(3))
    general_theirs = statistics.median(_seconds(decode_httpx_sse, general) for _ in range(3))

    print(f"stream: {len(ours)} events, {len(data)} bytes, {len(chunks)} network chunks")
    print(f"firsttoken: {ours_s * 1e3:.1f} ms median of {args.repeat}")
    print(f"httpx-sse:  {theirs_s * 1e3:.1f} ms median of {args.repeat}")
    print(
        f"one long line in 64 KiB pieces: 4 MiB {long_4 * 1e3:.1f} ms, "
        f"8 MiB {long_8 * 1e3:.1f} ms (linear: about twice)"
    )
    print(
        f"general path (id: line per event, CRLF): firsttoken {general_ours * 1e3:.1f} ms, "
        f"httpx-sse {general_theirs * 1e3:.1f} ms, ratio {general_theirs / general_ours:.2f}"
    )

    dialects = dialect_ratios(args.dialect_events, args.repeat, args.seed)

    page = run_in_page(data, chunks, args.page_repeat)
    assert page["events"] == len(ours), "the page decoded another number of events"
    pyodide_s = statistics.median(page["pyodide_ms"]) / 1e3
    parser_s = statistics.median(page["eventsource_parser_ms"]) / 1e3
    print(
        f"in the page (Chromium {page['chromium']}, "
        f"Python {page['python']}, boot {page['boot_ms'] / 1e3:.1f} s): "
        f"firsttoken in Pyodide {pyodide_s * 1e3:.1f} ms, eventsource-parser "
        f"{parser_s * 1e3:.1f} ms, medians of {args.page_repeat}"
    )

    result = {
        "events": len(ours),
        "bytes": len(data),
        "cpython_events_per_s": round(len(ours) / ours_s),
        "httpx_sse_events_per_s": round(len(theirs) / theirs_s),
        "ratio": round(theirs_s / ours_s, 2),
        "pyodide_events_per_s": round(page["events"] / pyodide_s),
        "eventsource_parser_events_per_s": round(page["events"] / parser_s),
        "pyodide_ratio": round(parser_s / pyodide_s, 2),
        "dialects": dialects,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
