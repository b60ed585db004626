// Streaming markdown: an answer is painted as it arrives, and painting one more chunk
// costs the same whether the answer is ten words or ten pages long.
//
// The text is split into finished blocks and one open block, the tail. marked's lexer
// tells where blocks end: over the complete lines, every top-level token followed by
// another token is finished (CommonMark blocks only end when the next one starts), so
// only the source from the last finished block on is ever lexed again. A finished block
// is parsed, sanitized and appended once, and never touched again; the tail is
// re-rendered on each paint. Streaming gives the same DOM as rendering the whole answer
// at once (tests/e2e/test_render.py checks it for any split), with two exceptions that
// LLM output hardly ever has: a reference link used before its definition stays text,
// and raw HTML spanning blank lines is rendered block by block.
//
// The tail is what the user watches grow, so it gets some care:
//   - remend closes what is left open mid-stream (`**bold`, `` `code``, `[link](…`),
//     so that markers do not flash as literal text until their closing half arrives;
//   - an open code fence is painted by appending to one text node: a long listing
//     costs no parsing and no sanitizing (text nodes cannot carry markup);
//   - a table whose delimiter row has not arrived yet is held back rather than shown
//     as a paragraph of pipes for a frame.
//
// Code blocks get a bar with their language and a Copy code button, and are highlighted
// once finished (code-blocks.js); formulas are typeset by KaTeX (math.js). Both are
// fetched only when an answer first needs them. User messages are rendered by the same
// code, with the same sanitizer (`renderUserMarkdown`).

import { Lexer, Marked, Parser, Renderer } from '../../vendor/marked/marked.esm.js';
import remend from '../../vendor/remend/index.js';
import { cjkFriendly, hasCJK } from './cjk.js';
import { codeBlock, decorateCode, highlightLater } from './code-blocks.js';
import { mathExtension, typesetMath } from './math.js';
import { safeFragment } from './sanitize.js';

// Raw HTML in an answer is shown as text, except bare formatting tags (`<br>`, `<b>`,
// `<sup>`, `<details>`…, with no attributes at all). Markup the model writes never reaches
// the HTML parser with an attribute: DOMPurify would remove it anyway, but Chromium checks
// an `on…` or `style` attribute against the CSP as soon as it is parsed, even in an inert
// document, and reports a violation for nothing.
const BARE_TAG = /^<\/?(?:b|i|em|strong|u|s|del|ins|mark|small|sub|sup|kbd|samp|q|abbr|code|br|hr|p|div|span|details|summary|blockquote|ul|ol|li|dl|dt|dd|table|thead|tbody|tfoot|tr|th|td|h[1-6])\s*\/?>$/i;
const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHTML = (text) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

class AnswerRenderer extends Renderer {
  html({ text, block }) {
    const tags = text.match(/<!--[\s\S]*?-->|<[^>]*>?/g) || [];
    if (tags.every((tag) => tag.startsWith('<!--') || BARE_TAG.test(tag))) return text;
    return block ? `<p>${escapeHTML(text.trim())}</p>\n` : escapeHTML(text);
  }
}

// marked's options with our extensions compiled in (what `use()` builds), for the Lexer
// and Parser we drive ourselves: math, and emphasis and line breaks right for CJK text
// (cjk.js), for answers and user messages alike.
const EXTENDED = new Marked({ extensions: [mathExtension] }, cjkFriendly).defaults;
const MARKED = { ...EXTENDED, gfm: true, breaks: false, async: false, renderer: new AnswerRenderer() };
// A user's message: a line break typed is a line break shown (people do not write
// hard-wrapped markdown into a text box); everything else as for answers.
const USER_MARKED = { ...MARKED, breaks: true };
// The same without cjk.js, for lexing a source with no CJK character in it: there its
// rules change nothing, and they cost marked's lexer about a fifth more time (8 KB of
// English, best of 30 in Node: 0.35 against 0.42 ms).
const WITHOUT_CJK = new Marked({ extensions: [mathExtension] }).defaults;
const MARKED_NO_CJK = { ...WITHOUT_CJK, gfm: true, breaks: false, async: false, renderer: MARKED.renderer };
const USER_MARKED_NO_CJK = { ...MARKED_NO_CJK, breaks: true };
const REMEND = { linkMode: 'text-only', images: false, katex: false, inlineKatex: false };
const FENCE = /^ {0,3}(?:`{3,}|~{3,})/;
const PIPE_LINES = /^(?: {0,3}\|.*(?:\n|$))+$/;
const ENDS_AT_LINE_END = new Set(['heading', 'hr']);
const ENDS_AT_BLANK = new Set(['paragraph', 'table', 'blockquote']);
const PLAIN_WORDS = /^[\p{L}\p{N} ,.'"?!]+$/u;
const PLAIN_END = /[\p{L}\p{N} ,.'"?!]*$/u;
const GROWS_IN = new Set(['P', 'LI', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6']);
const SLICE_MS = 8;
const USER_LINES = 600;

export class MarkdownStream {
  /** Renders into `container` (whose children it owns from now on); `user`: a user's
   * message (line breaks kept) rather than an answer. */
  constructor(container, { user = false } = {}) {
    this.container = container;
    this.options = user ? USER_MARKED : MARKED;
    this.optionsWithoutCJK = user ? USER_MARKED_NO_CJK : MARKED_NO_CJK;
    this.tailEl = document.createElement('div');
    this.tailEl.className = 'md-tail';
    container.replaceChildren(this.tailEl);
    this.open = ''; // source not yet committed: the tail block, possibly a partial line
    this.links = Object.create(null); // reference definitions seen so far, for later blocks
    this.code = null; // {key, text, node}: the open fence painted as one growing text node
    this.shown = null; // the source the tail shows, when its nodes are that block's final form
    this.grow = null; // the tail's last text node, when plain words may be appended to it
    this.cr = false; // the last chunk ended in \r: a \n starting the next one belongs to it
    this.newline = false; // a line was completed since the last look for finished blocks
    this.blocks = 0; // finished blocks rendered (tests check that they are never redone)
    this.ended = false;
  }

  /** Flip the open block's `data-caret`, so that the streaming caret page.css puts
   * after it is a new one, not the last frame's moved (reply-painter.js says why). */
  renewCaret() {
    this.tailEl.dataset.caret = this.tailEl.dataset.caret === '1' ? '0' : '1';
  }

  /** Add streamed text and repaint the tail. */
  append(text) {
    if (!text || this.ended) return;
    const normal = this.normalize(text);
    if (this.grows(normal)) {
      // Plain words extending the tail's last line: the DOM a render would build is the
      // one there, with these words at the end of its last text node.
      this.grow.appendData(normal);
      this.open += normal;
      this.shown = this.open.trimEnd();
      return;
    }
    this.open += normal;
    if (normal.includes('\n')) this.newline = true;
    this.render(false);
  }

  // Most chunks are a word or two of prose. Parsing, sanitizing and diffing the open
  // block for each would be most of a slow phone's frame, so words that cannot change
  // how anything before them parses are appended to the last text node directly. That
  // holds when all of these do:
  //   - the last render showed the open source exactly (nothing healed by remend), and
  //     its last node is text directly in a paragraph, list item or heading (not in a
  //     link, code span, emphasis or table cell, whose extent new text could change);
  //   - the new text is letters, digits, spaces and . , ' " ? ! only: no newline (a new
  //     line can start any block), no markdown punctuation, no `&` (entities), `<`;
  //   - the open line's first word is complete (the start of a line decides its block:
  //     `1` + `. item` would become a list) and its last word is plain too, with no
  //     `www.`, `@`, `:` or `/` (GFM autolinks grow by words like these);
  //   - the text node really ends with that last word (marked trims some whitespace; if
  //     it did here, render normally).
  // The end-to-end tests check, for every prefix of a corpus, that this gives the DOM a
  // fresh render gives.
  grows(text) {
    const node = this.grow;
    // (Text ending in a space is left to a render: marked trims a paragraph's last spaces.)
    if (!node || !PLAIN_WORDS.test(text) || text.endsWith(' ')) return false;
    const line = this.open.slice(this.open.lastIndexOf('\n') + 1);
    const last = /\S*$/.exec(line)[0]; // '' when the line ends in a space
    if (!/\S\s/.test(line.trimStart()) || (last && !PLAIN_WORDS.test(last)) || /www\./i.test(last + text)) return false;
    const end = PLAIN_END.exec(line)[0].trimStart();
    return end !== '' && node.data.endsWith(end);
  }

  /** The answer is complete: everything becomes a finished block. */
  end() {
    if (this.ended) return;
    this.render(true);
    this.ended = true;
    this.tailEl.remove();
  }

  // marked folds \r\n and \r to \n before lexing; doing it first keeps the lengths of
  // its tokens' `raw` equal to our source, which is how we cut the finished part off.
  normalize(text) {
    if (this.cr && text[0] === '\n') text = text.slice(1);
    this.cr = text.endsWith('\r');
    return text.indexOf('\r') < 0 ? text : text.replace(/\r\n?/g, '\n');
  }

  lex(source) {
    const lexer = new Lexer(hasCJK(source) ? this.options : this.optionsWithoutCJK);
    Object.assign(lexer.tokens.links, this.links);
    return lexer.lex(source);
  }

  render(final) {
    let tail = null; // the open source's tokens, when the commit check lexed all of it
    if (final || this.newline) {
      this.newline = false;
      tail = this.settle(final);
      if (final) return;
    }
    tail ??= this.lex(this.open);
    tail = tail.filter((t) => t.type !== 'space');
    tail.links = this.links;
    this.paintTail(tail);
  }

  // Commit the blocks of the open source that are finished (all of it, when `final`).
  // Returns the tokens of what stays open when the lex covered all of it, else null.
  settle(final) {
    // Only complete lines decide what is finished: a partial line can still become
    // anything (`  8` may yet be an item that continues the list above it).
    const complete = final ? this.open.length : this.open.lastIndexOf('\n') + 1;
    const tokens = this.lex(this.open.slice(0, complete));
    Object.assign(this.links, tokens.links);
    let last = tokens.length - 1;
    while (last >= 0 && tokens[last].type === 'space') last--;
    let cut = final ? tokens.length : Math.max(0, last);
    // The last block too is finished when nothing can continue it: a heading or a
    // rule once its line is complete; a paragraph, table or quote once a blank line
    // follows (CommonMark: a blank line ends them; only lists, code and HTML blocks
    // can run on past one). The tail is then just the block being written, which
    // keeps re-rendering it cheap.
    if (!final && last >= 0) {
      const after = tokens.slice(last + 1).map((t) => t.raw).join('');
      const type = tokens[last].type;
      if (ENDS_AT_LINE_END.has(type) || (ENDS_AT_BLANK.has(type) && /\n[^]*\n/.test(after))) cut = last + 1;
    }
    const done = tokens.slice(0, cut);
    const raw = done.map((t) => t.raw).join('');
    // Should marked ever not account for every character, commit nothing: the tail
    // then just stays longer, which is slower but never wrong.
    if (cut > 0 && (final || this.open.startsWith(raw))) {
      this.commit(done);
      this.open = this.open.slice(raw.length);
      if (complete === raw.length + this.open.length) return tokens.slice(cut);
    }
    return null;
  }

  commit(tokens) {
    const blocks = tokens.filter((t) => t.type !== 'space');
    if (!blocks.length) return;
    // Before the tail, or at the end when there is none (a user's message has none).
    const before = this.tailEl.parentNode === this.container ? this.tailEl : null;
    if (blocks.length === 1 && this.showing(blocks[0])) {
      // The tail already shows this block as it is final: keep those nodes.
      const range = document.createRange();
      range.selectNodeContents(this.tailEl);
      this.container.insertBefore(finished(range.extractContents()), before);
    } else {
      // One block at a time, as the tail was: markup left open in one block (an
      // unclosed `<details>`) must not swallow the blocks after it.
      for (const block of blocks) this.container.insertBefore(finished(this.html([block])), before);
      this.tailEl.replaceChildren();
    }
    this.blocks += blocks.length;
    this.code = null;
    this.shown = null;
    this.grow = null;
  }

  html(tokens) {
    tokens.links = this.links;
    const fragment = safeFragment(Parser.parse(tokens, this.options));
    decorateCode(fragment);
    typesetMath(fragment);
    return fragment;
  }

  // Whether the tail's nodes are exactly what `block` renders to once finished.
  showing(block) {
    if (this.code) return block.type === 'code' && this.code.key === (block.lang || '') && this.code.text === block.text;
    return this.shown !== null && this.shown === block.raw.trimEnd();
  }

  paintTail(tail) {
    const block = tail[0];
    this.shown = null;
    this.grow = null;
    if (tail.length === 1 && block.type === 'code' && FENCE.test(block.raw)) {
      this.paintCode(block);
      return;
    }
    this.code = null;
    if (!block || (tail.length === 1 && block.type === 'paragraph' && PIPE_LINES.test(block.raw))) {
      // Nothing yet, or a table on its way whose header row has come alone.
      this.tailEl.replaceChildren();
      return;
    }
    const healed = remend(this.open, REMEND);
    const tokens = healed === this.open ? tail : this.lex(healed);
    patch(this.tailEl, this.html(tokens));
    if (healed === this.open) {
      this.shown = this.open.trimEnd();
      // The last text node (of the last block), past the newlines marked puts between
      // elements.
      let last = this.tailEl;
      while (last?.nodeType === Node.ELEMENT_NODE && !GROWS_IN.has(last.nodeName)) {
        last = last.lastChild;
        while (last?.nodeType === Node.TEXT_NODE && !last.data.trim()) last = last.previousSibling;
      }
      last = last?.lastChild;
      if (last?.nodeType === Node.TEXT_NODE) this.grow = last;
    }
  }

  paintCode(block) {
    const key = block.lang || '';
    const text = block.text;
    const code = this.code;
    if (code && code.key === key && text.startsWith(code.text)) {
      if (text.length > code.text.length) code.node.appendData(text.slice(code.text.length));
      code.text = text;
      return;
    }
    // A fence just opened (or its last line turned out to be the closing fence): build
    // the element once (as a finished block's: code-blocks.js); from here on, new lines
    // only append to its text node.
    const lang = /^[\w+#.-]{1,40}$/.exec(key.split(/\s/)[0])?.[0] ?? '';
    const { block: el, text: node } = codeBlock(lang, text);
    this.tailEl.replaceChildren(el, '\n');
    this.code = { key, text, node };
  }
}

// Make `target`'s children equal to `source`'s (fresh, sanitized nodes), keeping every
// node that did not change. A growing paragraph then keeps its element and its earlier
// text nodes, and the last one just grows: the browser restyles and re-shapes only
// what is new, instead of a whole new subtree on every frame.
function patch(target, source) {
  let old = target.firstChild;
  let next = source.firstChild;
  while (old && next) {
    const following = next.nextSibling;
    if (old.nodeType === Node.TEXT_NODE && next.nodeType === Node.TEXT_NODE) {
      if (old.data !== next.data) {
        if (next.data.startsWith(old.data)) old.appendData(next.data.slice(old.data.length));
        else old.data = next.data;
      }
    } else if (old.nodeType === Node.ELEMENT_NODE && sameElement(old, next)) {
      patch(old, next);
    } else {
      target.replaceChild(next, old);
      old = next;
    }
    old = old.nextSibling;
    next = following;
  }
  while (old) {
    const gone = old;
    old = old.nextSibling;
    gone.remove();
  }
  while (next) {
    const following = next.nextSibling;
    target.append(next);
    next = following;
  }
}

function sameElement(a, b) {
  if (a.nodeName !== b.nodeName || a.attributes.length !== b.attributes.length) return false;
  for (const { name, value } of b.attributes) if (a.getAttribute(name) !== value) return false;
  return true;
}

// A block is final once in the answer: its code is highlighted (later, in a task of its own).
function finished(fragment) {
  highlightLater(fragment.querySelectorAll('.md-code > pre > code'));
  return fragment;
}

/** Render a whole answer at once (a reply restored from history). */
export function renderMarkdown(container, text, options) {
  const stream = new MarkdownStream(container, options);
  stream.open = stream.normalize(text);
  stream.end();
  return stream;
}

/** Render a user's message as markdown, through the same sanitizer as answers (raw HTML
 * with attributes stays text; line breaks are kept).
 *
 * A long paste is lexed and rendered a few lines at a time, about `SLICE_MS` per task,
 * the first ones at once, in the task of the tap on Send. Lexing all of it first put a
 * 2,000-token paste of code in that task (74 ms at 4x throttling, the longest task of
 * an answer: bench-render, code at 500 tok/s), while the plain-text peer shows the same
 * message as one text node. The lines are fed to the stream's own commit check (what
 * an answer's streaming uses), so the DOM is the one a whole render gives, with
 * streaming's one exception: a reference link used before its definition stays text. */
export function renderUserMarkdown(container, text) {
  container.classList.add('md', 'md-user');
  const stream = new MarkdownStream(container, { user: true });
  stream.tailEl.remove();
  const source = stream.normalize(text);
  let at = 0; // source before `at` has been given to the stream
  let lines = USER_LINES; // about how many characters of lines to add per look
  const step = () => {
    const started = performance.now();
    do {
      const end = source.indexOf('\n', at + lines) + 1 || source.length;
      stream.open += source.slice(at, end);
      at = end;
      const before = stream.blocks;
      stream.settle(at === source.length);
      // One block longer than the lines added (a long list or listing): look further
      // next time, so that the open block is lexed a few times, not once per line.
      lines = stream.blocks > before ? USER_LINES : lines * 2;
    } while (at < source.length && performance.now() - started < SLICE_MS);
    if (at < source.length) setTimeout(step, 0);
    else stream.ended = true;
  };
  step();
  return stream;
}

/** Have marked, remend and DOMPurify compiled before the first answer needs them.
 *
 * The first answer would otherwise pay for compiling them in the middle of streaming (on
 * a throttled phone CPU, a first frame of a second or more). While the page is idle
 * (Python takes seconds to boot), a small sample covering every block kind is streamed
 * into a detached element, a few pieces per idle slice, then laid out once (layOutOnce). */
export function warmUp() {
  if (typeof requestIdleCallback === 'function') requestIdleCallback(warmUpStep(), { timeout: 2000 });
}

const WARM_UP = [
  '# Warm up\n\nSome *emphasis*, **strong**, `code`, ~~struck~~ and a [link](https://example.com/).\n\n',
  '- one\n- two\n  - nested\n\n1. first\n2. second\n\n> quoted\n\n',
  '```python\ndef f(x):\n    return x + 1\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n',
  'Raw <b>html</b> and ![image](https://example.com/x.png).\n\n---\n\n**注意：**中文\n第二行。\n\nDone.',
].join('');

function warmUpStep() {
  const stream = new MarkdownStream(document.createElement('div'));
  const pieces = WARM_UP.match(/\s*\S+|\s+/g);
  let i = 0;
  const step = (deadline) => {
    do stream.append(pieces[i++]); // at least one piece, even when the slice timed out
    while (i < pieces.length && deadline.timeRemaining() > 2);
    if (i < pieces.length) requestIdleCallback(step, { timeout: 2000 });
    else {
      stream.end();
      requestIdleCallback(() => layOutOnce(stream.container), { timeout: 2000 });
    }
  };
  return step;
}

// The sample laid out once, hidden: the first layout of code (its monospace font found
// and its text shaped for the first time) is otherwise paid by the first message with a
// code block, in the frame that shows it.
function layOutOnce(container) {
  container.className = 'md';
  container.setAttribute('aria-hidden', 'true');
  container.inert = true;
  Object.assign(container.style, {
    position: 'fixed', insetBlockStart: '0', insetInlineStart: '0', inlineSize: '20rem',
    visibility: 'hidden', pointerEvents: 'none', contain: 'layout paint',
  });
  document.body.append(container);
  container.getBoundingClientRect(); // layout now, in idle time
  container.remove();
}

