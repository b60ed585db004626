"""Conversations in WebKitGTK (the engine of iOS's WKWebView): the old localStorage
conversation moves into IndexedDB, and what is kept there comes back after a reload."""

from __future__ import annotations

import json

import pytest

from harness.webkit import READ, assert_clean_console, boot, saved, wait
from harness.gtk import WebKitHost, Xvfb

pytestmark = pytest.mark.e2e

LEGACY = [
    {"role": "user", "content": "an old question from WebKit"},
    {"role": "assistant", "content": "an old answer", "incomplete": True},
]


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
        saved(host)
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
        saved(host)
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
