// The interpreter module PyScript loads for the firsttoken worker (pyscript.toml's
// `interpreter`): Pyodide's own `loadPyodide`, wrapped so that Python comes up from a
// memory snapshot of an interpreter that has already imported firsttoken.
//
// PyScript (polyscript's pyodide engine) imports the module named by `interpreter`,
// calls its `loadPyodide({stdout, stderr, indexURL})`, then unpacks `[files]` and runs
// the worker's code; it reads `version` for its own caches. Nothing else is needed,
// so PyScript, its configuration and its worker stay exactly as they are.
//
// With a valid snapshot stored (snapshot.js), Pyodide restores it
// (`_loadSnapshot`, experimental: node_modules/pyodide/pyodide.d.ts). Without one, or
// with one that is stale, fails verification or does not restore, this is a plain
// Pyodide boot: never a broken one. Snapshots are not made here: an interpreter
// started with `_makeSnapshot` routes every `js.X` through a recording proxy for its
// whole life, and reading an accessor through it throws "Illegal invocation" in a
// worker (`js.performance.timeOrigin`), so such an interpreter may make a snapshot but
// must not serve the page. The page has one made in the background instead
// (snapshot-worker.js), after Python is ready.
//
// Everything starts when PyScript imports this module, not when it calls loadPyodide:
// in between, PyScript opens its own IndexedDB cache, and a warm boot is short enough
// for that to matter. What PyScript passes in (its stdout and stderr) is only needed
// once Python runs, so the early boot writes through forwarders that PyScript's
// handlers are plugged into when the call comes.

import './idb-fallback.js'; // first: in place before PyScript opens its cache
import { loadPyodide as loadPyodideCore, version } from '../../vendor/pyodide/pyodide.mjs';
import {
  IMPORTS, PACKAGE, PYODIDE, SnapshotRejected, dropSnapshots, fetchPackage, fetchServedSnapshot, openSnapshot,
  unpackInto, writeSnapshot,
} from './snapshot.js';
import { PROBE_BYTES, PROBE_MS, cpuScale, cpuWhile, snapshotPays, streamRate } from './snapshot-pays.js';
import { registerTokenizer } from '../tokenizer/python-module.js';
import { PROTOCOL_VERSION } from '../link/protocol.js';

export { version };

const now = () => performance.timeOrigin + performance.now();
const round = (ms) => Math.round(ms * 10) / 10;
const record = { start: now(), snapshot: 'none' };

// ---- progress -------------------------------------------------------------------------
// Boot stages go to the page as protocol messages (bridge/PROTOCOL.md `boot.progress`)
// on a BroadcastChannel that the page names (js/boot/boot.js): PyScript hands the page
// its worker only once Python is ready, too late to hear how the boot went. The name
// travels in the fragment of this module's URL, as `#<name>/`. Not through
// import.meta.url: a module answered by the service worker takes the cached
// response's URL, fragment-less. But PyScript derives the `indexURL` it passes to
// loadPyodide from the URL it was given, up to the last "/", so the trailing slash
// keeps the fragment in there. Stages reached before that call wait in `early`. If
// PyScript ever stops doing this, the boot only goes quiet: `ready` still carries
// every timing.
let channel = null;
const early = [];
function progress(stage, detail = {}) {
  const text = JSON.stringify({ v: PROTOCOL_VERSION, type: 'boot.progress', stage, t: now(), ...detail });
  if (channel) channel.postMessage(text);
  else early.push(text);
}
function openChannel(indexURL) {
  const name = decodeURIComponent(String(indexURL || '').split('#')[1] || '').replace(/\/$/, '');
  if (!name.startsWith('firsttoken-boot-') || typeof BroadcastChannel !== 'function') return;
  channel = new BroadcastChannel(name);
  for (const text of early.splice(0)) channel.postMessage(text);
}

// PyScript forwards its own progress texts ("Loading files"…) from the worker to the
// page with synchronous calls through its main-thread proxy: each one blocks this
// thread until the page's thread gets round to it. The page shows the stages above
// instead, so those texts stop here, at the worker's global, before PyScript's
// forwarder sees them (a capturing listener on the target runs first).
addEventListener('py:progress', (event) => event.stopImmediatePropagation(), { capture: true });

// ---- what PyScript hands over later ----------------------------------------------------
const sinks = { stdout: (text) => console.log(text), stderr: (text) => console.error(text) };
const streams = { stdout: (text) => sinks.stdout(text), stderr: (text) => sinks.stderr(text) };

// ---- a wasm that does not compile ------------------------------------------------------
// Pyodide's instantiation (pyodide.mjs, getInstantiateWasmFunc) catches a failed compile,
// warns "wasm instantiation failed!" and never calls back: its loadPyodide would wait
// forever on a damaged or stale copy of pyodide.asm.wasm (a cache entry cut short on a
// full disk, another release's file), and the page would say "Loading Python…" for good.
// So every instantiation in this worker is watched until the boot is done; the first
// failure fails the attempt at once (`WasmFailed`), and the boot drops the cached copy
// and tries once more, from the network (`boot`).
class WasmFailed extends Error {}
let wasmFailed = () => {};
const unwatched = {};
for (const name of ['instantiateStreaming', 'instantiate']) {
  const original = unwatched[name] = WebAssembly[name];
  WebAssembly[name] = function watched(...args) {
    const result = original.apply(this, args);
    result.catch((error) => wasmFailed(error));
    return result;
  };
}
function unwatch() {
  Object.assign(WebAssembly, unwatched);
}
// `load` (a loadPyodide call), or WasmFailed as soon as an instantiation fails.
function watching(load) {
  return Promise.race([load, new Promise((_, reject) => {
    wasmFailed = (error) => reject(new WasmFailed(`Pyodide's wasm did not compile: ${error?.message ?? error}`));
  })]);
}

// Drop Pyodide's wasm from the service worker's copy (sw.js: the build's cache), so the
// next request for it goes to the network; false when there was none to drop.
async function dropCachedWasm() {
  const url = new URL('pyodide.asm.wasm', PYODIDE).href;
  let dropped = false;
  for (const name of await caches.keys()) {
    if (name.startsWith('firsttoken-assets-')) dropped = (await (await caches.open(name)).delete(url)) || dropped;
  }
  return dropped;
}

// ---- the boot, from the moment this module is imported -----------------------------------
const factory = import(new URL('pyodide.asm.mjs', PYODIDE).href).then((m) => m.default);
const pkg = fetchPackage(version);
const local = openSnapshot();
let localBody = local.then((found) => (found?.length ? found.read() : null)); // dropped once used: 18 MB
// A first visit, or the first after a release: the gateway's install-time snapshot,
// when it has one for this package and downloading it pays on this link
// (snapshot-pays.js says when, and why).
const served = Promise.all([local, pkg]).then(([found, { key }]) => (found?.key === key ? null : servedIfItPays()));
// Failures surface through `booting`; not as unhandled rejections on the way.
for (const p of [factory, pkg, localBody, served]) p.catch(() => {});
const booting = boot();
booting.catch(() => {});

// The hook PyScript calls. Anything beyond what this module expects (packages to
// install, say) is PyScript asking for something the early boot did not do, so such a
// call gets a boot of its own, as plain Pyodide would give it.
export async function loadPyodide(options = {}) {
  const { stdout, stderr, indexURL, ...rest } = options;
  openChannel(indexURL);
  if (stdout) sinks.stdout = stdout;
  if (stderr) sinks.stderr = stderr;
  if (Object.keys(rest).length) {
    console.warn('firsttoken: PyScript asked for more than a plain interpreter:', Object.keys(rest));
    const py = await loadPyodideCore({ ...options, indexURL: PYODIDE });
    registerTokenizer(py);
    return py;
  }
  return booting;
}

// Asked for at once; decided on its first PROBE_MS (snapshot-pays.js says how, and why).
// Declined, the rest of its body is cancelled.
async function servedIfItPays() {
  const asked = fetchServedSnapshot();
  const cpu = await cpuWhile(asked); // while the request is out: this thread would only wait
  const found = await asked;
  if (!found) return null;
  if (found.key !== (await pkg).key) return found; // another package's: snapshots() declines it
  if (found.always) {
    record.served = { fetched: true, reason: 'gateway', bytes: found.stored || null };
    progress('snapshot.fetch', { bytes: found.wire || null });
    return found;
  }
  const { stream } = found;
  const ended = await stream.readWhile(() => stream.received < PROBE_BYTES
    && (stream.samples.length < 2 || performance.now() - stream.samples[0][0] < PROBE_MS));
  // Ended, or PROBE_BYTES in one chunk (no second sample to time): the link outran the
  // probe, which is all the rule needs to know.
  const rate = ended || stream.samples.length < 2 ? Infinity : streamRate(stream.samples);
  const left = found.stored ? Math.max(0, found.stored - stream.received) : null;
  const choice = snapshotPays({ bytes: left, rate, connection: navigator.connection ?? null, cpu: cpuScale(cpu) });
  record.served = {
    fetched: choice.fetch, reason: choice.reason, bytes: found.stored || null,
    rate_kbps: Number.isFinite(rate) ? Math.round(rate * 8) : null, expected_ms: choice.expected_ms,
    saves_ms: choice.saves_ms, cpu_per_ms: Math.round(cpu),
    probe_bytes: stream.received, // decoded, read before deciding
  };
  if (!choice.fetch) {
    found.cancel();
    progress('snapshot.skipped', { ...record.served });
    return null;
  }
  progress('snapshot.fetch', { bytes: found.wire || null });
  return found;
}

// The snapshots to try, best first: the one stored by an earlier visit (its key is
// checked against the package while the runtime loads), then the gateway's, when it
// was made for this package. Yields [from, found].
async function* snapshots() {
  for (const [from, source] of [['cache', local], ['server', served]]) {
    const found = await source.catch(() => null);
    if (!found) continue;
    if (!found.length) {
      record.snapshot = 'rejected:unlabelled';
      found.cancel?.();
      continue;
    }
    if (from === 'server' && found.key !== (await pkg).key) {
      found.cancel();
      continue; // made for another package or Pyodide: the gateway's stale copy, not ours
    }
    yield [from, found];
  }
}

async function boot() {
  try {
    return await bootOnce();
  } catch (error) {
    if (!(error instanceof WasmFailed)) throw error;
    console.warn('firsttoken:', error.message);
    // Another copy may compile: the network's (offline, this fails too, with the reason).
    if (!(await dropCachedWasm().catch(() => false))) throw error;
    record.wasm_refetched = true;
    delete record.wasm_done;
    delete record.snapshot_read;
    return await plainBoot(); // awaited: the watch must outlive it (`finally`)
  } finally {
    unwatch();
  }
}

// Pyodide's loadPyodide options for this worker, snapshot aside. (A function: the boot
// starts above, before this line's constants would exist.)
function baseOptions() {
  return { ...streams, indexURL: PYODIDE, createPyodideModule: createModule };
}

async function bootOnce() {
  const base = baseOptions();
  const candidates = snapshots();
  const next = () => candidates.next().then((step) => (step.done ? null : step.value));
  // Pyodide starts fetching the wasm the moment loadPyodide is called, and needs the
  // snapshot (only its size, at first) later. So the first restore is started now,
  // before we know which snapshot it will be, or whether there is one: finding it
  // (the cache index) then overlaps the runtime's fetch and compile instead of
  // delaying them. With none, that attempt is dropped for a plain boot.
  for (let candidate = next(); ; candidate = next()) {
    try {
      const [from, found, py, files, body] = await restore(base, candidate);
      record.snapshot_from = from;
      if (from === 'server') keep(found.key, body, found.length);
      return finish(py, await packageBytes(), files);
    } catch (error) {
      if (error instanceof NoSnapshot) break;
      if (error instanceof WasmFailed) throw error; // not the snapshot's fault: it is kept
      record.snapshot = `rejected:${error instanceof SnapshotRejected ? error.reason : 'restore'}`;
      if (!(error instanceof SnapshotRejected)) console.warn('firsttoken: snapshot not restored:', error);
      if (error.from === 'cache') await dropSnapshots().catch(() => {});
      delete record.wasm_done;
      delete record.snapshot_read;
    }
  }
  return plainBoot();
}

// Python booted normally: no snapshot, or none that restored.
async function plainBoot() {
  progress('runtime');
  const py = await watching(loadPyodideCore(baseOptions()));
  record.interpreter_done = now();
  progress('interpreter');
  return finish(py, await packageBytes(), null);
}

// No snapshot to restore (not a failure: a first visit without an install-time one).
class NoSnapshot extends Error {}

// A snapshot restored from the gateway is stored for later visits, in the background.
function keep(key, body, length) {
  writeSnapshot(key, body, length).then(
    (stored) => stored && progress('snapshot.stored', { bytes: body.byteLength }),
    (error) => console.warn('firsttoken: could not store the snapshot:', error),
  );
}

const packageBytes = () => pkg.then(({ bytes }) => bytes, () => null);

// Restore `candidate` (a promise of [from, found], or of null: no snapshot). Resolves
// to [from, found, py, files, body]; an error says which snapshot failed (`from`).
async function restore(base, candidate) {
  progress('runtime');
  // Pyodide sizes the new heap from `_loadSnapshot` (which it awaits) but copies the
  // snapshot in only after the wasm is compiled and instantiated (pyodide.mjs:
  // prepareSnapshot, then createPyodideModule, then restoreSnapshot). So it gets an
  // empty buffer of the stored length as soon as that is known, and the module factory
  // hands the module over only once the snapshot is known to be the one for this
  // package (its key), has been read and verified, and copied in: all of which ran
  // while the runtime loaded and compiled. Should a later Pyodide read the buffer
  // earlier, it finds no snapshot magic there, throws, and the caller falls back.
  // Pyodide keeps its options (this factory among them) for the interpreter's life:
  // the image (31 MB, copied into wasm memory) must not stay reachable from them once
  // used, hence `held`.
  const held = { heap: null, from: null, found: null, body: null, bytes: null };
  const sized = candidate.then((chosen) => {
    if (!chosen) throw new NoSnapshot();
    [held.from, held.found] = chosen;
    held.body = held.from === 'cache' ? localBody : held.found.read();
    localBody = null;
    held.heap = new Uint8Array(held.found.length);
    return held.heap;
  });
  // Copied into the image as soon as it is verified, while the runtime still loads.
  const copied = sized.then(() => held.body).then((bytes) => {
    record.snapshot_read = now();
    held.bytes = bytes;
    return unpackInto(bytes, held.heap);
  });
  copied.catch(() => {});
  let files = null;
  const createPyodideModule = async (settings) => {
    const module = await createModule(settings);
    const { key: current } = await pkg;
    if (held.found.key !== current) throw new SnapshotRejected('stale'); // another package, Pyodide or format
    files = await copied;
    held.heap = null;
    held.body = null;
    record.snapshot_bytes = held.found.length;
    progress('snapshot', { bytes: held.found.length });
    return module;
  };
  let py;
  try {
    py = await watching(loadPyodideCore({ ...base, createPyodideModule, _loadSnapshot: sized }));
    record.interpreter_done = now();
    try { delete py._api.config._loadSnapshot; } catch { /* a later Pyodide: it only costs memory */ }
    // A heap that restored but lacks our modules is not ours: treat it as corrupt.
    if (!py.runPython(`import sys\n${JSON.stringify(IMPORTS[0])} in sys.modules`)) throw new SnapshotRejected('foreign');
  } catch (error) {
    if (error instanceof WasmFailed) throw error;
    if (held.from === null) throw new NoSnapshot(); // there was none: Pyodide gave up waiting for it
    const failure = error instanceof Error ? error : new Error(String(error));
    failure.from = held.from;
    held.found.cancel?.();
    throw failure;
  }
  record.snapshot = 'restored';
  progress('interpreter');
  const body = held.bytes;
  held.bytes = null;
  return [held.from, held.found, py, files, body];
}

// Pyodide's module factory (the `createPyodideModule` option), wrapped to note when
// the wasm is instantiated.
async function createModule(settings) {
  const create = await factory;
  const instantiate = settings.instantiateWasm;
  if (instantiate) {
    settings.instantiateWasm = (imports, receive) => instantiate(imports, (instance, module) => {
      record.wasm_done = now();
      progress('wasm');
      receive(instance, module);
    });
  }
  return create(settings);
}

// ---- handing over --------------------------------------------------------------------
function sameBytes(buffer, bytes) {
  const view = ArrayBuffer.isView(buffer) ? new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength)
    : new Uint8Array(buffer);
  if (view.byteLength !== bytes.byteLength) return false;
  for (let i = 0; i < view.byteLength; i++) if (view[i] !== bytes[i]) return false;
  return true;
}

function writeFiles(py, files, extractDir) {
  const resolve = py._module.PATH_FS.resolve;
  const root = resolve(extractDir);
  for (const [name, bytes] of files) {
    const path = resolve(root, name);
    if (!path.startsWith(`${root}/`)) throw new Error(`${name} leaves ${root}`);
    py.FS.mkdirTree(py.PATH.dirname(path));
    py.FS.writeFile(path, bytes);
  }
}

// The boot record (durations in ms from the moment this module started, plus that
// moment on the epoch clock, so the page can place them on its own timeline), handed
// to py/boot.py, which sends it with `ready`. `assets_ms` is from Resource Timing: when
// the last runtime file (Pyodide's module, wasm and standard library, the package) had
// arrived. The JS reference lives only in this interpreter, never in a heap image.
function finish(py, packageBytes, files) {
  const since = (t) => (t == null ? null : round(t - record.start));
  const runtime = performance.getEntriesByType('resource')
    .filter((e) => e.name.startsWith(PYODIDE) || e.name === PACKAGE);
  const boot = {
    snapshot: record.snapshot,
    snapshot_from: record.snapshot_from ?? null,
    snapshot_bytes: record.snapshot_bytes ?? null,
    wasm_refetched: record.wasm_refetched ?? false,
    served: record.served ?? null,
    worker_start: record.start,
    assets_ms: runtime.length ? since(performance.timeOrigin + Math.max(...runtime.map((e) => e.responseEnd))) : null,
    snapshot_ms: since(record.snapshot_read),
    wasm_ms: since(record.wasm_done),
    interpreter_ms: since(record.interpreter_done),
    loader_ms: since(now()),
  };
  // PyScript unpacks `[files]` next. When that is the package fetched above and this
  // interpreter came from a snapshot, its files came with the snapshot (uncompressed,
  // snapshot.js): they are written from here, without a trip through Python,
  // which right after a restore was the slowest step left.
  const unpackArchive = py.unpackArchive.bind(py);
  py.unpackArchive = (buffer, format, options) => {
    const start = now();
    try {
      if (files && format === 'zip' && packageBytes && sameBytes(buffer, packageBytes)) {
        try {
          return writeFiles(py, files, options?.extractDir ?? '.');
        } catch (error) {
          console.warn('firsttoken: unpacking the package with Pyodide instead:', error);
        }
      }
      return unpackArchive(buffer, format, options);
    } finally {
      boot.package_ms = round((boot.package_ms ?? 0) + now() - start);
    }
  };
  py.registerJsModule('_firsttoken_boot', { get record() { return JSON.stringify(boot); } });
  // Exact token counts in this thread (firsttoken.browser.tokenizer). Registered on
  // every boot: a heap snapshot holds Python's side only, never a JavaScript module.
  registerTokenizer(py);
  return py;
}
