"""Markdown right for CJK in WebKitGTK (the engine of iOS's WKWebView), through the real
host (issue 44, item 2; js/render/cjk.js): the issue's example, made the built-in
model's answer with `echo=1`, renders bold where intended with no stray space, in the
answer and in the user's bubble; and a bold phrase that opens in one chunk and closes
three chunks later never shows an asterisk while it streams. In Chromium:
tests/e2e/test_cjk_markdown.py."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from harness.gtk import WebKitHost
from harness.webkit import of

pytestmark = pytest.mark.e2e

ISSUE_EXAMPLE = "**注意：**请看下面的代码。\n这是**我想做的事。**所以继续。\n\n第一行\n第二行"
ACROSS_CHUNKS = "**注意 Python 3.12 的新语法：**请看下面的例子。\n\n不如人意的**《The Big Short 大空头》**已经上映。"

# Every text the newest answer shows, one entry per change, from before it is sent.
WATCH = """
(() => {
  window.__answerTexts = [];
  const watcher = new MutationObserver(() => {
    const answers = document.querySelectorAll('.msg[data-role="assistant"] .content');
    const answer = answers[answers.length - 1];
    if (answer) window.__answerTexts.push(answer.textContent);
  });
  watcher.observe(document.body, { subtree: true, childList: true, characterData: true });
  window.__stopWatching = () => watcher.disconnect();
  return 1;
})()
"""

SHOWN = """
(() => {
  const last = (selector) => { const all = document.querySelectorAll(selector); return all[all.length - 1]; };
  const answer = last('.msg[data-role="assistant"][data-state="done"] .content');
  const bubble = last('.msg[data-role="user"] .content');
  return {
    strong: [...answer.querySelectorAll('strong')].map((s) => s.textContent),
    paragraphs: [...answer.querySelectorAll(':scope > p')].map((p) => p.textContent),
    answerText: answer.textContent,
    bubbleStrong: [...bubble.querySelectorAll('strong')].map((s) => s.textContent),
    bubbleText: bubble.textContent,
    bubbleBreaks: bubble.querySelectorAll('br').length,
    texts: window.__answerTexts || [],
  };
})()
"""


def ask(host: WebKitHost, text: str, sim: str) -> dict[str, Any]:
    host.send({"type": "settings.set", "id": "cjk-settings",
               "settings": {"compress": "off", "headers": {"x-firsttoken-sim": sim}}})
    host.wait_for(of(host, "cjk-settings", "settings.applied"))
    host.eval(WATCH)
    start = len(host.messages)
    host.eval(f"(document.getElementById('prompt').value = {json.dumps(text)}, "
              "document.getElementById('composer').requestSubmit(), 1)")
    done = host.wait_for(lambda m: m.get("type") == "chat.done" and str(m.get("id")).startswith("page:"), 60, start)
    assert done["type"] == "chat.done"
    # The last frame's paint after `chat.done`: the answer is marked done once painted.
    host.eval("new Promise((resolve) => { const look = () => document.querySelector("
              "'.msg[data-role=\"assistant\"][data-state=\"done\"]') ? resolve(1) : requestAnimationFrame(look); look(); })",
              timeout=30)
    shown: dict[str, Any] = host.eval(SHOWN, timeout=30)
    host.eval("(window.__stopWatching(), document.getElementById('new-chat').click(), 1)")
    return shown


@pytest.fixture(autouse=True)
def reset(host: WebKitHost) -> Iterator[None]:
    """The settings `ask` made, taken back after each test (the module's tests share a page)."""
    yield
    host.send({"type": "settings.set", "id": "cjk-reset", "settings": {"compress": None, "headers": None}})
    host.wait_for(of(host, "cjk-reset", "settings.applied"))


def test_the_issues_example_renders_bold_with_no_stray_space_in_webkit(host: WebKitHost) -> None:
    shown = ask(host, ISSUE_EXAMPLE, "ttft_ms=0,tps=2000,echo=1")
    assert shown["strong"] == ["注意：", "我想做的事。"]
    assert shown["paragraphs"] == ["注意：请看下面的代码。这是我想做的事。所以继续。", "第一行第二行"]
    assert "*" not in shown["answerText"]
    # The user's bubble: the same emphasis; its typed line breaks stay line breaks.
    assert shown["bubbleStrong"] == ["注意：", "我想做的事。"]
    assert "*" not in shown["bubbleText"] and shown["bubbleBreaks"] == 2


def test_bold_across_chunks_never_shows_asterisks_in_webkit(host: WebKitHost) -> None:
    shown = ask(host, ACROSS_CHUNKS, "ttft_ms=0,tps=25,echo=1")
    assert shown["strong"] == ["注意 Python 3.12 的新语法：", "《The Big Short 大空头》"]
    # Painted as it streamed: states between nothing and the whole, one of them with the
    # second bold still open (how many frames a loaded machine paints is not the point).
    final = shown["texts"][-1]
    between = {t for t in shown["texts"] if t and t != final}
    assert any("《The Big Short" not in t or "大空头" not in t for t in between), shown["texts"]
    assert [t for t in shown["texts"] if "*" in t] == []
