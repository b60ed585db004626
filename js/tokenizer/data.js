// @ts-check
// An encoding's vocabulary, as the gateway serves it for the page, and its Encoding built.
//
// tiktoken's own `encoders/<name>.json` (npm tiktoken, what CPython's tiktoken is built
// from here) holds each token as base64; decoding those 1.9 million characters and
// checking each token's UTF-8 here was half of a first count's wait. The gateway does it
// once (gateway/vocabulary.py) and serves `<name>.decoded.json`:
//   {"format": "firsttoken-vocabulary/1", "encoding", "ranks",
//    "text": the tokens that are text, joined in rank order,
//    "lengths": a character per rank, 0x20 + its length in `text` (0x20 alone: bytes),
//    "bytes": {"<rank>": base64}}
// so a rank's string lies in one string JSON.parse made natively, and is never sliced
// out of it: the index (bpe.js TokenIndex) finds a rank by where its text lies. Read in
// slices rather than imported as a module of literals: evaluating 200,000 literals is
// one long task of the thread that also streams replies. Checked whole before use: a
// table one token off would miscount every prompt without a sign.

import { ENCODINGS, Encoding, TokenIndex } from './bpe.js';

export const FORMAT = 'firsttoken-vocabulary/1';
const LENGTH_BASE = 0x20;

const B64 = new Int8Array(128).fill(-1);
for (const [i, c] of [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'].entries()) {
  B64[c.charCodeAt(0)] = i;
}

// The bytes of a base64 string (padded), or null when it is not base64 of a byte or more.
function base64Bytes(s) {
  if (typeof s !== 'string' || s.length === 0 || s.length % 4 !== 0) return null;
  const out = [];
  let bits = 0;
  let value = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 61 && i >= s.length - 2) break; // '=': padding, at the end only
    const v = c < 128 ? B64[c] : -1;
    if (v < 0) return null;
    value = ((value << 6) | v) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push((value >> bits) & 0xff);
    }
  }
  return out.length ? out : null;
}

/**
 * The index (bpe.js TokenIndex) of a served vocabulary `doc` for `name`, `slice` ranks
 * at a time with `await pause()` in between (when given). Throws when `doc` is not that
 * vocabulary, whole and well formed.
 */
export async function indexVocabulary(doc, name, pause = null, slice = 16384) {
  const bad = (why) => new Error(`${name} vocabulary: ${why}`);
  if (doc === null || typeof doc !== 'object' || doc.format !== FORMAT) throw bad(`not ${FORMAT}`);
  if (doc.encoding !== name) throw bad(`it is ${doc.encoding}'s`);
  const { ranks, text, lengths, bytes } = doc;
  if (!Number.isInteger(ranks) || ranks <= 0 || typeof text !== 'string' || typeof lengths !== 'string'
      || lengths.length !== ranks || bytes === null || typeof bytes !== 'object') {
    throw bad('its ranks, text, lengths or bytes are missing');
  }
  const index = new TokenIndex(text, ranks);
  let at = 0; // in `text`
  let raw = 0; // byte tokens taken
  for (let from = 0; from < ranks; from += slice) {
    const to = Math.min(from + slice, ranks);
    for (let rank = from; rank < to; rank++) {
      const units = lengths.charCodeAt(rank) - LENGTH_BASE;
      if (units > 0) {
        if (at + units > text.length) throw bad(`rank ${rank} runs past its text`);
        index.addText(rank, at, units);
        at += units;
      } else if (units === 0) {
        const token = base64Bytes(bytes[rank]);
        if (token === null) throw bad(`rank ${rank} has neither text nor bytes`);
        index.addBytes(rank, token);
        raw++;
      } else {
        throw bad(`rank ${rank} has no length`);
      }
    }
    if (pause !== null && to < ranks) await pause();
  }
  if (at !== text.length) throw bad(`its lengths cover ${at} of ${text.length} characters of text`);
  if (raw !== Object.keys(bytes).length) throw bad('it has bytes for ranks that are text');
  return index;
}

/**
 * Load an encoding's vocabulary (`<name>.decoded.json` under `dataURL`, the page's
 * vendor/tiktoken/) and build its Encoding; `pause`: see indexVocabulary.
 */
export async function loadEncoding(name, dataURL, pause = null) {
  if (!ENCODINGS.includes(name)) throw new Error(`unsupported encoding ${name}`);
  const response = await fetch(new URL(`${name}.decoded.json`, dataURL));
  if (!response.ok) throw new Error(`${name}.decoded.json: HTTP ${response.status}`);
  const doc = JSON.parse(await response.text());
  if (pause !== null) await pause();
  return new Encoding(name, await indexVocabulary(doc, name, pause));
}
