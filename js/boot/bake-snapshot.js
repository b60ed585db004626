// The install-time snapshot, made in Node:  node js/boot/bake-snapshot.js PACKAGE.zip OUT
//
// `python -m gateway.bake` runs this with the package zip exactly as the gateway
// serves it. OUT gets the packed snapshot (make-snapshot.js, the same code the page's own
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

const [zipPath, out] = process.argv.slice(2);
if (!zipPath || !out) {
  console.error('usage: node js/boot/bake-snapshot.js PACKAGE.zip OUT');
  process.exit(2);
}
const zip = new Uint8Array(readFileSync(zipPath));
const log = (text) => console.error(text);
const { body, length } = await makeSnapshot(loadPyodide, zip, { stdout: log, stderr: log });
writeFileSync(out, body);
writeFileSync(`${out}.json`, JSON.stringify({
  pyodide: version, format: FORMAT, package: await sha256Hex(zip), length, stored: body.byteLength, sha256: await sha256Hex(body),
}));
