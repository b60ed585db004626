"""The page's host adapters in real Chromium (bridge/page/hosts.js): the React Native,
Android (AndroidX's web message listener, and the fallback interface) and WebKit-shaped
native objects (stand-ins injected before the page's scripts, shaped as each platform's
is), and an embedding window; each fed hostile input. Hostile windows: test_bridge_trust.py. The WebKit adapter is also tested for real, in WebKitGTK
(tests/webkit/)."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page

from tests.bridge_cases import EMBED_JS, HOSTILE, UNTOUCHED, UNTOUCHED_JS
from harness.chromium import BOOT_TIMEOUT_MS, chat_bodies, wait_ready
from tests.e2e.native_host import NATIVE, as_host, host_answer, host_message, post

pytestmark = pytest.mark.e2e

@pytest.mark.parametrize("platform", list(NATIVE))
def test_each_native_adapter_relays_both_ways(page: Page, gateway_url: str, platform: str) -> None:
    as_host(page, platform)
    page.goto(gateway_url + "/")
    ready = host_message(page, "ready", timeout=BOOT_TIMEOUT_MS)  # pushed to a host that was there from the start
    assert ready["protocol"] == 1 and "id" not in ready
    post(page, {"type": "ping", "id": "hello"})  # the page's own hello id: no clash
    assert host_message(page, "pong", "hello")["t"] > 0


def test_a_host_chat_goes_to_the_host_only_and_a_page_chat_is_observed(page: Page, gateway_url: str) -> None:
    as_host(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    post(page, {"type": "chat.send", "id": "r0", "messages": [{"role": "user", "content": "from the host"}]})
    assert host_answer(page, "r0").startswith("You said: from the host")
    assert page.locator("#messages .msg").count() == 0
    page.fill("#prompt", "from the page")
    page.press("#prompt", "Enter")
    page.wait_for_selector('.msg[data-role="assistant"][data-state="done"]', timeout=60_000)
    page_id = "page:" + page.get_attribute('.msg[data-role="assistant"]', "data-id")
    assert host_answer(page, page_id).startswith("You said: from the page")
    assert host_message(page, "chat.metrics", page_id)["metrics"]["send_to_first_paint_ms"] is not None


def test_host_settings_apply_to_the_pages_own_chats_and_are_never_stored(page: Page, gateway_url: str) -> None:
    as_host(page)
    bodies = chat_bodies(page)
    headers: list[dict[str, str]] = []
    page.on("request", lambda r: headers.append(r.headers) if r.url.endswith("/v1/chat/completions") else None)
    page.goto(gateway_url + "/")
    post(page, {"type": "settings.set", "id": "s", "settings": {
        "system": "Answer briefly.", "api_key": "sk-host-only", "headers": {"x-firsttoken-sim": "tokens=5"}}})
    applied = host_message(page, "settings.applied", "s")
    assert applied["settings"] == {"system": "Answer briefly.", "headers": {"x-firsttoken-sim": "tokens=5"}, "api_key": True}
    wait_ready(page)
    page.fill("#prompt", "steered by the host")
    page.press("#prompt", "Enter")
    page.wait_for_selector('.msg[data-role="assistant"][data-state="done"]', timeout=60_000)
    assert bodies[-1]["messages"][0] == {"role": "system", "content": "Answer briefly."}
    assert headers[-1]["authorization"] == "Bearer sk-host-only"
    stored = page.evaluate("JSON.stringify({...localStorage}) + JSON.stringify({...sessionStorage})")
    assert "sk-host-only" not in stored and "Answer briefly" not in stored


def test_a_listed_embedder_relays_over_its_port(page: Page, gateway_url: str) -> None:
    page.goto(gateway_url + "/")
    # The embedder hands over a MessagePort with `hello`; both directions then use it.
    page.evaluate("""() => new Promise((resolve) => {
      const frame = document.createElement('iframe');
      frame.src = '/?embed-origins=' + encodeURIComponent(location.origin);
      frame.addEventListener('load', () => {
        const channel = new MessageChannel();
        window.__toHost = [];
        channel.port1.onmessage = (e) => window.__toHost.push(e.data);
        window.__port = channel.port1;
        frame.contentWindow.postMessage(JSON.stringify({ type: 'hello', id: 'attach' }), location.origin, [channel.port2]);
        resolve();
      }, { once: true });
      document.body.append(frame);
    })""")
    assert host_message(page, "ready", "attach", timeout=BOOT_TIMEOUT_MS)["protocol"] == 1  # replayed once Python is up
    page.evaluate("() => window.__port.postMessage(JSON.stringify({ type: 'ping', id: 'p1' }))")
    assert host_message(page, "pong", "p1")["t"] > 0
    page.evaluate("() => window.__port.postMessage('not json')")
    assert host_message(page, "error")["error"]["code"] == "invalid_message"


def test_hostile_input_is_refused_and_nothing_runs(page: Page, gateway_url: str) -> None:
    as_host(page)
    page.goto(gateway_url + "/")  # the bridge refuses before Python is involved
    wrong = []
    for n, (case, text) in enumerate(HOSTILE.items(), start=1):
        before = page.evaluate("window.__toHost.length")
        post(page, text)
        page.wait_for_function("(n) => window.firsttoken.counts().rejected === n", arg=n)
        # Python's boot progress reaches the host meanwhile: what this message got back
        # is the one error among what came after it.
        came = [json.loads(t) for t in page.evaluate("(i) => window.__toHost.slice(i)", before)]
        errors = [m for m in came if m.get("type") == "error"]
        if len(errors) != 1 or errors[0]["error"]["code"] != "invalid_message":
            wrong.append((case, came))
    assert not wrong
    assert page.evaluate(UNTOUCHED_JS) == UNTOUCHED
    # The entry point cannot be replaced or rewired by a script in the page.
    page.evaluate("() => { try { window.firsttoken = null; } catch {} try { window.firsttoken.post = null; } catch {} }")
    assert page.evaluate(UNTOUCHED_JS) == UNTOUCHED


def test_an_embedder_off_the_allow_list_is_dropped_and_an_allowed_one_answered(page: Page, gateway_url: str) -> None:
    page.goto(gateway_url + "/")
    ping = json.dumps({"type": "ping", "id": "framed"})
    refused = page.evaluate(EMBED_JS, ["https://elsewhere.example", ping])
    assert refused["counts"]["dropped"]["origin"] == 1 and refused["counts"]["received"] == 0
    assert refused["answers"] == []
    allowed = page.evaluate(EMBED_JS, [gateway_url, HOSTILE["an unknown type"]])
    assert allowed["counts"]["rejected"] == 1
    assert json.loads(allowed["answers"][0])["error"]["code"] == "invalid_message"
    # The frame's answer reached this page as a message from a sub-frame: dropped here.
    assert allowed["top"]["dropped"]["frame"] == 1
