"""Rich answers in WebKitGTK (the engine of iOS's WKWebView): a code block highlighted
and a formula typeset by the page's own chat, through the real host."""

from __future__ import annotations

import json

import pytest

from harness.webkit import of
from harness.gtk import WebKitHost

pytestmark = pytest.mark.e2e

DOC = (
    "Compute $x^2 + 1$ for prices like $5 and $10:\n\n"
    "```python\ndef square(x):\n    return x * x  # twice\n```\n\n"
    "$$\\frac{a}{b}$$"
)

# Resolves once the page's answer is highlighted and typeset (watched, never polled).
RENDERED = """
new Promise((resolve) => {
  const answer = document.querySelector('.msg[data-role="assistant"][data-state="done"] .content');
  const look = () => {
    const keyword = answer.querySelector('code[data-highlighted="python"] .hljs-keyword');
    const formulas = answer.querySelectorAll('.md-math .katex');
    if (!keyword || formulas.length < 2) return false;
    observer.disconnect();
    resolve({
      keyword: keyword.textContent,
      comment: answer.querySelector('.hljs-comment')?.textContent,
      label: answer.querySelector('.md-code-lang').textContent,
      button: answer.querySelector('button.md-code-copy').textContent,
      formulas: formulas.length,
      display: answer.querySelectorAll('.katex-display').length,
      errors: answer.querySelectorAll('.md-math-error').length,
      first: answer.querySelector('p').textContent,
      keywordColor: getComputedStyle(keyword).color,
      textColor: getComputedStyle(answer.querySelector('code')).color,
    });
    return true;
  };
  const observer = new MutationObserver(look);
  observer.observe(answer, { subtree: true, childList: true, attributes: true });
  look();
})
"""


def test_a_code_block_is_highlighted_and_math_typeset_in_webkit(host: WebKitHost) -> None:
    host.send({"type": "settings.set", "id": "render-settings",
               "settings": {"compress": "off", "headers": {"x-firsttoken-sim": "ttft_ms=0,tps=2000,echo=1"}}})
    host.wait_for(of(host, "render-settings", "settings.applied"))
    start = len(host.messages)
    host.eval(f"(document.getElementById('prompt').value = {json.dumps(DOC)}, document.getElementById('composer').requestSubmit(), 1)")
    done = host.wait_for(lambda m: m.get("type") == "chat.done" and str(m.get("id")).startswith("page:"), 60, start)
    assert done["type"] == "chat.done"
    shown = host.eval(RENDERED, timeout=60)
    assert shown["keyword"] == "def" and shown["comment"] == "# twice"
    assert shown["label"] == "python" and shown["button"] == "Copy code"
    assert shown["formulas"] == 2 and shown["display"] == 1 and shown["errors"] == 0
    assert "prices like $5 and $10" in shown["first"]
    assert shown["keywordColor"] != shown["textColor"]  # the theme's colours apply
    host.eval("(document.getElementById('new-chat').click(), 1)")
    host.send({"type": "settings.set", "id": "render-reset", "settings": {"compress": None, "headers": None}})
    host.wait_for(of(host, "render-reset", "settings.applied"))
