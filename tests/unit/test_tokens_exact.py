"""Our ids are tiktoken's ids: golden corpus, published examples, and generated text."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firsttoken import tokens
from harness.node import node_test
from harness.servers import ROOT
from tests.corpus.tokens.golden import (
    ENCODINGS,
    assert_same_ids,
    corpus_texts,
    load_golden,
    reference_encoding,
)


@cache
def reference(encoding: str) -> Any:
    return reference_encoding(encoding)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_golden_corpus(encoding: str) -> None:
    assert_same_ids(lambda text: tokens.encode(text, encoding), load_golden(), encoding)


def test_golden_file_matches_the_corpus() -> None:
    """Editing a corpus file without regenerating golden.json fails here."""
    golden = {case.name: case.text for case in load_golden()}
    assert golden == corpus_texts()


def test_corpus_covers_the_scripts_we_promise() -> None:
    text = "".join(corpus_texts().values())
    for sample in ["的", "の", "ア", "한", "ع", "ש", "ह", "ก", "Ж", "Ω", "\u200d", "\U0001f3fd", "<|endoftext|>"]:
        assert sample in text, sample
    assert max(len(t) for t in corpus_texts().values() if t.strip() == "") >= 1000
    assert "1" * 1000 in text


def test_assert_same_ids_reports_differences() -> None:
    with pytest.raises(AssertionError, match=r"prose_en: .* first difference"):
        assert_same_ids(lambda text: tokens.encode(text, "cl100k_base"), load_golden(), "o200k_base")


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_golden_agrees_with_npm_tiktoken_wasm(tmp_path: Path) -> None:
    """npm tiktoken (Rust compiled to WASM, with its own parser of the same JSON) gives
    the golden ids too, so golden.json is not just CPython tiktoken agreeing with itself;
    and ours on this run (tests/js/cross/tokens-npm.test.mjs, plain JS, checks both)."""
    cases = [{"name": case.name, "text": case.text, "golden": dict(case.ids),
              "ours": {encoding: tokens.encode(case.text, encoding) for encoding in ENCODINGS}}
             for case in load_golden()]
    node_test(ROOT / "tests" / "js" / "cross" / "tokens-npm.test.mjs",
              {"encodings": list(ENCODINGS), "cases": cases}, tmp_path)


# Published in the OpenAI cookbook "How to count tokens with tiktoken", so independent of
# our data files and of golden.json.
COOKBOOK_IDS = [
    ("2 + 2 = 4", "cl100k_base", [17, 489, 220, 17, 284, 220, 19]),
    ("2 + 2 = 4", "o200k_base", [17, 659, 220, 17, 314, 220, 19]),
    ("お誕生日おめでとう", "cl100k_base", [33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699]),
    ("お誕生日おめでとう", "o200k_base", [8930, 9697, 243, 128225, 8930, 17693, 4344, 48669]),
    ("antidisestablishmentarianism", "cl100k_base", [519, 85342, 34500, 479, 8997, 2191]),
    ("hello world", "cl100k_base", [15339, 1917]),
    ("hello world", "o200k_base", [24912, 2375]),
]


@pytest.mark.parametrize(("text", "encoding", "ids"), COOKBOOK_IDS)
def test_published_ids(text: str, encoding: str, ids: list[int]) -> None:
    assert tokens.encode(text, encoding) == ids
    assert tokens.count(text, encoding) == len(ids)
    assert tokens.decode(ids, encoding) == text


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_special_token_text_is_ordinary_text(encoding: str) -> None:
    text = "<|endoftext|>"
    special_id = reference(encoding)._special_tokens["<|endoftext|>"]
    ids = tokens.encode(text, encoding)
    assert special_id not in ids
    assert len(ids) == 7  # "<", "|", "endo"… : as ordinary characters
    assert tokens.decode(ids, encoding) == text
    # The special id itself still decodes (a model's output may contain it).
    assert tokens.decode([special_id], encoding) == text


unicode_text = st.text(st.characters(codec="utf-8"), max_size=300)
# Text made of the corpus's own fragments: likelier to hit real merges than random code points.
fragments = st.lists(
    st.sampled_from(sorted({w for t in corpus_texts().values() for w in t.split(" ") if w})),
    max_size=30,
).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(unicode_text, fragments), encoding=st.sampled_from(ENCODINGS))
def test_generated_text_matches_the_reference(text: str, encoding: str) -> None:
    ids = tokens.encode(text, encoding)
    assert ids == reference(encoding).encode_ordinary(text)
    assert tokens.count(text, encoding) == len(ids)
    assert tokens.decode(ids, encoding) == text


@settings(max_examples=100, deadline=None)
@given(text=st.text(st.characters(), max_size=50))
def test_lone_surrogates_become_replacement_characters(text: str) -> None:
    """Python str may hold lone surrogates (JS strings too); they have no UTF-8 form."""
    ids = tokens.encode(text, "o200k_base")
    assert ids == reference("o200k_base").encode_ordinary(text)
    clean = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert tokens.decode(ids, "o200k_base") == clean
