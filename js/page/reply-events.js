// @ts-check
// Python's events about a reply (bridge/PROTOCOL.md, "Events"), each turned into what the
// page does with it: text to paint, a note while it waits, retries, stalls or
// reconnects, what Python did to the prompt, and how the reply ended (`finish`).

import { showCompressionNote } from '../render/compression-note.js';
import { locale, t } from './i18n.js';
import { note, removeNote } from './messages.js';
import { thoughtFor } from './reply-painter.js';
import { preparedText, reconnectingText, retryText, stallText, waitText } from './status-text.js';

/** A protocol event about one of `replies`' replies (others are ignored). */
export function applyEvent(replies, msg) {
  const r = replies.live.get(msg.id);
  if (!r) return;
  switch (msg.type) {
    case 'chat.delta':
      removeNote(r.li, 'note');
      removeNote(r.li, 'stall');
      r.reply.take(msg.text, msg.event, msg.reasoning);
      r.metrics.arrived(msg);
      replies.painter.request();
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
      replies.painter.showQuota(msg.quota);
      break;
    case 'chat.retry':
      note(r.li, 'note', retryText(msg));
      replies.painter.showQuota(msg.quota);
      break;
    case 'chat.stall': // the core measures the silence (bridge/PROTOCOL.md, "Stalls and timeouts")
      // A connected silence is a model thinking. While the reply's thinking row is
      // live it says just that ("Thinking… 42 s", its own timer): a second line with a
      // second count would tell a person on a phone nothing new, take a line of a small
      // screen and move what is under it. Once the answer began (the row says "Thought
      // for N s" or is gone), the note says the model is still thinking. A silence with
      // no byte at all is another matter, the connection may be gone: always said.
      if (msg.connected && r.thinking?.shown && r.thinking.phase !== 'done') removeNote(r.li, 'stall');
      else note(r.li, 'stall', stallText(msg));
      break;
    case 'chat.stall.cleared':
      removeNote(r.li, 'stall');
      break;
    case 'chat.stream': {
      // Kept with the answer from now on: after a reload, the rest is asked for.
      const entry = r.reply.entry;
      if (typeof msg.stream === 'string') {
        entry.stream = { id: msg.stream, base_url: r.target.base_url, after: 0 };
        r.store.save(entry);
      }
      break;
    }
    case 'chat.reconnecting':
      removeNote(r.li, 'stall');
      note(r.li, 'note', reconnectingText(msg));
      break;
    case 'notice': { // not an error, but worth knowing (e.g. the prompt cache fell back to memory)
      // The core words it in English, with its detail (what failed, and how), which an
      // English reader keeps. In another language it is worded by its code, the core's
      // English then the note's title; a code the catalogue lacks shows the core's.
      const key = /** @type {import('./i18n.js').Key} */ (`notice.${msg.code}`);
      const worded = locale() === 'en' ? key : t(key);
      const el = note(r.li, 'notice', worded === key ? msg.message : worded);
      el.dataset.code = msg.code;
      if (worded !== key) el.title = msg.message;
      break;
    }
    case 'chat.done':
      finish(replies, r, 'done', msg);
      break;
    case 'chat.error': {
      const code = msg.error?.code;
      const interrupted = (code === 'aborted' && r.interrupted) || code === 'stream_gone';
      finish(replies, r, interrupted ? 'interrupted' : code === 'aborted' ? 'stopped' : 'error', msg);
      break;
    }
    case 'error':
      finish(replies, r, 'error', msg);
      break;
  }
}

// The reply `r` ended in `state`: painted whole, its entry settled and saved (or queued
// again, when it went offline before any text), its ending shown.
function finish(replies, r, state, msg) {
  // Nothing received may be lost: text the deltas did not bring is taken from the
  // error's `partial`, and what is pending is painted now.
  r.reply.reconcile(msg.error?.partial);
  replies.painter.paint(false);
  r.stream.end(); // the open block is final now
  const entry = r.reply.entry;
  // The thinking row: "Thought for N s" if the model reasoned and no answer came to
  // say so, else gone (an answer of no text with no reasoning ends as it always did).
  if (entry.reasoning && !entry.content) entry.reasoning_ms = thoughtFor(r);
  r.thinking?.end(entry.reasoning_ms);
  // What must go back to this API and model on later turns (signatures, encrypted
  // reasoning: bridge/PROTOCOL.md, `chat.done.replay`), kept as the core gave it; the
  // reasoning text itself never goes back (conversation.js).
  if (state === 'done' && isReplay(msg.replay)) entry.replay = msg.replay;
  else delete entry.replay;
  // Cut while thinking: the output limit went to reasoning, no answer came. Kept, so
  // that after a reload it still says so and offers "Continue with more room"
  // (message-actions.js), with what it spent.
  if (state === 'done' && msg.finish_reason === 'length' && !entry.content) {
    const spent = msg.usage?.completion_tokens;
    entry.cut = { tokens: Number.isSafeInteger(spent) && spent > 0 ? spent : null };
  } else {
    delete entry.cut;
  }
  // Its latency line is there from now on (hidden, behind Details among the actions),
  // its figures once the last paint is measured: nothing under the answer moves then.
  note(r.li, 'reply-metrics', t('reply.measuring'));
  r.metrics.close(msg).then((summary) => replies.painter.showMetrics(r.li, summary));
  replies.live.delete(r.reply.id);
  removeNote(r.li, 'note');
  removeNote(r.li, 'stall');
  const offline = state === 'error' && msg.error?.code === 'offline' && !entry.content;
  if (offline) {
    replies.outboxSender.wentOffline(r); // the prompt waits for the connection instead
  } else {
    entry.state = state;
    if (state === 'error') entry.error = storedError(msg.error);
  }
  delete entry.stream; // settled: nothing left to resume
  r.store.save(entry);
  r.li.dataset.state = entry.state;
  if (r.conversation === replies.shown) replies.actions.showEnding(entry, r.li, msg.error);
  replies.painter.showQuota(msg.quota);
  replies.busyChanged();
  replies.onSettled?.(r.li, state, msg, entry);
  replies.outboxSender.flush();
}

// What is kept of an error for the next visit: what describeError reads, no `partial`
// (the text is the answer's content already).
function storedError(error) {
  if (!error) return { code: 'error', message: '' };
  const { code, message, status, timeout_s: timeoutS } = error;
  return { code, message, ...(status != null && { status }), ...(timeoutS != null && { timeout_s: timeoutS }) };
}

/** A `chat.done.replay` as the core sends it: `{api, model, items: [...]}`. */
export function isReplay(replay) {
  return Boolean(replay) && typeof replay === 'object' && typeof replay.api === 'string'
    && typeof replay.model === 'string' && Array.isArray(replay.items) && replay.items.length > 0;
}
