// The interpreter module PyScript loads for the firsttoken worker (pyscript.toml's
// `interpreter`): Pyodide's own `loadPyodide`, wrapped so that Python comes up from a
// memory snapshot of an interpreter that has already imported firsttoken.
//
// PyScript (polyscript's pyodide engine) imports the module named by `interpreter`,
// calls its `loadPyodide({stdout, stderr, indexURL})`, then unpacks `[files]` and runs
// the worker's code; it reads `version` for its own caches. Nothing else is needed,
// so PyScript, its configuration and its worker stay exactly as they are.
//
// With a valid snapshot stored (boot-snapshot.js), Pyodide restores it
// (`_loadSnapshot`, experimental: node_modules/pyodide/pyodide.d.ts). Without one, or
// with one that fails verification or does not restore, this is a plain Pyodide boot:
// never a broken one. Snapshots are not made here: an interpreter started with
// `_makeSnapshot` routes every `js.X` through a recording proxy for its whole life, and
// reading an accessor through it throws "Illegal invocation" in a worker
// (`js.performance.timeOrigin`), so such an interpreter may make a snapshot but must
// not serve the page. The page has one made in the background instead
// (boot-snapshot-worker.js), after Python is ready.
//
// The heap holds no file system: PyScript unpacks firsttoken.zip after this returns,
// as on any boot, and modules imported later are found there.

import { loadPyodide as loadPyodideCore, version } from '../vendor/pyodide/pyodide.mjs';
import {
  IMPORTS, PACKAGE, PYODIDE, SnapshotRejected, declaredLength, dropSnapshots, fetchPackage, findSnapshot,
  verifiedBytes,
} from './boot-snapshot.js';

export { version };

const PROTOCOL = 1;
const now = () => performance.timeOrigin + performance.now();
const round = (ms) => Math.round(ms * 10) / 10;

// Boot stages go to the page as protocol messages (bridge/PROTOCOL.md `boot.progress`)
// on a BroadcastChannel that the page names (js/core.js): PyScript hands the page its
// worker only once Python is ready, too late to hear how the boot went. The name
// travels in the fragment of this module's URL, as `#<name>/`. Not through
// import.meta.url: a module answered by the service worker takes the cached
// response's URL, fragment-less. But PyScript derives the `indexURL` it passes to
// loadPyodide from the URL it was given, up to the last "/", so the trailing slash
// keeps the fragment in there. If PyScript ever stops doing that, the boot only goes
// quiet: `ready` still carries every timing.
let channel = null;
function openChannel(indexURL) {
  const name = decodeURIComponent(String(indexURL || '').split('#')[1] || '').replace(/\/$/, '');
  if (name.startsWith('firsttoken-boot-') && typeof BroadcastChannel === 'function') channel = new BroadcastChannel(name);
}
function progress(stage, detail = {}) {
  channel?.postMessage(JSON.stringify({ v: PROTOCOL, type: 'boot.progress', stage, t: now(), ...detail }));
}

// Work that needs nothing from PyScript starts as soon as PyScript imports this
// module, while it still opens its own storage: Pyodide's JS, the package (whose hash
// keys the snapshot) and the lookup of a stored snapshot.
const record = { start: now(), snapshot: 'none' };
const factory = import(new URL('pyodide.asm.mjs', PYODIDE).href).then((m) => m.default);
const pkg = fetchPackage(version);
const found = pkg.then(({ key }) => findSnapshot(key)).catch(() => null);
// A failure here surfaces in loadPyodide; not as an unhandled rejection before it.
for (const p of [factory, pkg]) p.catch(() => {});

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

export async function loadPyodide(options = {}) {
  openChannel(options.indexURL);
  progress('runtime');
  const base = { ...options, indexURL: PYODIDE, createPyodideModule: createModule };
  const entry = await found;
  const length = entry ? declaredLength(entry) : 0;
  if (entry && !length) record.snapshot = 'rejected:unlabelled';
  if (length) {
    try {
      return finish(await restore(base, entry, length));
    } catch (error) {
      record.snapshot = `rejected:${error instanceof SnapshotRejected ? error.reason : 'restore'}`;
      console.warn('firsttoken: snapshot not used, booting normally:', error);
      delete record.wasm_done;
      delete record.snapshot_read;
    }
  }
  if (record.snapshot.startsWith('rejected')) await dropSnapshots().catch(() => {});
  const py = await loadPyodideCore(base);
  record.interpreter_done = now();
  progress('interpreter');
  return finish(py);
}

async function restore(base, entry, length) {
  // Pyodide sizes the new heap from `_loadSnapshot` but copies the snapshot in only
  // after the wasm is compiled and instantiated (pyodide.mjs: prepareSnapshot, then
  // createPyodideModule, then restoreSnapshot). So it gets an empty buffer of the
  // declared length at once, and the bytes are read, verified and copied into it while
  // the runtime compiles: the module factory hands the module over only after that.
  // Should a later Pyodide read the buffer earlier, it finds no snapshot magic there,
  // throws, and the caller falls back to a normal boot.
  const heap = new Uint8Array(length);
  const bytes = verifiedBytes(entry);
  bytes.catch(() => {});
  const createPyodideModule = async (settings) => {
    const module = await createModule(settings);
    heap.set(await bytes);
    record.snapshot_read = now();
    record.snapshot_bytes = length;
    progress('snapshot', { bytes: length });
    return module;
  };
  const py = await loadPyodideCore({ ...base, createPyodideModule, _loadSnapshot: heap });
  record.interpreter_done = now();
  // A heap that restored but lacks our modules is not ours: treat it as corrupt.
  if (!py.runPython(`import sys\n${JSON.stringify(IMPORTS[0])} in sys.modules`)) throw new SnapshotRejected('foreign');
  record.snapshot = 'restored';
  progress('interpreter');
  return py;
}

// Durations (ms) from the moment this module started, plus that moment on the epoch
// clock, so the page can place them on its own timeline. `assets_ms` is from Resource
// Timing: when the last runtime file (Pyodide's module, wasm and standard library,
// the package) had arrived.
function finish(py) {
  const since = (t) => (t == null ? null : round(t - record.start));
  const runtime = performance.getEntriesByType('resource')
    .filter((e) => e.name.startsWith(PYODIDE) || e.name === PACKAGE);
  const boot = {
    snapshot: record.snapshot,
    snapshot_bytes: record.snapshot_bytes ?? null,
    worker_start: record.start,
    assets_ms: runtime.length ? since(performance.timeOrigin + Math.max(...runtime.map((e) => e.responseEnd))) : null,
    snapshot_ms: since(record.snapshot_read),
    wasm_ms: since(record.wasm_done),
    interpreter_ms: since(record.interpreter_done),
    loader_ms: since(now()),
  };
  // Handed to py/boot.py, which sends it with `ready`. This JS reference lives only in
  // this interpreter; it is never part of a heap image.
  py.registerJsModule('_firsttoken_boot', { record: JSON.stringify(boot) });
  channel?.close();
  return py;
}
