"""A first visit paints its composer with the HTML alone in WebKitGTK too (the engine of
iOS's WKWebView; issue 45, item 2): a gateway of the test's own holds all four of the
page's stylesheets for the whole test, and the page still paints (Paint Timing's
first-contentful-paint), with the inline block's styles, and takes Send. WebKit holds
its first paint for sheets pending in <head> (Style::Scope::hasPendingSheetsBeforeBody),
which is why index.html adds the stylesheets to <body> (docs/boot.md, "Send with the
HTML alone")."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import pytest
from starlette.types import Receive, Scope, Send

from harness.gtk import WebKitHost, Xvfb
from harness.webkit import HoldingGateway, serving, wait, watched

pytestmark = pytest.mark.e2e

SHEETS = re.compile(r"^/js/.*\.css$")


class SheetsHeld(HoldingGateway):
    """The page's stylesheets wait until the test ends; the chat POSTs are counted."""

    def __init__(self) -> None:
        super().__init__()
        self.posts = 0
        self.asked = threading.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            if SHEETS.match(scope["path"]):
                self.asked.set()
                await self.hold()
            if scope["method"] == "POST" and scope["path"] == "/v1/chat/completions":
                self.posts += 1
        await self.app(scope, receive, send)


@pytest.fixture
def served() -> Iterator[tuple[str, SheetsHeld]]:
    yield from serving(SheetsHeld())


@pytest.fixture
def host(xvfb: Xvfb, served: tuple[str, SheetsHeld]) -> Iterator[WebKitHost]:
    with watched(served[0] + "/healthz", xvfb.display) as h:
        h.wait_event(lambda e: e["event"] == "load", 60)
        yield h


def test_the_composer_paints_and_sends_with_the_stylesheets_held(host: WebKitHost, served: tuple[str, SheetsHeld]) -> None:
    url, holding = served
    host.load(url + "/")
    # The new document asked for a stylesheet: the old one is gone, evals go to the page.
    assert holding.asked.wait(60)
    wait(host, "document.documentElement.dataset.sendReady !== undefined")
    wait(host, "performance.getEntriesByType('paint').some((e) => e.name === 'first-contentful-paint')")
    assert holding.held == 4, "the stylesheets were not all held"
    assert host.eval("[...document.querySelectorAll('link[rel=stylesheet]')].every((l) => !l.sheet)") is True
    # Painted with the inline block: the composer's rounded box.
    assert host.eval("getComputedStyle(document.querySelector('.box')).borderTopLeftRadius") == "22.4px"
    host.eval("document.getElementById('prompt').value = 'Hello from a phone', document.getElementById('send').click(), true")
    wait(host, "document.querySelector('.msg[data-role=assistant]')?.dataset.state === 'done'")
    assert holding.posts == 1 and holding.held == 4
