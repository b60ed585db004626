"""The compact BPE rank format: parsing, validation, loading, and failing on bad data."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from firsttoken import tokens
from firsttoken.tokens.bpe_data import KNOWN_VOCABULARIES
from firsttoken.errors import TokenizerError
from tests.corpus.tokens.golden import NPM_ENCODERS, assert_same_ids, load_golden, reference_ranks


def b64(token: bytes) -> str:
    return base64.b64encode(token).decode()


ALL_BYTES = " ".join(b64(bytes((b,))) for b in range(256))


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    tokens.clear_encoder_cache()
    yield
    tokens.clear_encoder_cache()


@pytest.fixture
def data_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_cache: None) -> Path:
    """A private copy of the npm data, selected through FIRSTTOKEN_TOKENIZER_DATA."""
    for name in ("cl100k_base", "o200k_base"):
        shutil.copy(NPM_ENCODERS / f"{name}.json", tmp_path / f"{name}.json")
    monkeypatch.setenv(tokens.DATA_ENV_VAR, str(tmp_path))
    return tmp_path


def rewrite_ranks(path: Path, edit) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    document["bpe_ranks"] = edit(document["bpe_ranks"])
    path.write_text(json.dumps(document), encoding="utf-8")


# ---- the parser ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "p50k_base"])
def test_parser_agrees_with_a_plain_second_parse(name: str) -> None:
    document, expected = reference_ranks(name)
    parsed = tokens.parse_bpe_ranks(document["bpe_ranks"])
    assert parsed == expected
    if name in KNOWN_VOCABULARIES:
        assert len(parsed) == KNOWN_VOCABULARIES[name].n_ranks
        assert sorted(parsed.values()) == list(range(len(parsed)))  # one contiguous group


def test_groups_may_skip_ranks_but_not_overlap() -> None:
    text = f"! 0 {ALL_BYTES}\n! 300 {b64(b'ab')} {b64(b'cd')}"
    ranks = tokens.parse_bpe_ranks(text)
    assert ranks[b"\x00"] == 0 and ranks[b"\xff"] == 255
    assert ranks[b"ab"] == 300 and ranks[b"cd"] == 301
    with pytest.raises(TokenizerError, match="rank order"):
        tokens.parse_bpe_ranks(f"! 0 {ALL_BYTES}\n! 255 {b64(b'ab')}")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"! 1 {ALL_BYTES}", "rank order"),  # must start at 0
        (f"? 0 {ALL_BYTES}", "expected '! <first_rank>"),
        (f"! zero {ALL_BYTES}", "not an integer"),
        (f"! 0 {ALL_BYTES} YWJj*", "not valid base64"),  # '*' is not base64
        (f"! 0 {ALL_BYTES} YWJ", "not valid base64"),  # bad padding
        (f"! 0 {ALL_BYTES}  YWJj", "empty token"),  # doubled separator
        (f"! 0 {ALL_BYTES} {b64(b'a')}", "repeats 1 token"),
        ("! 0 " + " ".join(b64(bytes((b,))) for b in range(255)), "single-byte"),
        ("", "single-byte"),
    ],
)
def test_malformed_ranks_raise(text: str, message: str) -> None:
    with pytest.raises(TokenizerError, match=message):
        tokens.parse_bpe_ranks(text)


# ---- documents and pinned vocabularies ------------------------------------------------


def small_document(**changes: object) -> dict[str, object]:
    document: dict[str, object] = {
        "pat_str": r"\S+|\s+",
        "special_tokens": {"<|end|>": 256},
        "bpe_ranks": f"! 0 {ALL_BYTES}",
    }
    document.update(changes)
    return document


def test_small_document_builds_and_decodes() -> None:
    data = tokens.EncodingData.from_json("toy", json.dumps(small_document()))
    assert data.decode_bytes([104, 105, 256]) == b"hi<|end|>"
    with pytest.raises(TokenizerError, match="999 is not a token id"):
        data.decode_bytes([104, 999])


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (json.dumps(small_document(pat_str=None)), "pat_str"),
        (json.dumps(small_document(bpe_ranks=["! 0"])), "bpe_ranks"),
        (json.dumps(small_document(special_tokens={"<|x|>": "1"})), "special_tokens"),
        (json.dumps(small_document(special_tokens={"<|x|>": 65})), "also a BPE rank"),
    ],
)
def test_malformed_documents_raise(document: str, message: str) -> None:
    with pytest.raises(TokenizerError, match=message):
        tokens.EncodingData.from_json("toy", document)


def swap_two_tokens(ranks: str) -> str:
    parts = ranks.split(" ")
    parts[1000], parts[1001] = parts[1001], parts[1000]
    return " ".join(parts)


def test_structurally_valid_corruption_is_caught_by_the_pinned_hash(data_copy: Path) -> None:
    rewrite_ranks(data_copy / "o200k_base.json", swap_two_tokens)
    with pytest.raises(TokenizerError, match="differs from the pinned"):
        tokens.count("hello", "gpt-4o")
    assert tokens.count("hello", "gpt-4") == 1  # the other file is untouched


def test_truncated_rank_file_fails(data_copy: Path) -> None:
    rewrite_ranks(data_copy / "cl100k_base.json", lambda r: r[: len(r) // 2].rsplit(" ", 1)[0])
    with pytest.raises(TokenizerError):
        tokens.encode("hello", "cl100k_base")


def test_missing_data_names_the_path_and_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_cache: None
) -> None:
    monkeypatch.setenv(tokens.DATA_ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(TokenizerError, match=f"nowhere.*{tokens.DATA_ENV_VAR}"):
        tokens.count("hello", "o200k_base")


def test_default_data_dir_is_the_repository_node_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(tokens.DATA_ENV_VAR, raising=False)
    assert tokens.data_dir() == NPM_ENCODERS
    monkeypatch.setenv(tokens.DATA_ENV_VAR, "/somewhere/else")
    assert tokens.data_dir() == Path("/somewhere/else")


def test_env_var_data_is_used(data_copy: Path) -> None:
    assert tokens.count("hello world", "o200k_base") == 2


def test_a_corrupt_vocabulary_fails_the_golden_check() -> None:
    """The golden comparison can fail: an encoder over ranks with two tokens swapped
    (built under an unpinned name, so the hash does not stop it first) disagrees."""
    document = json.loads((NPM_ENCODERS / "o200k_base.json").read_text(encoding="utf-8"))
    parts = document["bpe_ranks"].split(" ")
    # Swap the ranks of " the" and " and": common, so many cases change.
    the, and_ = b64(b" the"), b64(b" and")
    i, j = parts.index(the), parts.index(and_)
    parts[i], parts[j] = and_, the
    document["bpe_ranks"] = " ".join(parts)
    corrupt = tokens.TiktokenEncoder(tokens.EncodingData.from_json("o200k_swapped", document))
    with pytest.raises(AssertionError, match="differ"):
        assert_same_ids(corrupt.encode, load_golden(), "o200k_base")


def test_encoding_data_decodes_like_tiktoken() -> None:
    data = tokens.load_encoding_data("o200k_base")
    for case in load_golden():
        ids = case.ids["o200k_base"]
        assert data.decode_bytes(ids) == case.text.encode("utf-8", "surrogatepass")


def test_load_rejects_path_like_names() -> None:
    with pytest.raises(TokenizerError, match="not an encoding name"):
        tokens.load_encoding_data("../secrets")
