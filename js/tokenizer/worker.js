// The tokenizer's own worker, driven synchronously by Python in the core's worker.
//
// Python's `tokens.count()` is synchronous, and Python in Pyodide cannot import a
// JavaScript module by itself (no dynamic import() from Python, and the page's CSP
// forbids eval). So firsttoken._browser_tokens starts this module worker and calls it
// through shared memory: it posts a request, then blocks in Atomics.wait() until this
// worker stores the answer and notifies. Vocabularies load here, off the core's thread,
// so building them never stalls a streaming reply.
//
// Text arrives as UTF-8 in a shared input buffer: Python encodes a str to UTF-8 at C
// speed, where handing it over as a JS string converts it character by character
// (~50 ms per MB of non-ASCII text in Pyodide 314).
//
// Requests (arrays, cheap to build from Python):
//   ['init', control: Int32Array(SharedArrayBuffer), out, input: SharedArrayBuffer]
//   ['buffer', out] / ['input', input]           bigger buffers
//   ['load', id, encoding]                        async: answered by postMessage
//       {id, ok: true, ms} or {id, ok: false, error}
//   ['count', encoding, n]                        sync: the text is input[0:n] (UTF-8);
//                                                 control[1] = token count
//   ['encode', encoding, n]                       sync: ids in out (Int32), control[1] = count
//   ['decode', encoding, ids: Int32Array]         sync: bytes in out, control[1] = length
// Sync answers set control[0]: DONE, ERROR (out holds the UTF-8 message, control[1] its
// length) or SHORT (out is too small: control[1] bytes are needed; the result is kept
// and ['resend'] copies it once a bigger buffer has been sent).

import { loadEncoding } from './bpe.js';

// The vocabularies, as the gateway serves them (gateway/static.py VENDOR).
const RANKS_URL = new URL('../../vendor/gpt-tokenizer/', import.meta.url);

const DONE = 1;
const ERROR = 2;
const SHORT = 3;

let control = null;
let out = null;
let input = null;
// ignoreBOM: a leading U+FEFF is text to count, not a byte-order mark to drop.
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
// TextDecoder refuses views of shared memory, hence the copy.
const text = (n) => utf8.decode(new Uint8Array(input, 0, n).slice());
let pending = null; // a result that did not fit in `out`
const encodings = new Map(); // name -> Encoding, once loaded
const loading = new Map(); // name -> Promise<Encoding>

function answer(state, value) {
  Atomics.store(control, 1, value);
  Atomics.store(control, 0, state);
  Atomics.notify(control, 0);
}

// Copy a result (Int32Array or Uint8Array) into `out`, or ask for a bigger buffer.
function deliver(result, length) {
  if (result.byteLength > out.byteLength) {
    pending = { result, length };
    answer(SHORT, result.byteLength);
    return;
  }
  pending = null;
  new Uint8Array(out, 0, result.byteLength).set(new Uint8Array(result.buffer, result.byteOffset, result.byteLength));
  answer(DONE, length);
}

function fail(error) {
  const text = new TextEncoder().encode(String((error && error.message) || error)).subarray(0, out.byteLength);
  new Uint8Array(out, 0, text.length).set(text);
  answer(ERROR, text.length);
}

function encoding(name) {
  const found = encodings.get(name);
  if (!found) throw new Error(`${name} is not loaded (await ensure_encoder first)`);
  return found;
}

async function load(id, name) {
  const started = performance.now();
  try {
    if (!loading.has(name)) loading.set(name, loadEncoding(name, RANKS_URL));
    encodings.set(name, await loading.get(name));
    postMessage({ id, ok: true, ms: performance.now() - started });
  } catch (error) {
    loading.delete(name);
    postMessage({ id, ok: false, error: String((error && error.message) || error) });
  }
}

onmessage = ({ data }) => {
  const [op, ...args] = data;
  if (op === 'init') {
    [control, out, input] = args;
    return;
  }
  if (op === 'buffer') {
    [out] = args;
    return;
  }
  if (op === 'input') {
    [input] = args;
    return;
  }
  if (op === 'load') {
    load(...args);
    return;
  }
  try {
    if (op === 'count') {
      answer(DONE, encoding(args[0]).count(text(args[1])));
    } else if (op === 'encode') {
      const ids = encoding(args[0]).encode(text(args[1]));
      deliver(ids, ids.length);
    } else if (op === 'decode') {
      let ids = args[1];
      if (!(ids instanceof Int32Array)) ids = new Int32Array(ids.buffer, ids.byteOffset, ids.byteLength >> 2);
      const bytes = encoding(args[0]).decodeBytes(ids);
      deliver(bytes, bytes.length);
    } else if (op === 'resend') {
      if (!pending) throw new Error('no result to resend');
      deliver(pending.result, pending.length);
    } else {
      throw new Error(`unknown request ${op}`);
    }
  } catch (error) {
    fail(error);
  }
};
