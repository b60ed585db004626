// The install-time snapshot, made in Node:  node js/boot/bake-snapshot.js PACKAGE.zip OUT [STDLIB.zip]
//
// `python -m gateway.build.bake` runs this with the package zip and the standard library
// exactly as the gateway serves them (the heap holds zipimport's directory of the
// standard library's zip: restored over another zip, it would read wrong offsets). OUT gets the packed snapshot (make-snapshot.js, the same code the page's own
// maker runs), OUT.json what it was made from and what it is: {pyodide, format,
// package, length, stored, sha256}. The gateway serves it to pages that have no
// snapshot of their own yet (gateway/snapshot.py); the page checks every one of those
// fields before restoring it, so a mismatch costs a normal boot, never a broken one.
// A snapshot made here restores in the browser: Pyodide's heap does not depend on the
// JS engine, and the only JS values it names (`js`, Pyodide's own API) are found
// again by path in the page's worker.

import { readFileSync, writeFileSync } from 'node:fs';
import { loadPyodide, version } from '../../node_modules/pyodide/pyodide.mjs';
import { FORMAT, sha256Hex } from './snapshot.js';
import { makeSnapshot } from './make-snapshot.js';

const [zipPath, out, stdlibPath] = process.argv.slice(2);
if (!zipPath || !out) {
  console.error('usage: node js/boot/bake-snapshot.js PACKAGE.zip OUT [STDLIB.zip]');
  process.exit(2);
}
const zip = new Uint8Array(readFileSync(zipPath));
const log = (text) => console.error(text);
const options = { stdout: log, stderr: log, ...(stdlibPath ? { stdLibURL: stdlibPath } : {}) };
const { body, length } = await makeSnapshot(loadPyodide, zip, options);
writeFileSync(out, body);
writeFileSync(`${out}.json`, JSON.stringify({
  pyodide: version, format: FORMAT, package: await sha256Hex(zip), length, stored: body.byteLength, sha256: await sha256Hex(body),
}));
