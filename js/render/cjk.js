// @ts-check
// Markdown that is right for Chinese, Japanese and Korean: a marked extension of our own
// for two things CommonMark gets wrong in CJK text (issue 44).
//
// 1. Emphasis next to CJK punctuation. CommonMark decides whether `**` opens or closes
//    from the characters on either side of it (left- and right-flanking delimiter runs,
//    spec 0.31.2 §6.2): `**注意：**请看` has `：` (punctuation) inside the closing `**` and
//    `请` (not punctuation, not space) outside it, so that `**` cannot close, and the
//    reader sees literal asterisks. Chinese and Japanese put no spaces between words,
//    so this happens in most bold phrases that end in `。`, `：` or `》`
//    (commonmark/commonmark-spec#650, open; markedjs/marked#3838 and #3968 for marked).
//    We implement the CJK-friendly amendment, "CommonMark CJK-friendly Amendments
//    Specification" (tats-u/markdown-cjk-friendly, specification.md, the rule that
//    markdown-it-cjk-friendly, remark-cjk-friendly and GitLab use):
//      left-flanking  = !after.space  && (!after.punct  || before.space || before.punct
//                                          || after.cjk || before.cjk || before.ideoVs)
//      right-flanking = !before.space && (!before.punct || after.space  || after.punct
//                                          || before.cjk || after.cjk)
//    (the spec's own simplification, implementers-tips.md "Logical expressions
//    transformations"). Put plainly: where neither neighbour is whitespace and either is
//    a CJK character, a `*` run both opens and closes; everywhere else the rule is
//    CommonMark's. Only `*` changes: for `_` the amendment gives the same result as
//    CommonMark (implementers-tips.md: "It is only necessary to determine whether the
//    adjacent characters are CJK characters when ... the delimiter run is `*`"). GFM's
//    strikethrough (`~~`) has the same flanking rules and the same problem
//    (`~~注意：~~请看`); the specification's project amends it the same way
//    (micromark-extension-cjk-friendly-gfm-strikethrough), and so do we.
//
//    marked finds emphasis with its own scan (`Tokenizer.emStrong`: regular
//    expressions classify each `*` run by its neighbours, then a count pairs them).
//    We replace that method only for a paragraph with a `*` run beside a CJK
//    character; anywhere else marked's own method runs, so emphasis in text without
//    CJK is exactly what it was. Our method follows marked's pairing step for step
//    (its openers, its count, its "multiple of 3" rule), with the runs classified by
//    the rule above instead of marked's expressions.
//
// 2. Soft line breaks between CJK characters. A newline inside a paragraph shows as a
//    space; between two Han or Kana characters that space is wrong, since the lines are
//    one sentence with no spaces in it. CSS Text 4's segment break transformation says
//    the break is removed when the characters on both sides are East Asian Wide,
//    Fullwidth or Halfwidth and neither is Hangul (Korean puts spaces between words);
//    only Firefox does it when rendering (commonmark/commonmark-spec#744), so we
//    drop the newline from the HTML, never from the stored text. A user's message,
//    whose typed line breaks are shown as `<br>` (`breaks`), is left alone.

// CJK characters, spec §2.1: East Asian Width W, F or H and not a default emoji
// presentation character, or the Hangul script. Unicode 17, as the specification's
// ranges.md lists them (JavaScript has no East Asian Width property to ask).
const CJK_RANGES = (
  '1100-11ff 20a9 2329-232a 2630-2637 268a-268f 2e80-2e99 2e9b-2ef3 2f00-2fd5 2ff0-303e '
  + '3041-3096 3099-30ff 3105-312f 3131-318e 3190-31e5 31ef-321e 3220-3247 3250-a48c '
  + 'a490-a4c6 a960-a97c ac00-d7a3 d7b0-d7c6 d7cb-d7fb f900-faff fe10-fe19 fe30-fe52 '
  + 'fe54-fe66 fe68-fe6b ff01-ffbe ffc2-ffc7 ffca-ffcf ffd2-ffd7 ffda-ffdc ffe0-ffe6 '
  + 'ffe8-ffee 16fe0-16fe4 16ff0-16ff6 17000-18cd5 18cff-18d1e 18d80-18df2 1aff0-1aff3 '
  + '1aff5-1affb 1affd-1affe 1b000-1b122 1b132 1b150-1b152 1b155 1b164-1b167 1b170-1b2fb '
  + '1d300-1d356 1d360-1d376 1f200 1f202 1f210-1f219 1f21b-1f22e 1f230-1f231 1f237 1f23b '
  + '1f240-1f248 1f260-1f265 20000-3fffd'
).split(' ').map((r) => r.split('-').map((cp) => `\\u{${cp}}`).join('-')).join('');

/** One CJK character (a regular-expression class, `u` flag). */
export const CJK_CLASS = `[${CJK_RANGES}]`;
const CJK = new RegExp(`^${CJK_CLASS}$`, 'u');
const ANY_CJK = new RegExp(CJK_CLASS, 'u');

/** Whether `text` holds a CJK character (without one, the extension changes nothing). */
export const hasCJK = (text) => ANY_CJK.test(text);

// Spec §2.1: an Ideographic Variation Selector before a run counts as CJK (the
// ideograph it belongs to is one more character back).
const IDEOGRAPHIC_VS = /^[\u{E0100}-\u{E01EF}]$/u;
// Non-emoji general-use variation selectors (U+FE00–U+FE0E, not U+FE0F): a run after
// one is judged by the character the selector modifies ("CJK sequence", "punctuation
// sequence", spec §2.1), so `大塚︀**(…)**` is a CJK character before `**`.
const GENERAL_VS = /^[\uFE00-\uFE0E]$/;
// "CJK ambiguous punctuation sequences" (ranges.md): a curly quote with U+FE01 asks for
// its fullwidth form, and is then CJK.
const FULLWIDTH_QUOTES = new Set(['\u2018', '\u2019', '\u201C', '\u201D']);
// marked's own classes, so that runs away from CJK are judged exactly as marked judges
// them: whitespace is JavaScript's `\s` (U+3000 included), punctuation is Unicode P and
// S (CommonMark 0.31.2's "Unicode punctuation character"), minus `~` in GFM, where
// marked treats `~` as a letter next to `*` (so that `~~*a*~~` works), except before
// the run that opens, where its `punctuation` rule counts `~` as punctuation.
const SPACE = /^\s$/u;
const PUNCT = /^(?!~)[\p{P}\p{S}]$/u;
const PUNCT_BEFORE_OPENER = /^[\p{P}\p{S}]$/u;
// For `~`, marked counts every P and S character as punctuation, but for `*` and `_`
// before the run that opens.
const PUNCT_ANY = PUNCT_BEFORE_OPENER;
const PUNCT_BEFORE_TILDES = /^(?![*_])[\p{P}\p{S}]$/u;
// Where a `*` (`~`) run touches a CJK character: only a paragraph with one takes our
// path; elsewhere marked's own method runs.
const besideCJK = (mark) => new RegExp(
  `(?:${CJK_CLASS}|[\\u{E0100}-\\u{E01EF}]|[\\u2018\\u2019\\u201C\\u201D]\\uFE01)[\\uFE00-\\uFE0E]?${mark}|${mark}${CJK_CLASS}`, 'u');
const STAR_BESIDE_CJK = besideCJK('\\*');
const TILDE_BESIDE_CJK = besideCJK('~');
// marked's rule that a `*` between `__` and `__` at the start of the rest belongs to the
// strong emphasis around it (the first alternative of its `emStrongRDelimAst`).
const STAR_IN_UNDERSCORES = /^[^_*]*?__[^_*]*?\*[^_*]*?(?=__)/;
const STARS = /\*+/g;
const TILDES = /~+/g;

const EDGE = { char: '', space: true, cjk: false }; // the start or end of the inline text

function neighbour(char, cjk) {
  return { char, space: SPACE.test(char), cjk };
}

// The character before `at`, as the spec sees it: a general-use variation selector is
// read as the character it follows (unless that is whitespace: the spec leaves it
// unspecified, and markdown-it-cjk-friendly keeps the selector).
function before(text, at) {
  const char = charBefore(text, at);
  if (!char) return EDGE;
  if (GENERAL_VS.test(char)) {
    const base = charBefore(text, at - char.length);
    if (base && !SPACE.test(base)) {
      return neighbour(base, CJK.test(base) || (char === '\uFE01' && FULLWIDTH_QUOTES.has(base)));
    }
  }
  return neighbour(char, CJK.test(char) || IDEOGRAPHIC_VS.test(char));
}

function after(text, at) {
  if (at >= text.length) return EDGE;
  const char = String.fromCodePoint(text.codePointAt(at));
  return neighbour(char, CJK.test(char));
}

function charBefore(text, at) {
  if (at <= 0) return '';
  const low = text.charCodeAt(at - 1);
  if (at >= 2 && low >= 0xdc00 && low <= 0xdfff) {
    const high = text.charCodeAt(at - 2);
    if (high >= 0xd800 && high <= 0xdbff) return text.slice(at - 2, at);
  }
  return text[at - 1];
}

/** Whether a delimiter run between `b` and `a` is [left-flanking, right-flanking],
 * by the CJK-friendly rule (specification.md §6.2). */
export function flanking(b, a, punct = PUNCT) {
  if (b.space || a.space) return [!a.space, !b.space];
  if (b.cjk || a.cjk) return [true, true];
  const punctBefore = punct.test(b.char);
  const punctAfter = PUNCT.test(a.char);
  return [!punctAfter || punctBefore, !punctBefore || punctAfter];
}

// marked calls emStrong (del) at every `*` (`~`) of a paragraph with the same masked
// text: whether a mark touches CJK is decided once for it.
function remembered(pattern) {
  let last = null;
  let beside = false;
  return (masked) => {
    if (masked !== last) {
      last = masked;
      beside = pattern.test(masked);
    }
    return beside;
  };
}
const starBesideCJK = remembered(STAR_BESIDE_CJK);
const tildeBesideCJK = remembered(TILDE_BESIDE_CJK);

// `Tokenizer.emStrong(src, maskedSrc, prevChar)`: `src` is the rest of the inline text
// from a `*`, `maskedSrc` all of it with links, code spans and escapes masked (same
// length; marked's `[aaa]`), `prevChar` the last character of the text token before
// (empty after any other token, which marked then treats as the start of the line).
// Returning false hands the text to marked's own method.
function emStrong(src, masked, prevChar = '') {
  if (src[0] !== '*' || !starBesideCJK(masked)) return false;
  return pairStars.call(this, src, masked, prevChar);
}

// marked's pairing of `*` runs, with the runs classified by the CJK-friendly rule.
function pairStars(src, masked, prevChar) {
  const at = masked.length - src.length;
  let runStart = at; // where the whole run began (marked may be inside a run already)
  while (runStart > 0 && masked[runStart - 1] === '*') runStart--;
  let length = 0;
  while (src[length] === '*') length++;
  const inside = after(masked, at + length);
  if (inside.space) return undefined;
  const outside = runStart === at && prevChar === '' ? EDGE : before(masked, runStart);
  if (!flanking(outside, inside, PUNCT_BEFORE_OPENER)[0]) return undefined; // cannot open
  // The opener's whole run, and whether it could close too: CommonMark's "multiple of
  // 3" rule (§6.2, rules 9 and 10) looks at both.
  const runLength = at - runStart + length;
  const openerCloses = runStart > 0 && flanking(before(masked, runStart), inside, PUNCT_BEFORE_OPENER)[1];
  const midRun = prevChar === '*';
  let rest = at + length;
  rest += STAR_IN_UNDERSCORES.exec(masked.slice(rest))?.[0].length ?? 0;
  let open = length; // marked's count: stars opened and not yet closed
  let skipped = 0; // stars passed over by the multiple-of-3 rule
  STARS.lastIndex = rest;
  for (let run; (run = STARS.exec(masked));) {
    const n = run[0].length;
    const [left, right] = flanking(before(masked, run.index), after(masked, run.index + n));
    if (!right) {
      if (left) open += n;
      continue;
    }
    if ((left || openerCloses) && runLength % 3 && !((runLength + n) % 3)) {
      if (midRun && left) break;
      skipped += n;
      continue;
    }
    open -= n;
    if (open > 0) continue;
    const close = Math.min(n, n + open + skipped);
    const raw = src.slice(0, run.index - at + close);
    if (Math.min(length, close) % 2) {
      const text = raw.slice(1, -1);
      return { type: 'em', raw, text, tokens: this.lexer.inlineTokens(text) };
    }
    const text = raw.slice(2, -2);
    return { type: 'strong', raw, text, tokens: this.lexer.inlineTokens(text) };
  }
  return undefined;
}

// `Tokenizer.del(src, maskedSrc, prevChar)`, GFM strikethrough: `~` or `~~`, closed by a
// run of the same length (runs of three or more are text).
function del(src, masked, prevChar = '') {
  if (src[0] !== '~' || !tildeBesideCJK(masked)) return false;
  return pairTildes.call(this, src, masked, prevChar);
}

// marked's pairing of `~` runs, with the runs classified by the CJK-friendly rule.
function pairTildes(src, masked, prevChar) {
  const at = masked.length - src.length;
  const length = src[1] === '~' ? 2 : 1;
  const inside = after(masked, at + length);
  if (inside.space || inside.char === '~') return undefined;
  const outside = prevChar === '' ? EDGE : before(masked, at);
  if (!flanking(outside, inside, PUNCT_BEFORE_TILDES)[0]) return undefined;
  let open = length;
  TILDES.lastIndex = at + length;
  for (let run; (run = TILDES.exec(masked));) {
    const n = run[0].length;
    if (n !== length) continue;
    const [left, right] = flanking(before(masked, run.index), after(masked, run.index + n), PUNCT_ANY);
    if (!right) {
      if (left) open += n;
      continue;
    }
    open -= n;
    if (open > 0) continue;
    const raw = src.slice(0, run.index - at + n);
    const text = raw.slice(length, -length);
    return { type: 'del', raw, text, tokens: this.lexer.inlineTokens(text) };
  }
  return undefined;
}

// Characters between which a soft line break is dropped: CJK but not Hangul (CSS Text 4,
// segment break transformation rules).
const UNSPACED = new RegExp(`^(?!\\p{sc=Hangul})${CJK_CLASS}$`, 'u');
const UNSPACED_BREAK = new RegExp(`^\\n[ \\t]*(?=(?!\\p{sc=Hangul})${CJK_CLASS})`, 'u');

// The last character a token shows (the end of its innermost last text).
function lastShown(token) {
  while (token?.tokens?.length) token = token.tokens.at(-1);
  if (!token || !['text', 'escape', 'codespan'].includes(token.type)) return '';
  return charBefore(token.text, token.text.length);
}

const softBreak = {
  name: 'cjkSoftBreak',
  level: 'inline',
  // Where such a break may start: a newline after an unspaced character, or one at the
  // very start (whose left side is the token before: the tokenizer looks). marked asks
  // at every step through a paragraph, so this looks at newlines only.
  start(src) {
    for (let at = src.indexOf('\n'); at >= 0; at = src.indexOf('\n', at + 1)) {
      if ((at === 0 || UNSPACED.test(charBefore(src, at))) && UNSPACED_BREAK.test(src.slice(at, at + 16))) return at;
    }
    return undefined;
  },
  tokenizer(src, tokens) {
    if (this.lexer.options.breaks) return undefined; // typed line breaks are kept
    const found = UNSPACED_BREAK.exec(src);
    if (!found || !UNSPACED.test(lastShown(tokens.at(-1)))) return undefined;
    return { type: 'cjkSoftBreak', raw: found[0] };
  },
  renderer: () => '',
};

/** The extension, for `new Marked(…, cjkFriendly)` or `marked.use(cjkFriendly)`. */
export const cjkFriendly = { extensions: [softBreak], tokenizer: { emStrong, del } };

/** For tests: our pairing of `*` in every paragraph, CJK or not. Where no CJK character
 * is near, it must give what marked's own method gives (tests/js/cjk-markdown.test.mjs
 * compares them on CommonMark's examples and on random text). */
export const cjkPairingEverywhere = {
  tokenizer: {
    emStrong(src, masked, prevChar = '') { return src[0] === '*' ? pairStars.call(this, src, masked, prevChar) : false; },
    del(src, masked, prevChar = '') { return src[0] === '~' ? pairTildes.call(this, src, masked, prevChar) : false; },
  },
};
