// PyScript where IndexedDB is refused. PyScript 0.7 opens IndexedDB maps
// (`@webreflection/idb-map`, databases named "IDBMap/…") twice without being asked:
// - in the worker, its Pyodide engine awaits its package cache ("IDBMap/<url>@<version>")
//   before Python starts, whether or not there are packages to cache (ours has none);
// - on the page, its `fs` module opens "IDBMap/@pyscript.fs" as core.js is evaluated.
// Where the browser refuses IndexedDB (a cross-site frame with third-party storage
// blocked: open fails with UnknownError; a sandboxed frame: SecurityError), the first
// rejects with the error *event*, which the worker cannot post to the page (an Event is
// not cloneable), so Python never starts; the second throws from its error handler (it
// re-dispatches the event being dispatched) and leaves a rejection nobody handles.
//
// So, for those databases only, an open that fails falls back to a database in memory
// with just what idb-map uses (one object store; get, getKey, getAllKeys, put, delete,
// clear, count). Every other open is the browser's own, failures included: firsttoken's
// cache (py/firsttoken/browser/indexeddb.py) has its own typed handling of them. When
// IndexedDB works, this costs nothing: the real request is the one PyScript sees.
//
// Imported first by pyodide-loader.js (in the worker) and by boot.js (on the page),
// so it is in place before PyScript opens either.

const PREFIX = 'IDBMap/';
const databases = new Map(); // name → Map(store → Map(key → value)), for this realm's life

// Requests complete in a later task, as real ones do, so that handlers assigned after
// the call are in place.
const later = (fn) => setTimeout(fn, 0);

function fire(target, type, extra = {}) {
  const handler = target[`on${type}`];
  if (typeof handler === 'function') handler.call(target, { type, target, ...extra });
}

function request(run) {
  const req = { result: undefined, error: null, readyState: 'pending', onsuccess: null, onerror: null };
  later(() => {
    try {
      req.result = run();
      req.readyState = 'done';
      fire(req, 'success');
    } catch (error) {
      req.error = error;
      req.readyState = 'done';
      fire(req, 'error');
    }
  });
  return req;
}

function memoryStore(rows) {
  const copy = (v) => (v === undefined ? v : structuredClone(v));
  return {
    get: (key) => request(() => copy(rows.get(key))),
    getKey: (key) => request(() => (rows.has(key) ? key : undefined)),
    getAllKeys: () => request(() => [...rows.keys()].sort()),
    put: (value, key) => request(() => { rows.set(key, copy(value)); return key; }),
    delete: (key) => request(() => { rows.delete(key); }),
    clear: () => request(() => { rows.clear(); }),
    count: () => request(() => rows.size),
  };
}

function memoryDatabase(name) {
  const stores = databases.get(name);
  const names = () => Object.assign([...stores.keys()], { contains: (n) => stores.has(n) });
  const transaction = () => {
    const tx = { oncomplete: null, onerror: null, onabort: null };
    tx.objectStore = (store) => memoryStore(stores.get(store));
    later(() => later(() => fire(tx, 'complete'))); // after the requests issued with it
    return tx;
  };
  return {
    name,
    version: 1,
    get objectStoreNames() { return names(); },
    createObjectStore: (store) => { if (!stores.has(store)) stores.set(store, new Map()); return memoryStore(stores.get(store)); },
    transaction,
    close() {},
    onabort: null, onclose: null, onerror: null, onversionchange: null,
  };
}

/** An open request for database `name` in memory: `upgradeneeded` the first time, then
 * `success`, as IndexedDB's own open fires them. */
function openInMemory(req, name) {
  const fresh = !databases.has(name);
  if (fresh) databases.set(name, new Map());
  const db = memoryDatabase(name);
  req.result = db;
  req.error = null;
  if (fresh) {
    const tx = { oncomplete: null };
    req.transaction = tx;
    fire(req, 'upgradeneeded', { oldVersion: 0, newVersion: 1 });
    later(() => fire(tx, 'complete'));
  }
  later(() => {
    req.transaction = null;
    req.readyState = 'done';
    fire(req, 'success');
  });
}

// No IndexedDB at all (WebKit with it turned off by the app: `indexedDB` is undefined):
// PyScript's maps are kept in memory, and any other open throws at once, as a refused
// one may (IndexedDB 3.0, open(): "If this's relevant settings object's origin is
// opaque, throw a SecurityError"), which every other caller here already handles.
const refused = () => {
  throw new DOMException('IndexedDB is not available in this page', 'SecurityError');
};

const factory = globalThis.indexedDB;
const real = factory && typeof factory.open === 'function';
// Each call goes to the real factory's method as it is at that moment, on the real
// factory (its methods check their receiver).
const bound = (method) => (real ? (...args) => factory[method](...args) : refused);
const open = bound('open');
const fallback = {
  deleteDatabase: bound('deleteDatabase'),
  cmp: bound('cmp'),
  databases: bound('databases'),
  open(name, ...rest) {
    if (!String(name).startsWith(PREFIX)) return open(name, ...rest);
    // A request of our own that relays the real one, or, if that fails, the memory one.
    const req = { result: undefined, error: null, readyState: 'pending', transaction: null,
      onsuccess: null, onerror: null, onupgradeneeded: null, onblocked: null };
    let request;
    try {
      request = open(name, ...rest);
    } catch {
      later(() => openInMemory(req, name)); // thrown at once: none, or an opaque origin
      return req;
    }
    const relay = (type) => (e) => {
      req.result = request.result;
      req.transaction = request.transaction;
      req.readyState = request.readyState;
      fire(req, type, { oldVersion: e.oldVersion, newVersion: e.newVersion });
    };
    request.onupgradeneeded = relay('upgradeneeded');
    request.onsuccess = relay('success');
    request.onblocked = relay('blocked');
    request.onerror = (e) => {
      e.preventDefault?.();
      openInMemory(req, name);
    };
    return req;
  },
};
try {
  Object.defineProperty(globalThis, 'indexedDB', { value: fallback, configurable: true, writable: true });
} catch { /* not replaceable here: PyScript sees the browser's own */ }
