// Streaming markdown: an answer is painted as it arrives, and painting one more chunk
// costs the same whether the answer is ten words or ten pages long.
//
// The text is split into finished blocks and one open block, the tail. marked's lexer
// tells where blocks end: every top-level token followed by another token is finished
// (CommonMark blocks only end when the next one starts), so only the source from the
// last finished block on is ever lexed again. A finished block is parsed, sanitized and
// appended once, and never touched again; the tail is re-rendered on each paint.
//
// The tail is what the user watches grow, so it gets some care:
//   - remend closes what is left open mid-stream (`**bold`, `` `code``, `[link](…`),
//     so that markers do not flash as literal text until their closing half arrives;
//   - an open code fence is painted by appending to one text node: a long listing
//     costs no parsing and no sanitizing (text nodes cannot carry markup);
//   - a table whose delimiter row has not arrived yet is held back rather than shown
//     as a paragraph of pipes for a frame.

import { Lexer, Parser } from '../vendor/marked/marked.esm.js';
import remend from '../vendor/remend/index.js';
import { safeFragment } from './render-safe.js';

const MARKED = { gfm: true, breaks: false, async: false };
const REMEND = { linkMode: 'text-only', images: false, katex: false, inlineKatex: false };
const FENCE = /^ {0,3}(?:`{3,}|~{3,})/;
const PIPE_LINES = /^(?: {0,3}\|.*(?:\n|$))+$/;

export class MarkdownStream {
  /** Renders into `container` (whose children it owns from now on). */
  constructor(container) {
    this.container = container;
    this.tailEl = document.createElement('div');
    this.tailEl.className = 'md-tail';
    container.replaceChildren(this.tailEl);
    this.open = ''; // source not yet committed: the tail block, possibly a partial line
    this.links = Object.create(null); // reference definitions seen so far, for later blocks
    this.code = null; // {key, text, node}: the open fence painted as one growing text node
    this.shown = null; // the source the tail shows, when its nodes are that block's final form
    this.cr = false; // the last chunk ended in \r: a \n starting the next one belongs to it
    this.blocks = 0; // finished blocks rendered (tests check that they are never redone)
    this.ended = false;
  }

  /** Add streamed text and repaint the tail. */
  append(text) {
    if (!text || this.ended) return;
    this.open += this.normalize(text);
    this.render(false);
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
    const lexer = new Lexer(MARKED);
    Object.assign(lexer.tokens.links, this.links);
    return lexer.lex(source);
  }

  render(final) {
    const tokens = this.lex(this.open);
    Object.assign(this.links, tokens.links);
    let last = tokens.length - 1;
    while (last >= 0 && tokens[last].type === 'space') last--;
    const cut = final ? tokens.length : Math.max(0, last);
    if (cut > 0) {
      const done = tokens.slice(0, cut);
      const raw = done.map((t) => t.raw).join('');
      // Should marked ever not account for every character, commit nothing: the tail
      // then just stays longer, which is slower but never wrong.
      if (this.open.startsWith(raw)) {
        this.commit(done);
        this.open = this.open.slice(raw.length);
      }
    }
    if (final) return;
    const tail = tokens.slice(cut).filter((t) => t.type !== 'space');
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
      blocks.links = this.links;
      this.container.insertBefore(safeFragment(Parser.parse(blocks, MARKED)), this.tailEl);
      this.tailEl.replaceChildren();
    }
    this.blocks += blocks.length;
    this.code = null;
    this.shown = null;
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
    tokens.links = this.links;
    this.tailEl.replaceChildren(safeFragment(Parser.parse(tokens, MARKED)));
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
    this.tailEl.replaceChildren(pre);
    this.code = { key, text, node };
  }
}

/** Render a whole answer at once (a reply restored from history). */
export function renderMarkdown(container, text) {
  const stream = new MarkdownStream(container);
  stream.open = stream.normalize(text);
  stream.end();
  return stream;
}
