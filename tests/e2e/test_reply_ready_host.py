""""Reply ready" through the React-Native-like host in Chromium (issue 46, item 4;
bridge/PROTOCOL.md "Reply ready, for hosts"): an answer done while the page is hidden
is posted to the host as `reply.ready` with the conversation's title and the answer's
first words; one done while the page shows is not.

Hidden is played by the page's `document.visibilityState` (a headless page is always
visible), switched with a `visibilitychange` event as the browser sends it. No sleeps."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page

from harness.chromium import wait_ready
from tests.e2e.native_host import as_host, host_message, post

pytestmark = pytest.mark.e2e

HIDEABLE = """(() => {
  let hidden = false;
  Object.defineProperty(Document.prototype, 'visibilityState', { get() { return hidden ? 'hidden' : 'visible'; }, configurable: true });
  Object.defineProperty(Document.prototype, 'hidden', { get() { return hidden; }, configurable: true });
  window.__hide = (h) => { hidden = h; document.dispatchEvent(new Event('visibilitychange')); };
})();"""


def ready_messages(page: Page) -> list[dict]:
    return page.evaluate("() => window.__toHost.map((t) => JSON.parse(t)).filter((m) => m.type === 'reply.ready')")


def ask(page: Page, text: str, n: int) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")
    page.wait_for_function("(n) => document.querySelectorAll('.msg[data-role=\"assistant\"][data-state=\"done\"]').length >= n",
                           arg=n, timeout=60_000)


def test_reply_ready_is_posted_only_when_hidden(page: Page, gateway_url: str) -> None:
    as_host(page)
    page.add_init_script(HIDEABLE)
    page.goto(gateway_url + "/")
    wait_ready(page)
    post(page, {"type": "settings.set", "id": "s", "settings": {"headers": {"x-firsttoken-sim": "ttft_ms=200,tokens=60"}}})
    host_message(page, "settings.applied", "s")

    ask(page, "while you watch", 1)
    host_message(page, "chat.done")
    assert ready_messages(page) == []

    page.evaluate("() => window.__hide(true)")
    ask(page, "while you are away", 2)
    ready = host_message(page, "reply.ready")
    done_id = page.get_attribute('.msg[data-role="assistant"]:last-of-type', "data-id")
    assert ready["id"] == f"page:{done_id}"
    assert ready["conversation"]["title"] == page.inner_text("#conversation-title")
    assert ready["conversation"]["id"]
    assert ready["text"].startswith("You said: while you are away") and len(ready["text"]) <= 121, ready["text"]
    assert len(ready_messages(page)) == 1

    page.evaluate("() => window.__hide(false)")
    ask(page, "back again", 3)
    host_message(page, "chat.done", "page:" + page.get_attribute('.msg[data-role="assistant"]:last-of-type', "data-id"))
    assert len(ready_messages(page)) == 1
