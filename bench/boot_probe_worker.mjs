// Times, in a worker, each step a warm boot takes before Python runs (js/boot/pyodide-loader.js):
// compiling Pyodide's wasm (buffered, streaming, a second time in the same process) and
// reading, verifying and unpacking the stored snapshot (js/boot/snapshot.js, the same
// functions the page uses). Each step alone, so that engines can be compared step by step.
import {
  CACHE_NAME, SERVED, declaredLength, openSnapshot, sha256Hex, unpackInto, writeSnapshot,
} from '/js/boot/snapshot.js';

const WASM = '/vendor/pyodide/pyodide.asm.wasm';
const result = {};
const time = async (name, fn) => {
  const t0 = performance.now();
  const value = await fn();
  result[name] = Math.round((performance.now() - t0) * 10) / 10;
  return value;
};

try {
  const bytes = await time('wasm_fetch_ms', async () => new Uint8Array(await (await fetch(WASM)).arrayBuffer()));
  result.wasm_bytes = bytes.byteLength;
  await time('wasm_validate_ms', async () => WebAssembly.validate(bytes));
  await time('wasm_compile_ms', () => WebAssembly.compile(bytes));
  await time('wasm_compile_again_ms', () => WebAssembly.compile(bytes));
  await time('wasm_compile_streaming_ms', () => WebAssembly.compileStreaming(fetch(WASM)));
  // Can a compiled module be kept between visits? (Chromium removed it; WebKit?)
  const module = await WebAssembly.compile(bytes);
  // IndexedDB once kept compiled modules (serialized code); the spec dropped it.
  result.wasm_module_in_indexeddb = await new Promise((resolve) => {
    const open = indexedDB.open('firsttoken-probe', 1);
    open.onupgradeneeded = () => open.result.createObjectStore('m');
    open.onerror = () => resolve(String(open.error?.name));
    open.onsuccess = () => {
      const db = open.result;
      try {
        const put = db.transaction('m', 'readwrite').objectStore('m').put(module, 'pyodide');
        put.onsuccess = () => { db.close(); resolve('stored'); };
        put.onerror = () => { db.close(); resolve(String(put.error?.name)); };
      } catch (error) {
        db.close();
        resolve(String(error.name));
      }
    };
  });
  indexedDB.deleteDatabase('firsttoken-probe');
  try {
    structuredClone(module);
    result.wasm_module_cloneable = true;
  } catch (error) {
    result.wasm_module_cloneable = String(error.name);
  }

  // The snapshot: the gateway's, stored as the page stores it, then read back as a warm
  // boot reads it.
  const served = await fetch(SERVED, { cache: 'no-store' });
  const length = declaredLength(served);
  const body = new Uint8Array(await served.arrayBuffer());
  result.snapshot_stored_bytes = body.byteLength;
  result.snapshot_heap_bytes = length;
  await caches.delete(CACHE_NAME);
  await writeSnapshot(new URL('/vendor/pyodide/__snapshot__?probe', location.href).href, body, length);
  const found = await time('snapshot_lookup_ms', () => openSnapshot());
  // Each way of reading the body, alternately, each time from a fresh lookup: the first
  // read of a body comes from disk, later ones may not.
  const fresh = async () => (await caches.open(CACHE_NAME)).match(found.key);
  const reads = { sync: [], async: [] };
  let read;
  for (let round = 0; round < 3; round++) {
    for (const how of round % 2 ? ['async', 'sync'] : ['sync', 'async']) {
      const response = await fresh();
      const t0 = performance.now();
      read = how === 'sync'
        ? new Uint8Array(new FileReaderSync().readAsArrayBuffer(await response.blob()))
        : new Uint8Array(await response.arrayBuffer());
      reads[how].push(Math.round(performance.now() - t0));
    }
  }
  result.snapshot_read_sync_ms = reads.sync;
  result.snapshot_read_async_ms = reads.async;
  await time('snapshot_sha256_ms', () => sha256Hex(read));
  const heap = await time('snapshot_alloc_ms', async () => new Uint8Array(length));
  await time('snapshot_unpack_ms', async () => unpackInto(read, heap));
  await caches.delete(CACHE_NAME);
  postMessage(result);
} catch (error) {
  postMessage({ error: String(error && error.stack || error), ...result });
}
