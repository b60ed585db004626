"""Properties of firsttoken.compress, with Hypothesis and on the corpus.

Idempotence, no exception on any input, the invariants of `compress_invariants`
(Python `ast.dump`, JSON values, prose words, string literals via Pygments), prefix
stability of message lists. The corpus output is pinned to `COMPRESSION_VERSION` by
test_compress_golden.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.unit.compress_invariants import check_messages, check_text
from tests.unit.markdownish import CORPUS, markdownish
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firsttoken.compress import LEVELS, compress_messages, compress_text

# A longer hunt: FIRSTTOKEN_COMPRESS_EXAMPLES=5000 pytest tests/unit/test_compress_properties.py
SETTINGS = settings(
    max_examples=int(os.environ.get("FIRSTTOKEN_COMPRESS_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# ---- properties ----------------------------------------------------------------------


@SETTINGS
@given(st.text(), st.sampled_from(sorted(LEVELS)))
def test_any_text_never_raises_and_is_idempotent(text: str, level: str) -> None:
    once = compress_text(text, level=level)
    assert not any("internal error" in u for u in once.report.untouched)
    assert compress_text(once.text, level=level).text == once.text


@SETTINGS
@given(markdownish(), st.sampled_from(sorted(LEVELS)))
def test_markdownish_invariants(text: str, level: str) -> None:
    assert check_text(text, level) == []
    assert not any("internal error" in u for u in compress_text(text, level=level).report.untouched)


_ROLES = st.sampled_from(["system", "user", "user", "assistant", "tool"])


@SETTINGS
@given(st.lists(st.tuples(_ROLES, markdownish()), min_size=1, max_size=5))
def test_messages_idempotent_and_prefix_stable(pairs: list[tuple[str, str]]) -> None:
    # Reuse texts so that repeats occur.
    msgs = [{"role": r, "content": t + (pairs[0][1] if i % 2 else "")} for i, (r, t) in enumerate(pairs)]
    full = compress_messages(msgs)
    assert compress_messages(full.messages).messages == full.messages
    for k in range(1, len(msgs)):
        assert compress_messages(msgs[:k]).messages == full.messages[:k]


# ---- the corpus ------------------------------------------------------------------------


def _corpus() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.suffix in (".md", ".json"))


def test_corpus_is_big_enough() -> None:
    assert len(_corpus()) >= 60


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.stem)
def test_corpus_invariants(path: Path) -> None:
    for level in sorted(LEVELS):
        if path.name.endswith(".chat.json"):
            problems = check_messages(json.loads(path.read_text())["messages"], compress_messages, level)
        else:
            problems = check_text(path.read_text(encoding="utf-8"), level)
        assert problems == [], (level, problems)
