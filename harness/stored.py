"""What the page keeps (js/page/conversation-store.js, js/page/store/db.js), read back for tests."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import Page, expect

#: Everything in the page's IndexedDB of conversations, read from the main thread.
READ_STORE = """() => new Promise((ok, no) => {
  const r = indexedDB.open('firsttoken-conversations');
  r.onerror = () => no(r.error);
  r.onsuccess = () => {
    const db = r.result;
    if (!db.objectStoreNames.contains('conversations')) { db.close(); ok({ metas: [], messages: [], open: null }); return; }
    const tx = db.transaction(['conversations', 'messages', 'state']);
    const metas = tx.objectStore('conversations').getAll(), messages = tx.objectStore('messages').getAll();
    const open = tx.objectStore('state').get('open');
    tx.oncomplete = () => { db.close(); ok({ metas: metas.result, messages: messages.result, open: open.result ?? null }); };
  };
})"""


def saved(page: Page) -> None:
    """Wait until the store is IndexedDB (an open that answers late works in memory
    until then, with no write pending: so `data-pending` alone could hold too early) and
    every write the page started has committed."""
    panel = page.locator("#conversations")
    expect(panel).to_have_attribute("data-store", "indexeddb", timeout=30_000)
    expect(panel).to_have_attribute("data-pending", "0")


def store(page: Page) -> dict[str, Any]:
    """`{metas, messages, open}` as committed: the listings, the `{id, messages}`
    records, and the id of the open conversation."""
    saved(page)
    return page.evaluate(READ_STORE)


def stored_messages(page: Page, conversation_id: str | None = None) -> list[dict]:
    """The messages kept of one conversation (the open one by default), `[]` if none."""
    kept = store(page)
    wanted = conversation_id or kept["open"]
    return next((r["messages"] for r in kept["messages"] if r["id"] == wanted), [])
