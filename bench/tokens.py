"""Benchmark: counting tokens with `firsttoken.tokens` against raw tiktoken, same run.

    .venv/bin/python bench/tokens.py [--bytes N] [--repeat R]

Builds a corpus of at least 1 MB (UTF-8) from tests/corpus/tokens/*.txt — source code,
prose in a dozen scripts, emoji, digit and whitespace runs — repeated with deterministic
variation (fixed seed), and counts it with o200k_base:

* raw tiktoken: a `tiktoken.Encoding` built here from the npm rank file with a plain
  parse, `len(enc.encode_ordinary(corpus))`;
* firsttoken on CPython: `firsttoken.tokens.count(corpus, "o200k_base")`, i.e. the
  default backend with its data checks, cache lookup and model/encoding resolution.

Both see the same string; `exact` says our ids equal tiktoken's for the whole corpus in
both cl100k_base and o200k_base. MB/s are 10^6 bytes of UTF-8 per second, medians of
`--repeat` runs. Also printed (human lines only): cold start of our encoder and counts in
4096-character pieces, where per-call overhead shows.

In the page (headless Chromium, bench/tokens_page.html: Pyodide in a worker with the
app's files and headers, `firsttoken.browser.tokenizer` installed as the app installs it):

* `page_mb_s`: the same corpus through `firsttoken.tokens.count(corpus, "o200k_base")`
  inside Pyodide, timed in Python from the call to the result (so it includes encoding
  the text to UTF-8 and handing it to the JavaScript encoder, js/tokenizer/bpe.js, in the
  same thread); median of `--repeat` runs after one untimed run. `page_pieces_mb_s`:
  the corpus in 4096-character pieces, one call each (where per-call cost shows; each
  piece counted once per run, so the count memory of `JsEncoder` is bypassed). `page_first_mb_s` is that first run: a freshly built encoder,
  its cache of merged pieces empty, V8 not warmed up.
* `ratio`: page_mb_s / cpython_tiktoken_mb_s (measured in this same run, before the
  page). This machine's load swings with other work, so the page's runs alternate with
  CPython tiktoken runs on the same corpus: `ratio_interleaved` is page_mb_s over their
  median (`cpython_tiktoken_interleaved_mb_s`), the two sides timed under the same load.
* `page_init_ms`: on a fresh page with a warm HTTP cache (a new page in a browser context
  that has loaded everything once), how long `await ensure_encoder("o200k_base")` takes
  in Python: import the tokenizer, fetch (304) and build the vocabulary. Median over
  `--pages` fresh pages. `page_cold_init_ms` is the first one, with an empty cache.
  `page_init_longest_block_ms`: the longest the thread was not available to other work
  during that load (the gap between turns of a ticking task), median over the fresh
  pages: what a reply streaming meanwhile would stall for.
* `exact` is also false unless the page's ids equal tiktoken's on the whole corpus, in
  both encodings.

Prints a few human lines, then LAST one JSON line:
    {"bytes", "exact", "cpython_tiktoken_mb_s", "firsttoken_cpython_mb_s", ...,
     "page_mb_s", "ratio", "page_init_ms", ...}
`--no-page` skips the page (no Chromium needed).
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import random
import re
import statistics
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from firsttoken import tokens  # noqa: E402

__all__ = ["build_corpus", "raw_tiktoken_encoding"]

CORPUS_DIR = ROOT / "tests" / "corpus" / "tokens"
ENCODINGS = ("o200k_base", "cl100k_base")


def build_corpus(target_bytes: int = 1_048_576, seed: int = 7) -> str:
    """At least `target_bytes` of UTF-8 text made of the corpus files, deterministically.

    Files are drawn in seeded random order; each copy has its digits replaced with
    seeded random digits and its paragraphs (or, for code, nothing) rotated, so the
    text is not one block repeated, while keeping the mix of code, prose and scripts.
    """
    texts = [p.read_text(encoding="utf-8") for p in sorted(CORPUS_DIR.glob("*.txt"))]
    if not texts:
        raise SystemExit(f"no corpus files in {CORPUS_DIR}")
    rng = random.Random(seed)
    pieces: list[str] = []
    size = 0
    while size < target_bytes:
        text = rng.choice(texts)
        text = re.sub(r"[0-9]", lambda _: str(rng.randrange(10)), text)
        paragraphs = text.split("\n\n")
        if len(paragraphs) > 2 and not text.lstrip().startswith(("//", "#", "/*", "--", "<", "{", '"""', "package")):
            k = rng.randrange(len(paragraphs))
            paragraphs = paragraphs[k:] + paragraphs[:k]
        piece = "\n\n".join(paragraphs) + "\n"
        pieces.append(piece)
        size += len(piece.encode("utf-8"))
    return "".join(pieces)


def raw_tiktoken_encoding(encoding: str) -> Any:
    """tiktoken.Encoding over the npm JSON, parsed plainly (no firsttoken code)."""
    import tiktoken

    document = json.loads((ROOT / "node_modules/tiktoken/encoders" / f"{encoding}.json").read_text())
    ranks: dict[bytes, int] = {}
    for group in document["bpe_ranks"].splitlines():
        _, first, *toks = group.split()
        ranks.update((base64.b64decode(t), int(first) + i) for i, t in enumerate(toks))
    return tiktoken.Encoding(
        f"raw_{encoding}", pat_str=document["pat_str"], mergeable_ranks=ranks,
        special_tokens=document["special_tokens"],
    )  # fmt: skip


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


PAGE_ENSURE = """
import asyncio, json, time
from firsttoken.browser import tokenizer as bt
gaps = [0.0]
loading = True
async def tick():
    last = time.perf_counter()
    while loading:
        await asyncio.sleep(0)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
ticker = asyncio.ensure_future(tick())
start = time.perf_counter()
await bt.ensure_encoder("o200k_base")
took = time.perf_counter() - start
loading = False
await ticker
json.dumps([took * 1000, max(gaps) * 1000])
"""

PAGE_IDS = """
import json
from firsttoken import tokens
from firsttoken.browser import tokenizer as bt
await bt.ensure_encoder("cl100k_base")
json.dumps({enc: tokens.encode(ARG, enc) for enc in ("o200k_base", "cl100k_base")})
"""

PAGE_PUT = """
import builtins
builtins.BENCH_CORPUS = ARG
builtins.BENCH_RUN = 0
"ok"
"""

PAGE_COUNT = """
import builtins, gc, json, time
from firsttoken import tokens
gc.collect()
start = time.perf_counter()
n = tokens.count(builtins.BENCH_CORPUS, "o200k_base")
whole = time.perf_counter() - start
count = tokens.get_encoder("o200k_base").count
pieces = [builtins.BENCH_CORPUS[i : i + 4096] + str(builtins.BENCH_RUN) for i in range(0, len(builtins.BENCH_CORPUS), 4096)]
builtins.BENCH_RUN += 1
gc.collect()
start = time.perf_counter()
for piece in pieces:
    count(piece)
json.dumps([whole, n, time.perf_counter() - start])
"""


def page_figures(
    corpus: str, repeat: int, pages: int, reference: dict[str, list[int]], peer: Callable[[], object]
) -> dict[str, Any]:
    """Counting in headless Chromium through the page's Python API (see the docstring)."""
    from playwright.sync_api import sync_playwright

    from bench.tokens_page import CHROMIUM, CHROMIUM_ARGS, load, serve

    mb = len(corpus.encode("utf-8")) / 1e6
    with serve() as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_ARGS))
        context = browser.new_context()  # one HTTP cache for every page below
        page = load(context.new_page(), url)
        cold_init_ms, _ = json.loads(page.run(PAGE_ENSURE))
        ids = page.run_json(PAGE_IDS, corpus)
        exact = all(ids[enc] == reference[enc] for enc in reference)
        page.run(PAGE_PUT, corpus)
        times, counts, peer_times, piece_times = [], [], [], []
        for _ in range(repeat + 1):  # the first page run is reported apart
            seconds, n, pieces_seconds = page.run_json(PAGE_COUNT)
            times.append(seconds)
            piece_times.append(pieces_seconds)
            counts.append(n)
            gc.collect()
            start = time.perf_counter()
            peer()
            peer_times.append(time.perf_counter() - start)
        counts_ok = set(counts) == {len(reference["o200k_base"])}
        page.page.close()
        init_ms, blocks_ms = [], []
        for _ in range(pages):
            fresh = load(context.new_page(), url)
            took, block = json.loads(fresh.run(PAGE_ENSURE))
            init_ms.append(took)
            blocks_ms.append(block)
            fresh.page.close()
        browser.close()
    first, timed = times[0], times[1:]
    return {
        "exact": exact and counts_ok,
        "page_mb_s": mb / statistics.median(timed),
        # The pieces add a suffix each run (a few bytes a piece), not counted in mb.
        "page_pieces_mb_s": mb / statistics.median(piece_times[1:]),
        "page_init_longest_block_ms": statistics.median(blocks_ms),
        "peer_mb_s": mb / statistics.median(peer_times[1:]),
        "page_first_mb_s": mb / first,
        "page_init_ms": statistics.median(init_ms),
        "page_cold_init_ms": cold_init_ms,
        "init_runs": init_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=1_048_576)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--pages", type=int, default=5, help="fresh pages for page_init_ms")
    parser.add_argument("--no-page", action="store_true", help="CPython figures only")
    args = parser.parse_args()

    corpus = build_corpus(args.bytes)
    n_bytes = len(corpus.encode("utf-8"))
    mb = n_bytes / 1e6
    pieces = [corpus[i : i + 4096] for i in range(0, len(corpus), 4096)]
    print(f"corpus: {n_bytes:,} bytes, {len(corpus):,} characters, {len(pieces)} pieces of 4096 characters")

    exact = True
    results: dict[str, dict[str, float]] = {}
    reference_ids: dict[str, list[int]] = {}
    for encoding in ENCODINGS:
        tokens.clear_encoder_cache()
        start = time.perf_counter()
        tokens.get_encoder(encoding)
        init_ms = (time.perf_counter() - start) * 1e3
        raw = raw_tiktoken_encoding(encoding)

        ours_ids = tokens.encode(corpus, encoding)
        raw_ids = raw.encode_ordinary(corpus)
        reference_ids[encoding] = raw_ids
        same = ours_ids == raw_ids
        exact &= same

        # (Each closure is timed at once, inside this iteration: bound all the same.)
        raw_s = median_seconds(lambda raw=raw: len(raw.encode_ordinary(corpus)), args.repeat)
        ours_s = median_seconds(lambda encoding=encoding: tokens.count(corpus, encoding), args.repeat)
        raw_pieces_s = median_seconds(lambda raw=raw: [len(raw.encode_ordinary(p)) for p in pieces], args.repeat)
        ours_pieces_s = median_seconds(lambda encoding=encoding: [tokens.count(p, encoding) for p in pieces], args.repeat)
        results[encoding] = {"raw": mb / raw_s, "ours": mb / ours_s, "init_ms": init_ms}
        print(
            f"{encoding}: {len(raw_ids):,} tokens, ids {'identical' if same else 'DIFFER'};"
            f" firsttoken cold start {init_ms:.0f} ms (read, verify, build)"
        )
        print(
            f"  whole corpus: tiktoken {mb / raw_s:.2f} MB/s, firsttoken {mb / ours_s:.2f} MB/s"
            f" ({raw_s / ours_s:.2f}x)"
        )
        print(
            f"  4096-char pieces: tiktoken {mb / raw_pieces_s:.2f} MB/s,"
            f" firsttoken {mb / ours_pieces_s:.2f} MB/s ({raw_pieces_s / ours_pieces_s:.2f}x)"
        )

    main_encoding = ENCODINGS[0]
    figures: dict[str, Any] = {
        "bytes": n_bytes,
        "exact": exact,
        "cpython_tiktoken_mb_s": round(results[main_encoding]["raw"], 3),
        "firsttoken_cpython_mb_s": round(results[main_encoding]["ours"], 3),
        "encoding": main_encoding,
        "firsttoken_cpython_init_ms": round(results[main_encoding]["init_ms"], 1),
    }
    if not args.no_page:
        raw = raw_tiktoken_encoding(main_encoding)
        page = page_figures(
            corpus, args.repeat, args.pages, reference_ids, lambda: len(raw.encode_ordinary(corpus))
        )
        print(
            f"page ({main_encoding}): {page['page_mb_s']:.2f} MB/s (first run {page['page_first_mb_s']:.2f}),"
            f" in 4096-character pieces {page['page_pieces_mb_s']:.2f} MB/s,"
            f" ids {'identical' if page['exact'] else 'DIFFER'} in both encodings;"
            f" ensure_encoder {page['page_init_ms']:.0f} ms warm (runs {[round(t) for t in page['init_runs']]}),"
            f" {page['page_cold_init_ms']:.0f} ms cold, longest block {page['page_init_longest_block_ms']:.0f} ms;"
            f" CPython tiktoken between the page's runs"
            f" {page['peer_mb_s']:.2f} MB/s"
        )
        figures.update(
            exact=exact and page["exact"],
            page_mb_s=round(page["page_mb_s"], 3),
            page_pieces_mb_s=round(page["page_pieces_mb_s"], 3),
            ratio=round(page["page_mb_s"] / results[main_encoding]["raw"], 3),
            page_init_ms=round(page["page_init_ms"], 1),
            cpython_tiktoken_interleaved_mb_s=round(page["peer_mb_s"], 3),
            ratio_interleaved=round(page["page_mb_s"] / page["peer_mb_s"], 3),
            page_first_mb_s=round(page["page_first_mb_s"], 3),
            page_cold_init_ms=round(page["page_cold_init_ms"], 1),
            page_init_longest_block_ms=round(page["page_init_longest_block_ms"], 1),
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
