"""Conversations in WebKitGTK (the engine of iOS's WKWebView): the old localStorage
conversation moves into IndexedDB, and what is kept there comes back after a reload."""

from __future__ import annotations

import json

import pytest

from tests.webkit.conftest import assert_clean_console, boot
from tests.webkit_host import WebKitHost, Xvfb

pytestmark = pytest.mark.e2e

LEGACY = [
    {"role": "user", "content": "an old question from WebKit"},
    {"role": "assistant", "content": "an old answer", "incomplete": True},
]

# Resolves once `check()` holds, looked at after each frame (no timers), or rejects after
# `ms`: the page's own clock decides, the test only waits for the answer.
WAIT = """(check, ms = 20000) => new Promise((ok, no) => {
  const end = performance.now() + ms;
  const look = () => {
    let value;
    try { value = check(); } catch (e) { value = undefined; }
    if (value) ok(true);
    else if (performance.now() > end) no(new Error('timed out: ' + check));
    else requestAnimationFrame(look);
  };
  look();
})"""

READ = """new Promise((ok, no) => {
  const r = indexedDB.open('firsttoken-conversations');
  r.onerror = () => no(r.error);
  r.onsuccess = () => {
    const db = r.result, tx = db.transaction(['conversations', 'messages', 'state']);
    const metas = tx.objectStore('conversations').getAll(), messages = tx.objectStore('messages').getAll();
    const open = tx.objectStore('state').get('open');
    tx.oncomplete = () => { db.close(); ok({ metas: metas.result, messages: messages.result, open: open.result ?? null }); };
  };
})"""


def wait(host: WebKitHost, check: str) -> object:
    return host.eval(f"({WAIT})(() => {check})", timeout=60)


def test_the_old_conversation_moves_and_conversations_survive_a_reload(xvfb: Xvfb, gateway_url: str) -> None:
    with WebKitHost(gateway_url + "/", display=xvfb.display) as host:
        boot(host)
        host.eval(f"localStorage.setItem('firsttoken.history.v1', {json.dumps(json.dumps(LEGACY))})")
        seen = len(host.messages)
        host.load(gateway_url + "/")
        host.wait_for(lambda m: m.get("type") == "ready", 120, start=seen)
        # Moved: painted from IndexedDB, every field kept, the old key gone.
        assert wait(host, "document.querySelectorAll('#messages .msg').length === 2")
        assert wait(host, "document.getElementById('conversation-title').textContent === 'an old question from WebKit'")
        wait(host, "document.getElementById('conversations').dataset.pending === '0'")
        kept = host.eval(READ)
        [meta] = kept["metas"]
        assert kept["open"] == meta["id"] and meta["title"] == "an old question from WebKit"
        [moved] = kept["messages"]
        assert moved["id"] == meta["id"]
        assert [(m["role"], m["content"]) for m in moved["messages"]] == [(m["role"], m["content"]) for m in LEGACY]
        assert moved["messages"][1]["state"] == "interrupted"  # the old flag, read as a state
        assert host.eval("localStorage.getItem('firsttoken.history.v1')") is None

        # A new chat, a prompt answered in it, then a reload: both conversations, the
        # new one open.
        host.eval("document.getElementById('new-chat').click()")
        host.eval("(() => { const p = document.getElementById('prompt'); p.value = 'hello from a new chat';"
                  " document.getElementById('send').click(); return true; })()")
        assert wait(host, "document.querySelector('.msg[data-role=\"assistant\"][data-state=\"done\"]')")
        wait(host, "document.getElementById('conversations').dataset.pending === '0'")
        # Waits for the new page's `ready`: until then the old page (which shows the same
        # two messages and two conversations) would answer the checks below.
        seen = len(host.messages)
        host.load(gateway_url + "/")
        host.wait_for(lambda m: m.get("type") == "ready", 120, start=seen)
        assert wait(host, "document.querySelectorAll('#messages .msg').length === 2 && "
                          "document.getElementById('conversation-title').textContent === 'hello from a new chat'")
        assert wait(host, "document.querySelectorAll('#conversations .conv').length === 2")
        titles = host.eval("[...document.querySelectorAll('#conversations .conv-title')].map((e) => e.textContent)")
        assert titles == ["hello from a new chat", "an old question from WebKit"]
        assert wait(host, "document.getElementById('conversations').dataset.store === 'indexeddb'")
        assert_clean_console(host)
