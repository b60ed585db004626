// Worker of bench/tokens_page.html: Pyodide as the app's core gets it (/vendor/pyodide/,
// the package from /py/firsttoken.zip), then firsttoken's page tokenizer registered and
// installed as js/boot/pyodide-loader.js and the app do it.

import { loadPyodide } from '../vendor/pyodide/pyodide.mjs';
import { registerTokenizer } from '../js/tokenizer/python-module.js';

const base = new URL('../', import.meta.url).href;

async function boot() {
  const started = performance.now();
  const [pyodide, zip] = await Promise.all([
    loadPyodide({ indexURL: new URL('vendor/pyodide/', base).href }),
    fetch(new URL('py/firsttoken.zip', base)).then((r) => {
      if (!r.ok) throw new Error(`firsttoken.zip: HTTP ${r.status}`);
      return r.arrayBuffer();
    }),
  ]);
  pyodide.unpackArchive(zip, 'zip');
  registerTokenizer(pyodide);
  pyodide.runPython('from firsttoken.browser import tokenizer\ntokenizer.install()');
  return { pyodide, ms: performance.now() - started };
}

const ready = boot();
ready.then(
  ({ ms }) => postMessage({ type: 'ready', boot: { ms } }),
  (error) => postMessage({ type: 'failed', error: String(error && error.stack || error) }),
);

onmessage = async ({ data: { id, code, arg } }) => {
  try {
    const { pyodide } = await ready;
    const scope = pyodide.globals.get('dict')();
    scope.set('ARG', arg);
    const result = await pyodide.runPythonAsync(code, { globals: scope });
    scope.destroy();
    postMessage({ id, ok: true, result });
  } catch (error) {
    postMessage({ id, ok: false, error: String(error && error.message || error) });
  }
};
