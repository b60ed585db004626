"""The system-message cache in real Chromium: persistence across a reload (IndexedDB),
each IndexedDB failure of issue 8 injected in the page (the cache falls back to memory
with a visible notice, and sending goes on), and the gateway's unknown-reference round
trip after a gateway restart.

Faults are injected the way they happen, where they happen: in the worker that runs
Python (Playwright evaluates in it), by patching the IndexedDB API it calls, by a real
quota (CDP `Storage.overrideQuotaForOrigin`), or by a second connection from the page's
main thread, which stands in for another tab. Nothing in the product knows of them.
"""

from __future__ import annotations

import socket

import pytest
from playwright.sync_api import Page, expect

from harness.chromium import ANSWER, BOOT_TIMEOUT_MS
from harness.protocol_spy import Chat, system_sent
from harness.servers import gateway

pytestmark = pytest.mark.e2e


@pytest.fixture
def chat(page: Page) -> Chat:
    return Chat(page)


def test_the_system_message_survives_a_reload_in_indexeddb(chat: Chat, gateway_url: str) -> None:
    chat.open(gateway_url)
    first = chat.send("first question")
    assert first["chat.done"] and first["chat.prepared"]["cache"]["system"] == "miss"
    assert first["chat.prepared"]["cache"]["store"] == "indexeddb"
    second = chat.send("second question")
    assert second["chat.prepared"]["cache"] == {"system": "hit", "messages": 1, "store": "indexeddb", "source": "memory"}
    full, by_ref = system_sent(chat.bodies[0]), system_sent(chat.bodies[1])
    assert full["content"] and len(full["content"]) > 3000
    assert set(by_ref) == {"role", "x_firsttoken_ref"}
    assert chat.client_ids[0] and chat.client_ids[0] == chat.client_ids[1]
    # Both bodies go gzipped to the page's own gateway, so the reference saves less than
    # the system prompt's text; still most of the first body.
    assert second["chat.prepared"]["request_bytes"] < first["chat.prepared"]["request_bytes"] / 2
    # What the page keeps: one verified record in IndexedDB, read from the main thread.
    stored = chat.page.evaluate("""() => new Promise((ok, no) => {
      const r = indexedDB.open('firsttoken-cache');
      r.onerror = () => no(r.error);
      r.onsuccess = () => {
        const db = r.result, tx = db.transaction(['entries', 'meta']);
        const keys = tx.objectStore('entries').getAllKeys(), metas = tx.objectStore('meta').getAll();
        tx.oncomplete = () => { db.close(); ok({ keys: keys.result, metas: metas.result }); };
      };
    })""")
    assert len(stored["keys"]) == 1 and stored["metas"][0][0] > len(full["content"])

    chat.reload()
    third = chat.send("third question, after a reload")
    # Taken from IndexedDB (the memory tier went with the page): no compressing, no counting.
    assert third["chat.prepared"]["cache"] == {"system": "hit", "messages": 1, "store": "indexeddb", "source": "store"}
    assert system_sent(chat.bodies[2]) == full  # a new session tells the gateway once more
    assert chat.client_ids[2] == chat.client_ids[0]  # the client id survived the reload too
    fourth = chat.send("fourth question")
    assert system_sent(chat.bodies[3]) == by_ref and fourth["chat.done"]
    assert chat.statuses == [200, 200, 200, 200]


def notice_shown(chat: Chat, reason: str) -> None:
    notice = chat.page.locator(f'{ANSWER} .notice[data-code="cache_degraded"]')
    expect(notice).to_have_count(1)
    expect(notice).to_contain_text("in memory")
    events = [e for e in chat.page.evaluate("() => window.__ft.events") if e["type"] == "notice"]
    assert [e["reason"] for e in events] == [reason]


def goes_on_in_memory(chat: Chat) -> None:
    """After the fall-back: the answer came, the next request hits memory and sends a ref."""
    after = chat.send("and now?")
    assert after["chat.done"] and after["chat.prepared"]["cache"]["store"] == "memory"
    assert after["chat.prepared"]["cache"]["system"] == "hit"
    assert "x_firsttoken_ref" in system_sent(chat.bodies[-1])
    assert "notice" not in after  # said once


def test_indexeddb_that_cannot_open_falls_back_to_memory(chat: Chat, gateway_url: str) -> None:
    chat.open(gateway_url)
    # A private window: opening fails (Firefox answers InvalidStateError).
    chat.python_worker().evaluate("""() => {
      IDBFactory.prototype.open = function () {
        const request = new EventTarget();
        request.error = new DOMException('A mutation operation was attempted on a database that did not allow mutations.', 'InvalidStateError');
        setTimeout(() => { const e = new Event('error', { cancelable: true }); request.onerror?.(e); }, 0);
        return request;
      };
    }""")
    first = chat.send("hello in private")
    assert first["chat.done"] and first["chat.prepared"]["cache"]["store"] == "memory"  # failed at the lookup
    notice_shown(chat, "cache_unavailable")
    goes_on_in_memory(chat)


def test_a_write_over_the_quota_falls_back_to_memory(chat: Chat, gateway_url: str) -> None:
    # A real QuotaExceededError, set before the page opens anything: the page's own
    # conversation store opens IndexedDB at once, and Chromium applies the override only
    # to the origin's storage opened after it. (That store then goes on in memory too.)
    cdp = chat.page.context.new_cdp_session(chat.page)
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": gateway_url, "quotaSize": 1024})
    chat.open(gateway_url)
    first = chat.send("fill it up")
    assert first["chat.done"]
    notice_shown(chat, "cache_quota_exceeded")
    goes_on_in_memory(chat)


# Closes the connection right before it is used, as WebKit does when an app is
# backgrounded; `times` connections in all (then IndexedDB behaves again).
LOSE_CONNECTIONS = """times => {
  self.__ftOpens = 0;
  const open = IDBFactory.prototype.open;
  IDBFactory.prototype.open = function (...args) { self.__ftOpens += 1; return open.apply(this, args); };
  const transaction = IDBDatabase.prototype.transaction;
  let left = times;
  IDBDatabase.prototype.transaction = function (...args) {
    if (left > 0) { left -= 1; this.close(); }
    return transaction.apply(this, args);
  };
}"""


def test_a_lost_connection_is_reopened_once(chat: Chat, gateway_url: str) -> None:
    chat.open(gateway_url)
    chat.send("first")  # the connection is open now
    worker = chat.python_worker()
    worker.evaluate(LOSE_CONNECTIONS, 1)
    second = chat.send("after the app came back")
    assert second["chat.done"] and "notice" not in second
    assert worker.evaluate("() => self.__ftOpens") == 1  # reopened once
    third = chat.send("still there?")
    assert third["chat.prepared"]["cache"]["store"] == "indexeddb" and "notice" not in third


def test_a_connection_lost_again_after_reopening_falls_back_to_memory(chat: Chat, gateway_url: str) -> None:
    chat.open(gateway_url)
    chat.send("first")
    worker = chat.python_worker()
    worker.evaluate(LOSE_CONNECTIONS, 1000)
    second = chat.send("after the app came back")
    assert second["chat.done"]
    assert worker.evaluate("() => self.__ftOpens") == 1  # one reopen, then no more tries
    notice_shown(chat, "cache_connection_lost")
    goes_on_in_memory(chat)


def test_a_newer_version_in_another_tab_is_not_blocked_and_we_fall_back(chat: Chat, gateway_url: str) -> None:
    chat.open(gateway_url)
    chat.send("first")  # the worker holds a version-1 connection
    # "Another tab" (this page's main thread) opens a newer schema version.
    outcome = chat.page.evaluate("""() => new Promise((ok) => {
      const r = indexedDB.open('firsttoken-cache', 2);
      r.onupgradeneeded = () => {};
      r.onblocked = () => ok('blocked');
      r.onsuccess = () => { window.__newerTab = r.result; ok('success'); };
      r.onerror = () => ok('error ' + r.error.name);
    })""")
    assert outcome == "success"  # the worker closed its connection on versionchange
    second = chat.send("second")
    assert second["chat.done"]
    notice_shown(chat, "cache_version_conflict")
    goes_on_in_memory(chat)


def test_a_blocked_upgrade_times_out_instead_of_hanging(chat: Chat, gateway_url: str) -> None:
    chat.open(gateway_url)
    # "Another tab" holds the database open and ignores versionchange…
    chat.page.evaluate("""() => new Promise((ok) => {
      const r = indexedDB.open('firsttoken-cache');
      r.onsuccess = () => { window.__oldTab = r.result; ok(); };
    })""")
    # …while this page's cache wants a newer version of it.
    chat.python_worker().evaluate("""() => {
      const open = IDBFactory.prototype.open;
      IDBFactory.prototype.open = function (name, version) { return open.call(this, name, version + 1); };
    }""")
    first = chat.send("do not hang")
    assert first["chat.done"]
    # Cut short at the store's open timeout (3 s), not the test's.
    assert first["chat.prepared"]["prepare_ms"] < 20_000
    notice_shown(chat, "cache_version_conflict")
    assert "blocked" in chat.page.inner_text(f"{ANSWER} .notice")
    goes_on_in_memory(chat)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unknown_reference_after_a_gateway_restart_is_sent_again_in_full(chat: Chat) -> None:
    port = str(free_port())
    with gateway("--port", port, "--ttft-ms", "0", "--tps", "2000") as url:
        chat.open(url)
        chat.send("first")
        chat.send("second")
    # The gateway restarts (same address) and has forgotten every system message.
    with gateway("--port", port, "--ttft-ms", "0", "--tps", "2000"):
        third = chat.send("third, after the gateway restarted")
        assert third["chat.done"] and "chat.retry" not in third
        fourth = chat.send("fourth")
    refs = ["x_firsttoken_ref" in system_sent(b) for b in chat.bodies]
    assert refs == [False, True, True, False, True]
    assert chat.statuses == [200, 200, 409, 200, 200]
    assert system_sent(chat.bodies[3]) == system_sent(chat.bodies[0])
    assert fourth["chat.done"] and not chat.page.locator(f"{ANSWER} .error").count()
    assert BOOT_TIMEOUT_MS  # (booted once: the page never reloaded)
