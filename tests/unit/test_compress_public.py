"""The public compression corpus (tests/corpus/compress-public, read from installed
sources by bench/compress.py): every prompt is there on this machine, keeps the
invariants at every level, and keeps its intent comments at ``balanced``."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from tests.unit.compress_invariants import check_text

from firsttoken.compress import LEVELS, compress_text

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_compress", ROOT / "bench" / "compress.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_compress", module)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()
DOCS, MISSING = BENCH.load_public()  # type: ignore[attr-defined]


def test_every_public_prompt_is_read_from_its_pinned_source() -> None:
    if sys.version_info[:3] != (3, 11, 7):
        pytest.skip("the stdlib excerpts are CPython 3.11.7's")
    assert MISSING == [] and len(DOCS) >= 12


@pytest.mark.parametrize("doc", DOCS, ids=[d[0] for d in DOCS])
def test_public_prompt_invariants_and_intent(doc: tuple[str, str, str]) -> None:
    _, _, text = doc
    for level in sorted(LEVELS):
        assert check_text(text, level) == [], level
    out = compress_text(text).text
    assert not compress_text(text).report.untouched
    for c in BENCH.comments(text):  # type: ignore[attr-defined]
        if re.search(r"\b(?:TODO|FIXME|XXX|HACK|BUG|NOTE)\b", c):
            assert c in out
