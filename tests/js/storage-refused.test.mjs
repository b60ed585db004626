// Web storage the browser refuses (js/page/storage.js) on Node: a window whose
// `localStorage` getter throws as a blocked one does. The real thing, a cross-site frame
// in Chromium with third-party storage blocked, is tests/e2e/test_storage_blocked.py.
// IndexedDB refused: storage-idb-failing.test.mjs and storage-no-idb.test.mjs (each file
// is a process of its own, and js/boot/idb-fallback.js patches the global on import).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MemoryStorage, onRefused, refusals, webStorage } from '../../js/page/storage.js';

test('a refused web storage is one memory storage shared by every caller', () => {
  const denied = {};
  Object.defineProperty(denied, 'localStorage', {
    get() { throw Object.assign(new Error('Access is denied'), { name: 'SecurityError' }); },
  });
  const heard = [];
  onRefused((what) => heard.push(what));
  const a = webStorage('localStorage', denied);
  a.setItem('k', 1);
  const b = webStorage('localStorage', denied); // a second caller: the same memory
  const real = new MemoryStorage();
  const c = webStorage('sessionStorage', { sessionStorage: real }); // allowed: the browser's own
  a.setItem('gone', 'x');
  a.removeItem('gone');

  assert.equal(a, b);
  assert.equal(b.getItem('k'), '1'); // stringified, as Storage does
  assert.equal(b.getItem('nope'), null);
  assert.equal(b.length, 1);
  assert.equal(b.key(0), 'k');
  assert.equal(b.key(9), null);
  assert.equal(c, real); // where the browser allows it, its own storage
  assert.deepEqual(refusals(), ['localStorage']);
  assert.deepEqual(heard, ['localStorage']);
});
