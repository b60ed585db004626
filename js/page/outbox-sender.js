// When what waits in the outbox goes out: the outbox's state machine.
//
// A prompt sent while the device is offline, or whose request failed because it went
// offline before any text (`chat.error` code `offline`: the core spends no retries
// then), waits in the outbox (outbox.js keeps it), shown as "waiting for a connection",
// and goes out by itself on `online`, in order, each exactly once, and only to where it
// was written for: an item keeps the endpoint, model and API it was queued with, and if the
// settings (the user's, or a host's) point elsewhere by the time it goes, it is not sent
// but shown as an error whose Retry sends it with the new settings: the user is asked.
//
// An answer's states here: `queued` (its item waits) → taken (the item is out,
// committed) → `streaming` (replies.js sends it); or `interrupted` (taken, but what
// happened next is unknown: a reload cut it short) and `error` (`target_changed`), each
// a Retry away.

import { promptOf } from './conversation.js';
import { API_NAMES } from './settings.js';
import { t } from './i18n.js';

export class OutboxSender {
  /** `replies`: the page's Replies (replies.js); `outbox`: outbox.js's; `connection`:
   * offline.js's (`online`), or none (always online: tests, hosts' harnesses). */
  constructor(replies, { outbox, connection }) {
    Object.assign(this, { replies, outbox, connection });
    this.flushing = false;
    // Set when a request failed `offline` while this page still read navigator.onLine as
    // true (the worker saw it first): the outbox then waits for the `online` event
    // rather than send again at once, which could loop while the two disagree.
    this.held = false;
  }

  /** Whether a new answer in the conversation shown must wait: offline, held, or earlier
   * prompts of it still wait (they go first). */
  mustWait() {
    const { connection } = this;
    return Boolean(connection) && (!connection.online || this.held || this.hasQueued(this.replies.store));
  }

  hasQueued(store) {
    return store.entries.some((e) => e.role === 'assistant' && e.state === 'queued');
  }

  /** Queue the answer `entry` of the conversation shown. */
  queue(entry) {
    const { replies } = this;
    this.outbox.put({ id: entry.id, conversation: conversationId(replies.shown), target: replies.target() })
      .then(() => this.flush());
  }

  /** The reply `r` failed `offline` before any text: its prompt waits for the connection. */
  wentOffline(r) {
    this.held = true;
    r.reply.entry.state = 'queued';
    this.outbox.put({ id: r.reply.entry.id, conversation: conversationId(r.conversation), target: r.target })
      .then(() => this.flush());
  }

  /** The device is back online. */
  online() {
    this.held = false;
  }

  /** Send what waits in the outbox, oldest first, one answer at a time: each item is
   * taken out (committed) before its request goes, so an `online` fired twice, a second
   * tab or a reload mid-way never sends one twice. */
  async flush() {
    const { replies } = this;
    if (this.flushing || this.held || !this.connection?.online || replies.busy) return;
    this.flushing = true;
    try {
      for (const item of await this.outbox.list()) {
        if (!this.connection.online || replies.busy) break;
        if (item.conversation !== conversationId(replies.shown)) continue; // sent when it is shown
        const entry = replies.store.entries.find((e) => e.id === item.id);
        if (!entry || entry.state !== 'queued') {
          await this.outbox.remove(item.id); // its prompt was edited away or cleared
          continue;
        }
        if (!(await this.outbox.take(item.id))) continue; // another taker got it
        if (replies.busy || !replies.store.entries.includes(entry) || entry.state !== 'queued') {
          // Changed while we took it: it waits for a tap instead (never sent twice).
          if (replies.store.entries.includes(entry)) this.interrupt(entry);
          continue;
        }
        const now = replies.target();
        if (item.target && !sameTarget(item.target, now)) {
          // Written for another endpoint or model: asked, not sent (Retry sends it).
          this.settle(entry, 'error', { code: 'target_changed', message: targetChangedText(item.target, now) });
          continue;
        }
        const userEntry = promptOf(replies.store.entries, entry);
        replies.start(entry, userEntry, replies.elements.get(userEntry), replies.elements.get(entry));
        break; // the next one goes when this answer ends (its finish flushes again)
      }
    } finally {
      this.flushing = false;
    }
  }

  /** After a reload: an answer `queued` whose outbox item is gone was taken by a flush
   * that the reload cut short; it may or may not have gone out, so it is interrupted (a
   * Retry away), never sent again by itself. Then whatever waits goes, if online. */
  async reconcile() {
    const { replies } = this;
    const { store, shown } = replies;
    const items = new Set((await this.outbox.list()).map((item) => item.id));
    if (shown !== replies.shown) return; // another conversation was opened meanwhile
    for (const entry of store.entries) {
      if (entry.state === 'queued' && !items.has(entry.id) && !replies.isLive(entry)) this.interrupt(entry);
    }
    this.flush();
  }

  interrupt(entry) {
    this.settle(entry, 'interrupted');
  }

  settle(entry, state, error = undefined) {
    const { replies } = this;
    entry.state = state;
    if (error) entry.error = error;
    replies.store.save();
    const li = replies.elements.get(entry);
    if (li) replies.actions.showEnding(entry, li);
  }
}

// Which conversation an outbox item belongs to: the store's own id once there are
// several (js/page/conversation-store.js), else the one there is.
const conversationId = (conversation) => conversation.id ?? 'default';

// An item queued before targets named their API (it was Chat Completions' or the model's
// own then) is compared by endpoint and model alone.
const sameTarget = (a, b) => a.base_url === b.base_url && a.model === b.model && (!a.api || a.api === b.api);

function targetChangedText(was, now) {
  const apiChanged = was.api && was.api !== now.api;
  const where = (target) => (apiChanged
    ? t('outbox.targetWithApi', { model: target.model, host: hostOf(target.base_url), api: API_NAMES[target.api] ?? target.api })
    : t('outbox.target', { model: target.model, host: hostOf(target.base_url) }));
  return t('outbox.targetChanged', { was: where(was), now: where(now) });
}

function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
