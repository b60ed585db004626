// The replies: each prompt sent becomes a `chat.send`, and the core's events about it
// (bridge/PROTOCOL.md) are painted under it: text at most once per animation frame,
// notes while it waits or retries, what Python did to the prompt, and how it ended. The
// answer's text is assembled by reply.js; its latency by reply-metrics.js. What the
// conversation holds, and which turns go to the model, is conversation.js's.
//
// One answer at a time per conversation. While one streams, Send becomes Stop (page.js
// swaps the buttons on `onBusy`), and Edit, Regenerate and Retry wait. We chose this over
// queueing the next prompt: a prompt written before the answer was read is often
// overtaken by it (the user then wants to edit or drop it, which a queue must also
// offer), the draft stays in the composer meanwhile at no cost, and it is what people
// know from the apps they use. The outbox is the one queue, and only while offline:
// there, nothing can be read before sending anyway. Stop stops this conversation's
// answer only; a host's chats (bridge/page/hosts.js) and other conversations' answers
// go on.
//
// Actions: Copy on every message with text; Edit on the user's (edit in place, then
// the conversation after it is replaced by a new answer); Regenerate on an answer, and
// Retry on one that failed, was stopped or interrupted (both send the same turn again,
// as a new answer in its place; the turns after it stay). Nothing is ever sent again
// by itself.
//
// Offline: a prompt sent while the device is offline, or whose request failed because it
// went offline before any text (`chat.error` code `offline`: the core spends no retries
// then), waits in the outbox (outbox.js), shown as "waiting for a connection", and goes
// out by itself on `online`, in order, each exactly once, and only to where it was
// written for: an item keeps the endpoint and model it was queued with, and if the
// settings (the user's, or a host's) point elsewhere by the time it goes, it is not sent
// but shown as an error whose Retry sends it with the new settings: the user is asked.
//
// The page going away: the text so far is saved on `pagehide`, `freeze` and when the
// page is hidden (a phone's WebView may be killed in the background with no other
// warning), with the answer's resumable stream and the last event painted (`stream`,
// from `chat.stream` and `chat.delta.event`: bridge/PROTOCOL.md, "Resumable streams").
// The answer goes on on the gateway meanwhile. On the next visit (a reload, a WebView
// the OS or a host restarted) it is taken up from there when its conversation is shown:
// the rest streams in place, nothing doubled, nothing sent again. A page that comes
// back from being frozen (`resume`, or the back/forward cache), or a device back
// `online`, asks the core to reconnect its answers in flight (`chat.reconnect`). Only
// an answer the gateway no longer has (`stream_gone`), or one with no stream (another
// server), is shown `interrupted`, with Retry: never sent again by itself.

import { copyText } from '../render/clipboard.js';
import { showCompressionNote } from '../render/compression-note.js';
import { ReplyMetrics, describeMetrics } from '../render/reply-metrics.js';
import { SETTLED, conversation, newEntryId, promptOf, wellFormed } from './conversation.js';
import { FramePacer, copied, detailsAction, editInPlace, note, removeNote, setActions } from './messages.js';
import { Outbox } from './outbox.js';
import { Reply } from './reply.js';
import { describeError, preparedText, quotaText, reconnectingText, retryText, stallText, waitText } from './status-text.js';

const now = () => performance.timeOrigin + performance.now();
const WAITING = 'Waiting for a connection…';

export class Replies {
  /** `link`: the page's PythonLink; `view`: the MessageList; `history` (the conversation
   * shown), `settings`: the page's; `header`: the {metrics, quota} lines; `connection`:
   * offline.js's (`online`, and an `online` event); `outbox`: outbox.js's; `onBusy(busy)`:
   * whether the conversation shown has an answer on its way changed; `onSettled()`:
   * after each reply ends. */
  constructor({ link, view, history, settings, header, connection, outbox = new Outbox(), onBusy, onSettled, win = window }) {
    Object.assign(this, { link, view, history, settings, header, connection, outbox, onBusy, onSettled });
    this.live = new Map(); // request id → {reply, li, userLi, userEntry, stream, metrics, history, conversation}
    this.elements = new Map(); // entry → its element, for the conversation shown
    this.counter = 0;
    this.frames = new FramePacer((inFrame) => this.paint(inFrame));
    this.flushing = false;
    // Set when a request failed `offline` while this page still read navigator.onLine as
    // true (the worker saw it first): the outbox then waits for the `online` event
    // rather than send again at once, which could loop while the two disagree.
    this.held = false;
    connection?.addEventListener('online', () => {
      this.held = false;
      this.reconnectAll({ interrupt: false });
      this.flush();
    });
    // Saved while the page can still save: `pagehide` (reload, navigation, bfcache),
    // `freeze` (Chromium's lifecycle: a background tab or app frozen), and `hidden`,
    // the last event a phone's WebView reliably gets before it may be killed.
    // https://developer.chrome.com/docs/web-platform/page-lifecycle-api
    const save = () => this.saveInFlight();
    win.addEventListener('pagehide', save);
    win.document.addEventListener('freeze', save);
    win.document.addEventListener('visibilitychange', () => {
      if (win.document.visibilityState === 'hidden') save();
    });
    win.document.addEventListener('resume', () => this.reconnectAll());
    win.addEventListener('pageshow', (e) => {
      if (e.persisted) this.reconnectAll();
    });
  }

  /** Whether any reply is on its way (in any conversation). */
  get streaming() {
    return this.live.size > 0;
  }

  /** Whether the conversation shown has an answer on its way: Send is Stop then. */
  get busy() {
    for (const r of this.live.values()) if (r.conversation === this.shown) return true;
    return false;
  }

  /** The conversation shown: the ConversationStore keeps several and has one open
   * (`active`); a plain conversation (tests, hosts' harnesses) is its own. Replies remember theirs, so that
   * Stop, Send↔Stop and the outbox act on the one the user sees. */
  get shown() {
    return this.history.active ?? this.history;
  }

  // ---- the conversation shown ------------------------------------------------------

  /** Show `history` (the page's conversation, as kept): made well formed first (an
   * answer that was on its way when the page went away is interrupted), then painted,
   * each message with its actions; then the outbox is looked at. */
  show(history = this.history) {
    this.history = history;
    const streaming = new Map([...this.live.values()].map((r) => [r.reply.entry, r]));
    // Answers that were streaming when the page went away, and that the gateway may
    // still run: taken up again below, if they can go where they were going.
    const resumable = new Set(history.entries.filter((e) => this.resumable(e) && !streaming.has(e)));
    if (wellFormed(history.entries, new Set([...streaming.keys(), ...resumable]))) history.save();
    this.view.clear();
    this.elements.clear();
    for (const entry of history.entries) {
      if (resumable.has(entry)) {
        this.resumeStream(entry);
        continue;
      }
      const r = streaming.get(entry);
      if (r) {
        // Still on its way (shown again after another conversation): the element it
        // streams into comes back, with what it painted meanwhile.
        this.view.list.append(r.li);
        this.elements.set(entry, r.li);
        continue;
      }
      const li = this.view.add(entry.role, entry.content);
      this.elements.set(entry, li);
      if (entry.role === 'assistant') this.showEnding(entry, li);
      else if (entry.role === 'user') this.showPromptActions(entry, li);
    }
    for (const r of streaming.values()) {
      if (r.conversation === this.shown) r.userLi = this.elements.get(r.userEntry) ?? r.userLi;
    }
    this.busyChanged();
    this.view.follow();
    this.reconcileOutbox();
  }

  /** The user sent `text`: shown, kept, and sent (or put in the outbox, offline). */
  send(text) {
    if (this.busy) return false;
    const userEntry = this.history.add('user', text);
    userEntry.id = newEntryId();
    const userLi = this.view.add('user', text);
    this.elements.set(userEntry, userLi);
    this.showPromptActions(userEntry, userLi);
    this.answer(userEntry, userLi);
    this.view.stickToEnd();
    return true;
  }

  /** Answer `userEntry` (the turn to answer) in a new answer entry, shown in place of
   * `replacing` when given: sent now, or queued while offline (or while earlier prompts
   * of this conversation still wait: they go first). */
  answer(userEntry, userLi, replacing = null) {
    const entry = this.history.insertAfter(userEntry, 'assistant', '');
    entry.id = newEntryId();
    if (!this.connection || (this.connection.online && !this.held && !this.hasQueued(this.history))) {
      this.start(entry, userEntry, userLi, replacing);
      return;
    }
    entry.state = 'queued';
    this.history.save();
    const li = this.view.add('assistant', '', replacing);
    this.elements.set(entry, li);
    this.showEnding(entry, li);
    this.outbox.put({ id: entry.id, conversation: conversationId(this.shown), target: this.target() })
      .then(() => this.flush());
  }

  /** Send the conversation up to `userEntry`, answered in `entry` (empty), shown in a new
   * element (in place of `replacing` when given). */
  start(entry, userEntry, userLi, replacing = null) {
    const id = `r${Date.now().toString(36)}${(this.counter++).toString(36)}`;
    const history = this.history;
    const messages = conversation(this.settings.system, history.upTo(userEntry));
    entry.state = 'streaming';
    entry.content = '';
    delete entry.error;
    history.save();
    const { li, stream } = this.view.addStreaming(id, replacing);
    this.elements.set(entry, li);
    if (!this.link.ready) note(li, 'note', 'Waiting for Python to start…');
    const metrics = new ReplyMetrics(id, now());
    this.live.set(id, { reply: new Reply(id, entry), li, userLi, userEntry, stream, metrics, history, conversation: this.shown, target: this.target() });
    this.busyChanged();
    this.link.send({ type: 'chat.send', id, messages, settings: this.settings.forRequest() });
  }

  /** Whether `entry` is an answer that was streaming, on a resumable stream of the
   * endpoint the page talks to now (a stream is asked for where it was made). */
  resumable(entry) {
    const { stream } = entry;
    return entry.role === 'assistant' && entry.state === 'streaming' && stream && typeof stream.id === 'string'
      && Number.isSafeInteger(stream.after) && stream.after >= 0 && stream.base_url === this.target().base_url;
  }

  /** Take up the answer `entry` (streaming when the page went away) from its stream:
   * its text so far is painted at once, and the rest follows in place. */
  resumeStream(entry) {
    const userEntry = promptOf(this.history.entries, entry);
    const id = `r${Date.now().toString(36)}${(this.counter++).toString(36)}`;
    const { li, stream } = this.view.addStreaming(id);
    this.elements.set(entry, li);
    const reply = new Reply(id, entry);
    if (entry.content) stream.append(entry.content);
    li.dataset.resumed = 'true';
    note(li, 'note', 'Reconnecting…');
    const metrics = new ReplyMetrics(id, now());
    this.live.set(id, {
      reply, li, userLi: this.elements.get(userEntry), userEntry, stream, metrics, history: this.history,
      conversation: this.shown, target: this.target(),
    });
    const messages = conversation(this.settings.system, this.history.upTo(userEntry ?? entry));
    const { id: streamId, after } = entry.stream;
    this.link.send({
      type: 'chat.send', id, messages: messages.length ? messages : [{ role: 'user', content: '' }],
      settings: this.settings.forRequest(), resume: { stream: streamId, after, text: entry.content },
    });
  }

  /** Regenerate or Retry the answer `entry`: the same turn goes out again as a new
   * answer in its place; what follows stays. Only ever on the user's word. */
  again(entry) {
    if (this.busy) return;
    const userEntry = promptOf(this.history.entries, entry);
    if (!userEntry) return;
    const li = this.elements.get(entry);
    this.forget(entry, { keepElement: true });
    this.answer(userEntry, this.elements.get(userEntry), li);
  }

  /** Edit the user's message `userEntry` to `text` and send it again: everything after
   * it in the conversation is replaced by the new answer. */
  edit(userEntry, text) {
    if (this.busy) return;
    const entries = this.history.entries;
    const at = entries.indexOf(userEntry);
    if (at < 0) return;
    for (const later of entries.slice(at + 1)) this.forget(later);
    userEntry.content = text;
    const userLi = this.elements.get(userEntry);
    userLi.querySelector('.content').textContent = text;
    removeNote(userLi, 'note'); // the compression saving was the old text's
    delete userLi.dataset.saved;
    this.answer(userEntry, userLi);
    this.view.stickToEnd();
  }

  // An entry leaves the conversation, and its outbox item if it waited; its element too,
  // unless a new answer is about to take its place.
  forget(entry, { keepElement = false } = {}) {
    this.history.remove(entry);
    if (entry.state === 'queued') this.outbox.remove(entry.id);
    const li = this.elements.get(entry);
    this.elements.delete(entry);
    if (!keepElement) li?.remove();
  }

  /** Stop the answer of the conversation shown (only that one). */
  stop() {
    for (const [id, r] of this.live) {
      if (r.conversation === this.shown) this.link.send({ type: 'chat.abort', id });
    }
  }

  /** Python's boot got this far: a prompt sent early says so while it waits. */
  booting(text) {
    if (this.link.ready) return;
    for (const r of this.live.values()) note(r.li, 'note', `Waiting for Python: ${text}`);
  }

  /** Python is ready: prompts sent early are on their way. */
  pythonReady() {
    for (const r of this.live.values()) note(r.li, 'note', 'Sending…');
  }

  // ---- events ----------------------------------------------------------------------

  /** A protocol event about one of the replies (others are ignored). */
  onEvent(msg) {
    const r = this.live.get(msg.id);
    if (!r) return;
    switch (msg.type) {
      case 'chat.delta':
        removeNote(r.li, 'note');
        removeNote(r.li, 'stall');
        r.reply.take(msg.text, msg.event);
        r.metrics.arrived(msg);
        this.frames.request();
        break;
      case 'chat.prepared': {
        const { saved, fit } = preparedText(msg);
        if (saved) {
          showCompressionNote(r.userLi, msg);
          r.userLi.dataset.saved = String(saved.amount);
        }
        if (fit) note(r.li, 'fit', fit);
        break;
      }
      case 'chat.wait':
        note(r.li, 'note', waitText(msg));
        this.showQuota(msg.quota);
        break;
      case 'chat.retry':
        note(r.li, 'note', retryText(msg));
        this.showQuota(msg.quota);
        break;
      case 'chat.stall': // the core measures the silence (bridge/PROTOCOL.md, "Stalls and timeouts")
        note(r.li, 'stall', stallText(msg));
        break;
      case 'chat.resume':
        removeNote(r.li, 'stall');
        break;
      case 'chat.stream': {
        // Kept with the answer from now on: after a reload, the rest is asked for.
        const entry = r.reply.entry;
        if (typeof msg.stream === 'string') {
          entry.stream = { id: msg.stream, base_url: r.target.base_url, after: 0 };
          r.history.save(entry);
        }
        break;
      }
      case 'chat.reconnecting':
        removeNote(r.li, 'stall');
        note(r.li, 'note', reconnectingText(msg));
        break;
      case 'notice': // not an error, but worth knowing (e.g. the prompt cache fell back to memory)
        note(r.li, 'notice', msg.message).dataset.code = msg.code;
        break;
      case 'chat.done':
        this.finish(r, 'done', msg);
        break;
      case 'chat.error': {
        const code = msg.error?.code;
        const interrupted = (code === 'aborted' && r.interrupted) || code === 'stream_gone';
        this.finish(r, interrupted ? 'interrupted' : code === 'aborted' ? 'stopped' : 'error', msg);
        break;
      }
      case 'error':
        this.finish(r, 'error', msg);
        break;
    }
  }

  // Text received since the last frame goes into the DOM; the stream re-renders the
  // open block only, so a frame's cost does not grow with the answer.
  paint(inFrame) {
    for (const r of this.live.values()) {
      if (!r.reply.pending) continue;
      r.stream.append(r.reply.flush());
      r.li.dataset.paints = String(+(r.li.dataset.paints || 0) + 1);
      r.metrics.painted(inFrame);
    }
    this.view.follow();
  }

  finish(r, state, msg) {
    // Nothing received may be lost: text the deltas did not bring is taken from the
    // error's `partial`, and what is pending is painted now.
    r.reply.reconcile(msg.error?.partial);
    this.paint(false);
    r.stream.end(); // the open block is final now
    // Its latency line is there from now on (hidden, behind Details among the actions),
    // its figures once the last paint is measured: nothing under the answer moves then.
    note(r.li, 'reply-metrics', 'Measuring…');
    r.metrics.close(msg).then((summary) => this.showMetrics(r.li, summary));
    this.live.delete(r.reply.id);
    removeNote(r.li, 'note');
    removeNote(r.li, 'stall');
    const entry = r.reply.entry;
    const offline = state === 'error' && msg.error?.code === 'offline' && !entry.content;
    if (offline) {
      // Gone offline before any text: the prompt waits for the connection instead.
      this.held = true;
      entry.state = 'queued';
      this.outbox.put({ id: entry.id, conversation: conversationId(r.conversation), target: r.target })
        .then(() => this.flush());
    } else {
      entry.state = state;
      if (state === 'error') entry.error = storedError(msg.error);
    }
    delete entry.stream; // settled: nothing left to resume
    r.history.save(entry);
    r.li.dataset.state = entry.state;
    if (r.conversation === this.shown) this.showEnding(entry, r.li, msg.error);
    this.showQuota(msg.quota);
    this.busyChanged();
    this.onSettled?.(r.li, state, msg);
    this.flush();
  }

  // ---- how an answer ended, and what can be done with it ----------------------------

  // An answer's state on its element: the error (or why it stopped), and its actions.
  showEnding(entry, li, error = entry.error) {
    li.dataset.state = entry.state;
    removeNote(li, 'error');
    removeNote(li, 'outbox');
    const actions = [];
    if (entry.content) actions.push(this.copyAction(entry));
    if (entry.state === 'queued') {
      note(li, 'outbox', WAITING);
    } else if (entry.state === 'done') {
      actions.push({ name: 'Regenerate', sends: true, run: () => this.again(entry) });
    } else if (SETTLED.has(entry.state)) {
      const why = entry.state === 'interrupted' ? 'This answer was interrupted.' : describeError(error ?? { code: 'aborted' }, { baseUrl: this.settings.baseUrl });
      note(li, 'error', why);
      actions.push({ name: 'Retry', sends: true, run: () => this.again(entry) });
    }
    const details = detailsAction(li);
    if (details) actions.push(details);
    setActions(li, actions, { busy: this.busy });
  }

  showPromptActions(entry, li) {
    setActions(li, [
      this.copyAction(entry),
      { name: 'Edit', sends: true, run: () => editInPlace(li, entry.content, (text) => this.edit(entry, text)) },
    ], { busy: this.busy });
  }

  copyAction(entry) {
    return { name: 'Copy', run: (button) => copyText(entry.content).then((ok) => copied(button, ok)) };
  }

  busyChanged() {
    const busy = this.busy;
    this.view.setBusy(busy);
    this.onBusy?.(busy);
  }

  // ---- the outbox ------------------------------------------------------------------

  hasQueued(history) {
    return history.entries.some((e) => e.role === 'assistant' && e.state === 'queued');
  }

  /** Send what waits in the outbox, oldest first, one answer at a time: each item is
   * taken out (committed) before its request goes, so an `online` fired twice, a second
   * tab or a reload mid-way never sends one twice. */
  async flush() {
    if (this.flushing || this.held || !this.connection?.online || this.busy) return;
    this.flushing = true;
    try {
      for (const item of await this.outbox.list()) {
        if (!this.connection.online || this.busy) break;
        if (item.conversation !== conversationId(this.shown)) continue; // sent when it is shown
        const entry = this.history.entries.find((e) => e.id === item.id);
        if (!entry || entry.state !== 'queued') {
          await this.outbox.remove(item.id); // its prompt was edited away or cleared
          continue;
        }
        if (!(await this.outbox.take(item.id))) continue; // another taker got it
        if (this.busy || !this.history.entries.includes(entry) || entry.state !== 'queued') {
          // Changed while we took it: it waits for a tap instead (never sent twice).
          if (this.history.entries.includes(entry)) this.interrupt(entry);
          continue;
        }
        const now = this.target();
        if (item.target && !sameTarget(item.target, now)) {
          // Written for another endpoint or model: asked, not sent (Retry sends it).
          this.settle(entry, 'error', { code: 'target_changed', message: targetChangedText(item.target, now) });
          continue;
        }
        const userEntry = promptOf(this.history.entries, entry);
        this.start(entry, userEntry, this.elements.get(userEntry), this.elements.get(entry));
        break; // the next one goes when this answer ends (finish flushes again)
      }
    } finally {
      this.flushing = false;
    }
  }

  // After a reload: an answer `queued` whose outbox item is gone was taken by a flush
  // that the reload cut short; it may or may not have gone out, so it is interrupted (a
  // Retry away), never sent again by itself. Then whatever waits goes, if online.
  async reconcileOutbox() {
    const { history, shown } = this;
    const items = new Set((await this.outbox.list()).map((item) => item.id));
    if (shown !== this.shown) return; // another conversation was opened meanwhile
    for (const entry of history.entries) {
      if (entry.state === 'queued' && !items.has(entry.id) && !this.isLive(entry)) this.interrupt(entry);
    }
    this.flush();
  }

  isLive(entry) {
    for (const r of this.live.values()) if (r.reply.entry === entry) return true;
    return false;
  }

  interrupt(entry) {
    this.settle(entry, 'interrupted');
  }

  settle(entry, state, error = undefined) {
    entry.state = state;
    if (error) entry.error = error;
    this.history.save();
    const li = this.elements.get(entry);
    if (li) this.showEnding(entry, li);
  }

  /** Where the page's next chat would go: endpoint and model, host settings overlaid. */
  target() {
    const settings = this.settings.forRequest();
    return targetOf(this.link.effectiveSettings?.(settings) ?? settings);
  }

  // ---- the page going away ----------------------------------------------------------

  /** Save the answers in flight as they are now (their text so far, and `streaming`, which
   * a next visit reads as interrupted). */
  saveInFlight() {
    if (!this.live.size) return;
    this.paint(false);
    for (const r of this.live.values()) {
      r.history.rescue?.(r.reply.entry); // synchronously: the IndexedDB write may not commit
      r.history.save(r.reply.entry);
    }
  }

  /** The page was frozen and came back, or the device is back online: the connections
   * of its answers in flight may be dead. Those on a resumable stream reconnect (the
   * core resumes after the last event it took); the others, unless `interrupt` is
   * false, are stopped and shown interrupted (their connection did not survive, and
   * before any text the core would otherwise send the request again by itself). */
  reconnectAll({ interrupt = true } = {}) {
    for (const [id, r] of this.live) {
      if (r.reply.entry.stream) {
        this.link.send({ type: 'chat.reconnect', id });
      } else if (interrupt) {
        r.interrupted = true;
        this.link.send({ type: 'chat.abort', id });
      }
    }
  }

  // ---- metrics and quota -------------------------------------------------------------

  // The reply's latency, once its last paint is in: under it (behind Details), kept on
  // its element, in the header, and told to whoever listens to the link (an embedding
  // host).
  showMetrics(li, summary) {
    const line = describeMetrics(summary);
    li.dataset.metrics = JSON.stringify(summary);
    note(li, 'reply-metrics', line);
    this.header.metrics.textContent = line;
    this.link.emitMetrics(summary);
  }

  showQuota(quota) {
    const text = quotaText(quota);
    if (text !== null) this.header.quota.textContent = text;
  }
}

// Which conversation an outbox item belongs to: the history's own id once there are
// several (js/page/conversation-store.js), else the one there is.
const conversationId = (conversation) => conversation.id ?? 'default';

const targetOf = (settings) => ({ base_url: settings.base_url ?? '', model: settings.model ?? '' });
const sameTarget = (a, b) => a.base_url === b.base_url && a.model === b.model;

function targetChangedText(was, now) {
  const where = (t) => `${t.model} at ${hostOf(t.base_url)}`;
  return `Not sent: this prompt was written for ${where(was)}, and the settings now say ${where(now)}. Retry sends it there.`;
}

function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

// What is kept of an error for the next visit: what describeError reads, no `partial`
// (the text is the answer's content already).
function storedError(error) {
  if (!error) return { code: 'error', message: '' };
  const { code, message, status, timeout_s: timeoutS } = error;
  return { code, message, ...(status != null && { status }), ...(timeoutS != null && { timeout_s: timeoutS }) };
}
