// The replies in flight: each prompt sent becomes a `chat.send`, and the core's events
// about it (bridge/PROTOCOL.md) are painted under it: text at most once per animation
// frame, notes while it waits or retries, what Python did to the prompt, and how it
// ended. The answer's text is assembled by reply.js; its latency by reply-metrics.js.
// A failed reply offers Retry: the same turn sent again as a new reply in its place.

import { ReplyMetrics, describeMetrics } from '../render/reply-metrics.js';
import { conversation } from './conversation.js';
import { FramePacer, note, offerRetry, removeNote } from './messages.js';
import { Reply } from './reply.js';
import { describeError, preparedText, quotaText, retryText, stallText, waitText } from './status-text.js';

const now = () => performance.timeOrigin + performance.now();

export class Replies {
  /** `link`: the page's PythonLink; `view`: the MessageList; `history`, `settings`: the
   * page's; `header`: the {metrics, quota} lines; `onSettled()`: after each reply ends;
   * `onStarted()`: after a Retry sent a reply again. */
  constructor({ link, view, history, settings, header, onSettled, onStarted }) {
    Object.assign(this, { link, view, history, settings, header, onSettled, onStarted });
    this.live = new Map(); // request id → {reply, li, userLi, userEntry, stream, metrics}
    this.counter = 0;
    this.frames = new FramePacer((inFrame) => this.paint(inFrame));
  }

  get streaming() {
    return this.live.size > 0;
  }

  /** Show `text` as the user's message and send the conversation with it. */
  send(text) {
    const userEntry = this.history.add('user', text);
    const userLi = this.view.add('user', text);
    this.start(userEntry, userLi);
    this.view.stickToEnd();
  }

  /** Send the conversation up to `userEntry` (the turn to answer), its answer shown in
   * a new element, in place of `replacing` when given. */
  start(userEntry, userLi, replacing = null) {
    const id = `r${Date.now().toString(36)}${(this.counter++).toString(36)}`;
    const messages = conversation(this.settings.system, this.history.upTo(userEntry));
    const entry = this.history.insertAfter(userEntry, 'assistant', '');
    this.history.save();
    const { li, stream } = this.view.addStreaming(id, replacing);
    if (!this.link.ready) note(li, 'note', 'Waiting for Python to start…');
    const metrics = new ReplyMetrics(id, now());
    this.live.set(id, { reply: new Reply(id, entry), li, userLi, userEntry, stream, metrics });
    this.link.send({ type: 'chat.send', id, messages, settings: this.settings.forRequest() });
  }

  /** Retry a failed reply `r`: its text (if any) leaves the history, and the same turn
   * goes out again as a new reply in its place. Only ever on the user's word. */
  retry(r) {
    this.history.remove(r.reply.entry);
    this.start(r.userEntry, r.userLi, r.li);
    this.onStarted?.();
  }

  /** Stop every reply in flight. */
  stop() {
    for (const id of this.live.keys()) this.link.send({ type: 'chat.abort', id });
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

  /** A protocol event about one of the replies (others are ignored). */
  onEvent(msg) {
    const r = this.live.get(msg.id);
    if (!r) return;
    switch (msg.type) {
      case 'chat.delta':
        removeNote(r.li, 'note');
        removeNote(r.li, 'stall');
        r.reply.take(msg.text);
        r.metrics.arrived(msg);
        this.frames.request();
        break;
      case 'chat.prepared': {
        const { saved, fit } = preparedText(msg);
        if (saved) {
          note(r.userLi, 'note', saved.text);
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
      case 'notice': // not an error, but worth knowing (e.g. the prompt cache fell back to memory)
        note(r.li, 'notice', msg.message).dataset.code = msg.code;
        break;
      case 'chat.done':
        this.finish(r, 'done', msg);
        break;
      case 'chat.error':
        this.finish(r, msg.error?.code === 'aborted' ? 'stopped' : 'error', msg);
        break;
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
    r.metrics.close(msg).then((summary) => this.showMetrics(r.li, summary));
    this.live.delete(r.reply.id);
    r.li.dataset.state = state;
    removeNote(r.li, 'note');
    removeNote(r.li, 'stall');
    if (state !== 'done') {
      note(r.li, 'error', describeError(msg.error, { baseUrl: this.settings.baseUrl }));
      offerRetry(r.li, () => this.retry(r));
    }
    if (!r.reply.text) {
      // Keep an empty failed answer out of the conversation sent next time.
      this.history.remove(r.reply.entry);
    } else if (state !== 'done') {
      r.reply.entry.incomplete = true;
    }
    this.history.save();
    this.showQuota(msg.quota);
    this.onSettled?.(r.li, state, msg);
  }

  // The reply's latency, once its last paint is in: under it, kept on its element, in
  // the header, and told to whoever listens to the link (an embedding host).
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
