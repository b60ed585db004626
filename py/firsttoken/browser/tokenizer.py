"""The page's token counter: `firsttoken.tokens` backed by JavaScript (js/tokenizer/bpe.js).

The page has no tiktoken wheel, so the core counts with a JavaScript BPE encoder whose
ids equal tiktoken's (o200k_base and cl100k_base). It runs in the core's own thread:
Python in Pyodide cannot import a JavaScript module (no dynamic `import()` from Python,
and the page's CSP forbids eval), so the JavaScript that starts Pyodide registers one
for it, `_firsttoken_tokenizer` (js/tokenizer/python-module.js; js/boot/pyodide-loader.js registers
it on every boot, a restored snapshot included). A count is then one synchronous FFI
call, with no other thread and no shared memory: it stays exact where there is no
`SharedArrayBuffer` (WebKitGTK, and Safari's WebViews without isolation) and no
cross-origin isolation (Android's WebView never has it). Text crosses as UTF-8 bytes,
read in place by JavaScript.

Use:

    install()                                # once, in firsttoken.browser.start()
    await ensure_encoder("gpt-4o")           # loads o200k_base (HTTP-cached), once
    tokens.count(text, "gpt-4o")             # then synchronous, exact

`install` registers the backend "js" and makes it active; until `ensure_encoder` has
loaded an encoding, asking `firsttoken.tokens` for it raises `TokenizerError`. The
vocabulary is fetched only then, never at boot, and built in slices (~100–200 ms in
all) that let a streaming reply go on in between.

Everything here imports on CPython; `ModuleBridge` takes the JavaScript module as an
argument, so its logic is tested with a fake one. `_firsttoken_tokenizer` is imported
only when first needed: never while a heap snapshot is made, which must hold no
JavaScript object.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from typing import Any, Protocol, Sequence

from .. import IN_PYODIDE
from ..tokens.bpe_data import KNOWN_VOCABULARIES
from ..tokens.encoders import Encoder, get_encoder, register_backend, resolve_encoding
from ..errors import TokenizerError

__all__ = [
    "BACKEND",
    "SPECIAL_TOKENS",
    "Bridge",
    "JsEncoder",
    "ModuleBridge",
    "ensure_encoder",
    "install",
    "js_backend",
    "load_times_ms",
]

if IN_PYODIDE:  # pragma: no cover - exercised in Chromium (tests/e2e/test_tokens_page.py)
    from pyodide.ffi import JsException

    _JS_ERRORS: tuple[type[BaseException], ...] = (JsException,)
else:
    _JS_ERRORS = ()

#: The name `install` registers with `firsttoken.tokens`.
BACKEND = "js"

#: Special tokens of tiktoken's data (npm tiktoken `encoders/<name>.json`): the JS
#: vocabularies hold only the mergeable ranks, and `decode` must still turn a special id
#: from a model's output into its text. A unit test checks these against the data.
SPECIAL_TOKENS: dict[str, dict[str, int]] = {
    "o200k_base": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    "cl100k_base": {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
}

#: Longest loading one encoding may take.
LOAD_TIMEOUT_S = 60.0
#: Counts are remembered per text up to this many characters in all (then forgotten at
#: once), for texts of at most `COUNT_CACHE_TEXT` characters: the page counts the same
#: conversation again on every change, message by message, and each count otherwise
#: encodes the text to UTF-8, crosses to JavaScript and runs the encoder over it.
COUNT_CACHE_CHARS = 4_000_000
COUNT_CACHE_TEXT = 65_536


class Bridge(Protocol):
    """What `JsEncoder` needs from the JavaScript side."""

    def count(self, encoding: str, text: str) -> int: ...

    def encode(self, encoding: str, text: str) -> list[int]: ...

    def decode_bytes(self, encoding: str, ids: Sequence[int]) -> bytes: ...


def split_specials(
    ids: Sequence[int], n_ranks: int, specials: dict[int, bytes], name: str
) -> list[bytes | list[int]]:
    """Cut `ids` into runs of ordinary ranks (lists) and special tokens' text (bytes),
    in order; an id that is neither raises `TokenizerError` naming it."""
    parts: list[bytes | list[int]] = []
    run: list[int] = []
    for i in ids:
        if type(i) is int and 0 <= i < n_ranks:
            run.append(i)
            continue
        text = specials.get(i) if type(i) is int else None
        if text is None:
            raise TokenizerError(f"{name}: {i!r} is not a token id")
        if run:
            parts.append(run)
            run = []
        parts.append(text)
    if run:
        parts.append(run)
    return parts


def utf8_like_tiktoken(text: str) -> bytes:
    """`text` as UTF-8; lone surrogates (which have none) become U+FFFD, as tiktoken
    does before encoding, while a surrogate pair spelled as two code points is joined."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


class JsEncoder:
    """An `Encoder` whose work is done by the JavaScript tokenizer, through a `Bridge`."""

    __slots__ = ("_bridge", "_cached_chars", "_counts", "_n_ranks", "_name", "_specials")

    def __init__(self, name: str, bridge: Bridge) -> None:
        if name not in SPECIAL_TOKENS:
            raise TokenizerError(f"the JavaScript tokenizer has no {name!r}")
        self._name = name
        self._bridge = bridge
        self._n_ranks = KNOWN_VOCABULARIES[name].n_ranks
        self._specials = {rank: text.encode() for text, rank in SPECIAL_TOKENS[name].items()}
        self._counts: dict[str, int] = {}
        self._cached_chars = 0

    @property
    def name(self) -> str:
        return self._name

    def encode(self, text: str) -> list[int]:
        return self._bridge.encode(self._name, text)

    def count(self, text: str) -> int:
        n = self._counts.get(text)
        if n is None:
            n = self._bridge.count(self._name, text)
            if len(text) <= COUNT_CACHE_TEXT:
                if self._cached_chars + len(text) > COUNT_CACHE_CHARS:
                    self._counts.clear()
                    self._cached_chars = 0
                self._counts[text] = n
                self._cached_chars += len(text)
        return n

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        parts = split_specials(ids, self._n_ranks, self._specials, self._name)
        return b"".join(p if isinstance(p, bytes) else self._bridge.decode_bytes(self._name, p) for p in parts)

    def decode(self, ids: Sequence[int]) -> str:
        return self.decode_bytes(ids).decode("utf-8", "replace")


class ModuleBridge:
    """The `Bridge` over the JavaScript module js/tokenizer/python-module.js registers
    (`_firsttoken_tokenizer`), called in this thread. `errors`: what a failing call of
    that module raises (Pyodide's `JsException`), to become `TokenizerError` here."""

    __slots__ = ("_errors", "_module")

    def __init__(self, module: Any, errors: tuple[type[BaseException], ...] = ()) -> None:
        self._module = module
        self._errors = errors or _JS_ERRORS

    async def load(self, encoding: str) -> float:
        """Build `encoding` (once); returns the time JavaScript took for it (ms)."""

        async def loaded() -> float:
            return float(await self._module.load(encoding))

        try:
            return await asyncio.wait_for(loaded(), LOAD_TIMEOUT_S)
        except TimeoutError:
            raise TokenizerError(f"loading {encoding} took more than {LOAD_TIMEOUT_S:.0f} s") from None
        except self._errors as exc:
            raise TokenizerError(f"the tokenizer could not load {encoding}: {_message(exc)}") from None

    def _call(self, op: str, *args: Any) -> Any:
        try:
            return getattr(self._module, op)(*args)
        except self._errors as exc:
            raise TokenizerError(f"the tokenizer failed ({op}): {_message(exc)}") from None

    def count(self, encoding: str, text: str) -> int:
        return int(self._call("count", encoding, utf8_like_tiktoken(text)))

    def encode(self, encoding: str, text: str) -> list[int]:
        ids = array("i")
        # An Int32Array: its bytes, in the machine's order (wasm and JS agree: little-endian).
        ids.frombytes(self._call("encode", encoding, utf8_like_tiktoken(text)).to_bytes())
        return ids.tolist()

    def decode_bytes(self, encoding: str, ids: Sequence[int]) -> bytes:
        return bytes(self._call("decode", encoding, array("i", ids)).to_bytes())


def _message(exc: BaseException) -> str:
    # A JsException's str is "Error: <message>"; keep only what JavaScript said.
    return str(exc).removeprefix("Error: ")


def _js_module() -> Any:  # pragma: no cover - Pyodide only
    try:
        import _firsttoken_tokenizer  # type: ignore[import-not-found]
    except ImportError:
        raise TokenizerError(
            "no JavaScript tokenizer here: whatever started Pyodide did not register"
            " _firsttoken_tokenizer (js/tokenizer/python-module.js)"
        ) from None
    return _firsttoken_tokenizer


class _Page:
    """The tokenizer module and what has been loaded (one per interpreter)."""

    module: Any = None
    bridge: ModuleBridge | None = None
    loaded: dict[str, JsEncoder] = {}
    loading: dict[str, asyncio.Future[Any]] = {}
    load_ms: dict[str, float] = {}


def install(module: Any = None) -> None:
    """Register the backend "js" with `firsttoken.tokens` and make it the active one.

    `module` is the JavaScript tokenizer (js/tokenizer/python-module.js's `tokenizer`); by
    default `_firsttoken_tokenizer`, imported when first needed. Cheap: nothing is
    imported or fetched until `ensure_encoder`.
    """
    _Page.loaded.clear()  # installed again: encoders of another module go
    _Page.module = module
    _Page.bridge = None
    register_backend(BACKEND, js_backend, activate=True)


def js_backend(encoding: str) -> Encoder:
    """The backend's factory: the encoder `ensure_encoder` loaded, else `TokenizerError`."""
    encoder = _Page.loaded.get(encoding)
    if encoder is None:
        raise TokenizerError(
            f"{encoding} is not loaded in the page yet: await ensure_encoder({encoding!r}) first"
        )
    return encoder


async def ensure_encoder(model_or_encoding: str = "o200k_base") -> Encoder:
    """Load the encoding of a model (or an encoding by name) into the page, once.

    The first call for an encoding has the JavaScript tokenizer fetch its vocabulary
    (2.4 MB for o200k_base, cached by the browser) and build it; later calls return at
    once. Afterwards `firsttoken.tokens` counts synchronously with it. Raises
    `TokenizerError` when the encoding is not one the page has or cannot load (a
    later call tries again).
    """
    encoding = resolve_encoding(model_or_encoding)
    if encoding not in SPECIAL_TOKENS:
        raise TokenizerError(f"the page counts o200k_base and cl100k_base, not {encoding}")
    if encoding not in _Page.loaded:
        future = _Page.loading.get(encoding)
        if future is None:
            future = _Page.loading[encoding] = asyncio.ensure_future(_load(encoding))
        try:
            await asyncio.shield(future)
        finally:
            if future.done():
                _Page.loading.pop(encoding, None)
    return get_encoder(encoding)


async def _load(encoding: str) -> None:
    started = time.perf_counter()
    if _Page.bridge is None:
        if _Page.module is None:
            if not IN_PYODIDE:
                raise TokenizerError("the JavaScript tokenizer runs only in the page (Pyodide)")
            _Page.module = _js_module()
        _Page.bridge = ModuleBridge(_Page.module)
    js_ms = await _Page.bridge.load(encoding)
    _Page.loaded[encoding] = JsEncoder(encoding, _Page.bridge)
    _Page.load_ms[encoding] = (time.perf_counter() - started) * 1000
    _Page.load_ms[f"{encoding}:js"] = js_ms


def load_times_ms() -> dict[str, float]:
    """How long each `ensure_encoder` load took, from Python (`<encoding>`) and in
    JavaScript (`<encoding>:js`: import and build of the vocabulary)."""
    return dict(_Page.load_ms)
