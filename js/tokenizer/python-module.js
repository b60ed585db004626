// @ts-check
// The tokenizer (js/tokenizer/bpe.js), offered to Python in the thread that runs it.
//
// Python's `tokens.count()` is synchronous and Pyodide cannot import a JavaScript
// module by itself (no dynamic import() from Python; the page's CSP forbids eval). So
// the JavaScript that starts Pyodide registers this module with it, as the Python
// module `_firsttoken_tokenizer` (firsttoken.browser.tokenizer): a call is then a plain
// synchronous FFI call on this thread. No other thread and no shared memory are
// involved, so counting is exact wherever Pyodide runs: without SharedArrayBuffer
// (WebKitGTK, Safari's WebViews), and without cross-origin isolation (Android's
// WebView never has it).
//
// A heap snapshot holds no JavaScript objects: whoever restores one registers this
// module again (js/boot/pyodide-loader.js does on every boot, restored or not).
//
// Only `load` is asynchronous. It imports the tokenizer and fetches the vocabulary on
// first use (never at boot), then reads it and builds its index (bpe.js TokenIndex) in
// slices, handing the thread back in between, so that a reply streaming meanwhile is
// paused for one slice at a time (a few ms), not for the whole load (~100 ms).
//
// Text arrives as UTF-8 bytes (a Python `bytes`, read in place through the buffer
// protocol): Python encodes at C speed, where converting a str to a JavaScript string
// goes character by character (~50 ms per MB of non-ASCII text in Pyodide 314).
//
//   load(name) → Promise<ms>          build `name` (o200k_base, cl100k_base), once
//   count(name, utf8) → number         tokens in the text
//   encode(name, utf8) → Int32Array    its ids
//   decode(name, ids) → Uint8Array     ids (an int32 buffer) → bytes

// The vocabularies (tiktoken's data), as the gateway serves them (gateway/static.py VENDOR).
const DATA_URL = new URL('../../vendor/tiktoken/', import.meta.url);
// ignoreBOM: a leading U+FEFF is text to count, not a byte-order mark to drop.
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

const encodings = new Map(); // name -> Encoding, once built
const loading = new Map(); // name -> Promise<Encoding>

// Hands the thread back to its event loop (a task, not a microtask: messages and
// fetch reads waiting to run must get their turn), without setTimeout's 4 ms clamp.
function pause() {
  return new Promise((resolve) => {
    const { port1, port2 } = new MessageChannel();
    port1.onmessage = () => {
      port1.close();
      resolve();
    };
    port2.postMessage(null);
  });
}

function encoding(name) {
  const found = encodings.get(name);
  if (!found) throw new Error(`${name} is not loaded (await ensure_encoder first)`);
  return found;
}

// A Python buffer (PyProxy) as a typed array, for the length of `use`.
function withBuffer(proxy, type, use) {
  const buffer = proxy.getBuffer(type);
  try {
    return use(buffer.data);
  } finally {
    buffer.release();
  }
}

const text = (utf8Bytes) => withBuffer(utf8Bytes, 'u8', (bytes) => utf8.decode(bytes));

export const tokenizer = Object.freeze({
  async load(name) {
    const started = performance.now();
    if (!loading.has(name)) {
      const built = import('./data.js').then(({ loadEncoding }) => loadEncoding(name, DATA_URL, pause));
      loading.set(name, built);
      built.catch(() => loading.delete(name)); // a failed load may be tried again
    }
    encodings.set(name, await loading.get(name));
    return performance.now() - started;
  },
  count: (name, utf8Bytes) => encoding(name).count(text(utf8Bytes)),
  encode: (name, utf8Bytes) => encoding(name).encode(text(utf8Bytes)),
  decode: (name, ids) => withBuffer(ids, 'i32', (view) => encoding(name).decodeBytes(view)),
});

// Make the tokenizer importable from Python as `_firsttoken_tokenizer`.
export function registerTokenizer(pyodide) {
  pyodide.registerJsModule('_firsttoken_tokenizer', tokenizer);
}
