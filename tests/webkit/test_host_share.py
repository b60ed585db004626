"""Sharing into the chat through the real GTK host in WebKitGTK (issue 46, item 3;
js/page/share.js, bridge/PROTOCOL.md "Share"): `composer.share` lands its text, link and
photo in the composer of a new or of a named existing conversation, the photo shrunk as
if picked, nothing sent until Send; an unknown conversation, a 50 MB share and a
`javascript:` link are refused to the host with nothing changed; HTML stays text. No
sleeps: each step waits for the page's answer or the state it makes."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from harness.gtk import WebKitHost
from harness.webkit import of, wait
from tests.unit.image_files import png

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(20)]

PROMPT = "document.getElementById('prompt')"
USERS = "document.querySelectorAll('.msg[data-role=\"user\"]').length"
DONE = "document.querySelectorAll('.msg[data-role=\"assistant\"][data-state=\"done\"]').length"
PHOTO = {"data": base64.b64encode(png(1200, 900)).decode(), "type": "image/png", "name": "shared.png"}


def share(host: WebKitHost, request_id: str, **fields: Any) -> dict[str, Any]:
    host.send({"v": 1, "type": "composer.share", "id": request_id, **fields})
    return host.wait_for(lambda m: m.get("id") == request_id and m.get("type") in ("composer.shared", "error"), timeout=60)


def chats(host: WebKitHost, start: int) -> list[dict[str, Any]]:
    return [m for m in host.messages[start:] if m.get("type") == "chat.start" or m.get("type") == "chat.done"]


def test_a_share_lands_in_a_new_then_in_an_existing_conversation(host: WebKitHost) -> None:
    start = len(host.messages)
    landed = share(host, "w1", text="From another app", url="https://example.com/x", images=[PHOTO], conversation="new")
    assert landed["type"] == "composer.shared", landed
    first = landed["conversation"]
    [size] = landed["images"]
    assert size["bytes"] > 0 and size["width"] <= 1200, size
    assert host.eval(f"{PROMPT}.value") == "From another app\nhttps://example.com/x"
    wait(host, "document.getElementById('attachments').dataset.count === '1'")
    assert host.eval(USERS) == 0
    assert chats(host, start) == []

    # Sent by the person: the first conversation holds it.
    done = int(host.eval(DONE))
    host.eval("(document.getElementById('composer').requestSubmit(), 1)")
    wait(host, f"{DONE} > {done}")

    # Into a new conversation, then back into the first by its id.
    assert share(host, "w2", text="Another thing", conversation="new")["conversation"] != first
    wait(host, f"{USERS} === 0")
    landed = share(host, "w3", text="And more", conversation=first)
    assert landed["type"] == "composer.shared" and landed["conversation"] == first, landed
    wait(host, f"{USERS} === 1")
    assert host.eval(f"{PROMPT}.value") == "Another thing\n\nAnd more"
    before = len(host.messages)
    host.send({"v": 1, "type": "ping", "id": "after-shares"})
    host.wait_for(of(host, "after-shares", "pong"), start=before)
    assert chats(host, before) == []
    host.eval(f"({PROMPT}.value = '', 1)")


def test_hostile_shares_are_refused_and_html_stays_text(host: WebKitHost) -> None:
    host.eval(f"({PROMPT}.value = 'kept draft', 1)")
    error = share(host, "w4", text="x", conversation="not-a-conversation")
    assert error["type"] == "error" and error["error"]["code"] == "unknown_conversation"
    error = share(host, "w5", text="x", url="javascript:alert(document.cookie)")
    assert error["type"] == "error" and error["error"]["code"] == "invalid_message"
    # 50 MB, as a host's evaluateJavaScript would hand it over: refused unread (the
    # protocol's 8 MB bound), so the error carries no id.
    start = len(host.messages)
    host.eval("(window.firsttoken.post('{\"type\":\"composer.share\",\"id\":\"big\",\"text\":\"' + 'a'.repeat(50 * 1024 * 1024) + '\"}'), 1)", timeout=120)
    error = host.wait_for(lambda m: m.get("type") == "error", start=start, timeout=60)
    assert error["error"]["code"] == "invalid_message" and "bytes" in error["error"]["message"]
    assert host.eval(f"{PROMPT}.value") == "kept draft"

    html = '<img src=x onerror="window.__pwned=1"><b>bold</b>'
    host.eval(f"({PROMPT}.value = '', 1)")
    assert share(host, "w6", text=html)["type"] == "composer.shared"
    assert host.eval(f"{PROMPT}.value") == html
    assert host.eval("document.querySelectorAll('#composer b, #composer img').length") == 0
    assert host.eval("window.__pwned === undefined") is True
    host.eval(f"({PROMPT}.value = '', 1)")
