// @ts-check
// The thinking row of one answer: what the reply shows from Send until its answer
// begins, and, for a model that reasoned, what it thought, behind one tap.
//
//   waiting    at Send, before any byte, for any model: "Thinking… 3 s". A person who
//              sees nothing under the question for 13 s thinks the app froze (issue 48;
//              ../shared/RESEARCH-REASONING.md, section 2: LH#5765, mosoo PR#394).
//   reasoning  reasoning arrives (`chat.delta.reasoning`): the same line, collapsed,
//              with a one-line live preview of the latest reasoning.
//   done       the answer begins, or the reply ends: "Thought for 12 s".
//
// With no reasoning at all the row is removed at the first answer token, in the frame
// that paints it, so the answer takes the row's place.
//
// The DOM contract (tests, the benchmark): `.thinking[data-phase]`, its `.thinking-toggle`
// (a real button, `aria-expanded`) and the panel `.thinking-body`.
//
// Decisions, each against a bug peers shipped (RESEARCH-REASONING.md, section 2):
// - Never opened by itself, never closed by itself: a live panel that opens scrolls the
//   transcript away (hermes-agent#69161); one that collapses when the answer starts
//   makes the chat jump (unsloth PR#7388). Only a tap opens or closes it.
// - One line, always: every phase is the same height (text cut with an ellipsis), so
//   nothing the user reads moves when the phase changes; the panel is bounded (40% of
//   the viewport, hermes-agent PR#73757) and scrolls on its own, following its end only
//   while the reader is at its end (jan PR#7843: a forced scroll made it unreadable).
// - Cheap per frame: the preview is the last line of what arrived (a slice of the
//   newest text, never the whole reasoning); the panel is rendered only while open,
//   by the same streaming markdown and sanitizer as answers (markdown-stream.js), and
//   catches up with what came while it was closed when it opens.
// - Screen readers hear "Thinking" once (page.js says it on the status line at Send);
//   the seconds and the preview are aria-hidden, and the row is no live region.

import { t } from './i18n.js';

/** How much of the newest reasoning the preview looks at for its last line. */
const PREVIEW_TAIL = 240;
const PREVIEW_CHARS = 160;

let rows = 0;

export class ThinkingRow {
  /** A row in `li` (an answer's element), before its content. `answers`: how markdown
   * is rendered (messages.js: `{open(container), show(container, text)}`); `since`: the
   * moment the thinking began (epoch ms: Send, or earlier for a resumed answer). */
  constructor(li, answers, { since = now(), phase = 'waiting', reasoning = '', ms = null, live = phase !== 'done' } = {}) {
    this.li = li;
    this.live = live; // streaming: the panel streams too; else it is rendered whole
    this.answers = answers;
    this.since = since;
    this.reasoning = reasoning; // what the panel shows (the entry's, kept in step)
    this.rendered = 0; // characters of `reasoning` the open panel holds
    this.stream = null; // the panel's markdown stream, made at the first open
    this.timer = null;
    this.el = document.createElement('div');
    this.el.className = 'thinking';
    const id = `thinking-${++rows}`;
    this.toggle = document.createElement('button');
    this.toggle.type = 'button';
    this.toggle.className = 'thinking-toggle';
    this.toggle.setAttribute('aria-expanded', 'false');
    this.toggle.setAttribute('aria-controls', id);
    this.label = document.createElement('span');
    this.label.className = 'thinking-label';
    this.time = document.createElement('span');
    this.time.className = 'thinking-time';
    this.time.setAttribute('aria-hidden', 'true');
    this.preview = document.createElement('span');
    this.preview.className = 'thinking-preview';
    this.preview.setAttribute('aria-hidden', 'true');
    this.toggle.append(this.label, this.time, this.preview);
    this.body = document.createElement('div');
    this.body.className = 'thinking-body md';
    this.body.id = id;
    this.body.hidden = true;
    // A scrolling region is reached by keyboard too (WCAG 2.1.1; axe's
    // scrollable-region-focusable): its own tab stop, named for screen readers.
    this.body.tabIndex = 0;
    this.body.setAttribute('role', 'group');
    this.body.setAttribute('aria-label', t('thinking.body'));
    this.body.dir = 'auto';
    this.el.append(this.toggle, this.body);
    this.toggle.addEventListener('click', () => this.setOpen(this.body.hidden));
    li.insertBefore(this.el, li.querySelector(':scope > .content'));
    if (phase === 'done') this.done(ms);
    else {
      this.setPhase(phase);
      this.tick();
      this.timer = setInterval(() => this.tick(), 1000);
      if (reasoning) this.showPreview(reasoning);
    }
  }

  get phase() {
    return this.el.dataset.phase;
  }

  /** Whether the row is still in the page. */
  get shown() {
    return this.el.isConnected;
  }

  setPhase(phase) {
    this.el.dataset.phase = phase;
    // Nothing to show until reasoning came: the button says so rather than open empty.
    if (phase === 'waiting') this.toggle.setAttribute('aria-disabled', 'true');
    else this.toggle.removeAttribute('aria-disabled');
    if (phase !== 'done') this.label.textContent = t('thinking.thinking');
  }

  /** The seconds since the thinking began (aria-hidden: not re-announced). */
  tick() {
    this.time.textContent = t('thinking.seconds', { s: Math.max(0, Math.floor((now() - this.since) / 1000)) });
  }

  /** More reasoning was painted; `all`: the whole reasoning so far. */
  reason(all) {
    this.reasoning = all;
    if (this.phase === 'waiting') this.setPhase('reasoning');
    if (this.phase === 'reasoning') this.showPreview(all);
    if (!this.body.hidden) this.catchUp();
  }

  // The last line that says something, from the newest text only: one line, whatever
  // the reasoning's length (the CSS cuts it to the row's width).
  showPreview(text) {
    const tail = text.slice(-PREVIEW_TAIL);
    const lines = tail.split('\n');
    let line = '';
    for (let i = lines.length - 1; i >= 0 && !line; i--) line = lines[i].trim();
    line = line.replace(/^[#>*\-+\s]+/, '').replace(/[*_`]+/g, '');
    // At most a wide screen's line, from a word's start: the CSS shows its end.
    if (line.length > PREVIEW_CHARS) line = line.slice(line.indexOf(' ', line.length - PREVIEW_CHARS) + 1);
    if (this.preview.textContent !== line) this.preview.textContent = line;
  }

  /** The answer began (or the reply ended): "Thought for N s", or, with no reasoning,
   * the row goes and the answer takes its place. `ms`: how long it thought. */
  answerBegins(ms) {
    if (!this.reasoning) this.remove();
    else if (this.phase !== 'done') this.done(ms);
  }

  done(ms = null) {
    this.stopTimer();
    this.setPhase('done');
    const s = Number.isFinite(ms) ? Math.max(1, Math.round(ms / 1000)) : null;
    this.label.textContent = s === null ? t('thinking.thought') : t('thinking.thoughtFor', { s });
    this.time.textContent = '';
    this.preview.textContent = '';
    this.el.dataset.ms = Number.isFinite(ms) ? String(Math.round(ms)) : '';
  }

  /** The reply ended: the last of the reasoning, and the stream's open block, final. */
  end(ms) {
    this.answerBegins(ms);
    if (this.stream) {
      this.catchUp();
      this.stream.end();
    }
    this.live = false; // a panel first opened from now on is rendered whole
  }

  remove() {
    this.stopTimer();
    this.el.remove();
  }

  stopTimer() {
    clearInterval(this.timer);
    this.timer = null;
  }

  /** Open or close the panel: only ever on the user's tap. */
  setOpen(open) {
    if (open && !this.reasoning) return; // nothing to show yet
    this.body.hidden = !open;
    this.toggle.setAttribute('aria-expanded', String(open));
    this.el.dataset.open = String(open);
    if (open) this.catchUp();
  }

  // The panel holds all the reasoning so far: what came while it was closed is
  // appended now, in one go; a finished answer's is rendered whole, once.
  catchUp() {
    if (this.rendered >= this.reasoning.length) return;
    const atEnd = this.body.scrollHeight - this.body.scrollTop - this.body.clientHeight < 4;
    if (!this.stream) {
      if (!this.live) {
        this.answers.show(this.body, this.reasoning);
        this.rendered = this.reasoning.length;
        return;
      }
      this.stream = this.answers.open(this.body);
    }
    this.stream.append(this.reasoning.slice(this.rendered));
    this.rendered = this.reasoning.length;
    if (atEnd) this.body.scrollTop = this.body.scrollHeight;
  }
}

const now = () => performance.timeOrigin + performance.now();
