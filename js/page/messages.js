// The message list on screen: one element per message, notes under it, and a view that
// follows the newest answer unless the user scrolled up. Nothing here knows the
// protocol; replies.js says what to paint.

export class MessageList {
  /** `list`: the <ol> of messages; `scroller`: the element that scrolls; `answers`: how
   * an answer is rendered (page.js: `{open(container), show(container, text)}`). */
  constructor(list, scroller, answers) {
    this.list = list;
    this.scroller = scroller;
    this.answers = answers;
    // Follow the answer unless the user scrolled up. Told by the direction of a scroll,
    // not by how far the view is from the bottom: the answer can grow between our scroll
    // and the frame that lays it out (an earlier message coming on screen gets its real
    // height then), which leaves the view short of the bottom with nobody having scrolled.
    this.stick = true;
    this.ourTop = 0; // where we last put the view
    scroller.addEventListener('scroll', () => {
      const { scrollTop, scrollHeight, clientHeight } = scroller;
      if (scrollHeight - scrollTop - clientHeight < 48) this.stick = true;
      else if (scrollTop < this.ourTop - 1) this.stick = false;
      this.ourTop = scrollTop;
    }, { passive: true });
  }

  /** A message's element, at the end of the list. An answer is rendered as
   * `answers.show` renders it; the user's words as `answers.user` does (markdown), or as
   * typed when there is none. */
  add(role, text) {
    const { li, content } = this.element(role);
    if (role === 'assistant') this.answers.show(content, text);
    else if (role === 'user' && this.answers.user) this.answers.user(content, text);
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
    this.stick = true;
    this.follow();
  }

  follow() {
    if (!this.stick) return;
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.ourTop = this.scroller.scrollTop;
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
