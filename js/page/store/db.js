// The conversations kept in IndexedDB, and the one read the page waits for at start.
//
// Three object stores, so that the list reads small and the open conversation's
// messages are read alone:
//   conversations  {id, title, created, updated, renamed?, reasoning?} (records.js validMeta)
//   messages       {id, messages: [{role, content, ...}, ...]}   (records.js validMessages)
//   state          'open' → the id of the conversation last open ('' for a new chat)
//
// `early` starts when this module is first evaluated (index.html loads it as its own
// async module, so that happens while the rest of the page's modules are still being
// fetched): open, move the old localStorage conversation in, read the list and the
// last-open conversation, all in parallel with the page's start. page.js paints what it
// gives, whenever it comes; nothing waits on it.
//
// Every failure becomes a `StoreError` here, and the page goes on in memory
// (conversation-store.js): no IndexedDB (a private window in some browsers, a sandboxed
// frame), a refused open, the quota (QuotaExceededError on the transaction, spec: "Steps
// for aborting a transaction"), a newer version opened in another tab (versionchange: we
// close at once so we never block it), a connection the browser closed (WebKit does,
// when an app is backgrounded: reopened, at most twice in a page's life).

import { refuse, webStorage } from '../storage.js';
import { newId, titleFrom, validMessages, validMeta } from './records.js';

const NAME = 'firsttoken-conversations';
const VERSION = 1;
/** Where the page kept its one conversation before (js/page/conversation-store.js, until 2026-12). */
export const LEGACY_KEY = 'firsttoken.history.v1';
// An open that neither succeeds nor fails (blocked by another tab's old connection,
// or, seen in WebKit, never answered) must not leave the page without a list: after
// this long the page works in memory. An open that answers later all the same (a busy
// phone, a WebKit storage process starting under load) is taken up then (`late`):
// the kept conversations come back, and what was typed meanwhile is saved.
const OPEN_TIMEOUT_MS = 4000;
const REOPENS = 2;

export class StoreError extends Error {
  /** `reason`: 'unavailable' | 'quota' | 'version' | 'closed' | 'failed'. */
  constructor(reason, cause) {
    super(`conversations store ${reason}: ${cause?.name ?? ''} ${cause?.message ?? ''}`.trim());
    this.reason = reason;
    this.cause = cause;
  }
}

function storeError(e, fallback = 'failed') {
  if (e instanceof StoreError) return e;
  if (e?.name === 'QuotaExceededError') return new StoreError('quota', e);
  if (e?.name === 'VersionError') return new StoreError('version', e);
  if (e?.name === 'InvalidStateError') return new StoreError('closed', e);
  return new StoreError(fallback, e);
}

const settle = (req) => new Promise((resolve, reject) => {
  req.onsuccess = () => resolve(req.result);
  req.onerror = (e) => {
    e?.preventDefault?.(); // handled here: not an uncaught error in the page
    reject(req.error);
  };
});

// A transaction is done when it commits ("complete"), not when its requests succeed.
const committed = (tx) => new Promise((resolve, reject) => {
  tx.oncomplete = () => resolve();
  tx.onerror = (e) => e?.preventDefault?.();
  tx.onabort = () => reject(tx.error ?? new DOMException('transaction aborted', 'AbortError'));
});

/** The database, opened; rejects with a StoreError. One that timed out carries `late`:
 * a promise of the database should the open succeed after all (null if it fails). */
function openDatabase(factory) {
  return new Promise((resolve, reject) => {
    if (!factory?.open) {
      reject(new StoreError('unavailable'));
      return;
    }
    let req;
    try {
      req = factory.open(NAME, VERSION);
    } catch (e) {
      reject(storeError(e, 'unavailable'));
      return;
    }
    let late = null; // once timed out: what the open answers after all
    const timer = setTimeout(() => {
      const error = new StoreError('unavailable', new Error('open timed out'));
      error.late = new Promise((ok) => { late = ok; });
      reject(error);
    }, OPEN_TIMEOUT_MS);
    req.onupgradeneeded = () => {
      const db = req.result;
      if (!db.objectStoreNames.contains('conversations')) db.createObjectStore('conversations', { keyPath: 'id' });
      if (!db.objectStoreNames.contains('messages')) db.createObjectStore('messages', { keyPath: 'id' });
      if (!db.objectStoreNames.contains('state')) db.createObjectStore('state');
    };
    req.onsuccess = () => {
      clearTimeout(timer);
      if (late) late(req.result);
      else resolve(req.result);
    };
    req.onerror = (e) => {
      e?.preventDefault?.();
      clearTimeout(timer);
      if (late) late(null);
      else reject(storeError(req.error, 'unavailable'));
    };
    req.onblocked = () => { /* an old connection elsewhere: the timeout decides */ };
  });
}

export class ConversationDb {
  constructor(db, factory) {
    this.factory = factory;
    this.reopens = 0;
    this.attach(db);
  }

  static async open(factory = globalThis.indexedDB) {
    return new ConversationDb(await openDatabase(factory), factory);
  }

  attach(db) {
    this.db = db;
    db.onversionchange = () => { // another tab wants a newer schema: never block it
      db.close();
      this.db = null;
      this.gone = new StoreError('version');
    };
    db.onclose = () => {
      if (this.db === db) this.db = null;
    };
  }

  async connection() {
    if (this.gone) throw this.gone;
    if (this.db) return this.db;
    if (this.reopens >= REOPENS) throw new StoreError('closed');
    this.reopens += 1;
    this.attach(await openDatabase(this.factory));
    return this.db;
  }

  // One transaction, reopened once if the connection turned out closed.
  async run(stores, mode, body) {
    for (let attempt = 0; ; attempt += 1) {
      let tx;
      try {
        tx = (await this.connection()).transaction(stores, mode);
      } catch (e) {
        if (e?.name === 'InvalidStateError' && attempt === 0) {
          this.db = null;
          continue;
        }
        throw storeError(e);
      }
      try {
        const result = body(tx);
        await committed(tx);
        return result instanceof Promise ? await result : result;
      } catch (e) {
        throw storeError(e);
      }
    }
  }

  /** The list, the id last open (`undefined`: never said) and that conversation's
   * messages (`null` if unreadable), in one read. Bad records are skipped. */
  readStart() {
    return this.run(['conversations', 'messages', 'state'], 'readonly', (tx) => new Promise((resolve, reject) => {
      const out = { metas: [], openId: undefined, messages: null };
      const all = tx.objectStore('conversations').getAll();
      const open = tx.objectStore('state').get('open');
      let pending = 2;
      const step = () => {
        if (--pending) return;
        const id = typeof out.openId === 'string' && out.openId ? out.openId
          : out.openId === undefined ? out.metas.reduce((a, m) => (!a || m.updated > a.updated ? m : a), null)?.id : null;
        if (!id) {
          resolve(out);
          return;
        }
        out.messagesOf = id;
        const got = tx.objectStore('messages').get(id);
        got.onsuccess = () => {
          out.messages = validMessages(got.result);
          resolve(out);
        };
        got.onerror = () => reject(got.error);
      };
      all.onsuccess = () => {
        out.metas = (all.result ?? []).map(validMeta).filter(Boolean);
        step();
      };
      open.onsuccess = () => {
        out.openId = typeof open.result === 'string' ? open.result : undefined;
        step();
      };
      all.onerror = () => reject(all.error);
      open.onerror = () => reject(open.error);
    }));
  }

  /** One conversation's messages, `null` if missing or unreadable. */
  readMessages(id) {
    return this.run(['messages'], 'readonly', (tx) => settle(tx.objectStore('messages').get(id)).then(validMessages));
  }

  /** Every conversation's messages (for search): id → messages; unreadable ones left out. */
  readAllMessages() {
    return this.run(['messages'], 'readonly', (tx) => settle(tx.objectStore('messages').getAll()).then((records) => {
      const out = new Map();
      for (const r of records ?? []) {
        const messages = validMessages(r);
        if (messages && typeof r.id === 'string') out.set(r.id, messages);
      }
      return out;
    }));
  }

  /** Write a conversation whole (listing and messages, in one transaction); `openId`:
   * also say which conversation is open (a string), or leave that as it is (undefined). */
  put(meta, messages, openId) {
    return this.run(['conversations', 'messages', 'state'], 'readwrite', (tx) => {
      tx.objectStore('conversations').put(meta);
      tx.objectStore('messages').put({ id: meta.id, messages });
      if (typeof openId === 'string') tx.objectStore('state').put(openId, 'open');
    });
  }

  /** Say which conversation is open ('' for a new chat not yet saved). */
  setOpen(openId) {
    return this.run(['state'], 'readwrite', (tx) => {
      tx.objectStore('state').put(openId, 'open');
    });
  }

  delete(id) {
    return this.run(['conversations', 'messages'], 'readwrite', (tx) => {
      tx.objectStore('conversations').delete(id);
      tx.objectStore('messages').delete(id);
    });
  }
}

// ---- the old localStorage conversation -------------------------------------------
function readLegacy() {
  let raw = null;
  try {
    raw = webStorage('localStorage').getItem(LEGACY_KEY);
  } catch { /* storage refused (a sandboxed frame): nothing to move */ }
  if (raw === null) return null;
  let parsed;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return { entries: null }; // unreadable: left where it is, never deleted
  }
  return { entries: Array.isArray(parsed) ? validMessages(parsed) : null, empty: Array.isArray(parsed) && !parsed.length };
}

/** Drop the old key: only once what it held is committed to IndexedDB. */
export function removeLegacy() {
  try {
    webStorage('localStorage').removeItem(LEGACY_KEY);
  } catch { /* nothing to do */ }
}

/** The old conversation as a new one: titled from its first prompt. */
export function legacyConversation(entries, now = Date.now()) {
  const first = entries.find((m) => m.role === 'user' && m.content.trim());
  return { id: newId(now), title: first ? titleFrom(first.content) : 'Earlier conversation', created: now, updated: now, migrated: true };
}

/** Open, move the old conversation in (the key is removed only once the transaction
 * that holds it committed; should a tab still running an older build write the key
 * again, the next visit moves that too, as another conversation), read the start. Never rejects: `{db, start, error}`, where
 * `db` is null if IndexedDB cannot be used, and `start` is what to show
 * (`{metas, openId, messages, messagesOf}`). An open that timed out also gives `late`:
 * a promise of the same, should the open answer after all (null if it never does). */
export async function openConversations(factory = globalThis.indexedDB) {
  const legacy = readLegacy();
  let db;
  try {
    db = await ConversationDb.open(factory);
  } catch (e) {
    // In memory only; the old key stays, to be moved on a visit where IndexedDB works.
    // An open that is only slow is not a refusal (unless it fails in the end).
    if (!e?.late) refuse('indexedDB', e);
    const start = { metas: [], openId: undefined, messages: null };
    if (legacy?.entries?.length) {
      const meta = legacyConversation(legacy.entries);
      Object.assign(start, { metas: [{ ...meta, legacy: true }], openId: meta.id, messages: legacy.entries, messagesOf: meta.id });
    }
    // The old conversation is not moved then: the page shows it already (`legacy`), and
    // conversation-store.js writes it, and drops the key, like one typed meanwhile.
    const late = e?.late?.then((opened) => {
      if (opened) return readOpened(new ConversationDb(opened, factory), null);
      refuse('indexedDB', e);
      return null;
    });
    return { db: null, start, error: storeError(e, 'unavailable'), ...(late ? { late } : {}) };
  }
  return readOpened(db, legacy);
}

// The open database's start (see openConversations), the old conversation moved in.
async function readOpened(db, legacy) {
  let error = null;
  let carried = null; // the old conversation, if it could not be moved: shown all the same
  if (legacy?.entries?.length) {
    const meta = legacyConversation(legacy.entries);
    try {
      await db.put(meta, legacy.entries, meta.id);
      removeLegacy();
    } catch (e) {
      error = storeError(e);
      carried = { ...meta, legacy: true };
    }
  } else if (legacy?.empty) {
    removeLegacy();
  }
  let start;
  try {
    start = await db.readStart();
  } catch (e) {
    error = storeError(e);
    start = { metas: [], openId: undefined, messages: null };
  }
  if (carried) {
    // conversation-store.js saves it like any conversation, and drops the old key once that commits.
    Object.assign(start, { metas: [...start.metas, carried], openId: carried.id, messages: legacy.entries, messagesOf: carried.id });
  }
  return { db, start, error };
}

/** Started once, as early as this module is evaluated; its end is marked on the page's
 * timeline (User Timing `firsttoken:conversations.read`) for benchmarks. */
export const early = typeof window === 'undefined' ? null : openConversations().then((result) => {
  performance.mark('firsttoken:conversations.read');
  return result;
});
