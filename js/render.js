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

import { Lexer, Parser, Renderer } from '../vendor/marked/marked.esm.js';
import remend from '../vendor/remend/index.js';
import { safeFragment } from './render-safe.js';

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

const MARKED = { gfm: true, breaks: false, async: false, renderer: new AnswerRenderer() };
const REMEND = { linkMode: 'text-only', images: false, katex: false, inlineKatex: false };
const FENCE = /^ {0,3}(?:`{3,}|~{3,})/;
const PIPE_LINES = /^(?: {0,3}\|.*(?:\n|$))+$/;
// `?render=text` paints answers as plain text, as the page did before markdown: the
// render benchmark runs it as the peer that shows what markdown costs on top.
const PLAIN = new URLSearchParams(location.search).get('render') === 'text';

export class MarkdownStream {
  /** Renders into `container` (whose children it owns from now on). */
  constructor(container) {
    this.container = container;
    this.tailEl = document.createElement('div');
    this.tailEl.className = 'md-tail';
    container.replaceChildren(this.tailEl);
    if (PLAIN) {
      container.classList.add('md-plain');
      this.plain = document.createTextNode('');
      this.tailEl.append(this.plain);
    }
    this.open = ''; // source not yet committed: the tail block, possibly a partial line
    this.links = Object.create(null); // reference definitions seen so far, for later blocks
    this.code = null; // {key, text, node}: the open fence painted as one growing text node
    this.shown = null; // the source the tail shows, when its nodes are that block's final form
    this.cr = false; // the last chunk ended in \r: a \n starting the next one belongs to it
    this.newline = false; // a line was completed since the last look for finished blocks
    this.blocks = 0; // finished blocks rendered (tests check that they are never redone)
    this.ended = false;
  }

  /** Add streamed text and repaint the tail. */
  append(text) {
    if (!text || this.ended) return;
    if (this.plain) {
      this.plain.appendData(text);
      return;
    }
    const normal = this.normalize(text);
    this.open += normal;
    if (normal.includes('\n')) this.newline = true;
    this.render(false);
  }

  /** The answer is complete: everything becomes a finished block. */
  end() {
    if (this.ended) return;
    if (this.plain) {
      this.ended = true;
      return;
    }
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
    const lexer = new Lexer(MARKED);
    Object.assign(lexer.tokens.links, this.links);
    return lexer.lex(source);
  }

  render(final) {
    let tail = null; // the open source's tokens, when the commit check lexed all of it
    if (final || this.newline) {
      this.newline = false;
      // Only complete lines decide what is finished: a partial line can still become
      // anything (`  8` may yet be an item that continues the list above it).
      const complete = final ? this.open.length : this.open.lastIndexOf('\n') + 1;
      const tokens = this.lex(this.open.slice(0, complete));
      Object.assign(this.links, tokens.links);
      let last = tokens.length - 1;
      while (last >= 0 && tokens[last].type === 'space') last--;
      const cut = final ? tokens.length : Math.max(0, last);
      const done = tokens.slice(0, cut);
      const raw = done.map((t) => t.raw).join('');
      // Should marked ever not account for every character, commit nothing: the tail
      // then just stays longer, which is slower but never wrong.
      if (cut > 0 && (final || this.open.startsWith(raw))) {
        this.commit(done);
        this.open = this.open.slice(raw.length);
        if (complete === raw.length + this.open.length) tail = tokens.slice(cut);
      }
      if (final) return;
    }
    tail ??= this.lex(this.open);
    tail = tail.filter((t) => t.type !== 'space');
    tail.links = this.links;
    this.paintTail(tail);
  }

  commit(tokens) {
    const blocks = tokens.filter((t) => t.type !== 'space');
    if (!blocks.length) return;
    if (blocks.length === 1 && this.showing(blocks[0])) {
      // The tail already shows this block as it is final: keep those nodes.
      const range = document.createRange();
      range.selectNodeContents(this.tailEl);
      this.container.insertBefore(range.extractContents(), this.tailEl);
    } else {
      // One block at a time, as the tail was: markup left open in one block (an
      // unclosed `<details>`) must not swallow the blocks after it.
      for (const block of blocks) this.container.insertBefore(this.html([block]), this.tailEl);
      this.tailEl.replaceChildren();
    }
    this.blocks += blocks.length;
    this.code = null;
    this.shown = null;
  }

  html(tokens) {
    tokens.links = this.links;
    return safeFragment(Parser.parse(tokens, MARKED));
  }

  // Whether the tail's nodes are exactly what `block` renders to once finished.
  showing(block) {
    if (this.code) return block.type === 'code' && this.code.key === (block.lang || '') && this.code.text === block.text;
    return this.shown !== null && this.shown === block.raw.trimEnd();
  }

  paintTail(tail) {
    const block = tail[0];
    this.shown = null;
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
    if (healed === this.open) this.shown = this.open.trimEnd();
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
    // the element once; from here on, new lines only append to its text node.
    const pre = document.createElement('pre');
    const el = document.createElement('code');
    const lang = /^[\w+#.-]{1,40}$/.exec(key.split(/\s/)[0]);
    if (lang) el.className = `language-${lang[0]}`;
    const node = document.createTextNode(text);
    el.append(node, '\n'); // marked ends a code block with a newline too: same nodes either way
    pre.append(el);
    this.tailEl.replaceChildren(pre, '\n');
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

/** Render a whole answer at once (a reply restored from history). */
export function renderMarkdown(container, text) {
  const stream = new MarkdownStream(container);
  if (stream.plain) {
    stream.append(text);
    return stream;
  }
  stream.open = stream.normalize(text);
  stream.end();
  return stream;
}

// The first answer would otherwise pay for compiling marked, remend and DOMPurify in the
// middle of streaming (on a throttled phone CPU, a first frame of a second or more).
// While the page is idle (Python takes seconds to boot), stream a small sample covering
// every block kind into a detached element, a few pieces per idle slice.
const WARM_UP = [
  '# Warm up\n\nSome *emphasis*, **strong**, `code`, ~~struck~~ and a [link](https://example.com/).\n\n',
  '- one\n- two\n  - nested\n\n1. first\n2. second\n\n> quoted\n\n',
  '```python\ndef f(x):\n    return x + 1\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n',
  'Raw <b>html</b> and ![image](https://example.com/x.png).\n\n---\n\nDone.',
].join('');

function warmUp() {
  const stream = new MarkdownStream(document.createElement('div'));
  const pieces = WARM_UP.match(/\s*\S+|\s+/g);
  let i = 0;
  const step = (deadline) => {
    do stream.append(pieces[i++]); // at least one piece, even when the slice timed out
    while (i < pieces.length && deadline.timeRemaining() > 2);
    if (i < pieces.length) requestIdleCallback(step, { timeout: 2000 });
    else stream.end();
  };
  requestIdleCallback(step, { timeout: 2000 });
}

if (typeof requestIdleCallback === 'function' && !PLAIN) warmUp();

