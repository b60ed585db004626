"""Golden token ids for the tokenizer corpus, and the check every backend must pass.

`golden.json` holds cases `{"name", "text", "ids": {"cl100k_base": [...], "o200k_base":
[...]}}`: the `*.txt` files here plus generated edge cases (whitespace and digit runs,
special-token look-alikes, …). The ids come from PyPI tiktoken (CPython) fed with ranks
that `reference_encoding` parses from npm tiktoken's JSON in the plainest possible way,
independently of `firsttoken`. npm tiktoken's own WASM build agrees (see
tests/unit/test_tokens_golden.py), so the file pins two implementations' answer.

An in-page backend is checked the same way as the CPython one:
`assert_same_ids(encoder.encode, load_golden(), "o200k_base")`.

Regenerate after changing the corpus: `.venv/bin/python -m tests.corpus.tokens.golden`.
"""

from __future__ import annotations

import base64
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

HERE = Path(__file__).resolve().parent
GOLDEN_PATH = HERE / "golden.json"
ENCODINGS = ("cl100k_base", "o200k_base")
NPM_ENCODERS = HERE.parents[2] / "node_modules" / "tiktoken" / "encoders"


@dataclass(frozen=True)
class GoldenCase:
    name: str
    text: str
    ids: Mapping[str, list[int]]


def corpus_files() -> dict[str, str]:
    """The hand-written corpus: `{file stem: text}`."""
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted(HERE.glob("*.txt"))}


def generated_texts() -> dict[str, str]:
    """Edge cases that are awkward to keep in text files (runs, control characters)."""
    cases: dict[str, str] = {"empty": ""}
    for n in (1, 2, 3, 7, 16, 100, 1000):
        cases[f"spaces_{n}"] = " " * n
    cases.update(
        {
            "newlines_200": "\n" * 200,
            "crlf_40": "\r\n" * 40,
            "tabs_and_newlines": "\t\t\n\n  \r\n\t \n" * 10,
            "space_newline_pairs": " \n" * 30,
            "inner_space_run": "a" + " " * 50 + "b" + "\t" * 9 + "c",
            "trailing_spaces": "word   ",
            "leading_spaces": "   word",
            "indent_then_text": "\n        return x\n    \n\n",
            "unicode_spaces": "x\u00a0\u00a0y\u2003z\u3000\u3000w\u202f.\u2009!",
            "line_separators": "a\x0bb\x0cc\x85d\u2028e\u2029f",
            "control_chars": "\x00\x01\x02\x1b[31mred\x1b[0m\x7f",
            "digits_1000": "1" * 1000,
            "digit_cycle_500": "0123456789" * 50,
            "negative_long": "-" + "3" * 33,
            "digits_spaced": " ".join(str(i) for i in range(200)),
            "endoftext": "<|endoftext|>",
            "endoftext_x3": "<|endoftext|>" * 3,
            "special_all": "<|endofprompt|><|fim_prefix|><|fim_middle|><|fim_suffix|>",
            "repeated_pair": "ab" * 500,
            "repeated_emoji": "\U0001f642" * 100,
            "repeated_nfd": "e\u0301" * 300,
            "family_emoji_run": "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466" * 20,
            "apostrophes": "I'm you're they've we'll it'd he's 'quoted' ’curly’ DON'T SHE'LL",
        }
    )
    first_lines = [text.splitlines()[0] for text in corpus_files().values() if text]
    cases["first_lines_joined"] = " ".join(first_lines)
    return cases


def corpus_texts() -> dict[str, str]:
    """Every case: the corpus files, then the generated edge cases."""
    return {**corpus_files(), **generated_texts()}


def load_golden(path: Path = GOLDEN_PATH) -> list[GoldenCase]:
    document = json.loads(path.read_text(encoding="utf-8"))
    return [GoldenCase(c["name"], c["text"], c["ids"]) for c in document["cases"]]


def assert_same_ids(
    encode_fn: Callable[[str], Sequence[int]], cases: Sequence[GoldenCase], encoding: str
) -> None:
    """Fail, naming each differing case and where it first differs, unless `encode_fn`
    gives exactly the golden ids for `encoding` on every case."""
    problems = []
    for case in cases:
        got = [int(i) for i in encode_fn(case.text)]
        want = case.ids[encoding]
        if got != want:
            at = next((k for k, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
            problems.append(
                f"{case.name}: {len(got)} ids vs {len(want)} golden; first difference at"
                f" token {at}: got {got[at:at + 4]}, want {want[at:at + 4]}"
            )
    if problems:
        raise AssertionError(f"{encoding}: {len(problems)} case(s) differ:\n" + "\n".join(problems))


def reference_ranks(encoding: str, directory: Path = NPM_ENCODERS) -> tuple[dict[str, Any], dict[bytes, int]]:
    """The npm JSON document and its ranks, parsed plainly (no checks) — a second opinion
    on firsttoken's parser."""
    document = json.loads((directory / f"{encoding}.json").read_text(encoding="utf-8"))
    ranks: dict[bytes, int] = {}
    for group in document["bpe_ranks"].splitlines():
        marker, first, *tokens = group.split()
        assert marker == "!"
        for offset, token in enumerate(tokens):
            ranks[base64.b64decode(token)] = int(first) + offset
    return document, ranks


def reference_encoding(encoding: str, directory: Path = NPM_ENCODERS) -> Any:
    """A tiktoken.Encoding built from `reference_ranks`."""
    import tiktoken

    document, ranks = reference_ranks(encoding, directory)
    return tiktoken.Encoding(
        f"reference_{encoding}",
        pat_str=document["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=document["special_tokens"],
    )


def main() -> None:
    import tiktoken

    references = {name: reference_encoding(name) for name in ENCODINGS}
    lines = []
    for name, text in corpus_texts().items():
        ids = {enc: references[enc].encode(text, disallowed_special=()) for enc in ENCODINGS}
        lines.append(json.dumps({"name": name, "text": text, "ids": ids}, ensure_ascii=False))
    header = {
        "about": "Token ids by tiktoken for tests/corpus/tokens; see golden.py",
        "tiktoken": tiktoken.__version__,
        "data": "npm tiktoken encoders/*.json (see package-lock.json)",
    }
    body = ",\n".join(lines)
    head = json.dumps(header, ensure_ascii=False)[1:-1]
    GOLDEN_PATH.write_text(f'{{{head},\n"cases": [\n{body}\n]}}\n', encoding="utf-8")
    print(f"wrote {len(lines)} cases to {GOLDEN_PATH}", file=sys.stderr)


if __name__ == "__main__":
    main()
