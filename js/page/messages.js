// @ts-check
// The message list on screen: one element per message, notes under it, its actions
// (Copy, Edit, Regenerate, Retry), and a view that follows the newest answer unless the
// user scrolled up. Nothing here knows the protocol; replies.js says what to paint.

import { isImageUrl } from './attachments.js';
import { EndFollower } from './follow.js';
import { t } from './i18n.js';

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

  /** A message's element, at the end of the list (or in place of `replacing`). An
   * answer is rendered as `answers.show` renders it; the user's words as `answers.user`
   * does (markdown), or as typed when there is none. `images`: a user message's
   * (attachments.js), shown as thumbnails before its text. */
  add(role, text, replacing = null, images = null) {
    const { li, content } = this.element(role, replacing);
    if (role === 'assistant') this.answers.show(content, text);
    else if (role === 'user' && this.answers.user) this.answers.user(content, text);
    else content.textContent = text;
    if (images?.length) content.before(imageList(images));
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
    who.textContent = role === 'user' ? t('message.youSaid') : t('message.answer');
    li.append(who);
    const content = document.createElement('div');
    content.className = role === 'assistant' ? 'content md' : 'content';
    // Each block finds its own direction from its first strong character (issue 44):
    // an Arabic or Hebrew message reads right to left, its code blocks stay left to
    // right (render.css sets `direction: ltr` on pre).
    content.dir = 'auto';
    li.append(content);
    if (replacing?.isConnected) replacing.replaceWith(li);
    else this.list.append(li);
    return { li, content };
  }

  clear() {
    this.list.replaceChildren();
  }

  /** While an answer streams, actions that would send (Edit, Regenerate, Retry) wait:
   * one answer at a time per conversation. Copy stays. */
  setBusy(busy) {
    this.list.dataset.busy = String(busy);
    for (const button of this.list.querySelectorAll('.msg-actions button[data-sends]')) button.disabled = busy;
  }

  /** Keep the view at the end from now on (a new prompt was sent). */
  stickToEnd() {
    this.follower.stickToEnd();
  }

  follow() {
    this.follower.follow();
  }
}

/** A message's images, as thumbnails before its text; only images the page made
 * (`isImageUrl`): a stored record may hold anything. Before the content, not in it: the
 * markdown renderer owns that. */
function imageList(images) {
  const list = document.createElement('ul');
  list.className = 'msg-images';
  list.setAttribute('aria-label', t('message.images', { count: images.length }));
  for (const image of images) {
    if (!isImageUrl(image?.url)) continue;
    const li = document.createElement('li');
    const img = document.createElement('img');
    img.src = image.url;
    img.alt = t('message.image', { width: image.width, height: image.height });
    img.decoding = 'async';
    li.append(img);
    list.append(li);
  }
  return list;
}

// A message's notes are its own children, after its content: looked up among those few,
// never by a search through the answer's subtree (which every delta would pay for).
function findNote(li, cls) {
  for (const child of li.children) if (child.classList.contains(cls)) return child;
  return null;
}

/** The one line of class `cls` under a message, created on first use (above the
 * message's actions, which stay last). */
export function note(li, cls, text) {
  let el = findNote(li, cls);
  if (!el) {
    el = document.createElement('span');
    el.className = cls;
    li.insertBefore(el, findNote(li, 'msg-actions'));
  }
  el.textContent = text;
  return el;
}

export function removeNote(li, cls) {
  findNote(li, cls)?.remove();
}

/** A message's actions, in one group after its notes, replacing any it had: `actions`
 * is a list of `{name, run, sends?}`; each button's text is its accessible name (the
 * names tests and screen readers rely on: "Copy", "Edit", "Regenerate", "Retry").
 * `sends`: the action sends a request, so it waits while the conversation is `busy`;
 * `controls`: the id of what the button shows and hides (a disclosure, WAI-ARIA 1.2:
 * `aria-controls` and `aria-expanded`, kept as the message's `data-details`). */
export function setActions(li, actions, { busy = false } = {}) {
  removeNote(li, 'msg-actions');
  if (!actions.length) return null;
  const group = document.createElement('div');
  group.className = 'msg-actions';
  group.setAttribute('role', 'group');
  group.setAttribute('aria-label', li.dataset.role === 'user' ? t('message.yourMessage') : t('message.answerGroup'));
  for (const { name, run, sends = false, controls = null } of actions) {
    const button = document.createElement('button');
    button.type = 'button';
    button.className = name.toLowerCase().replace(/\s+/g, '-');
    button.textContent = name;
    if (sends) {
      button.dataset.sends = '';
      button.disabled = busy;
    }
    if (controls) {
      button.setAttribute('aria-controls', controls);
      button.setAttribute('aria-expanded', String(li.dataset.details === 'open'));
    }
    button.addEventListener('click', () => run(button));
    group.append(button);
  }
  li.append(group);
  return group;
}

/** The "Details" action of an answer that has a latency line (`.reply-metrics`, hidden
 * until opened), else null. It sits in the action row, which comes with the answer's
 * end: a toggle of its own, added a frame or two later when the figures were in, moved
 * a followed view up by a line just as the user started reading. */
export function detailsAction(li) {
  const line = findNote(li, 'reply-metrics');
  if (!line) return null;
  line.id ||= `metrics-${li.dataset.id}`;
  return {
    name: t('message.details'),
    controls: line.id,
    run: (button) => {
      const open = li.dataset.details !== 'open';
      if (open) li.dataset.details = 'open';
      else delete li.dataset.details;
      button.setAttribute('aria-expanded', String(open));
    },
  };
}

/** A "Retry" button under a failed answer (the only action it has); `retry()` runs
 * once, on a click (never by itself), and the button goes. */
export function offerRetry(li, retry) {
  const group = setActions(li, [{ name: t('message.retry'), sends: true, run: () => { group.remove(); retry(); } }]);
  return group.firstChild;
}

/** Say that the copy worked, or not. Worked: the button reads "Copied" for a moment,
 * and a status line that takes no room says it to screen readers. Nothing moves: a note
 * under the message, shown and then taken away, moved the whole conversation twice, and
 * a tap aimed at the next button could land a line off. Failed: a note under the
 * message says what to do instead, and stays until the next copy. */
export function copied(button, ok) {
  const li = button.closest('.msg');
  li.dataset.copied = String(ok);
  const el = note(li, 'copied', ok ? t('message.copied') : t('message.copyFailed'));
  el.setAttribute('role', 'status');
  el.classList.toggle('unseen', ok);
  clearTimeout(button.copiedTimer);
  if (!ok) return;
  button.dataset.label ??= button.textContent;
  button.style.minWidth = `${button.offsetWidth}px`; // never narrower meanwhile
  button.textContent = t('message.copied');
  button.copiedTimer = setTimeout(() => {
    button.textContent = button.dataset.label;
    button.style.minWidth = '';
    el.remove();
  }, 2000);
}

/** Edit a user message in place: its text in a textarea with Save and Cancel. `save(text)`
 * gets the new text (Save, or Ctrl/Cmd+Enter); Cancel or Escape puts things back. */
export function editInPlace(li, text, save) {
  if (li.classList.contains('editing')) return;
  li.classList.add('editing');
  const form = document.createElement('form');
  form.className = 'edit';
  const area = document.createElement('textarea');
  area.value = text;
  area.rows = Math.min(12, Math.max(2, text.split('\n').length));
  area.setAttribute('aria-label', t('message.editLabel'));
  area.dir = 'auto';
  const saveButton = document.createElement('button');
  saveButton.type = 'submit';
  saveButton.textContent = t('message.save');
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.textContent = t('message.cancel');
  const buttons = document.createElement('div');
  buttons.className = 'edit-buttons';
  buttons.append(cancel, saveButton);
  form.append(area, buttons);
  li.querySelector('.content').after(form);
  const close = () => {
    form.remove();
    li.classList.remove('editing');
  };
  cancel.addEventListener('click', close);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = area.value.trim();
    if (!value) return;
    close();
    save(value);
  });
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') close();
    else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) form.requestSubmit();
  });
  area.focus();
  area.setSelectionRange(area.value.length, area.value.length);
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
