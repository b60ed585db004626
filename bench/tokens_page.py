"""The tokenizer's test and bench page (bench/tokens_page.html), served like the app.

    with serve() as url, open_page(browser, url) as page:
        page.run("from firsttoken import tokens\\nstr(tokens.count('hi', 'gpt-4o'))")

The server is the app's own static routes (`gateway.static.routes()`: /js/, /vendor/,
/py/firsttoken.zip) plus the three bench/tokens_page* files, behind the gateway's
security headers (its CSP included, and the cross-origin isolation the app is served
with), on a free loopback port in a thread of this process. The page runs Pyodide in a
worker without PyScript and lets the caller run Python there; it is not part of the app
and its "run Python" request exists only here.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from playwright.sync_api import Browser, Page
from starlette.applications import Starlette
from starlette.responses import FileResponse
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the repository is not on the path
    sys.path.insert(0, str(ROOT))

from gateway import static  # noqa: E402
from gateway.app import GatewayConfig  # noqa: E402
from gateway.headers import SecurityHeaders, content_security_policy  # noqa: E402
from harness.servers import CHROMIUM, CHROMIUM_ARGS, serve_app  # noqa: E402, F401 - CHROMIUM*: for bench/tokens.py

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "PAGE", "TokensPage", "load", "open_page", "serve"]

PAGE = "/bench/tokens_page.html"
FILES = {
    "tokens_page.html": "text/html; charset=utf-8",
    "tokens_page.mjs": "text/javascript; charset=utf-8",
    "tokens_page_worker.mjs": "text/javascript; charset=utf-8",
}
#: Pyodide starts in seconds here (shared FACTS: 3–7 s).
BOOT_TIMEOUT_MS = 90_000


def _file(name: str, media_type: str):
    path = Path(__file__).resolve().parent / name

    async def endpoint(request: Any) -> FileResponse:
        return FileResponse(path, media_type=media_type, headers={"cache-control": "no-cache"})

    return endpoint


def app() -> Starlette:
    routes = [Route(f"/bench/{name}", _file(name, media)) for name, media in FILES.items()]
    application = Starlette(routes=[*routes, *static.routes()])
    config = GatewayConfig()
    application.add_middleware(SecurityHeaders, csp=content_security_policy(config.connect_src, config.frame_ancestors))
    return application


def serve():
    """Serve the page; a context manager yielding the base URL."""
    return serve_app(app())


class TokensPage:
    """A loaded tokens page: `run(code, arg)` runs Python in its worker."""

    def __init__(self, page: Page) -> None:
        self.page = page

    def run(self, code: str, arg: Any = "") -> str:
        """Run `code` with ARG bound to `arg` (JSON-encoded unless a str); returns the
        str value of its last expression."""
        text = arg if isinstance(arg, str) else json.dumps(arg)
        return self.page.evaluate("([code, arg]) => window.tokensPage.run(code, arg)", [code, text])

    def run_json(self, code: str, arg: Any = "") -> Any:
        return json.loads(self.run(code, arg))


def load(page: Page, base_url: str) -> TokensPage:
    """Open the page and wait until its Python is ready (or fail with its reason)."""
    page.goto(base_url + PAGE)
    page.wait_for_selector('html[data-ready="yes"], html[data-ready="error"]', state="attached", timeout=BOOT_TIMEOUT_MS)
    if page.get_attribute("html", "data-ready") != "yes":
        raise RuntimeError(f"the tokens page did not start: {page.evaluate('window.tokensPage.error')}")
    return TokensPage(page)


@contextmanager
def open_page(browser: Browser, base_url: str) -> Iterator[TokensPage]:
    """A fresh context (empty HTTP cache) with the page loaded."""
    context = browser.new_context()
    try:
        yield load(context.new_page(), base_url)
    finally:
        context.close()
