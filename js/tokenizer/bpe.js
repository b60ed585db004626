// @ts-check
// Exact BPE token counting for o200k_base and cl100k_base, in plain JavaScript.
//
// The ids must equal tiktoken's (OpenAI's tokenizer, Rust) for every string, because
// firsttoken budgets prompts with them. The vocabularies are tiktoken's own data (npm
// tiktoken's `encoders/<encoding>.json`, read by js/tokenizer/data.js). npm `gpt-tokenizer`
// ships the same ranks, but its encoder is not used: as shipped (4.0.0) it differs from
// tiktoken on
//   * U+FEFF: the 8–9 tokens that begin with the bytes EF BB BF are stored as byte
//     arrays, but its lookup of a byte slice decodes valid UTF-8 to a string first
//     (with a TextDecoder that drops a leading BOM) and only searches the string map;
//   * the split pattern: JavaScript's `\s` includes U+FEFF and lacks U+0085, where the
//     Rust regex crate's `\s` is Unicode White_Space; tiktoken's `(?i:'s|…)` also
//     matches "'ſ" (U+017F folds to s); and its cl100k_base pattern is not the one in
//     tiktoken's data file.
// Here every token whose bytes are valid UTF-8 and do not begin with a BOM is keyed by
// its string, every other token by a "byte string" (one char per byte), and texts are
// split as tiktoken's own patterns split them.
//
// Splitting (the pre-tokenizer) is js/tokenizer/split.js.

import { Splitter } from './split.js';

export const ENCODINGS = Object.freeze(['o200k_base', 'cl100k_base']);

const BOM = 0xfeff;
const NO_RANK = 0x7fffffff;
// Pieces that are not one token are merged once and remembered; text repeats (code,
// markup, a conversation counted again each turn). Cleared when full rather than kept in
// LRU order, which would cost a delete and a set on every hit.
const CACHE_LIMIT = 1 << 16;
const ASCII = /^[\x00-\x7f]*$/; // eslint-disable-line no-control-regex -- every ASCII character, controls too
const UTF8 = new TextEncoder();

export class Encoding {
  /**
   * @param {string} name
   * @param {TokenIndex} index the vocabulary's ranks (js/tokenizer/data.js builds it)
   */
  constructor(name, index) {
    this.name = name;
    this.size = index.size;
    this.index = index;
    this.splitter = new Splitter(name);
    this.cache = new Map();
    this.utf8 = new Uint8Array(256);
    this.unitAt = new Int32Array(257);
  }

  /** Number of tokens in `text` (special-token text is ordinary text). */
  count(text) {
    if (!text.isWellFormed()) text = text.toWellFormed();
    const { index, splitter } = this;
    let n = 0;
    for (let i = 0, end; i < text.length; i = end) {
      end = splitter.next(text, i);
      n += index.rank(text, i, end) !== NO_RANK ? 1 : this.merge(text.slice(i, end)).length;
    }
    return n;
  }

  /** Token ids of `text`, as an Int32Array. */
  encode(text) {
    if (!text.isWellFormed()) text = text.toWellFormed();
    const { index, splitter } = this;
    let out = new Int32Array(Math.max(16, text.length >> 1));
    let n = 0;
    for (let i = 0, end; i < text.length; i = end) {
      end = splitter.next(text, i);
      const rank = index.rank(text, i, end);
      const ids = rank === NO_RANK ? this.merge(text.slice(i, end)) : null;
      const need = n + (ids === null ? 1 : ids.length);
      if (need > out.length) {
        const bigger = new Int32Array(Math.max(need, out.length * 2));
        bigger.set(out.subarray(0, n));
        out = bigger;
      }
      if (ids === null) out[n++] = rank;
      else for (let i = 0; i < ids.length; i++) out[n++] = ids[i];
    }
    return out.subarray(0, n);
  }

  /** The bytes that `ids` stand for; throws on an id that is not a rank. */
  decodeBytes(ids) {
    const { index } = this;
    let size = 0;
    for (let i = 0; i < ids.length; i++) {
      const part = index.bytesOf(ids[i]);
      if (part === null) throw new RangeError(`${this.name}: ${ids[i]} is not a token id`);
      size += part.length;
    }
    const out = new Uint8Array(size);
    let at = 0;
    for (let i = 0; i < ids.length; i++) {
      const part = index.bytesOf(ids[i]);
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  // A piece that is not one token: tiktoken's byte-pair merge (repeatedly join the
  // adjacent pair of lowest rank; the first such pair wins ties).
  merge(piece) {
    const cached = this.cache.get(piece);
    if (cached !== undefined) return cached;
    const ids = ASCII.test(piece) ? this.mergeAscii(piece) : this.mergeUtf8(piece);
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(piece, ids);
    return ids;
  }

  // ASCII: a byte is a char, so slices of the piece are the keys.
  mergeAscii(piece) {
    const { index } = this;
    return bytePairMerge(piece.length, (a, b) => index.rank(piece, a, b));
  }

  // Otherwise work on the UTF-8 bytes. A slice that starts and ends on character
  // boundaries is a string (unless it starts with a BOM); any other is a byte string.
  mergeUtf8(piece) {
    if (this.utf8.length < piece.length * 3) {
      this.utf8 = new Uint8Array(piece.length * 3);
      this.unitAt = new Int32Array(piece.length * 3 + 1);
    }
    const { written } = UTF8.encodeInto(piece, this.utf8);
    const bytes = this.utf8;
    const unitAt = this.unitAt; // UTF-16 index of each byte that starts a character, else -1
    let unit = 0;
    for (let i = 0; i < written; i++) {
      const b = bytes[i];
      if ((b & 0xc0) === 0x80) unitAt[i] = -1;
      else {
        unitAt[i] = unit;
        unit += b >= 0xf0 ? 2 : 1;
      }
    }
    unitAt[written] = unit;
    const { index } = this;
    const rankOf = (a, b) => {
      const from = unitAt[a];
      const to = unitAt[b];
      if (from >= 0 && to >= 0 && piece.charCodeAt(from) !== BOM) return index.rank(piece, from, to);
      return index.byteRanks.get(String.fromCharCode(...bytes.subarray(a, b))) ?? NO_RANK;
    };
    return bytePairMerge(written, rankOf);
  }
}

// n parts of one byte each; rankOf(a, b) is the rank of bytes [a, b) or NO_RANK.
// Returns the ranks of the final parts. Quadratic in n, like tiktoken's own loop for the
// short pieces a split pattern makes.
function bytePairMerge(n, rankOf) {
  const starts = new Array(n + 1);
  const pairRanks = new Array(n);
  for (let i = 0; i <= n; i++) starts[i] = i;
  for (let i = 0; i < n - 1; i++) pairRanks[i] = rankOf(i, i + 2);
  pairRanks[n - 1] = NO_RANK;
  let parts = n; // starts has parts + 1 entries, pairRanks has parts
  while (parts > 1) {
    let best = NO_RANK;
    let at = -1;
    for (let i = 0; i < parts - 1; i++) {
      if (pairRanks[i] < best) {
        best = pairRanks[i];
        at = i;
      }
    }
    if (at < 0) break;
    starts.splice(at + 1, 1);
    pairRanks.splice(at + 1, 1);
    parts--;
    pairRanks[at] = at + 2 <= parts ? rankOf(starts[at], starts[at + 2]) : NO_RANK;
    if (at > 0) pairRanks[at - 1] = rankOf(starts[at - 1], starts[at + 1]);
  }
  const ids = new Array(parts);
  for (let i = 0; i < parts; i++) ids[i] = rankOf(starts[i], starts[i + 1]);
  return ids;
}

/**
 * An encoding's ranks, found from any slice of any string without making a string per
 * token. A Map of 200,000 token strings took a first count ~130 ms to build on this
 * machine (its strings sliced one by one, then hashed and inserted, then collected),
 * most of what the first Send waited for on a fresh page. Here the tokens that are text
 * stay in the one string JSON.parse made (`text`, in rank order); `start` and `units`
 * locate each rank in it (units 0: a token kept as bytes, in `byteRanks`, keyed by one
 * char per byte); `slots` is an open-addressing table (linear probing, at most half
 * full) of rank + 1 by a hash of the token's UTF-16 units, so a lookup hashes the
 * slice where it lies and compares it with `text` in place.
 */
export class TokenIndex {
  /** An empty index of `size` ranks over `text`; `addText` or `addBytes` each rank once. */
  constructor(text, size) {
    this.text = text;
    this.size = size;
    this.start = new Int32Array(size);
    this.units = new Uint16Array(size);
    let slots = 1;
    while (slots < size * 2) slots *= 2;
    this.slots = new Int32Array(slots);
    this.mask = slots - 1;
    this.byteRanks = new Map(); // byte string -> rank
    this.bytes = new Map(); // rank -> its bytes, for the tokens kept as bytes
    this.textBytes = null; // rank -> its UTF-8 bytes, made on the first decode of it
  }

  /** `rank` is `text` from `start`, `units` UTF-16 units long. */
  addText(rank, start, units) {
    this.start[rank] = start;
    this.units[rank] = units;
    const { slots, mask, text } = this;
    let slot = hashUnits(text, start, start + units) & mask;
    while (slots[slot] !== 0) slot = (slot + 1) & mask;
    slots[slot] = rank + 1;
  }

  /** `rank` is these bytes (not UTF-8 text, or text that begins with a BOM). */
  addBytes(rank, bytes) {
    this.bytes.set(rank, Uint8Array.from(bytes));
    this.byteRanks.set(String.fromCharCode(...bytes), rank);
  }

  /** The rank of `s.slice(a, b)` as text, or NO_RANK. */
  rank(s, a, b) {
    const { slots, mask, text, start, units } = this;
    const length = b - a;
    for (let slot = hashUnits(s, a, b) & mask; ; slot = (slot + 1) & mask) {
      const found = slots[slot] - 1;
      if (found < 0) return NO_RANK;
      if (units[found] !== length) continue;
      let i = 0;
      const at = start[found];
      while (i < length && text.charCodeAt(at + i) === s.charCodeAt(a + i)) i++;
      if (i === length) return found;
    }
  }

  /** The bytes token `rank` stands for, or null when it is not a rank. */
  bytesOf(rank) {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.size) return null;
    if (this.units[rank] === 0) return this.bytes.get(rank) ?? null;
    this.textBytes ??= new Array(this.size);
    return (this.textBytes[rank] ??= UTF8.encode(this.text.slice(this.start[rank], this.start[rank] + this.units[rank])));
  }
}

// FNV-1a over UTF-16 code units: the same value for a slice wherever it lies.
function hashUnits(s, a, b) {
  let h = 0x811c9dc5;
  for (let i = a; i < b; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
