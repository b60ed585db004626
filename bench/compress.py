"""Benchmark for firsttoken.compress over the prompt corpus in tests/corpus/compress.

Run from the repository root: `.venv/bin/python bench/compress.py` (or
`make bench-compress`). For every prompt it counts o200k_base tokens before and after
compression at each level, checks the invariants (tests/unit/compress_invariants.py)
and times the compressor alone. Human-readable lines come first; the last line is one
JSON object:

  {"docs", "tokens_before", "tokens_after", "saved_pct_median",
   "saved_pct_by_category", "repeats_saved_tokens", "violations",
   "violations_by_level", "cpython_mb_s"}

for the default level ("balanced"). `saved_pct_median` is the median per-prompt saving
over the code- and JSON-bearing prompts; `saved_pct_by_category` holds per-category
medians; `repeats_saved_tokens` is what the repeats pass alone saved over the corpus
(output with it against output without it); `violations` counts prompts that break an
invariant at any level, `violations_by_level` the same per level. The invariants
include structure: no tag or fence left unbalanced, no element or section left with
less under its tags or heading (tests/corpus/compress/example-pair-* are the cases
that broke before).
The peer in the same run is level "safe" (whitespace, JSON and tables only: what a
generic whitespace/JSON minifier achieves) and "max".
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "py"), str(ROOT / "tests" / "unit")]

from compress_invariants import check_messages, check_text  # noqa: E402

from firsttoken.compress import COMPRESSION_VERSION, compress_messages, compress_text  # noqa: E402

CORPUS = ROOT / "tests" / "corpus" / "compress"
LEVELS = ("safe", "balanced", "max")


def _counter() -> Callable[[str], int]:
    try:
        from firsttoken.tokens import count

        count("x", "o200k_base")
        return lambda s: count(s, "o200k_base")
    except Exception:  # noqa: BLE001 - fall back to building the encoding ourselves
        import base64

        import tiktoken

        data = json.loads((ROOT / "node_modules/tiktoken/encoders/o200k_base.json").read_text())
        ranks: dict[bytes, int] = {}
        for group in data["bpe_ranks"].split("!")[1:]:
            fields = group.split()
            first = int(fields[0])
            for i, tok in enumerate(fields[1:]):
                ranks[base64.b64decode(tok)] = first + i
        enc = tiktoken.Encoding(
            "o200k_base", pat_str=data["pat_str"], mergeable_ranks=ranks, special_tokens=data["special_tokens"]
        )
        return lambda s: len(enc.encode(s, disallowed_special=()))


def load() -> list[tuple[str, str, Any]]:
    """[(name, category, text or messages)] in name order."""
    docs = []
    for path in sorted(CORPUS.iterdir()):
        if path.suffix not in (".md", ".json"):
            continue
        name = path.stem.removesuffix(".chat")
        category = name.rsplit("-", 1)[0]
        raw = path.read_text(encoding="utf-8")
        payload: Any = json.loads(raw)["messages"] if path.name.endswith(".chat.json") else raw
        docs.append((name, category, payload))
    return docs


def _tokens(count: Callable[[str], int], payload: Any) -> int:
    if isinstance(payload, str):
        return count(payload)
    return sum(count(m["content"]) for m in payload if isinstance(m.get("content"), str))


def _compress(payload: Any, level: str) -> Any:
    if isinstance(payload, str):
        return compress_text(payload, level=level).text
    return compress_messages(payload, level=level).messages


def main() -> None:
    count = _counter()
    docs = load()
    results: dict[str, dict[str, list[float]]] = {lv: {} for lv in LEVELS}
    totals = {lv: [0, 0] for lv in LEVELS}
    violations = 0
    by_level = {lv: 0 for lv in LEVELS}
    repeats_saved = 0
    for name, category, payload in docs:
        before = _tokens(count, payload)
        bad: list[str] = []
        row = []
        for lv in LEVELS:
            after = _tokens(count, _compress(payload, lv))
            pct = 100.0 * (before - after) / before if before else 0.0
            results[lv].setdefault(category, []).append(pct)
            totals[lv][0] += before
            totals[lv][1] += after
            row.append(f"{pct:5.1f}")
            found = check_text(payload, lv) if isinstance(payload, str) else check_messages(payload, compress_messages, lv)
            by_level[lv] += bool(found)
            bad += found
            if lv == "balanced" and not isinstance(payload, str):
                flat = compress_messages(payload, level=lv, passes={"repeats": False}).messages
                repeats_saved += _tokens(count, flat) - after
        if bad:
            violations += 1
        print(f"{name:40s} {before:6d} tok  safe/balanced/max %: {' '.join(row)}" + (f"  VIOLATION {sorted(set(bad))}" if bad else ""))

    # Speed: the compressor alone, best of several rounds.
    size = sum(len(p.encode()) if isinstance(p, str) else sum(len(str(m.get("content", "")).encode()) for m in p) for _, _, p in docs)
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _, _, payload in docs:
            _compress(payload, "balanced")
        best = min(best, time.perf_counter() - t0)
    mb_s = size / best / 1e6

    def medians(lv: str) -> dict[str, float]:
        return {c: round(statistics.median(v), 1) for c, v in sorted(results[lv].items())}

    def headline(lv: str) -> float:
        vals = [p for c, v in results[lv].items() if c.startswith(("code-", "json-")) for p in v]
        return round(statistics.median(vals), 1)

    for lv in LEVELS:
        print(f"level {lv:8s}: median saving over code/JSON prompts {headline(lv):5.1f}%  tokens {totals[lv][0]} -> {totals[lv][1]}")
        print("   by category:", json.dumps(medians(lv)))
    print(f"version {COMPRESSION_VERSION}; corpus {size} bytes; {mb_s:.2f} MB/s (CPython {sys.version.split()[0]})")
    print(
        json.dumps(
            {
                "docs": len(docs),
                "tokens_before": totals["balanced"][0],
                "tokens_after": totals["balanced"][1],
                "saved_pct_median": headline("balanced"),
                "saved_pct_by_category": medians("balanced"),
                "repeats_saved_tokens": repeats_saved,
                "violations": violations,
                "violations_by_level": by_level,
                "cpython_mb_s": round(mb_s, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
