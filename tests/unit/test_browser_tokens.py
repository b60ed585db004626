"""The page backend's pure logic on CPython: specials, decoding around them, surrogates,
registration, and the bridge to the JavaScript module (a fake one here, answered by
tiktoken). The JavaScript side is tested in Chromium (tests/e2e/test_tokens_page.py)."""

from __future__ import annotations

import asyncio
from array import array
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
    bt.install()
    assert tokens.backend_name() == bt.BACKEND
    with pytest.raises(TokenizerError, match=r"await ensure_encoder\('o200k_base'\)"):
        tokens.count("hello", "gpt-4o")
    # What ensure_encoder leaves behind once the worker has built the vocabulary:
    bridge = TiktokenBridge()
    bt._Page.loaded["o200k_base"] = bt.JsEncoder("o200k_base", bridge)
    try:
        assert tokens.count("hello world", "gpt-4o") == 2
        assert tokens.encode("hello world", "o200k_base") == [24912, 2375]
        assert asyncio.run(bt.ensure_encoder("gpt-4o")).name == "o200k_base"  # loaded: nothing crosses
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


class FakeJsError(Exception):
    """What Pyodide raises when JavaScript throws (JsException); its str starts "Error: "."""


class Int32Array:
    """Stands for a JsProxy of a typed array: only `to_bytes()` is used."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def to_bytes(self) -> bytes:
        return self.data


class FakeTokenizerModule:
    """js/tokenizer/python-module.js as Python sees it, answered by tiktoken: what crosses is
    what the real one gets (UTF-8 bytes in, an int32 buffer for ids)."""

    def __init__(self) -> None:
        self.built: set[str] = set()
        self.loads: list[str] = []
        self.crossed: list[object] = []
        self.fail_loads = 0
        self.release = asyncio.Event()

    async def load(self, name: str) -> float:
        self.loads.append(name)
        await self.release.wait()
        if self.fail_loads:
            self.fail_loads -= 1
            raise FakeJsError("Error: o200k_base.json: HTTP 503")
        if name not in bt.SPECIAL_TOKENS:
            raise FakeJsError(f"Error: unsupported encoding {name}")
        self.built.add(name)
        return 12.5

    def _encoding(self, name: str) -> Any:
        if name not in self.built:
            raise FakeJsError(f"Error: {name} is not loaded (await ensure_encoder first)")
        return reference_encoding(name)

    def count(self, name: str, utf8: object) -> int:
        self.crossed.append(utf8)
        assert isinstance(utf8, bytes)
        return len(self._encoding(name).encode_ordinary(utf8.decode("utf-8")))

    def encode(self, name: str, utf8: object) -> Int32Array:
        assert isinstance(utf8, bytes)
        ids = self._encoding(name).encode_ordinary(utf8.decode("utf-8"))
        return Int32Array(array("i", ids).tobytes())

    def decode(self, name: str, ids: object) -> Int32Array:
        assert isinstance(ids, array) and ids.typecode == "i" and ids.itemsize == 4
        return Int32Array(self._encoding(name).decode_bytes(ids.tolist()))


def module_bridge(module: FakeTokenizerModule) -> bt.ModuleBridge:
    return bt.ModuleBridge(module, errors=(FakeJsError,))


def test_the_module_bridge_sends_utf8_and_takes_int32() -> None:
    module = FakeTokenizerModule()
    module.release.set()
    bridge = module_bridge(module)
    assert asyncio.run(bridge.load("o200k_base")) == 12.5
    text = "お誕生日おめでとう a\ud800b \ufeff"
    reference = reference_encoding("o200k_base")
    want = reference.encode_ordinary(text)
    assert bridge.count("o200k_base", text) == len(want)
    assert module.crossed == [bt.utf8_like_tiktoken(text)]  # no lone surrogate crosses
    assert bridge.encode("o200k_base", text) == want
    assert bridge.decode_bytes("o200k_base", want[:3]) == reference.decode_bytes(want[:3])
    assert bridge.encode("o200k_base", "") == [] and bridge.count("o200k_base", "") == 0


def test_what_javascript_throws_becomes_a_tokenizer_error() -> None:
    module = FakeTokenizerModule()
    module.release.set()
    bridge = module_bridge(module)
    with pytest.raises(TokenizerError, match=r"^the tokenizer failed \(count\): cl100k_base is not loaded"):
        bridge.count("cl100k_base", "x")
    with pytest.raises(TokenizerError, match="could not load p50k_base: unsupported encoding p50k_base$"):
        asyncio.run(bridge.load("p50k_base"))
    with pytest.raises(ZeroDivisionError):  # not JavaScript's: a bug, left alone
        bt.ModuleBridge(type("Broken", (), {"count": lambda *_: 1 // 0})(), errors=(FakeJsError,)).count("x", "y")


def test_a_load_that_never_ends_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bt, "LOAD_TIMEOUT_S", 0.01)
    with pytest.raises(TokenizerError, match="took more than"):
        asyncio.run(module_bridge(FakeTokenizerModule()).load("o200k_base"))  # release is never set


@pytest.fixture
def fake_page(restore_backend: None) -> Iterator[FakeTokenizerModule]:
    module = FakeTokenizerModule()
    bt.install(module)
    bt._Page.bridge = module_bridge(module)
    yield module
    bt.install()
    bt._Page.loaded.clear()
    bt._Page.load_ms.clear()


def test_ensure_encoder_loads_once_and_retries_after_a_failure(fake_page: FakeTokenizerModule) -> None:
    fake_page.fail_loads = 1

    async def scenario() -> list[object]:
        first = [asyncio.ensure_future(bt.ensure_encoder(m)) for m in ("gpt-4o", "o200k_base", "gpt-4o-mini")]
        await asyncio.sleep(0)
        fake_page.release.set()
        failed = await asyncio.gather(*first, return_exceptions=True)
        again = await bt.ensure_encoder("gpt-4o")
        return [*failed, again]

    *failed, encoder = asyncio.run(scenario())
    assert all(isinstance(f, TokenizerError) and "HTTP 503" in str(f) for f in failed)
    assert fake_page.loads == ["o200k_base", "o200k_base"]  # one load for three callers, then one retry
    assert encoder.name == "o200k_base" and tokens.count("hello world", "gpt-4o") == 2
    assert bt.load_times_ms()["o200k_base:js"] == 12.5
    assert asyncio.run(bt.ensure_encoder("gpt-4o")) is encoder and len(fake_page.loads) == 2


def test_outside_pyodide_without_a_module_there_is_no_tokenizer(restore_backend: None) -> None:
    bt.install()
    with pytest.raises(TokenizerError, match="runs only in the page"):
        asyncio.run(bt.ensure_encoder("gpt-4o"))
