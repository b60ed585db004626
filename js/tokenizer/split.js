// The pre-tokenizer: where tiktoken's split pattern cuts a text into pieces.
//
// tiktoken splits with a regex (npm tiktoken `encoders/<name>.json`, `pat_str`):
//
//   o200k_base  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//              |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//              |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   cl100k_base (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}
//              | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// Running that regex in V8 is most of the cost of counting, so it is hand-compiled here:
// one pass over the code points, a class table, and for each alternative the end its
// backtracking would settle on (worked out beside each case below). Semantics that
// differ between JavaScript and the Rust regex crate are taken from Rust: `\s` is
// Unicode White_Space (JavaScript's includes U+FEFF and lacks U+0085), and `(?i:'s)`
// also matches "'ſ" (U+017F folds to s).
//
// Unicode versions: classes come from the engine's Unicode tables, which must agree with
// tiktoken's (Unicode 16.0). Engines with Unicode 17 know 4,803 more characters and moved
// U+0295 from Ll to Lo; with the `v` flag (Chromium 112+, Safari 17+, Firefox 116+) the
// classes subtract those, so 16 and 17 engines both classify like tiktoken. Older
// engines get plain classes and may differ on characters their tables lack.

// Assigned in Unicode 17.0, unassigned in 16.0 (tests/corpus/tokens/unicode_after_16.mjs).
const NEW_IN_17 = [
  [0x88f, 0x88f], [0xc5c, 0xc5c], [0xcdc, 0xcdc], [0x1acf, 0x1add], [0x1ae0, 0x1aeb],
  [0x20c1, 0x20c1], [0x2b96, 0x2b96], [0xa7ce, 0xa7cf], [0xa7d2, 0xa7d2], [0xa7d4, 0xa7d4],
  [0xa7f1, 0xa7f1], [0xfbc3, 0xfbd2], [0xfd90, 0xfd91], [0xfdc8, 0xfdce], [0x10940, 0x10959],
  [0x10ec5, 0x10ec7], [0x10ed0, 0x10ed8], [0x10efa, 0x10efb], [0x11b60, 0x11b67],
  [0x11db0, 0x11ddb], [0x11de0, 0x11de9], [0x16ea0, 0x16eb8], [0x16ebb, 0x16ed3],
  [0x16ff2, 0x16ff6], [0x187f8, 0x187ff], [0x18d09, 0x18d1e], [0x18d80, 0x18df2],
  [0x1ccfa, 0x1ccfc], [0x1ceba, 0x1ced0], [0x1cee0, 0x1cef0], [0x1e6c0, 0x1e6de],
  [0x1e6e0, 0x1e6f5], [0x1e6fe, 0x1e6ff], [0x1f6d8, 0x1f6d8], [0x1f777, 0x1f77a],
  [0x1f8d0, 0x1f8d8], [0x1fa54, 0x1fa57], [0x1fa8a, 0x1fa8a], [0x1fa8e, 0x1fa8e],
  [0x1fac8, 0x1fac8], [0x1facd, 0x1facd], [0x1faea, 0x1faea], [0x1faef, 0x1faef],
  [0x1fbfa, 0x1fbfa], [0x2b73a, 0x2b73f], [0x2cea2, 0x2cead], [0x323b0, 0x33479],
];
// Lowercase (Ll) in Unicode 16, other letter (Lo) in 17.
const LL_IN_16 = 0x295;

// Class bits of a code point.
const UPPER = 1; // Lu, Lt
const LOWER = 2; // Ll
const OTHER_LETTER = 4; // Lm, Lo
const MARK = 8; // M
const NUMBER = 16; // N
const SPACE = 32; // White_Space (Rust's \s)
const NEWLINE = 64; // \r, \n
const KNOWN = 128; // memo: classified
const LETTER = UPPER | LOWER | OTHER_LETTER;
// o200k_base's two letter classes: [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and [\p{Ll}\p{Lm}\p{Lo}\p{M}].
const CASED_UPPER = UPPER | OTHER_LETTER | MARK;
const CASED_LOWER = LOWER | OTHER_LETTER | MARK;
// [^\r\n\p{L}\p{N}] (the optional first character) and [^\s\p{L}\p{N}] (punctuation runs).
const NOT_PREFIX = NEWLINE | LETTER | NUMBER;
const NOT_PUNCT = SPACE | LETTER | NUMBER;

const hex = (c) => `\\u{${c.toString(16)}}`;

function classTests() {
  const minus = NEW_IN_17.map(([a, b]) => (a === b ? hex(a) : `${hex(a)}-${hex(b)}`)).join('');
  const tests = (upper, lower, other, mark, number, flags) => [
    [UPPER, new RegExp(upper, flags)],
    [LOWER, new RegExp(lower, flags)],
    [OTHER_LETTER, new RegExp(other, flags)],
    [MARK, new RegExp(mark, flags)],
    [NUMBER, new RegExp(number, flags)],
    [SPACE, new RegExp('\\p{White_Space}', flags)],
  ];
  try {
    return tests(
      `[[\\p{Lu}\\p{Lt}]--[${minus}]]`,
      `[[\\p{Ll}--[${minus}]]${hex(LL_IN_16)}]`,
      `[[\\p{Lm}\\p{Lo}]--[${minus}${hex(LL_IN_16)}]]`,
      `[\\p{M}--[${minus}]]`,
      `[\\p{N}--[${minus}]]`,
      'v',
    );
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return tests('[\\p{Lu}\\p{Lt}]', '\\p{Ll}', '[\\p{Lm}\\p{Lo}]', '\\p{M}', '\\p{N}', 'u');
  }
}

/** Code point classes, computed once per code point seen. */
class Classes {
  constructor() {
    this.tests = classTests();
    this.bmp = new Uint8Array(0x10000);
    this.astral = new Map();
    for (let c = 0; c < 0x80; c++) this.bmp[c] = this.classify(c);
  }

  classify(c) {
    const s = String.fromCodePoint(c);
    let bits = KNOWN;
    for (const [bit, re] of this.tests) if (re.test(s)) bits |= bit;
    if (c === 0x0a || c === 0x0d) bits |= NEWLINE;
    return bits;
  }

  of(c) {
    if (c < 0x10000) {
      const bits = this.bmp[c];
      return bits !== 0 ? bits : (this.bmp[c] = this.classify(c));
    }
    let bits = this.astral.get(c);
    if (bits === undefined) this.astral.set(c, (bits = this.classify(c)));
    return bits;
  }
}

let shared = null;

// Rust's (?i:'s|'t|'re|'ve|'m|'ll|'d) at i: the end of the contraction, or i.
function contraction(text, i) {
  if (text.charCodeAt(i) !== 0x27) return i;
  const a = text.charCodeAt(i + 1) | 0x20; // ASCII lowercase (harmless on other chars)
  if (a === 0x73 || a === 0x74 || a === 0x6d || a === 0x64) return i + 2; // s t m d
  if (text.charCodeAt(i + 1) === 0x17f) return i + 2; // ſ folds to s
  const b = text.charCodeAt(i + 2) | 0x20;
  if ((a === 0x72 && b === 0x65) || (a === 0x76 && b === 0x65) || (a === 0x6c && b === 0x6c)) return i + 3; // re ve ll
  return i;
}

/**
 * A splitter for one encoding: `next(text, i)` is the end of the piece that starts at i
 * (text must be well-formed UTF-16, and i < text.length).
 */
export class Splitter {
  constructor(encoding) {
    if (encoding !== 'o200k_base' && encoding !== 'cl100k_base') throw new Error(`no split pattern for ${encoding}`);
    this.o200k = encoding === 'o200k_base';
    shared ??= new Classes();
    this.classes = shared;
  }

  // Class bits and end of the code point at i.
  at(text, i) {
    const c = text.charCodeAt(i);
    if (c < 0x80) return this.classes.bmp[c];
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) return this.classes.of(((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000);
    }
    return this.classes.of(c);
  }

  static width(text, i) {
    const c = text.charCodeAt(i);
    return c >= 0xd800 && c < 0xdc00 && i + 1 < text.length ? 2 : 1;
  }

  // End of the longest run from i of code points with some bit of `mask` (or, when
  // `outside`, with none of them).
  run(text, i, mask, outside = false) {
    const n = text.length;
    while (i < n) {
      const c = text.charCodeAt(i);
      const bits = c < 0x80 ? this.classes.bmp[c] : this.at(text, i);
      if (((bits & mask) === 0) !== outside) return i;
      i += c < 0x80 ? 1 : Splitter.width(text, i);
    }
    return i;
  }

  next(text, i) {
    const bits = this.at(text, i);
    const after = i + Splitter.width(text, i);
    let end;
    if (this.o200k) {
      // [^\r\n\p{L}\p{N}]? is greedy: with the prefix first, then without; the whole first
      // alternative is tried before the second.
      const prefixed = (bits & NOT_PREFIX) === 0;
      if (prefixed && (end = this.lowerWord(text, after)) > after) return contraction(text, end);
      if ((end = this.lowerWord(text, i)) > i) return contraction(text, end);
      if (prefixed && (end = this.upperWord(text, after)) > after) return contraction(text, end);
      if ((end = this.upperWord(text, i)) > i) return contraction(text, end);
    } else {
      if ((end = contraction(text, i)) > i) return end;
      // [^\r\n\p{L}\p{N}]?\p{L}+
      if ((bits & NOT_PREFIX) === 0 && after < text.length && (this.at(text, after) & LETTER) !== 0) return this.run(text, after, LETTER);
      if ((bits & LETTER) !== 0) return this.run(text, i, LETTER);
    }
    // \p{N}{1,3}
    if ((bits & NUMBER) !== 0) {
      end = after;
      for (let k = 1; k < 3 && end < text.length && (this.at(text, end) & NUMBER) !== 0; k++) end += Splitter.width(text, end);
      return end;
    }
    // " ?[^\s\p{L}\p{N}]+[\r\n/]*" (cl100k_base: [\r\n]*). The + run is greedy and the
    // tail takes whatever newlines (and slashes) follow it.
    let from = -1;
    if ((bits & NOT_PUNCT) === 0) from = i;
    else if (text.charCodeAt(i) === 0x20 && after < text.length && (this.at(text, after) & NOT_PUNCT) === 0) from = after;
    if (from >= 0) {
      end = this.run(text, from, NOT_PUNCT, true);
      for (let c = text.charCodeAt(end); c === 0x0a || c === 0x0d || (c === 0x2f && this.o200k); c = text.charCodeAt(end)) end++;
      return end;
    }
    // White space (bits & SPACE here, or nothing above matched a lone character).
    if ((bits & SPACE) === 0) return after;
    const spaceEnd = this.run(text, i, SPACE);
    // \s*[\r\n]+: \s* backs off to the last newline of the run, which then ends the piece.
    for (let k = spaceEnd - 1; k >= i; k--) {
      const c = text.charCodeAt(k);
      if (c === 0x0a || c === 0x0d) return k + 1;
    }
    // \s+(?!\S): all of it at the end of the text, else all but its last character
    // (White_Space is all in the BMP) if that leaves one; else \s+.
    if (spaceEnd === text.length || spaceEnd - i < 2) return spaceEnd;
    return spaceEnd - 1;
  }

  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ from i: the * takes its
  // longest run, then backs off to the last point where the + can start; the + is
  // greedy. Returns the end, or i when it cannot match.
  lowerWord(text, i) {
    const n = text.length;
    let lastLower = -1; // last position in the upper run whose code point is also lower-class
    let k = i;
    while (k < n) {
      const bits = this.at(text, k);
      if ((bits & CASED_UPPER) === 0) break;
      if ((bits & CASED_LOWER) !== 0) lastLower = k;
      k += Splitter.width(text, k);
    }
    if (k < n && (this.at(text, k) & CASED_LOWER) !== 0) return this.run(text, k, CASED_LOWER);
    if (lastLower < 0) return i;
    return this.run(text, lastLower, CASED_LOWER);
  }

  // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* from i; i when no match.
  upperWord(text, i) {
    const k = this.run(text, i, CASED_UPPER);
    return k === i ? i : this.run(text, k, CASED_LOWER);
  }
}
