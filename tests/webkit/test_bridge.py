"""The WebKit host adapter for real: the page's `window.webkit.messageHandlers.firsttoken`
and `window.firsttoken.post`, as an iOS app's WKWebView reaches them, in WebKitGTK."""

from __future__ import annotations

import json

import pytest

from tests.bridge_cases import EMBED_JS, HOSTILE, UNTOUCHED, UNTOUCHED_JS
from harness.webkit import of, reply
from harness.gtk import WebKitHost

pytestmark = pytest.mark.e2e

# Long enough to go by cache reference (PROTOCOL.md: 256 characters or more).
SYSTEM = "You are the test assistant of the firsttoken bridge. " * 8


def chat(host: WebKitHost, request_id: str, text: str, **extra: object) -> None:
    host.send({"v": 1, "type": "chat.send", "id": request_id, "messages": [{"role": "user", "content": text}], **extra})


def set_settings(host: WebKitHost, request_id: str, **settings: object) -> dict:
    host.send({"type": "settings.set", "id": request_id, "settings": settings})
    return host.wait_for(of(host, request_id, "settings.applied"))


def test_a_late_host_gets_ready_replayed_with_its_own_id(host: WebKitHost) -> None:
    host.send({"type": "hello", "id": "late"})
    ready = host.wait_for(of(host, "late", "ready"))
    assert ready["protocol"] == 1 and ready["boot"]["ready_ms"] > 0


def test_ping_answers_with_the_hosts_own_id(host: WebKitHost) -> None:
    # The page's own requests use ids like "hello", "r…", "c1": a host may use them too.
    for request_id in ("hello", "c1", "p"):
        host.send({"type": "ping", "id": request_id})
        assert host.wait_for(of(host, request_id, "pong"))["t"] > 0


def test_a_host_chat_streams_to_the_host_and_stays_out_of_the_pages_conversation(host: WebKitHost) -> None:
    start = len(host.messages)
    chat(host, "r1", "hello from the host")
    done = reply(host, "r1")
    assert done["type"] == "chat.done", done
    assert "content" not in done  # the answer crosses once, as deltas (PROTOCOL.md)
    mine = [m for m in host.messages[start:] if m.get("id") == "r1"]
    assert [m["type"] for m in mine][0] == "chat.prepared"
    deltas = [m for m in mine if m["type"] == "chat.delta"]
    assert deltas and "".join(d["text"] for d in deltas).startswith("You said: hello from the host")
    # Host chats are the host's: nothing in the page's list or its stored history.
    assert host.eval("document.querySelectorAll('#messages .msg').length") == 0
    assert host.eval("localStorage.getItem('firsttoken.history.v1')") in (None, "[]")
    assert host.eval("document.querySelectorAll('#conversations .conv').length") == 0


def test_settings_from_the_host_steer_its_chats_and_the_key_stays_in_memory(host: WebKitHost) -> None:
    applied = set_settings(host, "s1", api_key="sk-test-secret", headers={"x-firsttoken-sim": "error_after=2"})
    assert applied["settings"]["api_key"] is True  # never echoed
    chat(host, "e1", "this one breaks")
    failed = reply(host, "e1")
    assert failed["type"] == "chat.error" and failed["error"]["code"] == "upstream_error", failed
    storage = host.eval("JSON.stringify({...localStorage}) + JSON.stringify({...sessionStorage})")
    assert "sk-test-secret" not in storage
    set_settings(host, "s2", api_key=None, headers={"x-firsttoken-sim": "status=400"})
    chat(host, "e2", "refused")
    failed = reply(host, "e2")
    assert failed["error"]["code"] == "http_status" and failed["error"]["status"] == 400, failed
    set_settings(host, "s3", headers=None)


def test_abort_ends_a_host_chat_midway(host: WebKitHost) -> None:
    set_settings(host, "slow", headers={"x-firsttoken-sim": "tps=10,tokens=400"})
    try:
        chat(host, "a1", "a long answer")
        host.wait_for(of(host, "a1", "chat.delta"))
        host.send({"type": "chat.abort", "id": "a1"})
        ended = reply(host, "a1")
        assert ended["type"] == "chat.error" and ended["error"]["code"] == "aborted", ended
        assert ended["error"]["partial"]
    finally:
        set_settings(host, "fast", headers=None)


def test_the_pages_own_chat_is_observed_under_page_ids(host: WebKitHost) -> None:
    start = len(host.messages)
    host.eval("(document.getElementById('prompt').value = 'typed in the page', document.getElementById('composer').requestSubmit(), 1)")
    done = host.wait_for(lambda m: m.get("type") == "chat.done" and str(m.get("id")).startswith("page:"), 60, start)
    metrics = host.wait_for(lambda m: m.get("type") == "chat.metrics" and m.get("id") == done["id"], 30, start)
    assert metrics["metrics"]["send_to_first_paint_ms"] is not None
    # A new chat for the tests after this one (the title, which they check, is the page's again).
    host.eval("(document.getElementById('new-chat').click(), 1)")
    assert host.eval("document.title") == "firsttoken"


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_input_is_refused_and_nothing_runs(host: WebKitHost, case: str) -> None:
    before = host.eval("window.firsttoken.counts()")
    start = len(host.messages)
    host.send(HOSTILE[case])
    refused = host.wait_for(lambda m: m.get("type") == "error", 30, start)
    assert refused["error"]["code"] == "invalid_message", refused
    assert host.eval("window.firsttoken.counts().rejected") == before["rejected"] + 1
    assert host.eval(UNTOUCHED_JS) == UNTOUCHED


def test_the_entry_point_cannot_be_replaced(host: WebKitHost) -> None:
    host.eval("(() => { try { window.firsttoken = { post() { window.__pwned = 1; } }; } catch (e) {} "
              "try { window.firsttoken.post = () => { window.__pwned = 1; }; } catch (e) {} })()")
    host.send({"type": "ping", "id": "still"})
    host.wait_for(of(host, "still", "pong"))
    assert host.eval(UNTOUCHED_JS) == UNTOUCHED


def test_an_embedding_window_not_on_the_allow_list_is_dropped(host: WebKitHost, gateway_url: str) -> None:
    ping = json.dumps({"type": "ping", "id": "framed"})
    got = host.eval(f"({EMBED_JS})({json.dumps(['https://elsewhere.example', ping])})", timeout=90)
    assert got["counts"]["dropped"]["origin"] == 1 and got["counts"]["received"] == 0
    assert got["answers"] == []


def test_an_allowed_embedder_is_answered_and_a_sub_frame_is_dropped(host: WebKitHost, gateway_url: str) -> None:
    before = host.eval("window.firsttoken.counts().dropped.frame")
    got = host.eval(f"({EMBED_JS})({json.dumps([gateway_url, HOSTILE['an unknown type']])})", timeout=90)
    assert got["counts"]["rejected"] == 1
    assert json.loads(got["answers"][0])["error"]["code"] == "invalid_message"
    # The frame's answer reached this page as a message from a sub-frame: not a host's.
    assert got["top"]["dropped"]["frame"] >= before + 1


def test_a_host_chat_is_counted_exactly(host: WebKitHost) -> None:
    # No SharedArrayBuffer in WebKitGTK 2.50, and no environment flag: the page counts
    # in Python's own thread (firsttoken.browser.tokenizer), exactly as CPython does.
    from firsttoken import tokens

    assert host.eval("typeof SharedArrayBuffer") == "undefined"
    chat(host, "x1", "count me exactly")
    prepared = host.wait_for(of(host, "x1", "chat.prepared"))
    reply(host, "x1")
    expected = tokens.count_chat([{"role": "user", "content": "count me exactly"}], "firsttoken-sim")
    assert prepared["exact"] is True and prepared["prompt_tokens"] == expected


def test_a_repeated_system_prompt_is_a_cache_hit(host: WebKitHost) -> None:
    set_settings(host, "sys", system=SYSTEM)
    try:
        for request_id in ("k1", "k2"):
            chat(host, request_id, "the same system prompt again")
            reply(host, request_id)
        prepared = host.wait_for(of(host, "k2", "chat.prepared"))
        assert prepared.get("cache", {}).get("system") == "hit", prepared
    finally:
        set_settings(host, "nosys", system=None)
