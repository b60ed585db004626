"""Chromium for tests and benchmarks: Debian's browser driven by Playwright, device
profiles, warm contexts handed from test to test, a watched page that fails on an
uncaught error, and what a user and a test do with the page (send, ask, steer the
built-in model, read what it sent and kept, frames and embedders).

The pytest fixtures over these are in tests/e2e/conftest.py; benchmarks import the
same helpers from here (a benchmark never imports a test module)."""

from __future__ import annotations

import gzip
import json
import re
from contextlib import contextmanager
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

import httpx
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Frame, Page, Route, expect

from harness.servers import CHROMIUM, CHROMIUM_ARGS as ARGS  # noqa: F401 - re-exported for tests and benches
from harness.stored import stored_messages

#: The phone the tests are: a Pixel 7 as Playwright describes it (412×915, touch), and a desktop.
PIXEL_7 = {
    "viewport": {"width": 412, "height": 839}, "screen": {"width": 412, "height": 915},
    "device_scale_factor": 2.625, "is_mobile": True, "has_touch": True,
    "user_agent": "Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/159.0 Mobile Safari/537.36",
}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}

#: Python boot in a PyScript worker takes seconds on this machine (FACTS: 5–7 s cold).
BOOT_TIMEOUT_MS = 90_000


class WarmContexts:
    """Boot once, test many: one browser context per set of options (a device profile,
    `bypass_csp`), handed to test after test, across the worker's test files, with its
    storage cleared.

    A test that asks for a page gets a new page in a context whose every origin lost
    what a user's data is made of (`Storage.clearDataForOrigin`: localStorage,
    IndexedDB, cookies, file systems), whose routes, offline switch and permissions were
    reset: to the page, a returning visitor with no conversations and no settings, the
    way a phone usually opens it. What stays is the installed app: the service worker,
    its Cache Storage (the offline copy and the snapshot of Python) and the browser's own
    HTTP cache and, with it, V8's cache of the compiled interpreter (WebAssembly code
    caching). A first visit's service-worker install copies every file the page loads
    (45 MB decoded) into Cache Storage: done once per context instead of once per test,
    it halves the CPU a test's boot costs, and this machine's two cores are what bound
    the suite. Tests of what a first visit downloads or how a cold boot goes (test_boot,
    test_network, test_compressed, test_sw_policy) make their own fresh contexts, and a
    test that routes the page's static files asks for `fresh=True` (the service worker
    would answer them from its cache, past the route).
    """

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.idle: dict[str, tuple[BrowserContext, set[str]]] = {}

    def page(self, options: dict[str, Any], fresh: bool = False) -> tuple[Page, Callable[[], None]]:
        """A page on a clean context with `options`, and how to give it back; `fresh`:
        on a new context of its own, closed afterwards (a first visit, no service worker)."""
        if fresh:
            context = self.browser.new_context(**options)
            return context.new_page(), lambda: _close_quietly(context)
        key = json.dumps(options, sort_keys=True, default=str)
        idle = self.idle.pop(key, None)
        if idle is not None:
            context, origins = idle
        else:
            context, origins = self.browser.new_context(**options), set()
            # The origins that may hold a user's data are those its documents were at
            # (a page, a frame, a popup; workers share their document's origin). Told by
            # navigations, not by every request: each event a test listens to crosses
            # from the browser to this process, and a warm boot makes ~100 requests.
            context.on("page", lambda p: p.on("framenavigated", lambda f: origins.add(_origin(f.url))))
        page = context.new_page()
        if origins:
            cdp = context.new_cdp_session(page)
            for origin in sorted(o for o in origins if o):
                cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": USER_DATA})
            cdp.detach()

        def give_back() -> None:
            try:
                for p in context.pages:
                    p.close()
                context.unroute_all(behavior="ignoreErrors")
                context.set_offline(False)
                context.clear_permissions()
                context.clear_cookies()
            except Exception:  # the test closed or broke it: the next one gets a new context
                _close_quietly(context)
                return
            self.idle[key] = (context, origins)

        return page, give_back

    def close(self) -> None:
        for context, _ in self.idle.values():
            _close_quietly(context)
        self.idle.clear()


#: What `Storage.clearDataForOrigin` wipes between tests: everything but the installed
#: app (`service_workers`, `cache_storage`).
USER_DATA = "cookies,indexeddb,local_storage,file_systems,websql,shared_storage,storage_buckets"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else ""


def _close_quietly(context: BrowserContext) -> None:
    try:
        context.close()
    except Exception:
        pass


_POOLS: dict[Browser, WarmContexts] = {}


@contextmanager
def warm_contexts(browser: Browser) -> Iterator[Browser]:
    """`browser`, with warm contexts that `watched_page` hands out, closed at the end."""
    _POOLS[browser] = WarmContexts(browser)
    try:
        yield browser
    finally:
        _POOLS.pop(browser).close()


class Console:
    """Everything the page printed; uncaught page errors fail the test."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.page_errors: list[str] = []

    def on_console(self, msg: ConsoleMessage) -> None:
        self.messages.append(f"{msg.type}: {msg.text}")

    def on_error(self, error: Exception) -> None:
        self.page_errors.append(str(error))


def watched_page(browser: Browser, console: Console, fresh: bool = False, **context_options: Any) -> Iterator[Page]:
    """A page with no conversations and no settings, in a warm context
    (`context_options`: a device profile, say; `WarmContexts`) or, with `fresh`, a new
    one; its console is kept, and once the test is done it fails on an uncaught error or
    a CSP violation.

    A colour scheme is the page's (`emulate_media`), not the context's: one warm context
    per device then serves both themes, and each context a worker opens costs a first
    visit's install."""
    color_scheme = context_options.pop("color_scheme", None)
    p, give_back = _POOLS[browser].page(context_options, fresh)
    if color_scheme is not None:
        p.emulate_media(color_scheme=color_scheme)
    p.on("console", console.on_console)
    p.on("pageerror", console.on_error)
    yield p
    give_back()
    # Shown by pytest when the test failed: what the page said, in order.
    print("\n".join(["--- page console ---", *console.messages]))
    assert not console.page_errors, f"uncaught errors in the page: {console.page_errors}"
    violations = [m for m in console.messages if "Content Security Policy" in m]
    assert not violations, f"the page broke its own CSP: {violations}"


def wait_ready(page: Page) -> None:
    """Wait until Python answered `hello`; fail at once, with the reason, if boot failed."""
    page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]', state="attached", timeout=BOOT_TIMEOUT_MS)
    state = page.get_attribute("html", "data-python")
    assert state == "ready", f"Python did not start: {page.inner_text('#boot')}"


def add_frame(page: Page, src: str) -> None:
    """Append an iframe of `src` to `page` and wait for its load."""
    page.evaluate(
        """(src) => new Promise((resolve) => {
          const frame = document.createElement('iframe');
          frame.src = src;
          frame.addEventListener('load', resolve, { once: true });
          document.body.append(frame);
        })""",
        src,
    )


def frame_of(page: Page, origin: str) -> Frame:
    """The frame of `page` whose document is of `origin`."""
    frame = next((f for f in page.frames if f.url.startswith(origin)), None)
    assert frame is not None, [f.url for f in page.frames]
    return frame


def attach_embedder(page: Page) -> None:
    """`page`, an embedder of the page in its first iframe, attaches as a host with a
    port of its own and waits for `ready`. What the page sends it lands in
    `window.__fromPage`; `window.__port` is its end of the channel."""
    page.evaluate("""() => {
      const channel = new MessageChannel();
      window.__fromPage = [];
      channel.port1.onmessage = (e) => window.__fromPage.push(JSON.parse(e.data));
      window.__port = channel.port1;
      document.querySelector('iframe').contentWindow.postMessage(
        JSON.stringify({ type: 'hello', id: 'attach' }), '*', [channel.port2]);
    }""")
    page.wait_for_function("window.__fromPage.some((m) => m.type === 'ready' && m.id === 'attach')", timeout=BOOT_TIMEOUT_MS)


#: A JavaScript expression: a promise of the first contentful paint's time (ms from
#: navigation), one already painted included (`buffered`). For a page whose CSP allows no
#: eval (no `wait_for_function`): tests/e2e/test_inline_page.py, bench/network.py.
FIRST_PAINT = """new Promise((done) => {
  const seen = () => performance.getEntriesByName('first-contentful-paint')[0];
  if (seen()) return done(seen().startTime);
  new PerformanceObserver((list, observer) => {
    const entry = list.getEntriesByName('first-contentful-paint')[0];
    if (entry) { observer.disconnect(); done(entry.startTime); }
  }).observe({ type: 'paint', buffered: true });
})"""

ANSWER = '.msg[data-role="assistant"]'
CONTENT = f"{ANSWER} .content"
PIECE = re.compile(r"\s*\S+|\s+")  # how the built-in model splits an answer into tokens


def steer(page: Page, sim: str, *, keep_changes: bool = False, **settings: object) -> None:
    """Have the page send `x-firsttoken-sim: <sim>` (the built-in model's pace and faults,
    through settings.headers, which have no UI), with any other stored `settings`
    (`compress="off"`), from the next load on. Set again on every load, unless
    `keep_changes`: then only where nothing is stored, so a test may change the
    settings in the page and reload."""
    value = json.dumps({"headers": {"x-firsttoken-sim": sim}, **settings})
    key = "'firsttoken.settings.v1'"
    guard = f"if (!localStorage.getItem({key})) " if keep_changes else ""
    page.add_init_script(f"{guard}localStorage.setItem({key}, {json.dumps(value)})")


def scroll_at_rest(page: Page) -> float:
    """`#chat`'s scrollTop once a scroll has come to rest (Chromium animates a wheel's
    scroll, and `mouse.wheel` returns before it ends): the same for 3 frames in a row,
    or where it is after 120 frames (a view that keeps moving fails the caller's check)."""
    return page.evaluate("""() => new Promise((resolve) => {
      const chat = document.getElementById('chat');
      let last = chat.scrollTop, same = 0, left = 120;
      const step = () => {
        const top = chat.scrollTop;
        same = top === last ? same + 1 : 0;
        last = top;
        if (same >= 3 || --left <= 0) resolve(top); else requestAnimationFrame(step);
      };
      requestAnimationFrame(step);
    })""")


def send(page: Page, text: str) -> None:
    """The user types `text` and taps Send."""
    page.fill("#prompt", text)
    page.get_by_role("button", name="Send", exact=True).click()


def ask(page: Page, text: str) -> None:
    """`send`, then wait until its answer is done."""
    n = page.locator(ANSWER).count()
    send(page, text)
    expect(page.locator(ANSWER)).to_have_count(n + 1)
    expect(page.locator(ANSWER).last).to_have_attribute("data-state", "done", timeout=60_000)


def expected_answer(gateway_url: str, messages: list[dict]) -> str:
    """The built-in model is deterministic: its non-streaming answer is the reference."""
    r = httpx.post(gateway_url + "/v1/chat/completions", headers={"x-firsttoken-sim": "ttft_ms=0"},
                   json={"model": "firsttoken-sim", "messages": messages}, timeout=30)
    return r.json()["choices"][0]["message"]["content"]


def stored_answers(page: Page) -> list[str]:
    """The assistant answers as the page stored them (raw markdown, not the rendering)."""
    return [m["content"] for m in stored_messages(page) if m["role"] == "assistant"]


def request_json(request: Any) -> Any:
    """A Playwright request's JSON body, as the server reads it: inflated when the page
    gzipped it (a firsttoken gateway takes `Content-Encoding: gzip`); {} without one."""
    data = request.post_data_buffer or b""
    if request.headers.get("content-encoding") == "gzip":
        data = gzip.decompress(data)
    return json.loads(data or b"{}")


def chat_bodies(page: Page) -> list[dict]:
    """The JSON bodies the page sends to /v1/chat/completions, as it sends them."""
    bodies: list[dict] = []
    page.on("request", lambda r: bodies.append(request_json(r)) if r.url.endswith("/v1/chat/completions") else None)
    return bodies


def user_chats(frame: Frame | Page, page: Page, text: str) -> dict[str, Any]:
    """The user sends `text` from the composer of `frame` (the page, or a frame of
    `page`); once its answer is done, the chat request it made: `url`, `authorization`,
    `body`. Counts done answers before, so a second chat waits for its own."""
    done = frame.locator(f'{ANSWER}[data-state="done"]')
    before = done.count()
    with page.expect_request(lambda r: r.url.endswith("/chat/completions")) as sent:
        frame.fill("#prompt", text)
        frame.press("#prompt", "Enter")
    expect(done).to_have_count(before + 1, timeout=60_000)
    request = sent.value
    return {"url": request.url, "authorization": request.headers.get("authorization"),
            "body": request_json(request)}


# The runtime's wasm, as the page's boot requests it (held to keep Python from loading).
WASM = re.compile(r"/vendor/pyodide/pyodide\.asm\.wasm$")


class Held:
    """Holds every request matching `pattern` until `release`, then lets them (and any
    later one) through: what the page does before a download lands, waited on by the
    test, never timed."""

    def __init__(self, page: Page, pattern: re.Pattern[str]) -> None:
        self.held: list[Route] = []
        self.released = False
        page.context.route(pattern, self._route)

    def _route(self, route: Route) -> None:
        if self.released:
            route.continue_()
        else:
            self.held.append(route)

    def release(self) -> None:
        self.released = True
        for route in self.held:
            route.continue_()
