"""In-page benchmarks: the product gateway plus bench-only files, driven by real Chromium
(bench/sse.py, tokens_page.py, boot_probe.py, network.py).

    with bench_page({"stream.bin": data}) as bench:
        result = bench.run("/bench/sse_page.html")

Serves, on a free loopback port, in this process:

- `/bench/data/<name>`: the in-memory files given (bytes made by the benchmark);
- `/bench/node_modules/…`: this checkout's node_modules (peers the product does not ship);
- `/bench/…`: this folder (the bench pages and their scripts);
- everything else: the product gateway (`gateway.create_app()`), unchanged, so a page gets
  Pyodide at `/vendor/pyodide/` and the package at `/py/firsttoken.zip` exactly as the
  app does.

The bench routes sit outside the gateway, so they get none of its headers: a bench page
has no CSP (Playwright may evaluate in it) and, unless `isolated=True` asks for COOP and
COEP (a worker sharing memory needs them), no cross-origin isolation: plain Pyodide on the
main thread does not need it.

A page signals the end by setting `data-bench="done"` (result in `window.benchResult`)
or `data-bench="error"` (message in `window.benchError`) on `<html>`; `run()` waits for
that attribute, never for a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import ConsoleMessage, Page, sync_playwright
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.app import create_app
from harness.servers import CHROMIUM, serve_app
from harness.servers import CHROMIUM_ARGS as BROWSER_ARGS

ROOT = Path(__file__).resolve().parents[1]
BENCH_DIR = ROOT / "bench"

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "BenchFailed", "BenchPage", "bench_app", "bench_page"]

# `--expose-gc` lets a page collect garbage before each timed run, as the CPython
# benchmarks do with gc.collect().
CHROMIUM_ARGS = (*BROWSER_ARGS, "--js-flags=--expose-gc")
#: Pyodide boots in 3–7 s here (FACTS); a benchmark then runs for tens of seconds more.
DEFAULT_TIMEOUT_MS = 300_000


class BenchFailed(RuntimeError):
    """The page reported an error, or threw one uncaught."""


class _Isolation:
    """Cross-origin isolation headers on every response that lacks them."""

    HEADERS = (
        (b"cross-origin-opener-policy", b"same-origin"),
        (b"cross-origin-embedder-policy", b"require-corp"),
        (b"cross-origin-resource-policy", b"same-origin"),
    )

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_isolated(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in self.HEADERS if k not in names]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_isolated if scope["type"] == "http" else send)


def bench_app(files: Mapping[str, bytes], *, isolated: bool = False) -> ASGIApp:
    """The gateway app with the bench routes in front of it."""
    data = dict(files)

    async def data_file(request: Request) -> Response:
        body = data.get(request.path_params["name"])
        if body is None:
            return Response(status_code=404)
        return Response(body, media_type="application/octet-stream", headers={"cache-control": "no-store"})

    app = Starlette(
        routes=[
            Route("/bench/data/{name}", data_file),
            Mount("/bench/node_modules", app=StaticFiles(directory=ROOT / "node_modules")),
            Mount("/bench", app=StaticFiles(directory=BENCH_DIR)),
            Mount("/", app=create_app()),
        ]
    )
    return _Isolation(app) if isolated else app


class BenchPage:
    """A Chromium page on the bench server, with what it printed."""

    def __init__(self, page: Page, base_url: str, browser_version: str) -> None:
        self.page = page
        self.base_url = base_url
        self.browser_version = browser_version
        self.console: list[str] = []
        self.page_errors: list[str] = []
        page.on("console", self._on_console)
        page.on("pageerror", lambda error: self.page_errors.append(str(error)))

    def _on_console(self, msg: ConsoleMessage) -> None:
        self.console.append(f"{msg.type}: {msg.text}")

    def run(self, path: str, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> Any:
        """Open `path`, wait until the page marks itself done, return its result."""
        self.page.goto(self.base_url + path)
        self.page.wait_for_selector("html[data-bench]", state="attached", timeout=timeout_ms)
        state = self.page.get_attribute("html", "data-bench")
        if state != "done" or self.page_errors:
            message = self.page.evaluate("() => String(window.benchError ?? '')")
            log = "\n".join([*self.console, *self.page_errors])
            raise BenchFailed(f"{path}: {message or self.page_errors}\n--- page console ---\n{log}")
        return self.page.evaluate("() => window.benchResult")


@contextmanager
def bench_page(
    files: Mapping[str, bytes] | None = None,
    *,
    isolated: bool = False,
    extra_args: Sequence[str] = (),
) -> Iterator[BenchPage]:
    """Serve the gateway plus bench files; yield a fresh Chromium page on that server.

    `files` are served at /bench/data/<name>; `isolated` makes bench pages cross-origin
    isolated; `extra_args` go to Chromium after the standard ones.
    """
    with serve_app(bench_app(files or {}, isolated=isolated)) as base_url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args])
        try:
            context = browser.new_context()
            yield BenchPage(context.new_page(), base_url, browser.version)
            context.close()
        finally:
            browser.close()
