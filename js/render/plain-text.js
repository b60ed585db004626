// @ts-check
// A line of markdown as the plain text its reader sees, for where markup cannot render:
// a conversation's title, which a first prompt such as `**注意：**请看下面的代码。` would
// otherwise show with its asterisks (issue 44). No dependencies (the page's store runs
// it, and its tests run on Node), so it reads marks by pattern, not by marked's lexer:
// what it leaves alone is what no reader would take for markup either (`2 * 3 * 4`,
// `snake_case_name`). The CJK-friendly emphasis rule (cjk.js) needs nothing here: a
// mark is dropped whatever is next to it.

// Block marks at the start of the line: headings, quotes, list items and task boxes,
// possibly nested (`> - [ ] `).
const BLOCK_MARKS = /^[ \t]{0,3}(?:#{1,6}(?=[ \t]|$)[ \t]*|>[ \t]?|[-+*][ \t]+(?:\[[ xX]\][ \t]+)?|\d{1,9}[.)][ \t]+)+/;
const CLOSING_HASHES = /[ \t]+#+[ \t]*$/;
const IMAGES_AND_LINKS = /!?\[([^\]]*)\]\([^)]*\)/g;
const AUTOLINKS = /<((?:https?|mailto|ftp):[^>\s]+)>/gi;
const CODE_SPANS = /(`+)(?!`)(.+?)(?<!`)\1(?!`)/g;
// `*`, `**`, `***` and `~~` around text that starts and ends with a non-space: inside
// words too (CommonMark allows `*` there, and Chinese and Japanese words have no spaces).
const STARS = /(\*{1,3}|~~)(?=\S)(.+?)(?<=\S)\1/g;
// `_` only at word edges (CommonMark: `snake_case` is no emphasis).
const UNDERSCORES = /(?<![\p{L}\p{N}])(_{1,3})(?=\S)(.+?)(?<=\S)\1(?![\p{L}\p{N}])/gu;
const ESCAPES = /\\([!-/:-@[-`{-~])/g;

/** `line` with its markdown marks taken out: heading, quote and list marks, emphasis,
 * strikethrough and code-span marks; links and images as their text. */
export function plainText(line) {
  // Code spans and escaped characters first, kept aside: they show as written.
  const kept = [];
  const keep = (shown) => `\u0000${kept.push(shown) - 1}\u0000`;
  // eslint-disable-next-line no-control-regex -- NUL marks a kept span: none may come in
  let text = String(line).replace(/\u0000/g, '').replace(BLOCK_MARKS, '').replace(CLOSING_HASHES, '');
  text = text.replace(CODE_SPANS, (_, ticks, code) => keep(code.trim() || code)).replace(ESCAPES, (_, c) => keep(c));
  text = text.replace(IMAGES_AND_LINKS, '$1').replace(AUTOLINKS, '$1');
  for (let before = null; before !== text;) { // nested: `***a** b*`
    before = text;
    text = text.replace(STARS, '$2').replace(UNDERSCORES, '$2');
  }
  // eslint-disable-next-line no-control-regex -- the marks `keep` made
  return text.replace(/\u0000(\d+)\u0000/g, (_, i) => kept[Number(i)]);
}
