// The replies: each prompt sent becomes a `chat.send`, and the core's events about it
// (bridge/PROTOCOL.md) are painted under it. This module sends, and keeps what is on its
// way; the rest is one job a module:
//
// - reply-events.js: Python's events about a reply, and how it ends;
// - reply-painter.js: text at most once per animation frame, latency and quota;
// - message-actions.js: Copy, Edit, Regenerate, Retry, and how an answer's ending reads;
// - outbox-sender.js: when what waits offline goes out (outbox.js keeps it);
// - reply-lifecycle.js: saved as the page goes away, reconnected when it comes back;
// - early-send.js: until Python is ready, a prompt goes through the gateway instead of
//   waiting, and its stream comes back as the same events.
//
// The answer's text is assembled by reply.js; its latency by reply-metrics.js. What the
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

import { ReplyMetrics } from '../render/reply-metrics.js';
import { conversation, newEntryId, promptOf, wellFormed } from './conversation.js';
import { HostOverlay } from '../../bridge/page/hosts.js';
import { EarlySend, sendsEarly } from './early-send.js';
import { MessageActions } from './message-actions.js';
import { note } from './messages.js';
import { t } from './i18n.js';
import { Outbox } from './outbox.js';
import { OutboxSender } from './outbox-sender.js';
import { Reply } from './reply.js';
import { applyEvent } from './reply-events.js';
import { followLifecycle } from './reply-lifecycle.js';
import { ReplyPainter } from './reply-painter.js';
import { apiFor } from './settings.js';
import { ThinkingRow } from './thinking.js';
import { levelOf } from './thinking-control.js';

const now = () => performance.timeOrigin + performance.now();

export class Replies {
  /** `link`: the page's PythonLink; `view`: the MessageList; `store` (the conversations
   * kept, conversation-store.js, or one plain conversation), `settings`: the page's;
   * `header`: the {metrics, quota} lines; `connection`: offline.js's (`online`, and an
   * `online` event); `outbox`: outbox.js's; `onBusy(busy)`: whether the conversation
   * shown has an answer on its way changed; `onSettled(li, state, msg, entry)`: after each reply ends. */
  constructor({ link, overlay = new HostOverlay(), view, store, settings, header, connection, outbox = new Outbox(), onBusy, onSettled, onRequest = () => {}, onThinking = () => {}, win = window }) {
    // onRequest: a chat request is about to go to the API (warm.js: the connection is in use).
    // onThinking: an answer's thinking row appeared (said once to screen readers).
    Object.assign(this, { link, overlay, view, store, settings, outbox, onBusy, onSettled, onRequest, onThinking });
    // request id → {reply, li, userLi, userEntry, stream, metrics, store, conversation,
    // target, interrupted?}
    this.live = new Map();
    this.elements = new Map(); // entry → its element, for the conversation shown
    this.counter = 0;
    // Prompts sent before Python is ready (early-send.js): their events come here as
    // the core's would.
    this.early = new EarlySend((msg) => this.onEvent(msg));
    this.painter = new ReplyPainter({ live: this.live, view, header, link });
    this.actions = new MessageActions(this);
    this.outboxSender = new OutboxSender(this, { outbox, connection });
    followLifecycle(this, { win, connection });
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
   * (`active`); a plain conversation (tests, hosts' harnesses) is its own. Replies
   * remember theirs, so that Stop, Send↔Stop and the outbox act on the one the user
   * sees. */
  get shown() {
    return this.store.active ?? this.store;
  }

  /** Whether `entry` is the answer of a reply on its way. */
  isLive(entry) {
    for (const r of this.live.values()) if (r.reply.entry === entry) return true;
    return false;
  }

  /** A protocol event about one of the replies (others are ignored). */
  onEvent(msg) {
    applyEvent(this, msg);
  }

  // ---- the conversation shown ------------------------------------------------------

  /** Show `store` (the page's conversation, as kept): made well formed first (an answer
   * that was on its way when the page went away is interrupted), then painted, each
   * message with its actions; then the outbox is looked at. */
  show(store = this.store) {
    this.store = store;
    const streaming = new Map([...this.live.values()].map((r) => [r.reply.entry, r]));
    // Answers that were streaming when the page went away, and that the gateway may
    // still run: taken up again below, if they can go where they were going.
    const resumable = new Set(store.entries.filter((e) => this.resumable(e) && !streaming.has(e)));
    if (wellFormed(store.entries, new Set([...streaming.keys(), ...resumable]))) store.save();
    this.view.clear();
    this.elements.clear();
    for (const entry of store.entries) {
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
      const li = this.view.add(entry.role, entry.content, null, entry.images);
      this.elements.set(entry, li);
      if (entry.role === 'assistant' && entry.reasoning) {
        // What it thought, collapsed: "Thought for N s", the panel rendered on a tap.
        new ThinkingRow(li, this.view.answers, { phase: 'done', reasoning: entry.reasoning, ms: entry.reasoning_ms });
      }
      if (entry.role === 'assistant') this.actions.showEnding(entry, li);
      else if (entry.role === 'user') this.actions.showPromptActions(entry, li);
    }
    for (const r of streaming.values()) {
      if (r.conversation === this.shown) r.userLi = this.elements.get(r.userEntry) ?? r.userLi;
    }
    this.busyChanged();
    this.view.follow();
    this.outboxSender.reconcile();
  }

  busyChanged() {
    const busy = this.busy;
    this.view.setBusy(busy);
    this.onBusy?.(busy);
  }

  // ---- sending ---------------------------------------------------------------------

  /** The user sent `text`, with `images` (attachments.js): shown, kept, and sent (or
   * put in the outbox, offline). */
  send(text, images = []) {
    if (this.busy) return false;
    const userEntry = this.store.add('user', text);
    userEntry.id = newEntryId();
    if (images.length) userEntry.images = images;
    const userLi = this.view.add('user', text, null, images);
    this.elements.set(userEntry, userLi);
    this.actions.showPromptActions(userEntry, userLi);
    this.answer(userEntry, userLi);
    this.view.stickToEnd();
    return true;
  }

  /** Answer `userEntry` (the turn to answer) in a new answer entry, shown in place of
   * `replacing` when given: sent now, or queued while offline (or while earlier prompts
   * of this conversation still wait: they go first). `maxTokens`: the output limit to
   * ask for ("Continue with more room", message-actions.js), kept with the answer. */
  answer(userEntry, userLi, replacing = null, { maxTokens = null } = {}) {
    const entry = this.store.insertAfter(userEntry, 'assistant', '');
    entry.id = newEntryId();
    if (maxTokens) entry.max_tokens = maxTokens;
    if (!this.outboxSender.mustWait()) {
      this.start(entry, userEntry, userLi, replacing);
      return;
    }
    entry.state = 'queued';
    this.store.save();
    const li = this.view.add('assistant', '', replacing);
    this.elements.set(entry, li);
    this.actions.showEnding(entry, li);
    this.outboxSender.queue(entry);
  }

  /** Send the conversation up to `userEntry`, answered in `entry` (empty), shown in a new
   * element (in place of `replacing` when given). */
  start(entry, userEntry, userLi, replacing = null) {
    const id = this.newRequestId();
    const store = this.store;
    const messages = conversation(this.settings.system, store.upTo(userEntry));
    const settings = this.requestSettings(entry);
    const early = this.sendsEarly(settings);
    entry.state = 'streaming';
    entry.content = '';
    for (const field of ['error', 'reasoning', 'reasoning_ms', 'replay', 'cut']) delete entry[field];
    store.save();
    const { li, stream } = this.view.addStreaming(id, replacing);
    this.elements.set(entry, li);
    // "Thinking… N s" from this frame on, before any byte, for any model.
    const sent = now();
    const thinking = new ThinkingRow(li, this.view.answers, { since: sent });
    this.onThinking(li);
    if (!this.link.ready && !early) note(li, 'note', t('reply.waitingPython'));
    const metrics = new ReplyMetrics(id, sent);
    this.live.set(id, {
      reply: new Reply(id, entry), li, userLi, userEntry, stream, metrics, store, conversation: this.shown,
      target: this.target(), early, thinking, thinkingSince: sent,
    });
    this.busyChanged();
    // (An answer sent early finishes on that path, also once Python is ready.)
    this.onRequest();
    if (early) this.early.send({ id, messages, settings });
    else this.link.send(this.overlay.apply({ type: 'chat.send', id, messages, settings }));
  }

  /** Whether a request with `settings` goes through the gateway now rather than wait
   * for Python: only before Python is ready, to the gateway that served the page
   * (early-send.js), and not while a host overlays its own settings on the page's
   * (they are applied on the way to Python: bridge/page/hosts.js). */
  sendsEarly(settings) {
    if (this.link.ready) return false;
    if (this.overlay.effective(settings) !== settings) return false;
    return sendsEarly(settings);
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
    const userEntry = promptOf(this.store.entries, entry);
    const id = this.newRequestId();
    const { li, stream } = this.view.addStreaming(id);
    this.elements.set(entry, li);
    const reply = new Reply(id, entry);
    if (entry.content) stream.append(entry.content);
    // Its thinking as it was: still thinking (the stored reasoning, continued by what
    // the stream brings after `stream.after`), or thought, or, with no answer and no
    // reasoning yet, waiting. The time goes on from what was stored.
    const thinkingSince = now() - (Number.isFinite(entry.reasoning_ms) ? entry.reasoning_ms : 0);
    let thinking = null;
    if (!entry.content) {
      thinking = new ThinkingRow(li, this.view.answers, {
        since: thinkingSince, phase: entry.reasoning ? 'reasoning' : 'waiting', reasoning: entry.reasoning ?? '',
      });
    } else if (entry.reasoning) {
      thinking = new ThinkingRow(li, this.view.answers, { phase: 'done', reasoning: entry.reasoning, ms: entry.reasoning_ms, live: true });
    }
    li.dataset.resumed = 'true';
    note(li, 'note', t('reply.reconnecting'));
    const metrics = new ReplyMetrics(id, now());
    this.live.set(id, {
      reply, li, userLi: this.elements.get(userEntry), userEntry, stream, metrics, store: this.store,
      conversation: this.shown, target: this.target(), thinking, thinkingSince,
    });
    const messages = conversation(this.settings.system, this.store.upTo(userEntry ?? entry));
    const { id: streamId, after } = entry.stream;
    this.onRequest();
    this.link.send(this.overlay.apply({
      type: 'chat.send', id, messages: messages.length ? messages : [{ role: 'user', content: '' }],
      settings: this.requestSettings(entry), resume: {
        stream: streamId, after, text: entry.content,
        // Only reasoning shown so far: a model thinking inline goes on inside `<think>`.
        ...(!entry.content && entry.reasoning ? { thinking: true } : {}),
      },
    }));
  }

  /** The `settings` of a request answered in `entry`: the page's, with the Thinking
   * level of the conversation shown (thinking-control.js; Auto sends none) and the
   * output limit the answer was given ("Continue with more room"). */
  requestSettings(entry) {
    const settings = this.settings.forRequest();
    const level = levelOf(this.shown);
    if (level !== 'auto') settings.reasoning = level;
    if (Number.isSafeInteger(entry?.max_tokens) && entry.max_tokens > 0) settings.max_tokens = entry.max_tokens;
    return settings;
  }

  newRequestId() {
    return `r${Date.now().toString(36)}${(this.counter++).toString(36)}`;
  }

  /** Stop the answer of the conversation shown (only that one). */
  stop() {
    for (const [id, r] of this.live) {
      if (r.conversation === this.shown) this.abort(id);
    }
  }

  /** Stop reply `id`, on whichever path it went. */
  abort(id) {
    if (this.live.get(id)?.early) this.early.abort(id);
    else this.link.send({ type: 'chat.abort', id });
  }

  /** Where the page's next chat would go: endpoint and model, host settings overlaid. */
  target() {
    const settings = this.settings.forRequest();
    return targetOf(this.overlay.effective(settings));
  }

  // ---- Python starting -------------------------------------------------------------

  /** Python's boot got this far: a prompt sent early says so while it waits. */
  booting(text) {
    if (this.link.ready) return;
    for (const r of this.live.values()) if (!r.early) note(r.li, 'note', t('reply.waitingPythonText', { text }));
  }

  /** Python is ready: prompts that waited for it are on their way (those sent through
   * the gateway meanwhile stream on as they were). */
  pythonReady() {
    for (const r of this.live.values()) if (!r.early) note(r.li, 'note', t('reply.sending'));
  }
}

// Where a request goes: endpoint, model, and the API it is spoken in (the dialect the
// core will choose: an outbox item written as a Chat Completions body must not go out
// as a Responses one unasked).
const targetOf = (settings) => ({
  base_url: settings.base_url ?? '',
  model: settings.model ?? '',
  api: apiFor(settings.api, settings.model ?? ''),
});
