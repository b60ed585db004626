"""Send from the moment the composer shows, in WebKitGTK (the engine of iOS's WKWebView)
through the real host (issue 45, item 2): a gateway of the test's own holds the page's
own modules back until the test lets them go, which it does only once the Send's request
has reached it. A prompt sent on a first visit goes out from the page's first step
(js/boot/first-send.js) in each of the three APIs, with `x-firsttoken-prepare`, streams
into the page, and once the modules are in the page claims that request
(js/page/early-send.js): one POST, the answer ended and stored as any other."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator

import pytest
from starlette.types import Receive, Scope, Send

from gateway.prepare import PREPARE_HEADER
from harness.gtk import WebKitHost, Xvfb
from harness.webkit import HoldingGateway, serving, stored_answers, wait, watched

pytestmark = pytest.mark.e2e

#: The page's entry module that all the rest hangs on: while it is held, no module of the
#: page's graph runs (a module graph is evaluated once every module of it has arrived).
#: One request held, not sixty: a held request keeps its connection, and WebKit opens
#: six per host (HTTP/1.1), which sixty held ones would take from the Send's request.
MODULES = re.compile(r"^/js/page/page\.js$")
#: Held for the whole test: nothing here could have come from Python.
WASM = "/vendor/pyodide/pyodide.asm.wasm"
FIRST_STEP = "/js/boot/first-send.js"
PATHS = {"chat_completions": "/v1/chat/completions", "responses": "/v1/responses",
         "anthropic_messages": "/v1/messages"}
ANSWER = "document.querySelector('.msg[data-role=assistant]')"


class ModulesHeld(HoldingGateway):
    """The page's modules wait until `release()`, the runtime's wasm until the test ends;
    each chat POST is recorded (path, the prepare header) and told (`posted`), as is the
    first step being asked for (`first_step`)."""

    def __init__(self) -> None:
        super().__init__()
        self.done = threading.Event()
        self.posts: list[tuple[str, str | None]] = []
        self.posted = threading.Event()
        self.first_step = threading.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            if path == FIRST_STEP:
                self.first_step.set()
            if MODULES.match(path) and not self.released.is_set():
                await self.hold()
            if path == WASM:  # not counted in `held`: that says the modules were
                await asyncio.to_thread(self.done.wait)
            if scope["method"] == "POST" and path in PATHS.values():
                header = dict(scope["headers"]).get(PREPARE_HEADER.encode())
                self.posts.append((path, header.decode() if header else None))
                self.posted.set()
        await self.app(scope, receive, send)

    def end(self) -> None:
        super().end()
        self.done.set()


@pytest.fixture
def served() -> Iterator[tuple[str, ModulesHeld]]:
    yield from serving(ModulesHeld())


@pytest.fixture
def host(xvfb: Xvfb, served: tuple[str, ModulesHeld]) -> Iterator[WebKitHost]:
    """A first visit (an ephemeral profile), begun on a page of the same origin with no
    script of its own, where the test stores its settings before the page loads."""
    with watched(served[0] + "/healthz", xvfb.display) as h:
        h.wait_event(lambda e: e["event"] == "load", 60)
        yield h


@pytest.mark.parametrize("api", list(PATHS))
def test_a_prompt_sent_before_the_modules_load_streams_and_is_kept_in_each_api(
        host: WebKitHost, served: tuple[str, ModulesHeld], api: str) -> None:
    url, holding = served
    settings = json.dumps({"api": api})
    host.eval(f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(settings)}), true")
    host.load(url + "/")
    # The new document asked for its first step: the old one is gone, evals go to the page.
    assert holding.first_step.wait(60)
    wait(host, "document.documentElement.dataset.sendReady !== undefined")
    host.eval("document.getElementById('prompt').value = 'Hello from a slow phone',"
              " document.getElementById('send').click(), true")
    assert holding.posted.wait(30), "the Send made no request"
    assert holding.posts == [(PATHS[api], "balanced")]
    assert holding.held, "the page's modules were not held"
    assert host.eval("document.documentElement.dataset.interactive ?? null") is None
    # Streamed into the page by its first step, the page's modules still held.
    wait(host, f"{ANSWER}?.dataset.state === 'done'")
    streamed = host.eval(f"{ANSWER}.querySelector('.content').textContent")
    assert streamed.strip()
    assert host.eval("document.documentElement.dataset.interactive ?? null") is None

    holding.release()
    wait(host, "document.documentElement.dataset.interactive !== undefined")
    wait(host, f"{ANSWER}?.dataset.state === 'done' && document.querySelectorAll('.msg').length === 2")
    # One POST, claimed by the page; the answer stored as any other.
    assert holding.posts == [(PATHS[api], "balanced")]
    assert stored_answers(host) == [streamed]
