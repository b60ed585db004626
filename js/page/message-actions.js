// @ts-check
// What can be done with a message, and how an answer's ending reads on it.
//
// Copy on every message with text; Edit on the user's (edit in place, then the
// conversation after it is replaced by a new answer); Regenerate on an answer, and
// Retry on one that failed, was stopped or interrupted (both send the same turn again,
// as a new answer in its place; the turns after it stay). Nothing is ever sent again
// by itself. While an answer of the conversation shown streams, the actions that send
// wait (`busy`).

import { copyText } from '../render/clipboard.js';
import { SETTLED, promptOf } from './conversation.js';
import { t } from './i18n.js';
import { copied, detailsAction, editInPlace, note, removeNote, setActions } from './messages.js';
import { describeError } from './status-text.js';


// How much room "Continue with more room" asks for: twice what the cut answer spent
// (its `completion_tokens`, which reached the limit; else the limit it was given, else
// the core's default reply reserve, py/firsttoken/tokens/budget.py). The same turn at
// the same effort thinks about as long again, so the new limit must hold that much
// thinking and an answer after it: doubling gives the answer as much room as the
// thinking took, the smallest step that surely fits a thought as long as the last; a
// second cut doubles again. The core still fits prompt and reply in the window.
const DEFAULT_REPLY_RESERVE = 4096;
export function moreRoom(entry) {
  const spent = entry.cut?.tokens ?? entry.max_tokens ?? DEFAULT_REPLY_RESERVE;
  return 2 * Math.max(spent, entry.max_tokens ?? 0, 1);
}

export class MessageActions {
  /** `replies`: the page's Replies (replies.js), whose conversation shown these act on. */
  constructor(replies) {
    this.replies = replies;
  }

  /** An answer's state on its element: the error (or why it stopped), and its actions. */
  showEnding(entry, li, error = entry.error) {
    li.dataset.state = entry.state;
    removeNote(li, 'error');
    removeNote(li, 'outbox');
    const actions = [];
    if (entry.content) actions.push(this.copyAction(entry));
    if (entry.state === 'queued') {
      note(li, 'outbox', t('message.waitingConnection'));
    } else if (entry.state === 'done' && entry.cut && !entry.content) {
      // Cut while thinking: never an empty bubble. Its thinking row (above) holds what
      // it thought; this says why there is no answer, and one tap asks again, once,
      // with more room.
      note(li, 'error', t('message.cut')).classList.add('cut');
      const room = moreRoom(entry);
      actions.push({ name: t('message.continue'), sends: true, run: () => this.again(entry, { maxTokens: room }) });
    } else if (entry.state === 'done') {
      actions.push({ name: t('message.regenerate'), sends: true, run: () => this.again(entry) });
    } else if (SETTLED.has(entry.state)) {
      const why = entry.state === 'interrupted'
        ? t('message.interrupted')
        : describeError(error ?? { code: 'aborted' }, { baseUrl: this.replies.settings.baseUrl });
      note(li, 'error', why);
      actions.push({ name: t('message.retry'), sends: true, run: () => this.again(entry) });
    }
    const details = detailsAction(li);
    if (details) actions.push(details);
    setActions(li, actions, { busy: this.replies.busy });
  }

  /** A user's message: Copy and Edit. */
  showPromptActions(entry, li) {
    setActions(li, [
      this.copyAction(entry),
      { name: t('message.edit'), sends: true, run: () => editInPlace(li, entry.content, (text) => this.edit(entry, text)) },
    ], { busy: this.replies.busy });
  }

  copyAction(entry) {
    return { name: t('message.copy'), run: (button) => copyText(entry.content).then((ok) => copied(button, ok)) };
  }

  /** Regenerate or Retry the answer `entry`: the same turn goes out again as a new
   * answer in its place; what follows stays. Only ever on the user's word. */
  again(entry, { maxTokens = entry.max_tokens ?? null } = {}) {
    const { replies } = this;
    if (replies.busy) return;
    const userEntry = promptOf(replies.store.entries, entry);
    if (!userEntry) return;
    const li = replies.elements.get(entry);
    this.forget(entry, { keepElement: true });
    replies.answer(userEntry, replies.elements.get(userEntry), li, { maxTokens });
  }

  /** Edit the user's message `userEntry` to `text` and send it again: everything after
   * it in the conversation is replaced by the new answer. */
  edit(userEntry, text) {
    const { replies } = this;
    if (replies.busy) return;
    const entries = replies.store.entries;
    const at = entries.indexOf(userEntry);
    if (at < 0) return;
    for (const later of entries.slice(at + 1)) this.forget(later);
    userEntry.content = text;
    const userLi = replies.elements.get(userEntry);
    userLi.querySelector('.content').textContent = text;
    removeNote(userLi, 'note'); // the compression saving was the old text's
    delete userLi.dataset.saved;
    replies.answer(userEntry, userLi);
    replies.view.stickToEnd();
  }

  // An entry leaves the conversation, and its outbox item if it waited; its element too,
  // unless a new answer is about to take its place.
  forget(entry, { keepElement = false } = {}) {
    const { replies } = this;
    replies.store.remove(entry);
    if (entry.state === 'queued') replies.outbox.remove(entry.id);
    const li = replies.elements.get(entry);
    replies.elements.delete(entry);
    if (!keepElement) li?.remove();
  }
}
