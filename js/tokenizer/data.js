// An encoding's vocabulary, read from tiktoken's own data, and its Encoding built.
//
// npm tiktoken's `encoders/<name>.json` (the file CPython's tiktoken is built from here,
// tests and gateway alike) holds `bpe_ranks`: "! <first rank> <token> <token> …", each
// token its bytes in base64 and ranks rising by one (groups may follow on new lines).
// It is read here in slices rather than imported as a JavaScript module of literals:
// evaluating 200,000 literals is one long task of the thread that also streams replies,
// where JSON.parse of one string and a sliced walk over it are not.

import { ENCODINGS, Encoding, indexTable } from './bpe.js';

const B64 = new Int8Array(128).fill(-1);
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries()) {
  B64[c.charCodeAt(0)] = i;
}
const SPACE = 32;
const NEWLINE = 10;

// Decode s[from, to) (base64, padded) into out[at…]; returns the byte length, or -1.
function base64Into(s, from, to, out, at) {
  let n = at;
  let bits = 0;
  let value = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c === 61) break; // '=': padding
    const v = c < 128 ? B64[c] : -1;
    if (v < 0) return -1;
    value = ((value << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (value >> bits) & 0xff;
    }
  }
  return n - at;
}

// The UTF-16 length of bytes[from, to) as a string, or -1 when they are not
// well-formed UTF-8 (Unicode 16, table 3-7: no overlong form, no surrogate, nothing past
// U+10FFFF: what a fatal TextDecoder accepts) or begin with a BOM.
function stringLength(bytes, from, to) {
  if (to - from >= 3 && bytes[from] === 0xef && bytes[from + 1] === 0xbb && bytes[from + 2] === 0xbf) return -1;
  let units = 0;
  for (let i = from; i < to;) {
    const b = bytes[i];
    units++;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      else if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      units++; // a surrogate pair
      if (b === 0xf0) lo = 0x90;
      else if (b === 0xf4) hi = 0x8f;
    } else return -1;
    if (i + need >= to) return -1; // cut short
    if (bytes[i + 1] < lo || bytes[i + 1] > hi) return -1;
    for (let k = 2; k <= need; k++) if ((bytes[i + k] & 0xc0) !== 0x80) return -1;
    i += need + 1;
  }
  return units;
}

/**
 * The table (index = rank: a string, or the bytes) of tiktoken's `bpe_ranks`, read
 * `slice` tokens at a time with `await pause()` in between (when given). Each slice's
 * strings come from one TextDecoder call over their bytes, cut by their lengths: a call
 * per token cost seconds in JavaScriptCore.
 */
export async function tableFromTiktoken(bpeRanks, pause = null, slice = 8192) {
  const s = bpeRanks;
  const end = s.length;
  const table = [];
  const text = new TextDecoder('utf-8', { ignoreBOM: true });
  let bytes = new Uint8Array(1 << 16); // a slice's tokens, one after another
  let joined = new Uint8Array(1 << 16); // those that are strings
  const ends = new Int32Array(slice); // where each token ends in `bytes`
  const units = new Int32Array(slice); // its string's length, or -1: kept as bytes
  let at = 0;
  const skipSpaces = () => {
    while (at < end && s.charCodeAt(at) === SPACE) at++;
  };
  const word = () => {
    const start = at;
    while (at < end && s.charCodeAt(at) !== SPACE && s.charCodeAt(at) !== NEWLINE) at++;
    return s.slice(start, at);
  };
  while (at < end) {
    skipSpaces();
    const marker = word();
    skipSpaces();
    if (marker !== '!' || Number(word()) !== table.length) {
      throw new Error(`bpe_ranks: a group does not continue at rank ${table.length}`);
    }
    let groupDone = false;
    while (!groupDone) {
      let k = 0;
      let used = 0;
      for (; k < slice; k++) {
        skipSpaces();
        if (at >= end || s.charCodeAt(at) === NEWLINE) {
          groupDone = true;
          break;
        }
        const t0 = at;
        while (at < end && s.charCodeAt(at) !== SPACE && s.charCodeAt(at) !== NEWLINE) at++;
        if (used + at - t0 > bytes.length) {
          const bigger = new Uint8Array(2 * (used + at - t0));
          bigger.set(bytes.subarray(0, used));
          bytes = bigger;
        }
        const n = base64Into(s, t0, at, bytes, used);
        if (n <= 0) throw new Error(`bpe_ranks: rank ${table.length + k} is not base64`);
        units[k] = stringLength(bytes, used, used + n);
        used += n;
        ends[k] = used;
      }
      if (joined.length < used) joined = new Uint8Array(used);
      let size = 0;
      for (let i = 0, from = 0; i < k; from = ends[i], i++) {
        if (units[i] >= 0) {
          joined.set(bytes.subarray(from, ends[i]), size);
          size += ends[i] - from;
        }
      }
      const strings = text.decode(joined.subarray(0, size));
      for (let i = 0, from = 0, unit = 0; i < k; from = ends[i], i++) {
        if (units[i] >= 0) {
          table.push(strings.slice(unit, unit + units[i]));
          unit += units[i];
        } else {
          table.push(Array.from(bytes.subarray(from, ends[i])));
        }
      }
      if (pause !== null && k === slice) await pause();
    }
    if (at < end) at++; // the newline
  }
  return table;
}

/**
 * Load an encoding's vocabulary (tiktoken's `<name>.json` under `dataURL`, e.g. the
 * page's vendor/tiktoken/) and build its Encoding; `pause`: see indexTable.
 */
export async function loadEncoding(name, dataURL, pause = null) {
  if (!ENCODINGS.includes(name)) throw new Error(`unsupported encoding ${name}`);
  const response = await fetch(new URL(`${name}.json`, dataURL));
  if (!response.ok) throw new Error(`${name}.json: HTTP ${response.status}`);
  const { bpe_ranks: bpeRanks } = JSON.parse(await response.text());
  if (pause !== null) await pause();
  const table = await tableFromTiktoken(bpeRanks, pause);
  return new Encoding(name, table, await indexTable(table, pause));
}
