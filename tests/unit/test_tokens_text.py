"""count / encode / truncate, and the backend seam the page plugs its encoder into."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firsttoken import tokens
from firsttoken.errors import TokenizerError
from tests.corpus.tokens.golden import ENCODINGS, corpus_texts

PUBLIC_API = {
    "count", "decode", "encode", "truncate",
    "ModelInfo", "DEFAULT_CONTEXT_WINDOW", "context_window", "encoding_for_model", "model_info", "resolve_encoding",
    "ChatCount", "FitResult", "TruncatedMessage", "count_chat", "count_chat_detailed",
    "fit_messages", "IMAGE_TOKENS_DEFAULT", "IMAGE_TOKENS_LOW", "TOOL_CALL_OVERHEAD",
    "Calibration", "ImageCount", "image_target_size", "image_tokens",
    "DEFAULT_REPLY_RESERVE", "budget_for", "estimate_tokens", "rough_count_chat", "reply_reserve",
    "api_of_model", "public_tokenizer",
    "ENCODINGS", "Encoder", "EncoderFactory", "TiktokenEncoder", "available_backends",
    "backend_name", "clear_encoder_cache", "get_encoder", "register_backend", "set_backend",
    "tiktoken_backend",
    "DATA_ENV_VAR", "EncodingData", "data_dir", "load_encoding_data", "parse_bpe_ranks",
}  # fmt: skip


def test_public_surface() -> None:
    assert set(tokens.__all__) == PUBLIC_API
    for name in tokens.__all__:
        assert getattr(tokens, name) is not None


def test_the_module_does_not_import_tiktoken_or_browser_modules_at_import_time() -> None:
    import subprocess

    code = (
        "import sys, firsttoken.tokens; "
        "bad = {'tiktoken', 'js', 'pyodide', 'asyncio'} & set(sys.modules); "
        "assert not bad, bad"
    )
    py_dir = Path(tokens.__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=py_dir)


# ---- truncate --------------------------------------------------------------------------


def test_truncate_examples() -> None:
    assert tokens.truncate("hello world", 1, "o200k_base") == "hello"
    assert tokens.truncate("hello world", 1, "o200k_base", side="start") == " world"
    assert tokens.truncate("hello world", 2, "gpt-4o") == "hello world"
    assert tokens.truncate("hello world", 0, "gpt-4o") == ""
    assert tokens.truncate("", 5, "gpt-4o") == ""


def test_truncate_never_splits_a_character() -> None:
    # cl100k splits 誕 over two tokens (b"\xe8\xaa", b"\x95"): two tokens keep only お.
    text = "お誕生日おめでとう"
    assert tokens.truncate(text, 2, "cl100k_base") == "お"
    assert tokens.truncate(text, 3, "cl100k_base") == "お誕"
    # The last token is "とう"; the 4 before it end inside no character.
    assert tokens.truncate(text, 1, "cl100k_base", side="start") == "とう"


def test_truncate_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError):
        tokens.truncate("abc", -1, "gpt-4o")
    with pytest.raises(ValueError):
        tokens.truncate("abc", 1, "gpt-4o", side="middle")  # type: ignore[arg-type]


def check_truncation(text: str, max_tokens: int, encoding: str, side: str) -> str:
    result = tokens.truncate(text, max_tokens, encoding, side=side)  # type: ignore[arg-type]
    n = tokens.count(result, encoding)
    assert n <= max_tokens
    assert (text.startswith(result) if side == "end" else text.endswith(result))
    assert result.count("\ufffd") == 0 or "\ufffd" in text
    assert result.encode("utf-8").decode("utf-8") == result
    if tokens.count(text, encoding) <= max_tokens:
        assert result == text
    return result


truncatable = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=200),
    st.sampled_from(sorted(corpus_texts().values())),
)


@settings(max_examples=300, deadline=None)
@given(
    text=truncatable,
    max_tokens=st.integers(0, 120),
    encoding=st.sampled_from(ENCODINGS),
    side=st.sampled_from(["start", "end"]),
)
def test_truncate_properties(text: str, max_tokens: int, encoding: str, side: str) -> None:
    check_truncation(text, max_tokens, encoding, side)


@pytest.mark.parametrize("name", sorted(corpus_texts()))
def test_truncate_each_corpus_text_at_several_sizes(name: str) -> None:
    text = corpus_texts()[name]
    total = tokens.count(text, "o200k_base")
    for max_tokens in {1, 2, 3, total // 3, total // 2, total - 1}:
        if max_tokens > 0:
            for side in ("start", "end"):
                result = check_truncation(text, max_tokens, "o200k_base", side)
                # Nearly all of the budget is used (a cut character costs at most 3 tokens).
                assert tokens.count(result, "o200k_base") >= max_tokens - 4


def test_lone_surrogates_are_replaced_before_truncating() -> None:
    assert tokens.truncate("ab\ud800cd", 10, "o200k_base") == "ab\ufffdcd"


# ---- resolution and the backend seam -------------------------------------------------------


def test_resolve_encoding() -> None:
    assert tokens.resolve_encoding("o200k_base") == "o200k_base"
    assert tokens.resolve_encoding("o200k_harmony") == "o200k_base"
    assert tokens.resolve_encoding("gpt-4-turbo") == "cl100k_base"
    assert tokens.resolve_encoding("some-llama") == "o200k_base"
    with pytest.raises(TokenizerError, match="unknown encoding"):
        tokens.resolve_encoding("o300k_base")


class CharEncoder:
    """A toy backend: one token per UTF-8 byte, as a JS-backed encoder would plug in."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.encoded = 0

    @property
    def name(self) -> str:
        return self._name

    def encode(self, text: str) -> list[int]:
        self.encoded += 1
        return list(text.encode("utf-8"))

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return bytes(ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.decode_bytes(ids).decode("utf-8", "replace")


@pytest.fixture
def restore_backend() -> Iterator[None]:
    before = tokens.backend_name()
    yield
    tokens.set_backend(before)


def test_a_registered_backend_is_used_and_cached(restore_backend: None) -> None:
    built: list[str] = []

    def factory(encoding: str) -> CharEncoder:
        built.append(encoding)
        return CharEncoder(encoding)

    tokens.register_backend("bytes-test", factory, activate=True)
    assert tokens.backend_name() == "bytes-test"
    assert "bytes-test" in tokens.available_backends()
    assert tokens.count("héllo", "gpt-4o") == 6
    assert tokens.count("héllo", "o200k_base") == 6
    assert tokens.encode("ab", "gpt-4") == [97, 98]
    assert built == ["o200k_base", "cl100k_base"]
    # No `count` method: counting falls back to len(encode(...)); truncate works on bytes.
    assert tokens.truncate("héllo", 2, "gpt-4o") == "h"
    tokens.set_backend("tiktoken")
    assert tokens.count("héllo", "gpt-4o") == 2
    tokens.register_backend("bytes-test", factory)  # replacing forgets its encoders
    tokens.set_backend("bytes-test")
    tokens.count("x", "gpt-4o")
    assert built == ["o200k_base", "cl100k_base", "o200k_base"]


def test_an_encoder_object_can_be_passed_directly() -> None:
    encoder = CharEncoder("toy")
    assert tokens.count("abc", encoder) == 3
    assert tokens.get_encoder(encoder) is encoder


def test_unknown_backend(restore_backend: None) -> None:
    with pytest.raises(TokenizerError, match="no tokenizer backend 'nope'"):
        tokens.set_backend("nope")


def test_foreign_backend_errors_are_translated(restore_backend: None) -> None:
    def broken(encoding: str) -> CharEncoder:
        raise RuntimeError("JsException: worker gone")

    tokens.register_backend("broken-test", broken, activate=True)
    with pytest.raises(TokenizerError, match="worker gone"):
        tokens.count("x", "gpt-4o")

    tokens.register_backend("not-an-encoder-test", lambda e: object(), activate=True)  # type: ignore[arg-type,return-value]
    with pytest.raises(TokenizerError, match="not an Encoder"):
        tokens.count("x", "gpt-4o")


def test_a_lossy_backend_is_detected_by_truncate() -> None:
    class Lossy(CharEncoder):
        def decode_bytes(self, ids: Sequence[int]) -> bytes:
            return bytes(i ^ 1 for i in ids)

    with pytest.raises(TokenizerError, match="not lossless"):
        tokens.truncate("hello", 2, Lossy("lossy"))


def test_missing_tiktoken_is_a_tokenizer_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # makes `import tiktoken` fail
    data = tokens.load_encoding_data("cl100k_base")
    with pytest.raises(TokenizerError, match="register_backend"):
        tokens.TiktokenEncoder(data)


def test_decoding_a_bad_id_is_a_tokenizer_error() -> None:
    with pytest.raises(TokenizerError, match="not a token id"):
        tokens.decode([15339, 10**7], "cl100k_base")
    with pytest.raises(TokenizerError, match="not a token id"):
        tokens.decode([-1], "o200k_base")


# tiktoken's pre-tokenizer panics on whitespace runs of about a million characters; the
# encoder cuts such runs (see `_split_long_whitespace`). The cut must not change a single
# id. Checked with a small cut (so that many cuts fall inside runs tiktoken still handles
# whole) against tiktoken's own encoding of the whole text.
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@given(
    head=st.sampled_from(["", "a", "x\n", "intro  ", "\t"]),
    run=st.sampled_from([" ", "\n", "\t", "\u3000", " \n", "\r\n", "\n\n ", " \t", "\xa0"]),
    repeat=st.integers(min_value=1, max_value=3000),
    tail=st.sampled_from(["", "word", "\n", "\nx", " x", "  y", "\u3000z"]),
    cut=st.sampled_from([256, 512, 1024]),
)
@settings(max_examples=40, deadline=None)
def test_long_whitespace_runs_are_cut_without_changing_the_ids(
    encoding: str, head: str, run: str, repeat: int, tail: str, cut: int
) -> None:
    from firsttoken.tokens.encoders import _split_long_whitespace

    encoder = tokens.get_encoder(encoding)
    text = head + run * repeat + tail
    segments = _split_long_whitespace(text, cut)
    assert "".join(segments) == text
    cut_ids = [i for s in segments for i in encoder._enc.encode_ordinary(s)]  # type: ignore[attr-defined]
    assert cut_ids == encoder._enc.encode_ordinary(text)  # type: ignore[attr-defined]


def test_a_million_spaces_do_not_overflow_the_tokenizer() -> None:
    text = "hello" + " " * 1_000_000 + "\n" * 300_000 + "world"
    ids = tokens.encode(text, "gpt-4o")
    assert tokens.decode(ids, "gpt-4o") == text
    assert tokens.count(text, "gpt-4o") == len(ids)
    assert tokens.count_chat([{"role": "user", "content": " " * 1_000_000}], "gpt-4o") > 7_000
