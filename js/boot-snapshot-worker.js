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
import { IMPORTS, PYODIDE, fetchPackage, writeSnapshot } from './boot-snapshot.js';

const now = () => performance.timeOrigin + performance.now();

function report(stage, detail) {
  postMessage(JSON.stringify({ v: 1, type: 'boot.progress', stage, t: now(), ...detail }));
}

async function make() {
  const start = now();
  const quiet = { stdout: () => {}, stderr: (text) => console.warn('firsttoken snapshot:', text) };
  const [{ bytes, key }, py] = await Promise.all([
    fetchPackage(version),
    loadPyodide({ ...quiet, indexURL: PYODIDE, _makeSnapshot: true }),
  ]);
  // Where PyScript unpacks `[files]` ("./*": the working directory, /home/pyodide),
  // so that the modules' __file__ and the page's unpacked files agree.
  py.unpackArchive(bytes, 'zip', { extractDir: '.' });
  py.runPython(IMPORTS.map((name) => `import ${name}`).join('\n'));
  const heap = py.makeMemorySnapshot();
  const check = await loadPyodide({ ...quiet, indexURL: PYODIDE, _loadSnapshot: heap });
  if (!check.runPython(`import sys\n${JSON.stringify(IMPORTS[0])} in sys.modules`)) {
    throw new Error('the snapshot restored without firsttoken in it');
  }
  if (!(await writeSnapshot(key, heap))) throw new Error('no Cache Storage here');
  report('snapshot.stored', { bytes: heap.byteLength, ms: Math.round(now() - start) });
}

make().catch((error) => report('snapshot.failed', { error: String(error && error.message || error) }));
