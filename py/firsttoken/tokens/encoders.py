"""Encoder backends and the text-level operations built on them. See `firsttoken.tokens`."""

from __future__ import annotations

import re
import threading
from typing import Callable, Literal, Protocol, Sequence, runtime_checkable

from firsttoken.tokens.bpe_data import EncodingData, load_encoding_data
from firsttoken.tokens.models import model_info
from firsttoken.errors import FirstTokenError, TokenizerError

__all__ = [
    "ENCODINGS",
    "Encoder",
    "EncoderFactory",
    "TiktokenEncoder",
    "available_backends",
    "backend_name",
    "clear_encoder_cache",
    "count",
    "decode",
    "encode",
    "get_encoder",
    "register_backend",
    "resolve_encoding",
    "set_backend",
    "tiktoken_backend",
    "truncate",
    "truncate_counted",
]

#: Encodings the data folder of npm tiktoken provides.
ENCODINGS = frozenset({"cl100k_base", "o200k_base", "p50k_base", "p50k_edit", "r50k_base", "gpt2"})
# o200k_harmony (gpt-oss) has o200k_base's ranks; it only adds special tokens, and special
# tokens are counted as ordinary text here anyway.
_ALIASES = {"o200k_harmony": "o200k_base"}


@runtime_checkable
class Encoder(Protocol):
    """One encoding, ready to use. A backend's factory returns these.

    `encode` must treat special-token text such as "<|endoftext|>" as ordinary text, and
    must be lossless: `decode_bytes(encode(s)) == s.encode()` for any `s` without lone
    surrogates. A backend may add `count(text) -> int` when it can count without building
    the id list (worth it across the Python↔JavaScript boundary); it is used if present.
    """

    @property
    def name(self) -> str: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def decode_bytes(self, ids: Sequence[int]) -> bytes: ...


#: Builds the encoder for an encoding name; raises `TokenizerError` if it cannot.
EncoderFactory = Callable[[str], Encoder]


# tiktoken's pre-tokenizer matches a whitespace run with a look-ahead (`\s+(?!\S)`), and
# its regex engine gives up (a Rust panic, "StackOverflow") on runs of about a million
# characters. A long run of one whitespace character is therefore cut into segments of
# `_WHITESPACE_CUT` characters, encoded one by one, the last segment keeping at least that
# many of the run. The cut is exact: BPE merges the inside of such a run into tokens whose
# lengths divide 2**16 (the longest are 128 spaces); only the run's last few hundred
# characters merge irregularly, and they stay together. (Mixed runs such as " \n" repeated
# are pre-tokenized by another branch and do not overflow.) Any other panic of the Rust
# core becomes a `TokenizerError` (`_encode_ordinary`). tests/unit/test_tokens_text.py compares the ids
# with uncut tiktoken (with a small cut) on runs it can still handle.
_WHITESPACE_CUT = 1 << 16
_WHITESPACE = "[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"


def _long_runs(cut: int) -> re.Pattern[str]:
    return re.compile(f"({_WHITESPACE})\\1{{{2 * cut - 1},}}")


_LONG_WHITESPACE = _long_runs(_WHITESPACE_CUT)


def _split_long_whitespace(text: str, cut: int = _WHITESPACE_CUT) -> list[str]:
    """`text` cut inside runs of one whitespace character at least `2 * cut` long, at
    multiples of `cut` from each run's start, leaving at least `cut` of the run to the
    last segment; the pieces join back to `text`."""
    runs = _LONG_WHITESPACE if cut == _WHITESPACE_CUT else _long_runs(cut)
    segments: list[str] = []
    start = 0
    for run in runs.finditer(text):
        for end in range(run.start() + cut, run.end() - cut + 1, cut):
            segments.append(text[start:end])
            start = end
    segments.append(text[start:])
    return segments


class TiktokenEncoder:
    """CPython backend: tiktoken's Rust core over ranks read from the npm JSON files.

    tiktoken is imported here and only here: it is the native backend and the test
    oracle, not a dependency of the page.
    """

    __slots__ = ("_data", "_enc")

    def __init__(self, data: EncodingData) -> None:
        try:
            import tiktoken
        except ImportError:
            raise TokenizerError(
                "the 'tiktoken' backend needs the tiktoken package; in the page, install a"
                " JavaScript-backed encoder with register_backend(..., activate=True)"
            ) from None
        self._data = data
        self._enc = tiktoken.Encoding(
            data.name,
            pat_str=data.pat_str,
            mergeable_ranks=data.mergeable_ranks,
            special_tokens=data.special_tokens,
        )

    @property
    def name(self) -> str:
        return self._data.name

    def encode(self, text: str) -> list[int]:
        if len(text) < 2 * _WHITESPACE_CUT:
            return self._encode_ordinary(text)
        ids: list[int] = []
        for segment in _split_long_whitespace(text):
            ids.extend(self._encode_ordinary(segment))
        return ids

    def count(self, text: str) -> int:
        if len(text) < 2 * _WHITESPACE_CUT:
            return len(self._encode_ordinary(text))
        return sum(len(self._encode_ordinary(s)) for s in _split_long_whitespace(text))

    def _encode_ordinary(self, text: str) -> list[int]:
        try:
            return self._enc.encode_ordinary(text)
        except Exception:
            raise
        except BaseException as exc:  # pyo3's PanicException derives from BaseException
            if type(exc).__name__ != "PanicException":
                raise
            raise TokenizerError(f"tiktoken could not encode a text of {len(text)} characters") from None


    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        try:
            return self._enc.decode_bytes(ids)
        except (KeyError, OverflowError, TypeError, ValueError):
            return self._data.decode_bytes(ids)  # raises TokenizerError naming the bad id

    def decode(self, ids: Sequence[int]) -> str:
        return self.decode_bytes(ids).decode("utf-8", "replace")


def tiktoken_backend(encoding: str) -> Encoder:
    """The default factory: `TiktokenEncoder` over `load_encoding_data(encoding)`."""
    return TiktokenEncoder(load_encoding_data(encoding))


_lock = threading.RLock()  # re-entrant: a factory may itself call get_encoder
_factories: dict[str, EncoderFactory] = {"tiktoken": tiktoken_backend}
_active = "tiktoken"
_encoders: dict[tuple[str, str], Encoder] = {}


def register_backend(name: str, factory: EncoderFactory, *, activate: bool = False) -> None:
    """Add (or replace) a backend. The page registers its JavaScript-backed one with
    `activate=True`; replacing a backend forgets the encoders it built."""
    global _active
    if not name or not callable(factory):
        raise TypeError("register_backend needs a name and a callable factory")
    with _lock:
        _factories[name] = factory
        for key in [k for k in _encoders if k[0] == name]:
            del _encoders[key]
        if activate:
            _active = name


def set_backend(name: str) -> None:
    """Make a registered backend the one every function here uses."""
    global _active
    with _lock:
        if name not in _factories:
            raise TokenizerError(f"no tokenizer backend {name!r}; have {sorted(_factories)}")
        _active = name


def backend_name() -> str:
    """The active backend ("tiktoken" unless the page installed another)."""
    return _active


def available_backends() -> tuple[str, ...]:
    return tuple(sorted(_factories))


def clear_encoder_cache() -> None:
    """Forget built encoders (they are rebuilt on next use, e.g. after new data)."""
    with _lock:
        _encoders.clear()


def resolve_encoding(model_or_encoding: str) -> str:
    """An encoding name passes through; a model name maps by `encoding_for_model`."""
    name = _ALIASES.get(model_or_encoding, model_or_encoding)
    if name in ENCODINGS:
        return name
    if name.endswith(("_base", "_harmony")):
        raise TokenizerError(f"unknown encoding {model_or_encoding!r}")
    return model_info(model_or_encoding).encoding


def get_encoder(model_or_encoding: str | Encoder) -> Encoder:
    """The active backend's encoder for a model or encoding name, built once and cached.

    An `Encoder` passes through unchanged, so every function here also accepts one.
    """
    if not isinstance(model_or_encoding, str):
        return model_or_encoding
    encoding = resolve_encoding(model_or_encoding)
    with _lock:
        key = (_active, encoding)
        cached = _encoders.get(key)
        if cached is not None:
            return cached
        factory = _factories[_active]
        # Built under the lock: two threads must not both spend a second on the same
        # vocabulary, and Pyodide has one thread anyway.
        try:
            encoder = factory(encoding)
        except FirstTokenError:
            raise
        except Exception as exc:  # a foreign backend's error, translated at this boundary
            raise TokenizerError(f"backend {_active!r} failed to build {encoding}: {exc!r}") from exc
        if not isinstance(encoder, Encoder):
            raise TokenizerError(f"backend {_active!r} returned {type(encoder).__name__}, not an Encoder")
        _encoders[key] = encoder
        return encoder


def encode(text: str, model_or_encoding: str | Encoder) -> list[int]:
    """Token ids of `text`; special-token text is encoded as ordinary text."""
    return get_encoder(model_or_encoding).encode(text)


def decode(ids: Sequence[int], model_or_encoding: str | Encoder) -> str:
    """Text of `ids`; bytes that are not valid UTF-8 become U+FFFD."""
    return get_encoder(model_or_encoding).decode(ids)


def _count_with(encoder: Encoder, text: str) -> int:
    counter = getattr(encoder, "count", None)
    return counter(text) if counter is not None else len(encoder.encode(text))


def count(text: str, model_or_encoding: str | Encoder) -> int:
    """Number of tokens in `text` (special-token text counted as ordinary text)."""
    return _count_with(get_encoder(model_or_encoding), text)


def _scrub_lone_surrogates(text: str) -> str:
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        # What tiktoken itself does: a lone surrogate cannot be UTF-8, so it becomes U+FFFD.
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _whole_chars_prefix(raw: bytes) -> int:
    """Length of the longest prefix of UTF-8 `raw` that ends on a character boundary."""
    start = len(raw) - 1
    while start >= 0 and len(raw) - start < 4 and raw[start] & 0xC0 == 0x80:
        start -= 1
    if start < 0:
        return 0
    lead = raw[start]
    need = 1 if lead < 0x80 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    return len(raw) if len(raw) - start >= need else start


def _whole_chars_suffix(raw: bytes) -> int:
    """Offset of the first character boundary in UTF-8 `raw` (skips continuation bytes)."""
    start = 0
    while start < len(raw) and raw[start] & 0xC0 == 0x80:
        start += 1
    return start


Side = Literal["start", "end"]


def truncate_counted(
    text: str, max_tokens: int, model_or_encoding: str | Encoder, *, side: Side = "end"
) -> tuple[str, int]:
    """`truncate`, also returning the token count of the result."""
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, not {max_tokens}")
    if side not in ("start", "end"):
        raise ValueError(f"side must be 'start' or 'end', not {side!r}")
    encoder = get_encoder(model_or_encoding)
    text = _scrub_lone_surrogates(text)
    ids = encoder.encode(text)
    if len(ids) <= max_tokens:
        return text, len(ids)
    whole = text.encode("utf-8")
    keep = max_tokens
    while keep > 0:
        if side == "end":
            raw = encoder.decode_bytes(ids[:keep])
            if whole[: len(raw)] != raw:
                raise TokenizerError(f"{encoder.name}: decode(encode(text)) is not lossless")
            piece = raw[: _whole_chars_prefix(raw)].decode("utf-8")
        else:
            raw = encoder.decode_bytes(ids[-keep:])
            if whole[len(whole) - len(raw) :] != raw:
                raise TokenizerError(f"{encoder.name}: decode(encode(text)) is not lossless")
            piece = raw[_whole_chars_suffix(raw) :].decode("utf-8")
        # Re-encoding a piece can merge differently at the cut (the split pattern sees a
        # different neighbour), so the count is checked, and we back off until it fits.
        n = _count_with(encoder, piece)
        if n <= max_tokens:
            return piece, n
        keep -= max(1, n - max_tokens)
    return "", 0


def truncate(
    text: str, max_tokens: int, model_or_encoding: str | Encoder, *, side: Side = "end"
) -> str:
    """Cut `text` to at most `max_tokens` tokens, removing from `side`.

    The cut falls on a token boundary and never inside a character (it may fall inside
    a grapheme cluster, e.g. between the people of a ZWJ family emoji), so the result is
    a prefix (`side="end"`) or suffix (`side="start"`) of `text`, introduces no U+FFFD,
    and counts ≤ `max_tokens` when encoded on its own. Lone surrogates, which have no
    UTF-8 form, are replaced by U+FFFD first, as tiktoken does.
    """
    return truncate_counted(text, max_tokens, model_or_encoding, side=side)[0]
