// What a memory snapshot of firsttoken's interpreter is, where it lives between
// visits, and how a bad one is recognised before Pyodide ever sees it.
//
// The snapshot is the whole wasm heap of an interpreter that has imported firsttoken
// (~31 MB). It is kept in Cache Storage, one entry per origin, under a key naming
// everything that heap depends on: the Pyodide version (Pyodide also checks the
// BUILD_ID written inside the snapshot), the SHA-256 of the served firsttoken.zip, and
// FORMAT, which changes with what goes into a snapshot. A key that does not match is
// stale by construction: it is never read, and storing the next snapshot deletes it.
//
// Each entry carries its length and SHA-256 in headers written when it was stored;
// reading checks both, so a truncated or corrupt entry (a half-written disk, an
// eviction racing a read, a tampered cache) is reported and deleted instead of being
// restored into a broken interpreter. Cache Storage rather than IndexedDB: it keeps a
// Response body as a blob on disk without structured-cloning 31 MB, reads it back as
// one ArrayBuffer, and shares "clear site data" with the service worker's caches.
// https://w3c.github.io/ServiceWorker/#cachestorage-interface
//
// This module imports nothing heavy: the page's boot loader (boot-pyodide.js) and the
// background maker (boot-snapshot-worker.js) share it.

export const PYODIDE = new URL('../vendor/pyodide/', import.meta.url).href;
export const PACKAGE = new URL('../py/firsttoken.zip', import.meta.url).href;
// What a snapshot holds besides the interpreter: the modules py/boot.py imports (the
// core imports the rest of the package), and standard modules that PyScript's worker
// prelude (its `pyscript` package) and its `[files]` unpacking import on every boot.
export const IMPORTS = [
  'firsttoken.browser', 'firsttoken.core',
  'asyncio', 'json', 'pathlib', 'inspect', 'base64', 'html', 'io', 'weakref', 'zipfile', 'shutil',
];
// Part of the key: a snapshot made with another list (or another layout) is stale.
export const FORMAT = `2:${IMPORTS.join(',')}`;

export const CACHE_NAME = 'firsttoken-snapshot';
const LENGTH = 'x-firsttoken-length';
const DIGEST = 'x-firsttoken-sha256';

export async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

// The package as served, and the cache key (a URL: Cache Storage keys are requests)
// of the snapshot that goes with it on this Pyodide `version`.
export async function fetchPackage(version) {
  const response = await fetch(PACKAGE);
  if (!response.ok) throw new Error(`${PACKAGE}: HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const key = new URL('__snapshot__', PYODIDE);
  key.search = new URLSearchParams({ pyodide: version, package: await sha256Hex(bytes), format: FORMAT }).toString();
  return { bytes, key: key.href };
}

export class SnapshotRejected extends Error {
  constructor(reason) {
    super(`snapshot rejected: ${reason}`);
    this.name = 'SnapshotRejected';
    this.reason = reason;
  }
}

// Storage may be missing (an opaque origin, a WebView with storage disabled, some
// private modes): every entry point then behaves as "no snapshot", never as an error.
export const storageAvailable = () => typeof caches !== 'undefined';

// The stored entry for `key`, unread, or null. Cheap: only the index is consulted.
export async function findSnapshot(key) {
  if (!storageAvailable()) return null;
  return (await (await caches.open(CACHE_NAME)).match(key)) || null;
}

// The length a found entry was stored with (0 when it carries no label).
export function declaredLength(response) {
  const length = Number(response.headers.get(LENGTH));
  return Number.isSafeInteger(length) && length > 0 ? length : 0;
}

// The bytes of a found entry, once their length and SHA-256 match the labels written
// with them. Otherwise the entry is deleted and SnapshotRejected says why.
export async function verifiedBytes(response) {
  const length = declaredLength(response);
  const digest = response.headers.get(DIGEST);
  let reason = null;
  let bytes = null;
  try {
    bytes = new Uint8Array(await response.arrayBuffer());
  } catch {
    reason = 'unreadable';
  }
  if (reason === null) {
    if (!length || !digest) reason = 'unlabelled';
    else if (bytes.byteLength !== length) reason = 'truncated';
    else if ((await sha256Hex(bytes)) !== digest) reason = 'corrupt';
  }
  if (reason) {
    await dropSnapshots().catch(() => {});
    throw new SnapshotRejected(reason);
  }
  return bytes;
}

// Store `bytes` under `key` and delete every other snapshot: only the current one is
// ever useful, and each costs tens of megabytes of the origin's quota.
export async function writeSnapshot(key, bytes) {
  if (!storageAvailable()) return false;
  const digest = await sha256Hex(bytes);
  const cache = await caches.open(CACHE_NAME);
  await cache.put(key, new Response(bytes, {
    headers: { 'content-type': 'application/octet-stream', [LENGTH]: String(bytes.byteLength), [DIGEST]: digest },
  }));
  await dropSnapshots(key);
  return true;
}

export async function dropSnapshots(keep = null) {
  if (!storageAvailable()) return;
  const cache = await caches.open(CACHE_NAME);
  for (const request of await cache.keys()) {
    if (request.url !== keep) await cache.delete(request);
  }
}
