// Makes the interpreter's memory snapshot, in the background, in a worker of its own.
//
// The page starts this worker (js/boot/boot.js) once Python is ready and did not come
// from a snapshot: the first visit (when the gateway had no install-time snapshot for this
// package), or a snapshot that was thrown away. It boots a second Pyodide and makes
// the snapshot (make-snapshot.js), then stores it. The page's own interpreter is never
// paused for this, and it never runs with `_makeSnapshot` (see pyodide-loader.js).
//
// It reports, as protocol text on its own channel, `boot.progress` with stage
// `snapshot.stored` (`bytes`, `ms`) or `snapshot.failed` (`error`), then the page ends it.

import { loadPyodide, version } from '../../vendor/pyodide/pyodide.mjs';
import { PYODIDE, fetchPackage, writeSnapshot } from './snapshot.js';
import { makeSnapshot } from './make-snapshot.js';
import { PROTOCOL_VERSION } from '../link/protocol.js';

const now = () => performance.timeOrigin + performance.now();

function report(stage, detail) {
  postMessage(JSON.stringify({ v: PROTOCOL_VERSION, type: 'boot.progress', stage, t: now(), ...detail }));
}

async function make() {
  const start = now();
  const log = (text) => console.warn('firsttoken snapshot:', text);
  const { bytes, key } = await fetchPackage(version);
  const { body, length } = await makeSnapshot(loadPyodide, bytes, { indexURL: PYODIDE, stdout: log, stderr: log });
  if (!(await writeSnapshot(key, body, length))) throw new Error('no Cache Storage here');
  report('snapshot.stored', { bytes: body.byteLength, ms: Math.round(now() - start) });
}

// A make that fails half-way (the network gone, say) leaves Pyodide's own requests
// rejected with nobody waiting on them: that is reported once, as `snapshot.failed`,
// not as uncaught errors in the page.
addEventListener('unhandledrejection', (event) => event.preventDefault());
make().catch((error) => report('snapshot.failed', { error: String(error && error.message || error) }));
