// The message list on screen: one element per message, notes under it, and a view that
// follows the newest answer unless the user scrolled up. Nothing here knows the
// protocol; replies.js says what to paint.

import { EndFollower } from './follow.js';

export class MessageList {
  /** `list`: the <ol> of messages; `scroller`: the element that scrolls; `answers`: how
   * an answer is rendered (page.js: `{open(container), show(container, text)}`); `jump`:
   * the "Jump to latest" button. Keeping the view at the end is follow.js's. */
  constructor(list, scroller, answers, jump = null) {
    this.list = list;
    this.scroller = scroller;
    this.answers = answers;
    this.follower = new EndFollower(scroller, list, jump);
  }

  /** A message's element, at the end of the list. The user's words are shown as typed;
   * an answer is rendered as `answers.show` renders it. */
  add(role, text) {
    const { li, content } = this.element(role);
    if (role === 'assistant') this.answers.show(content, text);
    else content.textContent = text;
    return li;
  }

  /** An answer's element whose text will stream in: `{li, stream}`, where
   * `stream.append(text)` paints more and `stream.end()` finishes it. `replacing`: an
   * element whose place it takes (a retried answer), else it goes at the end. */
  addStreaming(id, replacing = null) {
    const { li, content } = this.element('assistant', replacing);
    li.dataset.state = 'streaming';
    li.dataset.id = id;
    return { li, stream: this.answers.open(content) };
  }

  element(role, replacing = null) {
    const li = document.createElement('li');
    li.className = 'msg';
    li.dataset.role = role;
    // Who said it, for screen readers (read before the text; shown by the layout).
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = role === 'user' ? 'You said:' : 'Answer:';
    li.append(who);
    const content = document.createElement('div');
    content.className = role === 'assistant' ? 'content md' : 'content';
    li.append(content);
    if (replacing?.isConnected) replacing.replaceWith(li);
    else this.list.append(li);
    return { li, content };
  }

  clear() {
    this.list.replaceChildren();
  }

  /** Keep the view at the end from now on (a new prompt was sent). */
  stickToEnd() {
    this.follower.stickToEnd();
  }

  follow() {
    this.follower.follow();
  }
}

// A message's notes are its own children, after its content: looked up among those few,
// never by a search through the answer's subtree (which every delta would pay for).
function findNote(li, cls) {
  for (const child of li.children) if (child.classList.contains(cls)) return child;
  return null;
}

/** The one line of class `cls` under a message, created on first use. */
export function note(li, cls, text) {
  let el = findNote(li, cls);
  if (!el) {
    el = document.createElement('span');
    el.className = cls;
    li.append(el);
  }
  el.textContent = text;
  return el;
}

export function removeNote(li, cls) {
  findNote(li, cls)?.remove();
}

/** A "Retry" button under a failed answer; `retry()` runs once, on a click (never by
 * itself), and the button goes. */
export function offerRetry(li, retry) {
  removeNote(li, 'retry');
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'retry';
  button.textContent = 'Retry';
  button.addEventListener('click', () => {
    button.remove();
    retry();
  }, { once: true });
  li.append(button);
  return button;
}

/** Calls `paint(inFrame)` at most once per animation frame, however often asked. */
export class FramePacer {
  constructor(paint) {
    this.paint = paint;
    this.requested = false;
  }

  request() {
    if (this.requested) return;
    this.requested = true;
    requestAnimationFrame(() => {
      this.requested = false;
      this.paint(true);
    });
  }
}
