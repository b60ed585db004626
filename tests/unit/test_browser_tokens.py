"""The page backend's pure logic on CPython: specials, decoding around them, surrogates,
registration. The JavaScript side is tested in Chromium (tests/e2e/test_tokens_page.py)."""

from __future__ import annotations

import asyncio
from functools import cache
from typing import Any, Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firsttoken import tokens
from firsttoken.browser import tokenizer as bt
from firsttoken.errors import TokenizerError
from tests.corpus.tokens.golden import ENCODINGS, reference_ranks
from tests.corpus.tokens.golden import reference_encoding as build_reference


@cache
def reference_encoding(encoding: str) -> Any:
    return build_reference(encoding)


class TiktokenBridge:
    """A `Bridge` answered by tiktoken, recording what crossed it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, object]] = []

    def count(self, encoding: str, text: str) -> int:
        self.calls.append(("count", encoding, text))
        return len(reference_encoding(encoding).encode_ordinary(text))

    def encode(self, encoding: str, text: str) -> list[int]:
        self.calls.append(("encode", encoding, text))
        return reference_encoding(encoding).encode_ordinary(text)

    def decode_bytes(self, encoding: str, ids: Sequence[int]) -> bytes:
        assert all(0 <= i < bt.KNOWN_VOCABULARIES[encoding].n_ranks for i in ids), "specials must not cross"
        self.calls.append(("decode", encoding, list(ids)))
        return reference_encoding(encoding).decode_bytes(ids)


@pytest.fixture
def restore_backend() -> Iterator[None]:
    yield
    tokens.set_backend("tiktoken")
    tokens.clear_encoder_cache()


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_special_tokens_are_tiktokens(encoding: str) -> None:
    document, _ = reference_ranks(encoding)
    assert bt.SPECIAL_TOKENS[encoding] == document["special_tokens"]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_js_encoder_decodes_specials_itself(encoding: str) -> None:
    bridge = TiktokenBridge()
    encoder = bt.JsEncoder(encoding, bridge)
    assert isinstance(encoder, tokens.Encoder)
    eot = bt.SPECIAL_TOKENS[encoding]["<|endoftext|>"]
    hello = bridge.encode(encoding, "hello")
    ids = [eot, *hello, eot, eot, *hello]
    assert encoder.decode(ids) == "<|endoftext|>hello<|endoftext|><|endoftext|>hello"
    assert [c[2] for c in bridge.calls if c[0] == "decode"] == [hello, hello]
    assert encoder.decode([]) == ""


@pytest.mark.parametrize("bad", [-1, 10**9, 199_998, 200_017, 1.5, "7", None])
def test_ids_that_are_not_tokens_are_named(bad: object) -> None:
    encoder = bt.JsEncoder("o200k_base", TiktokenBridge())
    with pytest.raises(TokenizerError, match="is not a token id"):
        encoder.decode_bytes([1, bad, 2])  # type: ignore[list-item]


def test_only_the_two_encodings_the_page_has() -> None:
    with pytest.raises(TokenizerError):
        bt.JsEncoder("p50k_base", TiktokenBridge())
    with pytest.raises(TokenizerError, match="not p50k_base"):
        asyncio.run(bt.ensure_encoder("p50k_base"))


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(), max_size=40))
def test_utf8_like_tiktoken(text: str) -> None:
    """What crosses to JavaScript is what tiktoken would encode: lone surrogates become
    U+FFFD, a surrogate pair written as two code points becomes its character."""
    data = bt.utf8_like_tiktoken(text)
    reference = reference_encoding("o200k_base")
    assert reference.encode_ordinary(data.decode("utf-8")) == reference.encode_ordinary(text)


def test_utf8_like_tiktoken_examples() -> None:
    assert bt.utf8_like_tiktoken("a\ud800b") == "a\ufffdb".encode()
    assert bt.utf8_like_tiktoken("\ud83d\ude00") == "\U0001f600".encode()
    assert bt.utf8_like_tiktoken("\ufeffx") == b"\xef\xbb\xbfx"


def test_install_makes_js_active_and_counts_only_after_loading(restore_backend: None) -> None:
    bt.install("http://page.test/")
    assert tokens.backend_name() == bt.BACKEND
    with pytest.raises(TokenizerError, match=r"await ensure_encoder\('o200k_base'\)"):
        tokens.count("hello", "gpt-4o")
    # What ensure_encoder leaves behind once the worker has built the vocabulary:
    bridge = TiktokenBridge()
    bt._Page.loaded["o200k_base"] = bt.JsEncoder("o200k_base", bridge)
    try:
        assert tokens.count("hello world", "gpt-4o") == 2
        assert tokens.encode("hello world", "o200k_base") == [24912, 2375]
        assert asyncio.run(bt.ensure_encoder("gpt-4o")).name == "o200k_base"  # loaded: no worker
        assert ("count", "o200k_base", "hello world") in bridge.calls  # count, not len(encode)
    finally:
        bt._Page.loaded.pop("o200k_base")


def test_counts_are_remembered_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bt, "COUNT_CACHE_CHARS", 100)
    monkeypatch.setattr(bt, "COUNT_CACHE_TEXT", 40)
    bridge = TiktokenBridge()
    encoder = bt.JsEncoder("o200k_base", bridge)
    crossings = lambda: sum(1 for c in bridge.calls if c[0] == "count")  # noqa: E731
    assert [encoder.count("user"), encoder.count("user"), encoder.count("hello world")] == [1, 1, 2]
    assert crossings() == 2
    long = "word " * 10  # 50 characters: over COUNT_CACHE_TEXT, never remembered
    assert encoder.count(long) == encoder.count(long) == 11  # the last space is a token
    assert crossings() == 4
    for i in range(12):  # 12 x 10 characters: past COUNT_CACHE_CHARS, the memory starts over
        encoder.count(f"text {i:05d}")
    assert crossings() == 16
    assert encoder.count("user") == 1 and crossings() == 17
