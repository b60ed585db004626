"""Scrolling in WebKitGTK (issue 14, item 5): the view stays at the end when an answer
finishes and opens at the end after a reload. WebKit is where it jumped furthest (to
the top), from the same cause as in Chromium (tests/e2e/test_shell.py)."""

from __future__ import annotations

import json

import pytest

from harness.webkit import BOOT_TIMEOUT_S, assert_clean_console
from harness.gtk import WebKitHost, Xvfb

pytestmark = pytest.mark.e2e

# Resolves, once the `n`-th answer is in state `state` (its metrics in) and three frames have passed, with
# the view's distance to the end and the conversation's scroll height.
SETTLED = """new Promise((resolve) => {
  const chat = document.getElementById('chat');
  const check = () => {
    const answers = document.querySelectorAll('.msg[data-role="assistant"]');
    const want = %(state)s;
    const last = answers[%(n)d - 1];
    // A finished answer's last change is its Details toggle, once its metrics are in.
    if (!last || (want !== null && (last.dataset.state !== want || !last.dataset.metrics))) return false;
    let frames = 3;
    const step = () => {
      if (frames-- > 0) return requestAnimationFrame(step);
      resolve({ distance: chat.scrollHeight - chat.scrollTop - chat.clientHeight,
                height: chat.scrollHeight, client: chat.clientHeight });
    };
    step();
    return true;
  };
  if (!check()) {
    const watch = new MutationObserver(() => { if (check()) watch.disconnect(); });
    watch.observe(document.getElementById('messages'), { subtree: true, childList: true, attributes: true });
  }
})"""


def settled(host: WebKitHost, n: int, state: str | None) -> dict:
    return host.eval(SETTLED % {"n": n, "state": json.dumps(state)}, timeout=90)


def reload(host: WebKitHost, url: str) -> None:
    start = len(host.messages)
    host.load(url)
    host.wait_for(lambda m: m.get("type") == "ready", BOOT_TIMEOUT_S, start=start)


def test_the_view_stays_at_the_end_when_an_answer_finishes_and_after_a_reload(xvfb: Xvfb, gateway_url: str) -> None:
    url = gateway_url + "/"
    with WebKitHost(url, display=xvfb.display) as host:
        host.wait_for(lambda m: m.get("type") == "ready", BOOT_TIMEOUT_S)
        settings = json.dumps({"headers": {"x-firsttoken-sim": "ttft_ms=0,tps=400,tokens=600"}})
        host.eval(f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(settings)}), 1")
        reload(host, url)
        for i in (1, 2):
            host.eval(f"document.getElementById('prompt').value = 'a long answer {i}', "
                      "document.getElementById('send').click(), 1")
            after = settled(host, i, "done")
            assert after["height"] > 2 * after["client"], after
            assert after["distance"] <= 1, after
        reload(host, url)
        # Answers from history carry no state: painted at start, followed to the end.
        after = settled(host, 2, None)
        assert after["distance"] <= 1, after
        assert_clean_console(host)
