"""The page's host bridge (bridge/page/host-messages.js, hosts.js) on Node, with a fake
window and a fake link to the core: what it accepts, what it refuses, how request ids
are namespaced and given back, and how a host's settings reach the page's requests.
The real thing is tested in Chromium (tests/e2e/test_bridge.py) and WebKitGTK
(tests/webkit/test_bridge.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.bridge_cases import HOSTILE

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

# Runs a scenario given as JSON on stdin; prints what the host and the core received.
SCENARIO = """
import { attachHosts } from './bridge/page/hosts.js';
import { parseHostMessage } from './bridge/page/host-messages.js';
const input = JSON.parse(await new Promise((resolve) => {
  let text = ''; process.stdin.on('data', (d) => { text += d; }); process.stdin.on('end', () => resolve(text));
}));
if (input.parse) {
  const out = input.parse.map((text) => {
    try { return { ok: parseHostMessage(text) }; } catch (e) { return { error: e.name, id: e.id }; }
  });
  console.log(JSON.stringify(out));
  process.exit(0);
}
const win = new EventTarget();
win.location = { search: input.search || '' };
win.document = { baseURI: 'http://page.test/' };
win.parent = win;
const toHost = [];
win.ReactNativeWebView = { postMessage: (t) => toHost.push(JSON.parse(t)) };
const link = new EventTarget();
const toCore = [];
link.send = (msg) => toCore.push(msg);
const hosts = attachHosts(link, { window: win });
const fromCore = (msg) => link.dispatchEvent(new CustomEvent('message', { detail: msg }));
for (const step of input.steps) {
  if (step.host) win.firsttoken.post(JSON.stringify(step.host));
  if (step.core) fromCore(step.core);
  // The page's own requests leave through the hosts' overlay, as page.js sends them.
  if (step.page) link.send(hosts.overlay.apply(step.page));
}
console.log(JSON.stringify({ toHost, toCore, counts: win.firsttoken.counts() }));
"""


def run(scenario: dict[str, Any]) -> Any:
    done = subprocess.run(
        ["node", "--input-type=module", "-e", SCENARIO], cwd=ROOT, input=json.dumps(scenario),
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_hostile_input_is_refused_by_the_parser() -> None:
    results = run({"parse": list(HOSTILE.values())})
    not_refused = {case: r for case, r in zip(HOSTILE, results) if r.get("error") != "InvalidHostMessage"}
    assert not not_refused


def test_only_known_fields_are_kept() -> None:
    [result] = run({"parse": [json.dumps({
        "v": 1, "type": "chat.send", "id": "a", "extra": "dropped",
        "messages": [{"role": "user", "content": "hi", "evil": 1}],
        "settings": {"model": "m", "unknown": True, "headers": {"x-a": "1"}},
    })]})
    assert result["ok"] == {
        "type": "chat.send", "id": "a", "messages": [{"role": "user", "content": "hi"}],
        "settings": {"model": "m", "headers": {"x-a": "1"}},
    }


def test_an_invalid_request_is_answered_with_its_id() -> None:
    [result] = run({"parse": [json.dumps({"type": "chat.send", "id": "x1", "messages": []})]})
    assert result == {"error": "InvalidHostMessage", "id": "x1"}


def test_host_ids_are_namespaced_and_given_back() -> None:
    out = run({"steps": [
        {"host": {"type": "ping", "id": "r1"}},
        {"core": {"v": 1, "type": "pong", "id": "host:native:r1", "t": 1}},
        {"host": {"type": "ping"}},
        {"core": {"v": 1, "type": "pong", "id": "host:native:", "t": 2}},
        {"host": {"type": "chat.abort", "id": "r1"}},
    ]})
    assert out["toCore"] == [
        {"type": "ping", "id": "host:native:r1"}, {"type": "ping", "id": "host:native:"},
        {"type": "chat.abort", "id": "host:native:r1"},
    ]
    assert out["toHost"] == [{"v": 1, "type": "pong", "id": "r1", "t": 1}, {"v": 1, "type": "pong", "t": 2}]


def test_the_pages_chats_are_observed_and_its_other_answers_are_not() -> None:
    out = run({"steps": [
        {"core": {"v": 1, "type": "chat.delta", "id": "r1", "seq": 1, "text": "a"}},
        {"core": {"v": 1, "type": "notice", "id": "r1", "code": "cache_degraded"}},
        {"core": {"v": 1, "type": "tokens.counted", "id": "c1", "tokens": 3}},
        {"core": {"v": 1, "type": "pong", "id": "p", "t": 1}},
    ]})
    assert [(m["type"], m["id"]) for m in out["toHost"]] == [("chat.delta", "page:r1"), ("notice", "page:r1")]


def test_ready_is_pushed_and_replayed_to_a_late_hello() -> None:
    ready = {"v": 1, "type": "ready", "id": "hello", "protocol": 1, "boot": {"ready_ms": 5}}
    out = run({"steps": [{"host": {"type": "hello", "id": "early"}}, {"core": ready}, {"host": {"type": "hello", "id": "late"}}]})
    assert [(m["type"], m.get("id")) for m in out["toHost"]] == [("ready", "early"), ("ready", "late")]
    assert all(m["boot"] == {"ready_ms": 5} for m in out["toHost"])


def test_host_settings_apply_to_host_and_page_requests_and_never_echo_the_key() -> None:
    page_chat = {"type": "chat.send", "id": "r1", "settings": {"base_url": "http://page.test/v1", "headers": {"a": "1"}},
                 "messages": [{"role": "system", "content": "page's"}, {"role": "user", "content": "hi"}]}
    out = run({"steps": [
        {"host": {"type": "settings.set", "id": "s", "settings": {"system": "host's", "api_key": "k", "headers": {"b": "2"}, "model": "m"}}},
        {"page": page_chat},
        {"host": {"type": "chat.send", "id": "h1", "messages": [{"role": "user", "content": "yo"}]}},
    ]})
    assert out["toHost"] == [{"v": 1, "type": "settings.applied", "id": "s",
                              "settings": {"system": "host's", "headers": {"b": "2"}, "model": "m", "api_key": True}}]
    page, host = out["toCore"]
    assert page["messages"] == [{"role": "system", "content": "host's"}, {"role": "user", "content": "hi"}]
    assert page["settings"] == {"base_url": "http://page.test/v1", "headers": {"a": "1", "b": "2"}, "api_key": "k", "model": "m"}
    assert host["id"] == "host:native:h1"
    assert host["messages"] == [{"role": "system", "content": "host's"}, {"role": "user", "content": "yo"}]
    assert host["settings"] == {"base_url": "http://page.test/v1", "headers": {"b": "2"}, "api_key": "k", "model": "m"}


def test_messages_from_other_windows_are_dropped_and_counted() -> None:
    scenario = """
import { attachHosts } from './bridge/page/hosts.js';
const parent = new EventTarget();
const win = new EventTarget();
Object.assign(win, { location: { search: '?embed-origins=https://app.test' }, document: { baseURI: 'http://page.test/' }, parent });
const sent = [];
parent.postMessage = (text, origin) => sent.push([JSON.parse(text).type, origin]);
attachHosts({ addEventListener() {}, send() {} }, { window: win });
const event = (source, origin, data) => Object.assign(new Event('message'), { source, origin, data, ports: [] });
win.dispatchEvent(event(parent, 'https://evil.test', '{"type":"ping"}'));
win.dispatchEvent(event({}, 'https://app.test', '{"type":"ping"}'));
win.dispatchEvent(event(parent, 'https://app.test', '{"type":"nope"}'));
console.log(JSON.stringify({ counts: win.firsttoken.counts(), sent }));
"""
    done = subprocess.run(["node", "--input-type=module", "-e", scenario], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["counts"] == {"received": 1, "rejected": 1, "dropped": {"origin": 1, "frame": 1}}
    assert out["sent"] == [["error", "https://app.test"]]


def test_stall_settings_are_positive_seconds_or_refused() -> None:
    ok, cleared, *refused = run({"parse": [json.dumps({"type": "settings.set", "settings": s}) for s in (
        {"stall_notice_s": 0.5, "stall_timeout_s": 4},
        {"stall_notice_s": None},
        {"stall_notice_s": 0}, {"stall_timeout_s": "60"}, {"stall_timeout_s": -1}, {"stall_notice_s": True},
    )]})
    assert ok["ok"]["settings"] == {"stall_notice_s": 0.5, "stall_timeout_s": 4}
    assert cleared["ok"]["settings"] == {"stall_notice_s": None}
    assert all(r.get("error") == "InvalidHostMessage" for r in refused), refused


def test_the_api_setting_is_one_of_the_dialects_and_reaches_every_request() -> None:
    parsed = run({"parse": [json.dumps({"type": "settings.set", "settings": s}) for s in (
        {"api": "chat_completions"}, {"api": "responses"}, {"api": "anthropic_messages"}, {"api": None},
        {"api": "messages"}, {"api": ""}, {"api": 1}, {"api": ["responses"]},
    )]})
    assert [p.get("ok", {}).get("settings") for p in parsed[:4]] == [
        {"api": "chat_completions"}, {"api": "responses"}, {"api": "anthropic_messages"}, {"api": None}]
    assert all(r.get("error") == "InvalidHostMessage" for r in parsed[4:]), parsed[4:]
    hi = [{"role": "user", "content": "hi"}]
    out = run({"steps": [
        {"host": {"type": "settings.set", "id": "s", "settings": {"api": "anthropic_messages", "model": "claude-x"}}},
        {"page": {"type": "chat.send", "id": "r1", "settings": {"base_url": "http://page.test/v1", "api": "responses"},
                  "messages": hi}},
        {"host": {"type": "tokens.count", "id": "c", "messages": hi}},
        {"host": {"type": "chat.send", "id": "h", "messages": hi, "settings": {"api": "chat_completions"}}},
        {"host": {"type": "settings.set", "id": "s2", "settings": {"api": None}}},
        {"page": {"type": "chat.send", "id": "r2", "settings": {"base_url": "http://page.test/v1", "api": "responses"},
                  "messages": hi}},
    ]})
    assert out["toHost"][0]["settings"] == {"api": "anthropic_messages", "model": "claude-x", "api_key": False}
    assert [m["settings"].get("api") for m in out["toCore"]] == [
        "anthropic_messages", "anthropic_messages", "chat_completions", "responses"]
    assert out["toHost"][1]["settings"] == {"model": "claude-x", "api_key": False}


# A fake window with a parent embedder at https://app.test; each step dispatches one
# `message` event (its source: "parent", "null", "self" or "other"; a port with it or not).
TRUST = """
import { attachHosts } from './bridge/page/hosts.js';
const steps = JSON.parse(process.argv[1]);
const parent = new EventTarget();
const win = new EventTarget();
Object.assign(win, { location: { search: '?embed-origins=https://app.test,https://other-app.test' }, document: { baseURI: 'http://page.test/' }, parent });
const toParent = [];
parent.postMessage = (text) => toParent.push(JSON.parse(text).type);
const toPorts = [];
const toCore = [];
attachHosts({ addEventListener() {}, send: (m) => toCore.push(m.type) }, { window: win });
const sources = { parent, null: null, self: win, other: {} };
for (const [source, origin, data, withPort] of steps) {
  const ports = withPort ? [{ postMessage: (t) => toPorts.push(JSON.parse(t).type), close() {} }] : [];
  win.dispatchEvent(Object.assign(new Event('message'), { source: sources[source], origin, data, ports }));
}
console.log(JSON.stringify({ counts: win.firsttoken.counts(), toParent, toPorts, toCore }));
"""


def trust(*steps: tuple[str, str, dict[str, Any], bool]) -> dict[str, Any]:
    encoded = [[source, origin, json.dumps(data), port] for source, origin, data, port in steps]
    done = subprocess.run(["node", "--input-type=module", "-e", TRUST, json.dumps(encoded)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


PING = {"type": "ping", "id": "p"}
HELLO = {"type": "hello", "id": "h"}


def test_a_port_with_a_null_source_is_never_a_host_whatever_its_origin() -> None:
    # What a detached realm's message looks like, and what Android's postWebMessage did.
    out = trust(("null", "", HELLO, True), ("null", "https://app.test", HELLO, True), ("null", "https://app.test", PING, False),
                ("self", "http://page.test", HELLO, True), ("other", "https://app.test", HELLO, True))
    assert out["counts"] == {"received": 0, "rejected": 0, "dropped": {"origin": 0, "frame": 4}}
    assert out["toPorts"] == [] and out["toCore"] == []


def test_the_first_embedder_keeps_the_channel_and_a_listed_port_works() -> None:
    out = trust(("parent", "https://app.test", HELLO, True), ("parent", "https://app.test", PING, True),
                ("parent", "https://other-app.test", PING, False), ("parent", "https://other-app.test", HELLO, True),
                ("parent", "https://app.test", PING, False))
    # The port's hello is handled (answered once `ready` comes); its non-hello port message
    # is ignored; the second listed origin is dropped once app.test holds the channel.
    assert out["counts"]["dropped"] == {"origin": 2, "frame": 0}
    assert out["toCore"] == ["ping"]


def test_a_user_key_never_follows_a_host_to_another_endpoint() -> None:
    user = {"base_url": "http://page.test/v1", "api_key": "sk-user", "headers": {"x-user": "1"}, "model": "m"}
    chat = {"type": "chat.send", "id": "r1", "settings": user, "messages": [{"role": "user", "content": "hi"}]}
    moved = run({"steps": [{"host": {"type": "settings.set", "id": "s", "settings": {"base_url": "https://elsewhere.test/v1"}}},
                           {"page": chat}]})
    assert moved["toCore"][0]["settings"] == {"base_url": "https://elsewhere.test/v1", "model": "m"}
    with_key = run({"steps": [{"host": {"type": "settings.set", "id": "s", "settings": {
        "base_url": "https://elsewhere.test/v1", "api_key": "sk-host"}}}, {"page": chat}]})
    assert with_key["toCore"][0]["settings"] == {"base_url": "https://elsewhere.test/v1", "model": "m", "api_key": "sk-host"}
    same = run({"steps": [{"host": {"type": "settings.set", "id": "s", "settings": {"base_url": "http://page.test/v1/", "model": "n"}}},
                          {"page": chat}]})
    assert same["toCore"][0]["settings"] == {**user, "model": "n"}  # the parser drops the slash


def test_an_image_from_a_host_is_base64_of_an_image_type_or_refused() -> None:
    ok = {"data": "/9j/4AAQSkZJRg==", "type": "IMAGE/JPEG", "name": "shared.jpg", "exif": "dropped"}
    bad = [
        {"data": "", "type": "image/jpeg"},  # nothing
        {"data": "abcde", "type": "image/jpeg"},  # no base64 is 4n+1 long
        {"data": "ab=c", "type": "image/jpeg"},  # padding inside
        {"data": "aGk=\n", "type": "image/jpeg"},  # not the RFC 4648 alphabet
        {"data": "aGk=", "type": "text/plain"},
        {"data": "aGk=", "type": "image/jpeg; charset=x"},
        {"data": "aGk=", "type": "image/jpeg", "name": "x" * 257},
        {"data": ["aGk="], "type": "image/jpeg"},
        "aGk=",
        None,
    ]
    results = run({"parse": [json.dumps({"type": "composer.attach", "id": f"a{i}", "image": image})
                             for i, image in enumerate([ok, *bad])]})
    assert results[0]["ok"] == {"type": "composer.attach", "id": "a0",
                                "image": {"data": "/9j/4AAQSkZJRg==", "type": "image/jpeg", "name": "shared.jpg"}}
    assert results[1:] == [{"error": "InvalidHostMessage", "id": f"a{i + 1}"} for i in range(len(bad))]
    assert run({"parse": [json.dumps({"type": "composer.attach"})]}) == [{"error": "InvalidHostMessage", "id": None}]


def test_a_page_without_a_composer_refuses_a_hosts_image() -> None:
    # The answer comes from a promise: the scenario prints once the queued tasks ran.
    script = SCENARIO.replace("console.log(JSON.stringify({ toHost, toCore, counts: win.firsttoken.counts() }));",
                              "await new Promise((r) => setTimeout(r, 0));\n"
                              "console.log(JSON.stringify({ toHost, toCore, counts: win.firsttoken.counts() }));")
    done = subprocess.run(["node", "--input-type=module", "-e", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          input=json.dumps({"steps": [{"host": {"type": "composer.attach", "id": "c",
                                                                "image": {"data": "aGk=", "type": "image/png"}}}]}))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["toCore"] == []
    assert out["toHost"] == [{"v": 1, "type": "error", "id": "c", "error": {"code": "unsupported", "message": "this page has no composer"}}]


# ---- versions (bridge/PROTOCOL.md, "Versions") -------------------------------------------

CLEARED = {"v": 2, "type": "chat.stall.cleared", "id": "r1", "stalled_s": 12.5}
READY_V2 = {"v": 2, "type": "ready", "id": "hello", "protocol": 2, "boot": {"ready_ms": 5}}


def test_a_host_that_says_no_version_or_1_is_spoken_to_in_version_1_with_its_names() -> None:
    for hello in ({"type": "hello", "id": "h"}, {"v": 1, "type": "hello", "id": "h"}):
        out = run({"steps": [{"host": hello}, {"core": READY_V2}, {"core": CLEARED},
                             {"host": {"type": "ping", "id": "p"}}, {"core": {"v": 2, "type": "pong", "id": "host:native:p", "t": 1}}]})
        assert out["toHost"] == [
            {"v": 1, "type": "ready", "id": "h", "protocol": 1, "boot": {"ready_ms": 5}},
            {"v": 1, "type": "chat.resume", "id": "page:r1", "stalled_s": 12.5},
            {"v": 1, "type": "pong", "id": "p", "t": 1},
        ], hello


def test_a_host_that_says_2_gets_version_2_and_the_new_name() -> None:
    out = run({"steps": [{"host": {"v": 2, "type": "hello", "id": "h"}}, {"core": READY_V2}, {"core": CLEARED},
                         {"host": {"v": 2, "type": "settings.set", "id": "s", "settings": {"model": "m"}}}]})
    assert out["toHost"] == [
        {"v": 2, "type": "ready", "id": "h", "protocol": 2, "boot": {"ready_ms": 5}},
        {"v": 2, "type": "chat.stall.cleared", "id": "page:r1", "stalled_s": 12.5},
        {"v": 2, "type": "settings.applied", "id": "s", "settings": {"model": "m", "api_key": False}},
    ]


def test_a_host_follows_the_version_of_its_last_message_and_3_is_refused() -> None:
    out = run({"steps": [{"host": {"v": 2, "type": "ping", "id": "a"}}, {"core": CLEARED},
                         {"host": {"v": 1, "type": "ping", "id": "b"}}, {"core": CLEARED},
                         {"host": {"v": 3, "type": "ping", "id": "c"}}]})
    assert [(m["v"], m["type"]) for m in out["toHost"]] == [
        (2, "chat.stall.cleared"), (1, "chat.resume"), (1, "error")]
    assert out["toHost"][-1]["error"]["code"] == "invalid_message" and out["toHost"][-1]["id"] == "c"
    assert [m["id"] for m in out["toCore"]] == ["host:native:a", "host:native:b"]
