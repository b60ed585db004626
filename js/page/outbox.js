// @ts-check
// The outbox: prompts sent while the device was offline, kept in IndexedDB so that they
// survive a reload, and sent in order, each exactly once, when the connection returns.
//
// An item names the answer entry that waits for it (`{id, conversation, at}`); the
// prompt itself stays in the conversation, where the user sees it, marked "waiting for a
// connection". Exactly once comes from `take`: one readwrite transaction reads and
// deletes the item, and IndexedDB runs readwrite transactions on a store one after the
// other (IndexedDB 3.0, "transaction scheduling"), so of two takers (an `online` event
// fired twice, a second tab) only one gets it. The item is taken, committed, before its
// request is handed to Python: a reload in between leaves an answer that is `queued`
// with no item, which the page shows as interrupted, with Retry. A prompt is never sent
// twice by itself; at worst it waits for a tap.
//
// Where IndexedDB cannot be opened (some private modes), the outbox lives in memory for
// the visit: prompts still go out on `online`, but do not survive a reload.

const DB_NAME = 'firsttoken-outbox';
const STORE = 'items';

export class Outbox {
  constructor(indexedDB = globalThis.indexedDB) {
    this.idb = indexedDB;
    this.db = null;
    this.memory = null; // Map id → item, when IndexedDB failed
  }

  /** Keep `item` (`{id, conversation}`); resolves once it is stored. */
  async put(item) {
    const value = { ...item, at: Date.now() };
    const db = await this.open();
    if (!db) {
      this.memory.set(value.id, value);
      return;
    }
    await request(db.transaction(STORE, 'readwrite').objectStore(STORE).put(value), true);
  }

  /** Every item, oldest first. */
  async list() {
    const db = await this.open();
    const items = db ? await request(db.transaction(STORE).objectStore(STORE).getAll()) : [...this.memory.values()];
    return items.sort((a, b) => a.at - b.at);
  }

  /** Take the item with `id` out: the item to its one taker, null to anyone else. */
  async take(id) {
    const db = await this.open();
    if (!db) {
      const item = this.memory.get(id) ?? null;
      this.memory.delete(id);
      return item;
    }
    const tx = db.transaction(STORE, 'readwrite');
    const store = tx.objectStore(STORE);
    const item = await request(store.get(id));
    if (item) store.delete(id);
    await done(tx);
    return item ?? null;
  }

  /** Drop an item (its prompt was edited away, or its conversation deleted). */
  async remove(id) {
    await this.take(id);
  }

  async open() {
    if (this.db || this.memory) return this.db;
    this.opening ??= new Promise((resolve) => {
      let req;
      try {
        req = this.idb.open(DB_NAME, 1);
      } catch {
        resolve(null);
        return;
      }
      req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: 'id' });
      req.onsuccess = () => {
        const db = req.result;
        // Another tab upgrading: let it, and reopen on next use.
        db.onversionchange = () => {
          db.close();
          this.db = null;
          this.opening = null;
        };
        resolve(db);
      };
      req.onerror = () => resolve(null);
      req.onblocked = () => resolve(null);
    });
    this.db = await this.opening;
    if (!this.db) this.memory = new Map();
    return this.db;
  }
}

// A request's result; with `committed`, once its transaction has committed too (a put
// that resolved before its commit could still be lost to a reload).
function request(req, committed = false) {
  return new Promise((resolve, reject) => {
    req.onerror = () => reject(req.error);
    req.onsuccess = () => {
      if (!committed) resolve(req.result);
      else done(req.transaction).then(() => resolve(req.result), reject);
    };
  });
}

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error ?? new DOMException('aborted', 'AbortError'));
  });
}
