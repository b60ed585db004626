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
const ASCII = /^[\x00-\x7f]*$/;

export class Encoding {
  /**
   * @param {string} name
   * @param {(string | number[])[]} table index = rank; a string, or the bytes when they
   *   are not valid UTF-8 (or begin with a BOM, which a TextDecoder would drop)
   * @param {{ranks: Map, byteRanks: Map}} index the table's lookup maps (indexTable)
   */
  constructor(name, table, index = indexTable(table)) {
    this.name = name;
    this.size = table.length;
    this.table = table;
    this.splitter = new Splitter(name);
    this.ranks = index.ranks;
    this.byteRanks = index.byteRanks;
    this.cache = new Map();
    this.utf8 = new Uint8Array(256);
    this.unitAt = new Int32Array(257);
    this.encoder = new TextEncoder();
    this.tokenBytes = null;
  }

  /** Number of tokens in `text` (special-token text is ordinary text). */
  count(text) {
    if (!text.isWellFormed()) text = text.toWellFormed();
    const { ranks, splitter } = this;
    let n = 0;
    for (let i = 0, end = 0; i < text.length; i = end) {
      end = splitter.next(text, i);
      const piece = text.slice(i, end);
      n += ranks.has(piece) ? 1 : this.merge(piece).length;
    }
    return n;
  }

  /** Token ids of `text`, as an Int32Array. */
  encode(text) {
    if (!text.isWellFormed()) text = text.toWellFormed();
    const { ranks, splitter } = this;
    let out = new Int32Array(Math.max(16, text.length >> 1));
    let n = 0;
    for (let i = 0, end = 0; i < text.length; i = end) {
      end = splitter.next(text, i);
      const piece = text.slice(i, end);
      const rank = ranks.get(piece);
      const ids = rank === undefined ? this.merge(piece) : null;
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
    if (this.tokenBytes === null) {
      this.tokenBytes = this.table.map((t) => (typeof t === 'string' ? this.encoder.encode(t) : Uint8Array.from(t)));
    }
    const parts = this.tokenBytes;
    let size = 0;
    for (let i = 0; i < ids.length; i++) {
      const part = parts[ids[i]];
      if (part === undefined) throw new RangeError(`${this.name}: ${ids[i]} is not a token id`);
      size += part.length;
    }
    const out = new Uint8Array(size);
    let at = 0;
    for (let i = 0; i < ids.length; i++) {
      out.set(parts[ids[i]], at);
      at += parts[ids[i]].length;
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
    const { ranks } = this;
    return bytePairMerge(piece.length, (a, b) => ranks.get(piece.slice(a, b)) ?? NO_RANK);
  }

  // Otherwise work on the UTF-8 bytes. A slice that starts and ends on character
  // boundaries is a string (unless it starts with a BOM); any other is a byte string.
  mergeUtf8(piece) {
    if (this.utf8.length < piece.length * 3) {
      this.utf8 = new Uint8Array(piece.length * 3);
      this.unitAt = new Int32Array(piece.length * 3 + 1);
    }
    const { written } = this.encoder.encodeInto(piece, this.utf8);
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
    const { ranks, byteRanks } = this;
    const rankOf = (a, b) => {
      const from = unitAt[a];
      const to = unitAt[b];
      if (from >= 0 && to >= 0 && piece.charCodeAt(from) !== BOM) return ranks.get(piece.slice(from, to)) ?? NO_RANK;
      return byteRanks.get(String.fromCharCode(...bytes.subarray(a, b))) ?? NO_RANK;
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
 * The lookup maps of a vocabulary table: string → rank, byte string → rank. With
 * `pause` (a function returning a promise), built `slice` ranks at a time, awaiting
 * `pause()` in between: building all 200,000 at once is ~40 ms of a thread that may
 * be streaming a reply (js/tokenizer/python-module.js).
 */
export function indexTable(table, pause = null, slice = 16384) {
  const ranks = new Map();
  const byteRanks = new Map();
  const fill = (from, to) => {
    for (let rank = from; rank < to; rank++) {
      const token = table[rank];
      if (typeof token === 'string') ranks.set(token, rank);
      else byteRanks.set(String.fromCharCode(...token), rank);
    }
  };
  if (pause === null) {
    fill(0, table.length);
    return { ranks, byteRanks };
  }
  return (async () => {
    for (let from = 0; from < table.length; from += slice) {
      fill(from, Math.min(from + slice, table.length));
      await pause();
    }
    return { ranks, byteRanks };
  })();
}
