// Makes the interpreter's memory snapshot, in the background, in a worker of its own.
//
// The page starts this worker (js/core.js) once Python is ready and did not come from
// a snapshot: the first visit, a new release, or a snapshot that was thrown away. It
// boots a second Pyodide with `_makeSnapshot`, imports what the page's interpreter
// imports (boot-snapshot.js IMPORTS) from the same package, takes the heap image, and
// restores it once here as a check (a snapshot that cannot restore would cost every
// later visit a failed attempt), then stores it. The page's own interpreter is never
// paused for this, and it never runs with `_makeSnapshot` (see boot-pyodide.js).
//
// It reports, as protocol text on its own channel, `boot.progress` with stage
// `snapshot.stored` (`bytes`, `ms`) or `snapshot.failed` (`error`), then the page ends it.

import { loadPyodide, version } from '../vendor/pyodide/pyodide.mjs';
import { IMPORTS, PYODIDE, fetchPackage, packHeap, unpackInto, writeSnapshot } from './boot-snapshot.js';

const now = () => performance.timeOrigin + performance.now();

function report(stage, detail) {
  postMessage(JSON.stringify({ v: 1, type: 'boot.progress', stage, t: now(), ...detail }));
}

async function make() {
  const start = now();
  const quiet = { stdout: (text) => console.warn('firsttoken snapshot:', text), stderr: (text) => console.warn('firsttoken snapshot:', text) };
  const [{ bytes, key }, py] = await Promise.all([
    fetchPackage(version),
    loadPyodide({ ...quiet, indexURL: PYODIDE, _makeSnapshot: true }),
  ]);
  // Where PyScript unpacks `[files]` ("./*": the working directory, /home/pyodide),
  // so that the modules' __file__ and the page's unpacked files agree.
  py.FS.writeFile('/tmp/firsttoken.zip', bytes);
  // (Each piece of Python runs in a namespace of its own, so that nothing of this
  // set-up lingers in __main__, where PyScript later runs py/boot.py.)
  const run = (code) => py.runPython(code, { globals: py.toPy({}) });
  const names = run('import zipfile\nzipfile.ZipFile("/tmp/firsttoken.zip").namelist()').toJs();
  py.unpackArchive(bytes, 'zip', { extractDir: '.' });
  run(IMPORTS.map((name) => `import ${name}`).join('\n'));
  // Then every other module of the package; one that cannot be imported here is
  // simply not in the snapshot (the page would import it from its file, as usual).
  const modules = names.filter((n) => n.endsWith('.py')).map((n) => n.slice(0, -3).replace(/\/__init__$/, '').replaceAll('/', '.'));
  run(`
import importlib
for name in ${JSON.stringify(modules)}:
    try:
        importlib.import_module(name)
    except Exception as exc:
        print(f"not in the snapshot: {name}: {exc!r}")
`);
  const files = names.filter((n) => !n.endsWith('/')).map((n) => [n, py.FS.readFile(py._module.PATH_FS.resolve(n))]);
  const heap = py.makeMemorySnapshot();
  const body = packHeap(heap, files);
  // Restored from what will be stored, exactly as the page will restore it.
  const image = new Uint8Array(heap.byteLength);
  unpackInto(body, image);
  const check = await loadPyodide({ ...quiet, indexURL: PYODIDE, _loadSnapshot: image });
  if (!check.runPython(`import sys\n${JSON.stringify(IMPORTS[0])} in sys.modules`)) {
    throw new Error('the snapshot restored without firsttoken in it');
  }
  if (!(await writeSnapshot(key, body, heap.byteLength))) throw new Error('no Cache Storage here');
  report('snapshot.stored', { bytes: body.byteLength, ms: Math.round(now() - start) });
}

make().catch((error) => report('snapshot.failed', { error: String(error && error.message || error) }));
