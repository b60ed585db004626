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
// This module imports nothing heavy: the page's boot loader (pyodide-loader.js) and the
// background maker (snapshot-worker.js) share it.

export const PYODIDE = new URL('../../vendor/pyodide/', import.meta.url).href;
export const PACKAGE = new URL('../../py/firsttoken.zip', import.meta.url).href;
// What Pyodide fetches while it loads, largest first (js/boot/boot.js fetches them early
// on a first visit).
// The install-time snapshot the gateway serves, when it has one (gateway/snapshot.py).
export const SERVED = new URL('../../py/firsttoken.snapshot', import.meta.url).href;
export const RUNTIME = ['pyodide.asm.wasm', 'python_stdlib.zip', 'pyodide.asm.mjs', 'pyodide-lock.json']
  .map((name) => new URL(name, PYODIDE).href);
// What a snapshot holds besides the interpreter: the modules py/boot.py imports (the
// core imports the rest of the package), and standard modules that PyScript's worker
// prelude (its `pyscript` package) and its `[files]` unpacking import on every boot.
// Every module of the package is imported too (snapshot-worker.js), so that
// nothing the page runs later has to be read and compiled from the file system.
export const IMPORTS = [
  'firsttoken.browser', 'firsttoken.core',
  'asyncio', 'json', 'pathlib', 'inspect', 'base64', 'html', 'io', 'weakref', 'zipfile', 'shutil',
];
// Part of the key: a snapshot made with another list (or another layout, or over the
// standard library zip as it was before gateway/stdlib.py stored its entries) is stale.
export const FORMAT = `4:firsttoken.*,${IMPORTS.join(',')}`;

export const CACHE_NAME = 'firsttoken-snapshot';
const LENGTH = 'x-firsttoken-length'; // of the heap image Pyodide restores
const STORED = 'x-firsttoken-stored'; // of the stored (packed) body
const DIGEST = 'x-firsttoken-sha256'; // of the stored body

// ---- packing ------------------------------------------------------------------------
// About half of a fresh interpreter's 31 MB heap is whole pages of zeros (the heap is
// sized ahead of use). They are left out of what is stored, and a new heap buffer is
// zeroed already, so restoring copies only the pages that hold something. That halves
// what is read from disk and hashed on every warm boot, the boot's critical path.
// (General-purpose compression was measured too: DecompressionStream inflates 31 MB
// more slowly than the raw bytes are read.)
//
// The heap holds no file system, and PyScript unpacks the package zip after the
// restore. Doing that in Python (Pyodide's unpackArchive) right after a restore was the
// slowest step left, so the package's files travel with the heap, uncompressed, and
// are written from JavaScript (pyodide-loader.js). The body is
//   "FTS1" | page size | N | F | N page numbers | N pages | F bytes of files
// (uint32 little-endian), the files being  count | (name length | name | size | bytes)*.
const MAGIC = 0x31535446; // "FTS1", little-endian
const PAGE = 4096;
const HEADER = 16;

function isZeroPage(words, bytes, start, end) {
  // Word-wise where aligned (the heap image is a whole number of 16-byte units).
  let i = start;
  for (; i + 4 <= end && (i & 3) === 0; i += 4) if (words[i >> 2] !== 0) return false;
  for (; i < end; i++) if (bytes[i] !== 0) return false;
  return true;
}

// `heap`: the image from makeMemorySnapshot(); `files`: [[name, bytes]] (zip entry
// names, relative to where PyScript unpacks the package).
export function packHeap(heap, files = []) {
  const words = new Uint32Array(heap.buffer, heap.byteOffset, heap.byteLength >> 2);
  const pages = [];
  for (let p = 0; p * PAGE < heap.byteLength; p++) {
    const start = p * PAGE;
    if (!isZeroPage(words, heap, start, Math.min(start + PAGE, heap.byteLength))) pages.push(p);
  }
  const encoded = files.map(([name, bytes]) => [new TextEncoder().encode(name), bytes]);
  const filesSize = 4 + encoded.reduce((n, [name, bytes]) => n + 8 + name.byteLength + bytes.byteLength, 0);
  const data = HEADER + 4 * pages.length;
  const body = new Uint8Array(data + pages.length * PAGE + filesSize);
  const view = new DataView(body.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, PAGE, true);
  view.setUint32(8, pages.length, true);
  view.setUint32(12, filesSize, true);
  pages.forEach((p, k) => {
    view.setUint32(HEADER + 4 * k, p, true);
    body.set(heap.subarray(p * PAGE, Math.min((p + 1) * PAGE, heap.byteLength)), data + k * PAGE);
  });
  let at = data + pages.length * PAGE;
  view.setUint32(at, encoded.length, true);
  at += 4;
  for (const [name, bytes] of encoded) {
    view.setUint32(at, name.byteLength, true);
    body.set(name, at + 4);
    at += 4 + name.byteLength;
    view.setUint32(at, bytes.byteLength, true);
    body.set(bytes, at + 4);
    at += 4 + bytes.byteLength;
  }
  return body;
}

// Copy a packed body's pages into `heap` (zero-filled, of the image's length), and
// return its files as [[name, bytes]]. Throws SnapshotRejected('corrupt') on a body
// whose layout does not add up.
export function unpackInto(body, heap) {
  const corrupt = () => new SnapshotRejected('corrupt');
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  if (body.byteLength < HEADER || view.getUint32(0, true) !== MAGIC || view.getUint32(4, true) !== PAGE) throw corrupt();
  const n = view.getUint32(8, true);
  const data = HEADER + 4 * n;
  const filesAt = data + n * PAGE;
  if (body.byteLength !== filesAt + view.getUint32(12, true)) throw corrupt();
  let last = -1;
  for (let k = 0; k < n; k++) {
    const p = view.getUint32(HEADER + 4 * k, true);
    const start = p * PAGE;
    if (p <= last || start >= heap.byteLength) throw corrupt();
    last = p;
    heap.set(body.subarray(data + k * PAGE, data + k * PAGE + Math.min(PAGE, heap.byteLength - start)), start);
  }
  const files = [];
  const names = new TextDecoder('utf-8', { fatal: true });
  let at = filesAt + 4;
  for (let count = view.getUint32(filesAt, true); count > 0; count--) {
    const nameSize = view.getUint32(at, true);
    const name = names.decode(body.subarray(at + 4, at + 4 + nameSize));
    at += 4 + nameSize;
    const size = view.getUint32(at, true);
    if (at + 4 + size > body.byteLength) throw corrupt();
    files.push([name, body.slice(at + 4, at + 4 + size)]); // a copy: the body (18 MB) can go
    at += 4 + size;
  }
  if (at !== body.byteLength) throw corrupt();
  return files;
}

// ---- storage ------------------------------------------------------------------------

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
  return { bytes, key: snapshotKey(version, await sha256Hex(bytes), FORMAT) };
}

export function snapshotKey(pyodide, packageDigest, format) {
  const key = new URL('__snapshot__', PYODIDE);
  key.search = new URLSearchParams({ pyodide, package: packageDigest, format }).toString();
  return key.href;
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

// The snapshot stored last, unread, with its key: {key, response}, or null. Cheap:
// only the index is consulted. Looking it up does not need the package's hash, so the
// page starts reading it at once and compares keys once the hash is known.
export async function latestSnapshot() {
  if (!storageAvailable()) return null;
  const cache = await caches.open(CACHE_NAME);
  const request = (await cache.keys()).pop(); // writeSnapshot keeps one; the newest wins
  const response = request && await cache.match(request);
  return response ? { key: request.url, response } : null;
}

// The key and length of the snapshot stored last ({key, length}, or null), and a
// function that reads and verifies its body: `read()` resolves to the body, or rejects
// with SnapshotRejected. The lookup is quick (the cache index), so the page can size
// the new heap and start Pyodide while the body is read.
export async function openSnapshot() {
  const found = await latestSnapshot().catch(() => null);
  if (!found) return null;
  return { key: found.key, length: declaredLength(found.response), read: () => verifiedBody(found.response) };
}

// The gateway's install-time snapshot, as openSnapshot gives a stored one, or null
// when it has none for the package it serves. Its key is made from the label it is
// served with. Its body is read as it arrives (`stream`, a BodyStream), so that the
// loader can time the first part before it decides to read the rest (snapshot-pays.js)
// or `cancel()` it; `stored` is the body's length (decoded, as the reader counts it),
// `wire` its length as sent (0 when the response does not say).
export async function fetchServedSnapshot() {
  let response;
  try {
    response = await fetch(SERVED, { cache: 'no-store' });
  } catch {
    return null; // offline: a normal boot
  }
  if (!response.ok || !response.body) return null;
  const label = (name) => response.headers.get(`x-firsttoken-${name}`) || '';
  const stream = new BodyStream(response.body);
  const stored = Number(label('stored'));
  const wire = Number(response.headers.get('content-length')); // brotli's, when encoded
  return {
    wire: Number.isSafeInteger(wire) && wire > 0 ? wire : 0,
    key: snapshotKey(label('pyodide'), label('package'), label('format')),
    length: declaredLength(response),
    stored: Number.isSafeInteger(stored) && stored > 0 ? stored : 0,
    always: label('fetch') === 'always', // the gateway knows its link is fast (gateway/snapshot.py)
    stream,
    read: () => verifiedBody(response, () => stream.rest()),
    cancel: () => stream.cancel(),
  };
}

/** A response body read chunk by chunk, each chunk's arrival noted (`samples`:
 * [performance.now(), bytes]), kept until `rest()` joins them. */
export class BodyStream {
  constructor(body) {
    this.reader = body.getReader();
    this.chunks = [];
    this.received = 0;
    this.samples = [];
    this.ended = false;
  }

  /** Read while `more()` says so, or to the end; true once the body has ended. */
  async readWhile(more) {
    while (!this.ended && more()) {
      const { done, value } = await this.reader.read();
      if (done) this.ended = true;
      else {
        this.chunks.push(value);
        this.received += value.byteLength;
        this.samples.push([performance.now(), value.byteLength]);
      }
    }
    return this.ended;
  }

  /** The whole body, once it has all arrived. */
  async rest() {
    await this.readWhile(() => true);
    const body = new Uint8Array(this.received);
    let at = 0;
    for (const chunk of this.chunks.splice(0)) {
      body.set(chunk, at);
      at += chunk.byteLength;
    }
    return body;
  }

  cancel() {
    this.chunks = [];
    return this.reader.cancel().catch(() => {});
  }
}

// The length a found entry was stored with (0 when it carries no label).
export function declaredLength(response) {
  const length = Number(response.headers.get(LENGTH));
  return Number.isSafeInteger(length) && length > 0 ? length : 0;
}

// All of a response's bytes. In a Chromium worker, read synchronously from its blob:
// during a warm boot the worker's thread is busy (Pyodide's JS, the wasm), and an
// asynchronous read, pumped in chunks by that thread's event loop, took ~0.5 s for what
// one synchronous read does in ~25 ms (18 MB). WebKit is the other way round: its
// FileReaderSync took 0.5–1.7 s where `arrayBuffer()` took 20–230 ms, and reading that
// way cut WebKitGTK's median warm boot by 30–40% (README, "Embedding"). Chromium is told
// apart by `navigator.userAgentData` (a Chromium API, also in workers), not by the
// user-agent string, which headless Chromium words differently.
const SYNC_READ_IS_FASTER = typeof FileReaderSync === 'function'
  && typeof navigator !== 'undefined' && 'userAgentData' in navigator;

async function readBody(response) {
  if (SYNC_READ_IS_FASTER) {
    return new Uint8Array(new FileReaderSync().readAsArrayBuffer(await response.blob()));
  }
  return new Uint8Array(await response.arrayBuffer());
}

// The stored body of a found entry (read by `read`), once its length and SHA-256 match
// the labels written with it. Otherwise the entry is deleted and SnapshotRejected says why.
export async function verifiedBody(response, read = () => readBody(response)) {
  const stored = Number(response.headers.get(STORED));
  const digest = response.headers.get(DIGEST);
  let reason = null;
  let body = null;
  try {
    body = await read();
  } catch {
    reason = 'unreadable';
  }
  if (reason === null) {
    if (!declaredLength(response) || !stored || !digest) reason = 'unlabelled';
    else if (body.byteLength !== stored) reason = 'truncated';
    else if ((await sha256Hex(body)) !== digest) reason = 'corrupt';
  }
  if (reason) {
    await dropSnapshots().catch(() => {});
    throw new SnapshotRejected(reason);
  }
  return body;
}

// Store a packed heap image (`body`, from packHeap; `length`: the image's) under `key`,
// and delete every other snapshot: only the current one is ever useful, and each
// costs megabytes of the origin's quota.
export async function writeSnapshot(key, body, length) {
  if (!storageAvailable()) return false;
  const digest = await sha256Hex(body);
  const cache = await caches.open(CACHE_NAME);
  await cache.put(key, new Response(body, {
    headers: {
      'content-type': 'application/octet-stream',
      [LENGTH]: String(length), [STORED]: String(body.byteLength), [DIGEST]: digest,
    },
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
