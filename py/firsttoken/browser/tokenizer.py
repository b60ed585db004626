"""The page's token counter: `firsttoken.tokens` backed by JavaScript (js/tokenizer.mjs).

The page has no tiktoken wheel, so the core's worker counts with a JavaScript BPE encoder
whose ids equal tiktoken's (o200k_base and cl100k_base). It runs in a module worker of its
own (js/tokenizer_worker.mjs), for two reasons: Python in Pyodide cannot import a
JavaScript module (no dynamic `import()` from Python, and the page's CSP forbids eval),
and building a vocabulary (~100–200 ms) must not stall the core's thread while a reply
streams. Calls are synchronous through shared memory: `count()` posts the text, then
waits in `Atomics.wait` for the answer (the page is cross-origin isolated, as PyScript's
worker requires anyway).

Use:

    install(xworker=xworker)                 # once, in firsttoken.browser.start()
    await ensure_encoder("gpt-4o")           # loads o200k_base (HTTP-cached), once
    tokens.count(text, "gpt-4o")             # then synchronous, exact

`install` registers the backend "js" and makes it active; until `ensure_encoder` has
loaded an encoding, asking `firsttoken.tokens` for it raises `TokenizerError`. The
vocabulary is fetched only then, never at boot.

Everything here imports on CPython; only `WorkerBridge` touches `js`/`pyodide`, and
`JsEncoder` takes any `Bridge`, so its logic is tested with a fake one.
"""

from __future__ import annotations

import asyncio
import time
from array import array
from typing import Any, Protocol, Sequence

from .. import IN_PYODIDE
from ..tokens.bpe_data import KNOWN_VOCABULARIES
from ..tokens.encoders import Encoder, clear_encoder_cache, get_encoder, register_backend, resolve_encoding
from ..errors import TokenizerError

__all__ = [
    "BACKEND",
    "SPECIAL_TOKENS",
    "Bridge",
    "JsEncoder",
    "WorkerBridge",
    "ensure_encoder",
    "install",
    "js_backend",
    "load_times_ms",
]

if IN_PYODIDE:  # pragma: no cover - exercised in Chromium (tests/e2e/test_tokens_page.py)
    import js  # type: ignore[import-not-found]
    from pyodide.ffi import create_proxy, to_js  # type: ignore[import-not-found]

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

#: Longest a synchronous call may block before it is reported as a failure (a worker
#: that died would otherwise hang the core). Counting 1 MB takes ~0.1 s.
CALL_TIMEOUT_MS = 30_000
#: Longest loading one encoding may take.
LOAD_TIMEOUT_S = 60.0
#: Counts are remembered per text up to this many characters in all (then forgotten at
#: once), for texts of at most `COUNT_CACHE_TEXT` characters: the page counts the same
#: conversation again on every change, message by message, and each count otherwise
#: costs a round trip to the worker (~0.1 ms) however short the text.
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


# Answers of the worker's synchronous calls (js/tokenizer_worker.mjs).
_PENDING, _DONE, _ERROR, _SHORT = 0, 1, 2, 3


class WorkerBridge:  # pragma: no cover - needs a browser; tests/e2e/test_tokens_page.py
    """js/tokenizer_worker.mjs, started from `worker_url` (Pyodide only)."""

    def __init__(self, worker_url: str) -> None:
        self._worker = js.Worker.new(
            worker_url, to_js({"type": "module", "name": "firsttoken-tokenizer"}, dict_converter=js.Object.fromEntries)
        )
        self._control = js.Int32Array.new(js.SharedArrayBuffer.new(8))
        self._out = js.SharedArrayBuffer.new(1 << 20)
        self._input = js.SharedArrayBuffer.new(1 << 20)
        self._waiting: dict[int, asyncio.Future[float]] = {}
        self._next_id = 0
        self._broken: str | None = None
        # Kept as attributes: a proxy only JavaScript refers to would be destroyed.
        self._on_message = create_proxy(self._message)
        self._on_error = create_proxy(self._error)
        self._worker.onmessage = self._on_message
        self._worker.onerror = self._on_error
        self._worker.postMessage(js.Array.of("init", self._control, self._out, self._input))

    @property
    def broken(self) -> bool:
        return self._broken is not None

    def _message(self, event: Any) -> None:
        data = event.data
        future = self._waiting.pop(int(data.id), None)
        if future is None or future.done():
            return
        if data.ok:
            future.set_result(float(data.ms))
        else:
            future.set_exception(TokenizerError(f"the tokenizer could not load: {data.error}"))

    def _error(self, event: Any) -> None:
        # The module itself failed (not served, a syntax error): nothing will answer.
        event.preventDefault()
        self._broken = str(getattr(event, "message", "") or "the tokenizer worker failed to start")
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(TokenizerError(self._broken))
        self._waiting.clear()

    async def load(self, encoding: str) -> float:
        """Build `encoding` in the worker; returns the worker's own time for it (ms)."""
        if self._broken:
            raise TokenizerError(self._broken)
        self._next_id += 1
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiting[self._next_id] = future
        self._worker.postMessage(js.Array.of("load", self._next_id, encoding))
        try:
            return await asyncio.wait_for(future, LOAD_TIMEOUT_S)
        except TimeoutError:
            raise TokenizerError(f"loading {encoding} took more than {LOAD_TIMEOUT_S:.0f} s") from None

    def _call(self, *request: Any) -> int:
        if self._broken:
            raise TokenizerError(self._broken)
        control = self._control
        js.Atomics.store(control, 0, _PENDING)
        self._worker.postMessage(js.Array.of(*request))
        while True:
            if js.Atomics.wait(control, 0, _PENDING, CALL_TIMEOUT_MS) == "timed-out":
                # Hung or dead: give up on this worker; ensure_encoder starts a new one.
                self._broken = f"the tokenizer did not answer {request[0]} in {CALL_TIMEOUT_MS} ms"
                self._worker.terminate()
                raise TokenizerError(self._broken)
            state, value = int(control[0]), int(control[1])
            if state != _SHORT:
                break
            # The result did not fit: send a bigger buffer and have it copied again.
            self._out = js.SharedArrayBuffer.new(max(value, 2 * int(self._out.byteLength)))
            js.Atomics.store(control, 0, _PENDING)
            self._worker.postMessage(js.Array.of("buffer", self._out))
            self._worker.postMessage(js.Array.of("resend"))
        if state == _ERROR:
            message = js.Uint8Array.new(self._out, 0, value).to_bytes().decode("utf-8", "replace")
            raise TokenizerError(f"the tokenizer failed: {message}")
        return value

    def _put_text(self, text: str) -> int:
        # UTF-8 into shared memory: one C-speed encode and one copy (see the worker).
        data = utf8_like_tiktoken(text)
        if len(data) > int(self._input.byteLength):
            self._input = js.SharedArrayBuffer.new(max(len(data), 2 * int(self._input.byteLength)))
            self._worker.postMessage(js.Array.of("input", self._input))
        js.Uint8Array.new(self._input, 0, len(data)).assign(data)
        return len(data)

    def count(self, encoding: str, text: str) -> int:
        return self._call("count", encoding, self._put_text(text))

    def encode(self, encoding: str, text: str) -> list[int]:
        n = self._call("encode", encoding, self._put_text(text))
        ids = array("i", bytes(4 * n))
        js.Int32Array.new(self._out, 0, n).assign_to(ids)
        return ids.tolist()

    def decode_bytes(self, encoding: str, ids: Sequence[int]) -> bytes:
        packed = js.Int32Array.new(len(ids))
        packed.assign(array("i", ids))
        n = self._call("decode", encoding, packed)
        return js.Uint8Array.new(self._out, 0, n).to_bytes()


class _Page:
    """Where the page is and what has been loaded (one per worker)."""

    base_url: str | None = None
    xworker: Any = None
    bridge: Any = None
    loaded: dict[str, JsEncoder] = {}
    loading: dict[str, asyncio.Future[Any]] = {}
    load_ms: dict[str, float] = {}


def install(base_url: str | None = None, *, xworker: Any = None) -> None:
    """Register the backend "js" with `firsttoken.tokens` and make it the active one.

    `base_url` is the page's base URL (where js/ and vendor/ are served); by default it
    is read, when first needed, from the page through PyScript's `xworker.window`.
    Cheap: nothing is fetched until `ensure_encoder`.
    """
    _Page.base_url = base_url
    _Page.xworker = xworker
    register_backend(BACKEND, js_backend, activate=True)


def js_backend(encoding: str) -> Encoder:
    """The backend's factory: the encoder `ensure_encoder` loaded, else `TokenizerError`."""
    encoder = _Page.loaded.get(encoding)
    if encoder is None:
        raise TokenizerError(
            f"{encoding} is not loaded in the page yet: await ensure_encoder({encoding!r}) first"
        )
    return encoder


def _page_base() -> str:  # pragma: no cover - Pyodide only
    if _Page.base_url:
        return _Page.base_url
    if _Page.xworker is not None:
        # A PyScript worker runs from a blob: URL; only the page knows its own address.
        return str(_Page.xworker.window.document.baseURI)
    return str(js.location.href)


async def ensure_encoder(model_or_encoding: str = "o200k_base") -> Encoder:
    """Load the encoding of a model (or an encoding by name) into the page, once.

    The first call for an encoding starts the tokenizer's worker and has it fetch the
    vocabulary (2.4 MB for o200k_base, cached by the browser); later calls return at
    once. Afterwards `firsttoken.tokens` counts synchronously with it. Raises
    `TokenizerError` when the encoding is not one the page has or cannot load.
    """
    encoding = resolve_encoding(model_or_encoding)
    if encoding not in SPECIAL_TOKENS:
        raise TokenizerError(f"the page counts o200k_base and cl100k_base, not {encoding}")
    if _Page.bridge is not None and _Page.bridge.broken:
        _Page.loaded.clear()
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


async def _load(encoding: str) -> None:  # pragma: no cover - Pyodide only
    if not IN_PYODIDE:
        raise TokenizerError("the JavaScript tokenizer runs only in the page (Pyodide)")
    started = time.perf_counter()
    if _Page.bridge is not None and _Page.bridge.broken:
        # Its encoders are dead too: forget them, and start over with a new worker.
        _Page.bridge = None
        _Page.loaded.clear()
        clear_encoder_cache()
    if _Page.bridge is None:
        _Page.bridge = WorkerBridge(str(js.URL.new("js/tokenizer_worker.mjs", _page_base()).href))
    worker_ms = await _Page.bridge.load(encoding)
    _Page.loaded[encoding] = JsEncoder(encoding, _Page.bridge)
    _Page.load_ms[encoding] = (time.perf_counter() - started) * 1000
    _Page.load_ms[f"{encoding}:worker"] = worker_ms


def load_times_ms() -> dict[str, float]:
    """How long each `ensure_encoder` load took, from Python (`<encoding>`) and inside the
    worker (`<encoding>:worker`: fetch and build of the vocabulary)."""
    return dict(_Page.load_ms)
