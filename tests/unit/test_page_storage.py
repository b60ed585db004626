"""Storage the browser refuses (js/page/storage.js, js/boot/idb-fallback.js) on Node:
a window whose `localStorage` getter throws as a blocked one does, and an IndexedDB
whose every open fails. The real thing, a cross-site frame in Chromium with third-party
storage blocked, is tests/e2e/test_storage_blocked.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

WEB_STORAGE = """
import { webStorage, refusals, onRefused, MemoryStorage } from './js/page/storage.js';
const denied = {};
Object.defineProperty(denied, 'localStorage', { get() { throw Object.assign(new Error('Access is denied'), { name: 'SecurityError' }); } });
const heard = [];
onRefused((what) => heard.push(what));
const a = webStorage('localStorage', denied);
a.setItem('k', 1);
const b = webStorage('localStorage', denied);     // a second caller: the same memory
const real = new MemoryStorage();
const allowed = { sessionStorage: real };
const c = webStorage('sessionStorage', allowed);  // allowed: the browser's own
a.setItem('gone', 'x'); a.removeItem('gone');
console.log(JSON.stringify({
  same: a === b, read: b.getItem('k'), type: typeof b.getItem('k'), missing: b.getItem('nope'),
  length: b.length, key0: b.key(0), key9: b.key(9), own: c === real, refused: refusals(), heard,
}));
"""

IDB_FALLBACK = """
// An IndexedDB whose every open fails later, as Chromium's does in a blocked frame.
const opened = [];
globalThis.indexedDB = {
  open(name) {
    opened.push(name);
    const req = { error: { name: 'UnknownError' } };
    setTimeout(() => req.onerror?.({ type: 'error', target: req, preventDefault() {} }), 0);
    return req;
  },
};
await import('./js/boot/idb-fallback.js');
const call = (req) => new Promise((resolve, reject) => { req.onsuccess = (e) => resolve(e.target.result); req.onerror = reject; });
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
const db = await open('IDBMap/http://page.test/vendor/pyodide@0.29');
const store = (mode) => db.transaction('entries', mode).objectStore('entries');
await call(store('readwrite').put({ lock: [1, 2] }, 'b'));
await call(store('readwrite').put('second', 'a'));
const again = await open('IDBMap/http://page.test/vendor/pyodide@0.29'); // kept for the worker's life
const value = await call(again.transaction('entries', 'readonly').objectStore('entries').get('b'));
const keys = await call(store('readonly').getAllKeys());
const has = await call(store('readonly').getKey('zzz'));
const count = await call(store('readonly').count());
await call(store('readwrite').delete('a'));
const after = await call(store('readonly').count());
// Anyone else's open is the browser's own, failure included.
const other = await new Promise((resolve) => {
  const req = indexedDB.open('firsttoken-cache', 3);
  req.onsuccess = () => resolve('opened');
  req.onerror = (e) => resolve('failed: ' + e.target.error.name);
});
console.log(JSON.stringify({ value, keys, has: has ?? null, count, after, other, opened }));
"""

NO_IDB = """
delete globalThis.indexedDB; // WebKit with IndexedDB turned off: not there at all
await import('./js/boot/idb-fallback.js');
const map = await new Promise((resolve, reject) => {
  const req = indexedDB.open('IDBMap/@pyscript.fs');
  req.onupgradeneeded = ({ target: { result } }) => result.createObjectStore('entries');
  req.onsuccess = (e) => resolve(e.target.result.objectStoreNames.length);
  req.onerror = reject;
});
let other;
try { indexedDB.open('firsttoken-outbox', 1); other = 'opened'; } catch (e) { other = e.name; }
console.log(JSON.stringify({ map, other }));
"""


def node(script: str) -> Any:
    done = subprocess.run(["node", "--input-type=module", "-e", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_refused_web_storage_is_one_memory_storage_shared_by_every_caller() -> None:
    out = node(WEB_STORAGE)
    assert out["same"] is True and out["read"] == "1" and out["type"] == "string"  # stringified, as Storage does
    assert out["missing"] is None and out["length"] == 1 and out["key0"] == "k" and out["key9"] is None
    assert out["own"] is True  # where the browser allows it, its own storage
    assert out["refused"] == ["localStorage"] and out["heard"] == ["localStorage"]


def test_pyscripts_indexeddb_map_opens_in_memory_where_indexeddb_is_refused() -> None:
    out = node(IDB_FALLBACK)
    assert out["value"] == {"lock": [1, 2]}
    assert out["keys"] == ["a", "b"] and out["has"] is None and out["count"] == 2 and out["after"] == 1
    # The browser was asked first each time; a database not PyScript's keeps its error.
    assert out["opened"] == ["IDBMap/http://page.test/vendor/pyodide@0.29"] * 2 + ["firsttoken-cache"]
    assert out["other"] == "failed: UnknownError"


def test_without_any_indexeddb_pyscripts_maps_are_in_memory_and_other_opens_throw_security_error() -> None:
    assert node(NO_IDB) == {"map": 1, "other": "SecurityError"}
