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

Prints a few human lines, then LAST one JSON line:
    {"bytes", "exact", "cpython_tiktoken_mb_s", "firsttoken_cpython_mb_s", ...}
The in-page benchmark adds `page_mb_s`, `ratio`, `page_init_ms`, reusing `build_corpus()`.
"""

from __future__ import annotations

import argparse
import base64
import gc
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "py"))

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=1_048_576)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    corpus = build_corpus(args.bytes)
    n_bytes = len(corpus.encode("utf-8"))
    mb = n_bytes / 1e6
    pieces = [corpus[i : i + 4096] for i in range(0, len(corpus), 4096)]
    print(f"corpus: {n_bytes:,} bytes, {len(corpus):,} characters, {len(pieces)} pieces of 4096 characters")

    exact = True
    results: dict[str, dict[str, float]] = {}
    for encoding in ENCODINGS:
        tokens.clear_encoder_cache()
        start = time.perf_counter()
        tokens.get_encoder(encoding)
        init_ms = (time.perf_counter() - start) * 1e3
        raw = raw_tiktoken_encoding(encoding)

        ours_ids = tokens.encode(corpus, encoding)
        raw_ids = raw.encode_ordinary(corpus)
        same = ours_ids == raw_ids
        exact &= same

        raw_s = median_seconds(lambda: len(raw.encode_ordinary(corpus)), args.repeat)
        ours_s = median_seconds(lambda: tokens.count(corpus, encoding), args.repeat)
        raw_pieces_s = median_seconds(lambda: [len(raw.encode_ordinary(p)) for p in pieces], args.repeat)
        ours_pieces_s = median_seconds(lambda: [tokens.count(p, encoding) for p in pieces], args.repeat)
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
    print(
        json.dumps(
            {
                "bytes": n_bytes,
                "exact": exact,
                "cpython_tiktoken_mb_s": round(results[main_encoding]["raw"], 3),
                "firsttoken_cpython_mb_s": round(results[main_encoding]["ours"], 3),
                "encoding": main_encoding,
                "firsttoken_cpython_init_ms": round(results[main_encoding]["init_ms"], 1),
            }
        )
    )


if __name__ == "__main__":
    main()
