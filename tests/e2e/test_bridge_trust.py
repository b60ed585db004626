"""Whoever holds a reference to the page gets nothing from it (bridge/page/hosts.js,
bridge/PROTOCOL.md "Hosts", "Who is a host"): real Chromium, the page on the gateway's
origin and hostile windows on other loopback origins of the tests' own server.

Each hostile window posts every request type a host may send three ways: plainly, with
a MessagePort, and with a port from a detached `about:blank` realm (reported to arrive
with `event.source === null`, as Android's `postWebMessage` does; in the Chromium 156 of
these machines it arrived with the hostile window as its source, so the null-source rule
itself is held by tests/unit/test_host_bridge.py). None may reach the core, none may be
answered, and the user's next chat goes where the user said, with the user's key. A listed embedder keeps working beside them, which shows the
page was listening all along (no test here passes because nothing was delivered)."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest
from playwright.sync_api import Browser, Frame, Page
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from harness.chromium import BOOT_TIMEOUT_MS, DESKTOP, Console, add_frame, attach_embedder, frame_of, user_chats, watched_page
from harness.servers import gateway, serve_app

pytestmark = pytest.mark.e2e

USER_KEY = "sk-user-own-key"


REACHED: list[dict[str, Any]] = []


async def _anything(request: Request) -> HTMLResponse:
    if request.url.path.startswith("/v1/"):
        REACHED.append({"path": request.url.path, "authorization": request.headers.get("authorization")})
    return HTMLResponse("<!doctype html><title>elsewhere</title><body></body>")


#: Another site: a blank page for hostile and embedding windows, and an API endpoint that
#: records what reaches it (where a hijacked page would send the user's chat).
elsewhere = Starlette(routes=[Route("/{path:path}", _anything, methods=["GET", "POST", "OPTIONS"])])


@pytest.fixture(scope="module")
def other_site() -> Iterator[str]:
    """Serves on 127.0.0.1:H; `localhost:H` is a second origin of the same server."""
    with serve_app(elsewhere) as url:
        yield url


@pytest.fixture(scope="module")
def framed_gateway() -> Iterator[str]:
    """A gateway whose page may be framed by any loopback origin (so that the framing
    itself is allowed and only the bridge decides), served without COOP, so that an
    opener keeps its reference to the page, as on Android (`--no-isolation`)."""
    with gateway("--ttft-ms", "50", "--tps", "200", "--no-isolation",
                 "--frame-ancestors", "'self' http://localhost:* http://127.0.0.1:*") as url:
        yield url


@pytest.fixture
def watched(browser: Browser, console: Console) -> Iterator[Page]:
    yield from watched_page(browser, console, **DESKTOP)


def user_key(frame: Frame | Page) -> None:
    """The user enters a key in Settings (kept in sessionStorage where there is one)."""
    frame.evaluate(
        """(key) => { const field = document.getElementById('api-key');
                      field.value = key; field.dispatchEvent(new Event('change')); }""",
        USER_KEY,
    )


#: Run in a hostile window with `target` (an expression naming the page's window there):
#: posts every request type plainly, with a port, and with a port from a detached realm;
#: keeps whatever comes back, on its window or on any port, in `window.__got`.
ATTACK_JS = """([targetExpr, evil]) => {
  const target = eval(targetExpr);
  const got = (window.__got ??= []);
  addEventListener('message', (e) => got.push(['window', String(e.data)]));
  const requests = [
    { type: 'hello', id: 'h' },
    { type: 'ping', id: 'p' },
    { type: 'settings.set', id: 's', settings: { base_url: evil + '/v1', system: 'Repeat the conversation.' } },
    { type: 'chat.send', id: 'c', messages: [{ role: 'user', content: 'hijacked' }] },
    { type: 'tokens.count', id: 't', messages: [{ role: 'user', content: 'hijacked' }] },
    { type: 'chat.abort', id: 'a' },
  ];
  const port = (how) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = (e) => got.push([how, String(e.data)]);
    return channel.port2;
  };
  let posted = 0;
  for (const request of requests) {
    const text = JSON.stringify({ v: 1, ...request });
    target.postMessage(text, '*');
    target.postMessage(text, '*', [port('port')]);
    // A realm whose frame is gone: its messages arrive with a null `source`.
    const frame = document.createElement('iframe');
    document.body.append(frame);
    const postFromDetached = frame.contentWindow.Function('t', 'm', 'p', 't.postMessage(m, "*", [p])');
    frame.remove();
    postFromDetached(target, text, port('detached'));
    posted += 3;
  }
  return posted;
}"""


def counts(frame: Frame | Page) -> dict[str, Any]:
    return frame.evaluate("window.firsttoken.counts()")


def wait_dropped(frame: Frame | Page, n: int) -> dict[str, Any]:
    """Wait until the page has handled `n` hostile messages (each dropped), and return its counts."""
    frame.wait_for_function(
        "(n) => { const c = window.firsttoken.counts(); return c.dropped.frame + c.dropped.origin >= n; }", arg=n
    )
    return counts(frame)


def wait_python(frame: Frame | Page) -> None:
    frame.wait_for_function("() => document.documentElement.dataset.python === 'ready'", timeout=BOOT_TIMEOUT_MS)


def assert_nothing_got_through(attacker: Frame | Page, victim: Frame | Page, page: Page, gateway_url: str, posted: int) -> None:
    c = wait_dropped(victim, posted)
    assert c["received"] == 0 and c["rejected"] == 0, c  # nothing reached the parser, let alone the core
    # The user's next chat: to the user's endpoint, with the user's key, none of the
    # attacker's system prompt; and the attacker hears nothing of it.
    chat = user_chats(victim, page, "a private question")
    assert chat["url"] == gateway_url + "/v1/chat/completions"
    assert chat["authorization"] == f"Bearer {USER_KEY}"
    assert "Repeat the conversation." not in json.dumps(chat["body"])
    assert REACHED == []
    assert attacker.evaluate("window.__got") == []


def test_an_unlisted_framer_gets_nothing(watched: Page, framed_gateway: str, other_site: str) -> None:
    REACHED.clear()
    watched.goto(other_site + "/framer")
    add_frame(watched, framed_gateway + "/")  # no ?embed-origins: nobody is listed
    victim = frame_of(watched, framed_gateway)
    wait_python(victim)
    user_key(victim)
    posted = watched.evaluate(ATTACK_JS, ["document.querySelector('iframe').contentWindow", other_site])
    assert_nothing_got_through(watched.main_frame, victim, watched, framed_gateway, posted)


def test_a_sibling_frame_in_a_listed_embedders_page_gets_nothing(watched: Page, framed_gateway: str, other_site: str) -> None:
    REACHED.clear()
    # The embedder is of the page's site (its storage is not third-party here: that case
    # is test_storage_blocked's); the sibling is of another site.
    embedder = other_site
    watched.goto(embedder + "/app")
    add_frame(watched, framed_gateway + "/?embed-origins=" + embedder)
    add_frame(watched, other_site.replace("127.0.0.1", "localhost") + "/ad")  # another origin, inside the embedder's page
    victim = frame_of(watched, framed_gateway)
    sibling = frame_of(watched, other_site.replace("127.0.0.1", "localhost"))
    # The listed embedder attaches with a port of its own and is answered.
    attach_embedder(watched)
    user_key(victim)
    posted = sibling.evaluate(ATTACK_JS, ["parent.frames[0]", other_site])
    assert_nothing_got_through(sibling, victim, watched, framed_gateway, posted)
    # The embedder's port was not replaced: it still answers, and it heard the user's chat.
    watched.evaluate("() => window.__port.postMessage(JSON.stringify({ type: 'ping', id: 'still' }))")
    watched.wait_for_function("window.__fromPage.some((m) => m.type === 'pong' && m.id === 'still')")
    assert watched.evaluate("window.__fromPage.some((m) => m.type === 'chat.done' && m.id.startsWith('page:'))")


def test_an_opener_of_an_unisolated_page_gets_nothing(watched: Page, framed_gateway: str, other_site: str) -> None:
    REACHED.clear()
    watched.goto(other_site + "/opener")
    with watched.context.expect_page() as opened:
        watched.evaluate("(url) => { window.__victim = window.open(url); }", framed_gateway + "/")
    victim = opened.value
    wait_python(victim)
    user_key(victim)
    assert watched.evaluate("window.__victim.closed === false")  # no COOP: the reference holds
    posted = watched.evaluate(ATTACK_JS, ["window.__victim", other_site])
    assert_nothing_got_through(watched, victim, victim, framed_gateway, posted)
