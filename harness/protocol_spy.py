"""The protocol spy: an init script that hands the page's protocol to a test or a
benchmark (tests/e2e/test_cache_page.py, test_no_shared_memory.py, bench/cache.py), and
`Chat`, the page driven through it with the bodies it sent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, Worker, expect

from harness.chromium import ANSWER, request_json, wait_ready

#: A long system prompt, from the compression corpus (three of its system prompts).
SYSTEM = "\n\n".join(
    (Path(__file__).resolve().parents[1] / "tests" / "corpus" / "compress" / f"system-prompt-0{i}.md").read_text() for i in (1, 2, 3)
)

#: Test-only: hands the page's protocol to the test. Keeps the PyScript worker (to post
#: protocol messages to it) and every protocol event it sends, and marks each finished
#: request id on <html data-ft-finished> (Playwright waits on that: the page's CSP
#: forbids the eval that wait_for_function needs). bench/cache.py uses it too.
PROTOCOL_SPY = """
(() => {
  // `sent`: the page's requests as {type, id, length} (their size, not their text).
  window.__ft = { events: [], sent: [], worker: null };
  // js/link/python-link.js speaks the protocol over a MessageChannel handed to the worker with
  // `hello`: listen on the page's end of every channel, and keep the one that says `ready`.
  const Native = window.MessageChannel;
  window.MessageChannel = class extends Native {
    constructor() {
      super();
      const port = this.port1;
      const post = port.postMessage.bind(port);
      port.postMessage = (data, ...rest) => {
        if (typeof data === 'string' && data[0] === '{') {
          try {
            const msg = JSON.parse(data);
            window.__ft.sent.push({ type: msg.type, id: msg.id, length: data.length });
          } catch { /* not a protocol message */ }
        }
        return post(data, ...rest);
      };
      port.addEventListener('message', (event) => {
        if (typeof event.data !== 'string' || event.data[0] !== '{') return;
        let msg;
        try { msg = JSON.parse(event.data); } catch { return; }
        if (!msg || typeof msg.type !== 'string' || msg.type === 'boot.progress') return;
        if (msg.type === 'ready') window.__ft.worker = port;
        window.__ft.events.push(msg);
        if (msg.id && (msg.type === 'chat.done' || msg.type === 'chat.error' || msg.type === 'error')) {
          const html = document.documentElement;
          html.dataset.ftFinished = `${html.dataset.ftFinished || ''} ${msg.id}`.trim();
        }
      });
    }
  };
})();
"""

# The conversation starts with a long system message (an embedding host would send one;
# here the stored conversation holds it): seeded once per tab as the page before
# IndexedDB kept its conversation, which the page moves into IndexedDB on its first load.
SEED = (
    "if (!sessionStorage.getItem('seeded')) { sessionStorage.setItem('seeded', '1'); "
    "localStorage.setItem('firsttoken.history.v1', "
    f"JSON.stringify([{{role: 'system', content: {json.dumps(SYSTEM)}}}])); }}"
)


class Chat:
    """The page with the protocol spy, and the request bodies it sent."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.bodies: list[dict] = []
        self.statuses: list[int] = []
        self.client_ids: list[str | None] = []
        page.on("request", self._request)
        page.on("response", lambda r: self.statuses.append(r.status) if r.url.endswith("/v1/chat/completions") else None)
        page.add_init_script(PROTOCOL_SPY)
        page.add_init_script(SEED)
        self.turns = 0

    def _request(self, request: Any) -> None:
        if request.url.endswith("/v1/chat/completions"):
            self.bodies.append(request_json(request))
            self.client_ids.append(request.headers.get("x-firsttoken-client"))

    def open(self, url: str) -> None:
        self.page.goto(url + "/")
        wait_ready(self.page)

    def reload(self) -> None:
        self.page.reload()
        wait_ready(self.page)

    def send(self, text: str) -> dict[str, dict]:
        """Type `text`, send it, wait for the answer; the request's protocol events by type."""
        self.turns += 1
        n = self.page.locator(ANSWER).count()
        self.page.fill("#prompt", text)
        self.page.press("#prompt", "Enter")
        # This turn's answer, not the last one's (which is done already).
        expect(self.page.locator(ANSWER)).to_have_count(n + 1)
        answer = self.page.locator(ANSWER).last
        expect(answer).to_have_attribute("data-state", re.compile("^(done|error|stopped)$"), timeout=60_000)
        request_id = answer.get_attribute("data-id")
        events = [e for e in self.page.evaluate("() => window.__ft.events") if e.get("id") == request_id]
        return {e["type"]: e for e in events}

    def python_worker(self) -> Worker:
        # PyScript starts the worker that runs Python from a blob: URL.
        [worker] = [w for w in self.page.workers if w.url.startswith("blob:")]
        return worker


def system_sent(body: dict) -> dict:
    return body["messages"][0]
