// @ts-check
// `node gateway/build/inline.mjs [--check]`: the page's first step (js/boot/first-send.js)
// copied into index.html as an inline script, so that Send works once the HTML alone has
// arrived (issue 45, item 2; docs/boot.md, "Send with the HTML alone").
//
// The copy is the file with its comments taken out and each line trimmed: nothing else
// changes, so the code that runs inline is the code the Node tests run (tests/js,
// tests/unit/test_early_send.py). Comments are found by acorn's parser, not by a pattern
// (a `//` in a string or a regular expression is not a comment). Line breaks are kept,
// so automatic semicolon insertion reads the copy as it reads the file; a template
// literal spanning lines would change if its lines were trimmed, so one is refused.
//
// The script element is `<script data-inline="js/boot/first-send.js">`; its text is
// replaced in place, nothing else in index.html is touched. `--check` rewrites nothing
// and exits 1 when the copy differs from what the file gives (tests/gateway/
// test_inline_page.py runs it). The Content-Security-Policy's hash of the copy is taken
// from index.html as served (gateway/headers.py), so it follows the copy by construction.

import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as acorn from 'acorn';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SOURCE = 'js/boot/first-send.js';
const PAGE = 'index.html';

/** `source` without its comments, each line trimmed, empty lines dropped. */
export function strip(source) {
  /** @type {Array<[number, number]>} */
  const comments = [];
  const program = acorn.parse(source, {
    ecmaVersion: 'latest', sourceType: 'script',
    onComment: (_block, _text, start, end) => { comments.push([start, end]); },
  });
  for (const token of acorn.tokenizer(source, { ecmaVersion: 'latest' })) {
    if (token.type === acorn.tokTypes.template && /[\r\n]/.test(String(token.value))) {
      throw new Error(`${SOURCE}: a template literal spans lines at ${token.start}; trimming would change it`);
    }
  }
  void program;
  let out = '';
  let at = 0;
  for (const [start, end] of comments) {
    // A comment holding a line break is a line break to automatic semicolon insertion
    // (ECMA-262, 12.4 "Comments"); any other separates tokens as a space does.
    out += source.slice(at, start) + (/[\r\n\u2028\u2029]/.test(source.slice(start, end)) ? '\n' : ' ');
    at = end;
  }
  out += source.slice(at);
  const code = out.split('\n').map((line) => line.trim()).filter(Boolean).join('\n');
  // The HTML parser ends a script at `</script`, whatever the JavaScript means by it.
  if (/<\/script|<!--/i.test(code)) throw new Error(`${SOURCE}: holds "</script" or "<!--", which cannot be inlined`);
  return code;
}

const ELEMENT = /(<script data-inline="js\/boot\/first-send\.js">)([\s\S]*?)(<\/script>)/;

/** index.html with its inline copy made from `source`. */
export function inline(html, source) {
  if (!ELEMENT.test(html)) throw new Error(`${PAGE}: no <script data-inline="${SOURCE}"> element`);
  return html.replace(ELEMENT, (_all, open, _old, close) => `${open}\n${strip(source)}\n${close}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const html = readFileSync(join(ROOT, PAGE), 'utf8');
  const made = inline(html, readFileSync(join(ROOT, SOURCE), 'utf8'));
  if (process.argv.includes('--check')) {
    if (made !== html) {
      console.error(`${PAGE}'s inline copy of ${SOURCE} is stale: run \`make inline\` (node gateway/build/inline.mjs)`);
      process.exit(1);
    }
  } else if (made !== html) {
    writeFileSync(join(ROOT, PAGE), made);
    console.log(`${PAGE}: inline copy of ${SOURCE} written (${strip(readFileSync(join(ROOT, SOURCE), 'utf8')).length} chars)`);
  }
}
