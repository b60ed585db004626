// PyScript's IndexedDB maps where the browser refuses IndexedDB (js/boot/idb-fallback.js)
// on Node: an IndexedDB whose every open fails later, as Chromium's does in a blocked
// frame. A file of its own: the fallback patches `indexedDB` when it is imported.

import assert from 'node:assert/strict';
import { test } from 'node:test';

test("PyScript's IndexedDB map opens in memory where IndexedDB is refused", async () => {
  const opened = [];
  globalThis.indexedDB = {
    open(name) {
      opened.push(name);
      const req = { error: { name: 'UnknownError' } };
      setTimeout(() => req.onerror?.({ type: 'error', target: req, preventDefault() {} }), 0);
      return req;
    },
  };
  await import('../../js/boot/idb-fallback.js');
  const call = (req) => new Promise((resolve, reject) => {
    req.onsuccess = (e) => resolve(e.target.result);
    req.onerror = reject;
  });
  // What @webreflection/idb-map does: open, create its store on upgrade, then use it.
  const open = (name) => new Promise((resolve, reject) => {
    const req = indexedDB.open(name);
    req.onupgradeneeded = ({ target: { result, transaction } }) => {
      if (!result.objectStoreNames.length) result.createObjectStore('entries');
      transaction.oncomplete = () => resolve(result);
    };
    req.onsuccess = (e) => resolve(e.target.result);
    req.onerror = reject;
  });
  const name = 'IDBMap/http://page.test/vendor/pyodide@0.29';
  const db = await open(name);
  const store = (mode) => db.transaction('entries', mode).objectStore('entries');
  await call(store('readwrite').put({ lock: [1, 2] }, 'b'));
  await call(store('readwrite').put('second', 'a'));
  const again = await open(name); // kept for the worker's life
  assert.deepEqual(await call(again.transaction('entries', 'readonly').objectStore('entries').get('b')), { lock: [1, 2] });
  assert.deepEqual(await call(store('readonly').getAllKeys()), ['a', 'b']);
  assert.equal((await call(store('readonly').getKey('zzz'))) ?? null, null);
  assert.equal(await call(store('readonly').count()), 2);
  await call(store('readwrite').delete('a'));
  assert.equal(await call(store('readonly').count()), 1);
  // Anyone else's open is the browser's own, failure included.
  const other = await new Promise((resolve) => {
    const req = indexedDB.open('firsttoken-cache', 3);
    req.onsuccess = () => resolve('opened');
    req.onerror = (e) => resolve('failed: ' + e.target.error.name);
  });
  assert.equal(other, 'failed: UnknownError');
  // The browser was asked first each time.
  assert.deepEqual(opened, [name, name, 'firsttoken-cache']);
});
