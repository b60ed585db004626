// @ts-check
// Making a memory snapshot of firsttoken's interpreter: shared by the page's
// background maker (snapshot-worker.js) and the install-time bake (bake-snapshot.js,
// run by Node through `python -m gateway.build.bake`). Both must give the heap the page
// restores, so this is the one place that says what goes in.
//
// Pyodide is booted with `_makeSnapshot`; the package is unpacked where PyScript
// unpacks `[files]` ("./*": the working directory, /home/pyodide), so that the modules'
// __file__ and the page's files agree; IMPORTS are imported, then every other module
// of the package (one that cannot be imported here is simply left out: the page would
// import it from its file, as usual). The heap is packed with the package's files
// (snapshot.js), restored once from exactly those bytes as a check (a snapshot
// that cannot restore would cost every later visit a failed attempt), and returned.

import { IMPORTS, packHeap, unpackInto } from './snapshot.js';

// `loadPyodide`: Pyodide's own; `zip`: the package as the gateway serves it;
// `options`: passed to loadPyodide (indexURL, stdout, stderr). → {body, length}.
export async function makeSnapshot(loadPyodide, zip, options = {}) {
  const py = await loadPyodide({ ...options, _makeSnapshot: true });
  // Each piece of Python runs in a namespace of its own, so that nothing of this
  // set-up lingers in __main__, where PyScript later runs py/boot.py.
  const run = (code) => py.runPython(code, { globals: py.toPy({}) });
  py.FS.writeFile('/tmp/firsttoken.zip', zip);
  const names = run('import zipfile\nzipfile.ZipFile("/tmp/firsttoken.zip").namelist()').toJs();
  py.FS.unlink('/tmp/firsttoken.zip');
  py.unpackArchive(zip, 'zip', { extractDir: '.' });
  run(IMPORTS.map((name) => `import ${name}`).join('\n'));
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
  const image = new Uint8Array(heap.byteLength);
  unpackInto(body, image);
  const check = await loadPyodide({ ...options, _loadSnapshot: image });
  if (!check.runPython(`import sys\n${JSON.stringify(IMPORTS[0])} in sys.modules`)) {
    throw new Error('the snapshot restored without firsttoken in it');
  }
  return { body, length: heap.byteLength };
}
