"""Message actions in WebKitGTK (the engine of iOS's WKWebView), through the real host:
a failed reply offers Retry, which sends the same turn again in its place, and Copy
works with whatever clipboard the WebView allows (the Clipboard API, or the old
`execCommand('copy')` where that is refused)."""

from __future__ import annotations


import pytest

from harness.webkit import READ, of, saved
from harness.gtk import WebKitHost

pytestmark = pytest.mark.e2e

CLICK = "[...document.querySelectorAll('.msg-actions button')].filter((b) => b.textContent === {name!r}).at({at}).click(), true"


def set_headers(host: WebKitHost, request_id: str, sim: str) -> None:
    host.send({"type": "settings.set", "id": request_id, "settings": {"headers": {"x-firsttoken-sim": sim}}})
    host.wait_for(of(host, request_id, "settings.applied"))


def page_event(host: WebKitHost, kinds: tuple[str, ...], start: int, timeout: float = 60) -> dict:
    """The first event about one of the page's own chats (`page:<id>`) of those kinds."""
    return host.wait_for(lambda m: str(m.get("id", "")).startswith("page:") and m.get("type") in kinds, timeout, start)


def test_retry_after_a_failure_sends_the_same_turn_again_in_its_place(host: WebKitHost) -> None:
    set_headers(host, "s1", "status=400")
    start = len(host.messages)
    host.eval("document.getElementById('prompt').value = 'webkit retry', document.getElementById('send').click(), true")
    failed = page_event(host, ("chat.error", "chat.done"), start)
    assert failed["type"] == "chat.error" and failed["error"]["status"] == 400
    assert host.eval("document.querySelector('.msg[data-role=assistant]').dataset.state") == "error"
    assert "400" in host.eval("document.querySelector('.msg[data-role=assistant] .error').textContent")

    set_headers(host, "s2", "ttft_ms=0")
    start = len(host.messages)
    host.eval(CLICK.format(name="Retry", at=0))
    done = page_event(host, ("chat.error", "chat.done"), start)
    assert done["type"] == "chat.done" and done["id"] != failed["id"]
    # Painted in the failed one's place: one prompt, one answer, finished.
    metrics = host.wait_for(lambda m: m.get("type") == "chat.metrics" and m.get("id") == done["id"], 30, start)
    assert metrics["metrics"]["id"] == done["id"].removeprefix("page:")
    shown = host.eval("[...document.querySelectorAll('.msg')].map((li) => li.dataset.role + ':' + (li.dataset.state || ''))")
    assert shown == ["user:", "assistant:done"]
    history = kept(host)
    assert [(m["role"], m.get("state")) for m in history] == [("user", None), ("assistant", "done")]
    assert history[0]["content"] == "webkit retry" and history[1]["content"].startswith("You said: webkit retry")


def test_copy_puts_the_message_on_the_clipboard_with_or_without_the_clipboard_api(host: WebKitHost) -> None:
    set_headers(host, "s3", "ttft_ms=0")
    start = len(host.messages)
    host.eval("document.getElementById('prompt').value = 'copy in webkit', document.getElementById('send').click(), true")
    page_event(host, ("chat.error", "chat.done"), start)
    last_user = "[...document.querySelectorAll('.msg[data-role=user]')].at(-1)"
    host.eval(f"{last_user}.querySelector('.msg-actions button.copy').click(), true")
    copied = host.eval(f"""new Promise((resolve) => {{
      const li = {last_user};
      const check = () => li.dataset.copied ? resolve([li.dataset.copied, li.querySelector('.copied')?.textContent]) : requestAnimationFrame(check);
      check();
    }})""")
    assert copied == ["true", "Copied"]
    read = "navigator.clipboard.readText()"
    assert host.eval(read) == "copy in webkit"

    # Where the Clipboard API refuses (as WKWebView may), the old way: an answer, as
    # its markdown source, selected and copied by execCommand, which WebKit honours.
    # (Read back, such a copy is refused by WebKit's pasteboard rules for scripts, so
    # the call and what was selected for it are what is checked.)
    last_answer = "[...document.querySelectorAll('.msg[data-role=assistant]')].at(-1)"
    host.eval("""(() => {
      navigator.clipboard.writeText = () => Promise.reject(new DOMException('no', 'NotAllowedError'));
      const exec = document.execCommand.bind(document);
      document.execCommand = (name) => (window.__copied = [name, document.querySelector('.copy-buffer')?.value, exec(name)])[2];
      return true;
    })()""")
    host.eval(f"{last_answer}.querySelector('.msg-actions button.copy').click(), true")
    assert host.eval(f"""new Promise((resolve) => {{
      const li = {last_answer};
      const check = () => li.dataset.copied ? resolve(li.dataset.copied) : requestAnimationFrame(check);
      check();
    }})""") == "true"
    history = kept(host)
    assert host.eval("window.__copied") == ["copy", history[-1]["content"], True]


def kept(host: WebKitHost) -> list[dict]:
    """The open conversation as committed to IndexedDB (js/page/conversation-store.js)."""
    saved(host)
    store = host.eval(READ)
    return next((r["messages"] for r in store["messages"] if r["id"] == store["open"]), [])
