// Storage the browser may refuse. A cross-site frame with third-party storage blocked
// (Chromium's default in incognito, Safari's and Firefox's strict modes), a sandboxed
// frame without allow-same-origin, or a WebView with DOM storage off: reading
// `window.localStorage` itself throws a SecurityError there
// (https://html.spec.whatwg.org/multipage/webstorage.html#dom-localstorage, step 1 of
// "obtain a storage area": "if the request to use storage is denied, throw").
// IndexedDB's open fails and Cache Storage's open rejects in the same places.
//
// The page then keeps everything in memory, for this visit, and says so once
// (`StorageNotice`). `webStorage(name)` is the one way the page reaches localStorage or
// sessionStorage: the same object for every caller, so that what one module writes in
// memory another reads back. `refuse(what)` records any other refusal (store/db.js
// reports IndexedDB's) so the notice sees one list. Cache Storage's is not recorded: it
// costs only the next visit's speed (js/boot/next-visit.js then makes no snapshot).

const refused = new Set();
const memory = new Map(); // name → MemoryStorage, once refused
const listeners = new EventTarget();

/** A Storage (getItem, setItem, removeItem, clear, key, length) that holds strings in
 * memory, for this page's life. Values are stringified as the real one does. */
export class MemoryStorage {
  #items = new Map();

  get length() {
    return this.#items.size;
  }

  key(i) {
    return [...this.#items.keys()][i] ?? null;
  }

  getItem(key) {
    return this.#items.has(String(key)) ? this.#items.get(String(key)) : null;
  }

  setItem(key, value) {
    this.#items.set(String(key), String(value));
  }

  removeItem(key) {
    this.#items.delete(String(key));
  }

  clear() {
    this.#items.clear();
  }
}

/** `localStorage` or `sessionStorage` (`name`), or, if the browser refuses it, a
 * MemoryStorage shared by every caller. Never throws. */
export function webStorage(name, win = globalThis) {
  if (memory.has(name)) return memory.get(name);
  try {
    const storage = win[name]; // the getter is what throws when storage is denied
    if (storage && typeof storage.getItem === 'function') return storage;
    throw new Error(`${name} is not available`);
  } catch (e) {
    const fallback = new MemoryStorage();
    memory.set(name, fallback);
    refuse(name, e);
    return fallback;
  }
}

/** Record that the browser refused `what` ('localStorage', 'sessionStorage' or
 * 'indexedDB'); the first refusal of each is announced once. */
export function refuse(what, error = null) {
  if (refused.has(what)) return;
  refused.add(what);
  listeners.dispatchEvent(new CustomEvent('refused', { detail: { what, error: error?.name || String(error ?? '') } }));
}

/** What the browser refused so far, in the order it did. */
export function refusals() {
  return [...refused];
}

/** Call `fn(what)` for each refusal so far and each one to come. */
export function onRefused(fn) {
  for (const what of refused) fn(what);
  listeners.addEventListener('refused', (e) => fn(e.detail.what));
}

// What the user loses, by what was refused: settings and conversations are what a user
// would miss on the next visit. sessionStorage alone (the key, which dies with the tab
// anyway) is not announced.
// (The words are the caller's, in the reader's language: `say(key)`, i18n.js's `t`,
// which itself reads localStorage through this module, so it is not imported here.)

/** The quiet line that says so: a `role=status` region placed before `before`, filled
 * once something the user would miss was refused (a region shown with its text already
 * in it may not be read, so it is there from the start, empty). `<html data-storage>`
 * is 'memory' from then on. */
export class StorageNotice {
  constructor({ before, doc = document, say = (key) => key } = {}) {
    this.line = doc.createElement('div');
    this.line.className = 'storage-notice';
    this.line.setAttribute('role', 'status');
    before.before(this.line);
    onRefused(() => {
      const lost = refused.has('localStorage') ? say('storage.nothing') : refused.has('indexedDB') ? say('storage.noConversations') : '';
      if (!lost || this.line.textContent === lost) return;
      doc.documentElement.dataset.storage = 'memory';
      this.line.textContent = lost;
    });
  }
}
