"""The page in the reader's language in WebKitGTK (the engine of iOS's WKWebView),
through the real host (issue 44, item 1; js/page/i18n.js): a host's `settings.set`
`locale` makes the interface Chinese, with no English word of four letters or more
outside names, Settings open too; `null` gives the WebView's own language back. (The GTK
host sets no WebView language of its own, and this machine has no Chinese system locale
for WebKitGTK to take one from: its `navigator.language` is `C`, which the page reads
as English.) And an Arabic message reads right to left, its code left to right (issue 44,
item 5). In Chromium: tests/e2e/test_i18n.py."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.test_i18n import ARABIC, NAMES, SHOWN
from harness.webkit import of, wait
from harness.gtk import WebKitHost

pytestmark = pytest.mark.e2e


def english_words(host: WebKitHost) -> set[str]:
    model = host.eval("document.getElementById('model-name').textContent")
    texts = [re.sub(r"https?://\S+", "", t.replace(model, "")) for t in host.eval(f"({SHOWN})()")]
    return {w for t in texts for w in re.findall(r"[A-Za-z]{4,}", t)} - NAMES


def test_a_host_sets_the_locale_and_the_interface_is_chinese(host: WebKitHost) -> None:
    assert host.eval("document.documentElement.lang") == "en"
    host.send({"type": "settings.set", "id": "zh", "settings": {"locale": "zh-CN"}})
    assert host.wait_for(of(host, "zh", "settings.applied"))["settings"]["locale"] == "zh-CN"
    try:
        wait(host, "document.documentElement.lang === 'zh-CN'")
        assert host.eval("document.getElementById('send').getAttribute('aria-label')") == "发送"
        assert host.eval("document.getElementById('boot').textContent") == "就绪"
        assert host.eval("document.getElementById('thinking').getAttribute('aria-label')") == "思考：自动"
        assert english_words(host) == set()
        host.eval("(document.getElementById('open-settings').click(), 1)")
        wait(host, "document.getElementById('settings').open")
        assert english_words(host) == set()
        host.eval("(document.getElementById('settings').close(), 1)")
    finally:
        host.send({"type": "settings.set", "id": "auto", "settings": {"locale": None}})
        host.wait_for(of(host, "auto", "settings.applied"))
    wait(host, "document.documentElement.lang === 'en'")
    assert host.eval("document.getElementById('send').getAttribute('aria-label')") == "Send"


# Each block's direction, as WebKit computes it, in the newest exchange.
DIRECTIONS = """(() => {
  const out = {};
  for (const role of ['user', 'assistant']) {
    const content = [...document.querySelectorAll(`.msg[data-role="${role}"] .content`)].at(-1);
    out[role] = {
      dir: content.getAttribute('dir'),
      block: getComputedStyle(content).direction,
      paragraph: getComputedStyle(content.querySelector('p')).direction,
      code: getComputedStyle(content.querySelector('pre')).direction,
    };
  }
  return out;
})()"""


def test_an_arabic_message_reads_right_to_left_and_its_code_left_to_right_in_webkit(host: WebKitHost) -> None:
    host.send({"type": "settings.set", "id": "rtl", "settings": {
        "compress": "off", "headers": {"x-firsttoken-sim": "ttft_ms=0,tps=2000,echo=1"}}})
    host.wait_for(of(host, "rtl", "settings.applied"))
    try:
        start = len(host.messages)
        host.eval(f"(document.getElementById('prompt').value = {json.dumps(ARABIC)}, "
                  "document.getElementById('composer').requestSubmit(), 1)")
        host.wait_for(lambda m: m.get("type") == "chat.done" and str(m.get("id")).startswith("page:"), 60, start)
        wait(host, "document.querySelector('.msg[data-role=\"assistant\"][data-state=\"done\"]')")
        shown = host.eval(DIRECTIONS)
    finally:
        host.send({"type": "settings.set", "id": "rtl-reset", "settings": {"compress": None, "headers": None}})
        host.wait_for(of(host, "rtl-reset", "settings.applied"))
        host.eval("(document.getElementById('new-chat').click(), 1)")
    for role in ("user", "assistant"):
        assert shown[role] == {"dir": "auto", "block": "rtl", "paragraph": "rtl", "code": "ltr"}, (role, shown)
    assert host.eval("document.getElementById('prompt').getAttribute('dir')") == "auto"
