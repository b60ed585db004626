// PyScript's IndexedDB maps with no IndexedDB at all (WebKit with it turned off), on Node
// (js/boot/idb-fallback.js). A file of its own: the fallback patches `indexedDB` when it
// is imported.

import assert from 'node:assert/strict';
import { test } from 'node:test';

test("without any IndexedDB PyScript's maps are in memory and other opens throw SecurityError", async () => {
  delete globalThis.indexedDB;
  await import('../../js/boot/idb-fallback.js');
  const stores = await new Promise((resolve, reject) => {
    const req = indexedDB.open('IDBMap/@pyscript.fs');
    req.onupgradeneeded = ({ target: { result } }) => result.createObjectStore('entries');
    req.onsuccess = (e) => resolve(e.target.result.objectStoreNames.length);
    req.onerror = reject;
  });
  assert.equal(stores, 1);
  assert.throws(() => indexedDB.open('firsttoken-outbox', 1), { name: 'SecurityError' });
});
