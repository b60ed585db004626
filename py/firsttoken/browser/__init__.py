"""The one adapter between the core and the browser (Pyodide inside a PyScript worker).

Everything that touches `js`, `pyodide` or `polyscript` lives here, and only runs inside
Pyodide: on CPython this module imports, and `start()` refuses to run. Foreign errors
(`JsException` from fetch or a stream read) become firsttoken errors here, in one place.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Mapping

from .. import IN_PYODIDE
from .indexeddb import IndexedDBStore
from .tokenizer import install as install_page_tokenizer
from ..cache import Cache
from ..stream.client import AbortSignal, HTTPRequest, sent_stamps
from ..errors import Aborted, Offline, TransportError

__all__ = ["FetchTransport", "start"]

if IN_PYODIDE:  # pragma: no cover - exercised by the end-to-end tests in Chromium
    import js
    from pyodide.ffi import JsException, create_proxy, to_js


def now_ms() -> float:
    """Wall-clock milliseconds, comparable across the worker and the main thread
    (performance.now() alone is not: each has its own time origin)."""
    return float(js.performance.timeOrigin + js.performance.now())


def _translate(exc: Exception, abort: AbortSignal, what: str) -> Exception:
    if abort.aborted:
        return Aborted("stopped")
    # Read at the failure, not before sending: `onLine` false is reliable (no network
    # interface), true is not (it says nothing about the route), so only a failure that
    # happened while it is false is called offline (HTML, "navigator.onLine").
    if not bool(getattr(js.navigator, "onLine", True)):
        return Offline(f"{what}: the device is offline")
    return TransportError(f"{what}: {exc}")


class FetchResponse:
    def __init__(self, response: Any, abort: AbortSignal) -> None:
        self._response = response
        self._abort = abort
        self.status = int(response.status)
        self.headers: Mapping[str, str] = {
            str(k): str(v) for k, v in (entry.to_py() for entry in response.headers.entries())
        }

    async def chunks(self) -> AsyncIterator[bytes]:
        reader = self._response.body.getReader()
        try:
            while True:
                try:
                    result = await reader.read()
                except JsException as exc:
                    raise _translate(exc, self._abort, "the connection broke") from None
                if result.done:
                    return
                yield result.value.to_bytes()
        finally:
            try:
                reader.releaseLock()
            except JsException:
                pass

    async def read(self, limit: int) -> bytes:
        out = bytearray()
        async for chunk in self.chunks():
            out += chunk[: limit - len(out)]
            if len(out) >= limit:
                break
        return bytes(out)


class FetchTransport:
    """Streaming fetch from the worker; Stop maps to an AbortController."""

    async def send(self, request: HTTPRequest, abort: AbortSignal) -> FetchResponse:
        controller = js.AbortController.new()
        abort.on_abort(lambda: controller.abort())
        fields: dict[str, Any] = {
            "method": request.method,
            "headers": request.headers,
            "signal": controller.signal,
            "cache": "no-store",
        }
        if request.method not in ("GET", "HEAD"):
            # Fetch refuses a body on GET or HEAD (a resume is a GET): Fetch §5.4, step 34.
            # The bytes as they are (to_js makes a Uint8Array): a gzipped body is not text.
            fields["body"] = request.body
        init = to_js(fields, dict_converter=js.Object.fromEntries)
        try:
            response = await js.fetch(request.url, init)
        except JsException as exc:
            raise _translate(exc, abort, "the request could not be sent") from None
        return FetchResponse(response, abort)


def start(xworker: Any, boot: dict[str, Any] | None = None) -> Any:
    """Wire the core to PyScript's worker channel. Returns the core."""
    if not IN_PYODIDE:
        raise RuntimeError("firsttoken.browser.start() runs only inside Pyodide")
    from ..core import Core

    install_page_tokenizer()  # tokens' "js" backend; fetches nothing until ensure_encoder
    from .tokenizer import ensure_encoder

    # Where events go: the worker's channel, until the page's `hello` hands over a port
    # (below). The core is given this one `post` and never rebound.
    channel = {"post": xworker.postMessage}

    def post(text: str) -> None:
        channel["post"](text)

    core = Core(
        post=post,
        transport=FetchTransport(),
        clock=now_ms,
        sleep=asyncio.sleep,
        boot=boot,
        # Counting needs the page's encoder, which loads on first use (never at boot).
        prepare_encoder=ensure_encoder,
        # Prepared system messages persist in IndexedDB, opened on first use (not at
        # boot); on any IndexedDB failure the cache goes on in memory, with a notice.
        cache=Cache(IndexedDBStore(js.indexedDB)),
        page_origin=str(js.self.origin),
        # The benchmarks measure this page, so it reads the built-in model's send
        # stamps (`stamp=1`, which only a benchmark asks for); a chunk without one
        # costs a single scan.
        stamps=sent_stamps,
    )
    tasks: set[asyncio.Task] = set()

    def on_message(event: Any) -> None:
        ports = getattr(event, "ports", None)
        if ports is not None and ports.length:
            # The page's `hello` hands over a channel for the protocol (js/link/python-link.js says
            # why): from here on both directions use it.
            port = ports[0]
            channel["post"] = port.postMessage
            port.onmessage = create_proxy(on_message)
        data = event.data
        raw = data if isinstance(data, str) else data.to_py() if hasattr(data, "to_py") else data
        task = asyncio.ensure_future(core.handle(raw))
        tasks.add(task)  # keep a reference: a task only weakly referenced may vanish
        task.add_done_callback(tasks.discard)

    xworker.onmessage = on_message
    return core
