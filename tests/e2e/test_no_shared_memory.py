"""Exact counts and the system-message cache where there is no SharedArrayBuffer (issue 12,
part 3), in real Chromium, two ways:

- served without COOP/COEP (`python -m gateway --no-isolation`): `crossOriginIsolated`
  is false, as in Android's WebView, which is never isolated;
- served isolated, with `SharedArrayBuffer` deleted before any script runs, in the page
  (an init script) and in the worker that runs Python (written into its source as it
  is served), as in WebKitGTK 2.50, which is isolated but exposes none.

Each time the prompt's count in `chat.prepared` equals the one CPython's tiktoken gives
(through `firsttoken.tokens`) for the messages the request carried, the composer's count
is exact, and a repeat takes the system message from the cache and sends a reference.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from firsttoken import tokens
from harness.chromium import Console, watched_page
from harness.protocol_spy import Chat, system_sent
from harness.servers import gateway

pytestmark = pytest.mark.e2e

NO_SAB = "delete globalThis.SharedArrayBuffer;"


@pytest.fixture(scope="module")
def unisolated_url() -> Iterator[str]:
    with gateway("--ttft-ms", "50", "--tps", "200", "--no-isolation") as url:
        yield url


#: Where PyScript builds its worker's script (@pyscript/core 0.7's bundle): a Blob of the
#: worker's code, which our deletion is put in front of.
WORKER_SOURCE = 'new Blob(["/*@*/"+'


def delete_sab_in_the_python_worker(page: Page) -> None:
    """The worker PyScript starts (where Python runs) loses `SharedArrayBuffer` before
    its first statement. Workers run no init scripts, and holding each one at start
    through the DevTools protocol raced with Playwright's own session (which resumes it),
    so PyScript's bundle is served with the deletion written into the worker's source.
    A bundle where that cannot be done fails here, loudly; the test also checks the
    worker for `SharedArrayBuffer` itself."""

    def patch(route: Route) -> None:
        response = route.fetch()
        body = response.text()
        if WORKER_SOURCE not in body:
            route.abort()
            pytest.fail(f"PyScript's worker source is not where it was: {route.request.url}")
        route.fulfill(response=response, body=body.replace(WORKER_SOURCE, WORKER_SOURCE[:-2] + NO_SAB + '"+', 1))

    page.route(re.compile(r"/vendor/pyscript/core-[^/]+\.js$"), patch)


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    # Its own context: the test routes the page's static files, which an installed
    # service worker would answer from its cache.
    yield from watched_page(browser, console, fresh=True)


def expected_prompt_tokens(body: dict[str, Any], system: str) -> int:
    """CPython's count (tiktoken) of the messages a request carried, a referenced system
    message counted with its text, as the core counts before replacing it."""
    messages = [{"role": "system", "content": system} if "x_firsttoken_ref" in m else m for m in body["messages"]]
    return tokens.count_chat(messages, body["model"])


def exact_with_the_cache(chat: Chat, page: Page) -> None:
    # The composer's live count, while typing: exact (no "≈").
    page.fill("#prompt", "how many tokens is this?")
    expect(page.locator("#count")).to_have_attribute("data-exact", "true", timeout=60_000)
    first = chat.send("first question")
    second = chat.send("second question")
    assert first["chat.done"] and second["chat.done"]
    system = system_sent(chat.bodies[0])["content"]
    # (`exact` in chat.prepared is about the chat format being verified for the model,
    # which the built-in model's is not; the tokens are counted exactly either way.)
    assert isinstance(first["chat.prepared"]["prompt_tokens"], int)
    assert first["chat.prepared"]["prompt_tokens"] == expected_prompt_tokens(chat.bodies[0], system)
    # The gateway counted what it received with tiktoken on CPython too.
    assert first["chat.done"]["usage"]["prompt_tokens"] == first["chat.prepared"]["prompt_tokens"]
    assert first["chat.prepared"]["cache"]["system"] == "miss"
    assert second["chat.prepared"]["cache"]["system"] == "hit"
    assert set(system_sent(chat.bodies[1])) == {"role", "x_firsttoken_ref"}
    assert second["chat.prepared"]["prompt_tokens"] == expected_prompt_tokens(chat.bodies[1], system)
    assert "notice" not in first and "notice" not in second


def test_exact_counts_and_the_cache_without_cross_origin_isolation(page: Page, unisolated_url: str) -> None:
    chat = Chat(page)
    chat.open(unisolated_url)
    # Python came from the gateway's install-time snapshot (`make deps` bakes it), which
    # holds no JavaScript: the tokenizer below is the one the boot registered again.
    [ready] = [e for e in page.evaluate("() => window.__ft.events") if e["type"] == "ready"]
    assert ready["boot"]["snapshot"] == "restored", "no snapshot for this package: run `make deps`"
    assert page.evaluate("[crossOriginIsolated, typeof SharedArrayBuffer]") == [False, "undefined"]
    assert chat.python_worker().evaluate("[crossOriginIsolated, typeof SharedArrayBuffer]") == [False, "undefined"]
    exact_with_the_cache(chat, page)


def test_exact_counts_and_the_cache_with_shared_memory_removed(page: Page, gateway_url: str) -> None:
    page.add_init_script(NO_SAB)
    delete_sab_in_the_python_worker(page)
    chat = Chat(page)
    chat.open(gateway_url)
    assert page.evaluate("[crossOriginIsolated, typeof SharedArrayBuffer]") == [True, "undefined"]
    assert chat.python_worker().evaluate("[crossOriginIsolated, typeof SharedArrayBuffer]") == [True, "undefined"]
    exact_with_the_cache(chat, page)
