// @ts-check
// Where the time of one reply went, measured as the user sees it: from Send to the
// request leaving, to the first byte, to the first text parsed, to the first paint,
// then tokens per second and the latency from each chunk to its paint.
//
// The core's moments come in the protocol (`chat.done.timings`, `chat.delta.t`), the
// server's send stamps in `chat.delta.stamps` (firsttoken's built-in model with
// `stamp=1`); all are epoch milliseconds, as is `timeOrigin + now()` here, so the
// clocks of the page, the worker and a local gateway agree.
//
// A reasoning model's reply paints twice over: its reasoning (the thinking row's
// preview, js/page/thinking.js), then its answer. Both are paints (every chunk's
// latency is in `chunk_to_paint_ms`, reasoning's too), and the first of each is timed
// apart: `send_to_first_reasoning_paint_ms` is the first sign of thought,
// `send_to_first_answer_paint_ms` the first answer token on screen.
//
// Paint time is when the browser has painted, not when we changed the DOM: a message
// posted from an animation-frame callback runs once that frame's style, layout and
// paint are done (they run after the callbacks, in the same task).

import { t } from '../page/i18n.js';

const now = () => performance.timeOrigin + performance.now();

const channel = new MessageChannel();
const afterRender = [];
channel.port1.onmessage = () => afterRender.shift()?.(now());

function whenRendered(callback) {
  afterRender.push(callback);
  channel.port2.postMessage(null);
}

/** Call `callback(t)` once the DOM as it is now has been painted. `inFrame`: we are
 * inside a requestAnimationFrame callback, so this very frame paints it. */
export function afterPaint(callback, inFrame) {
  if (inFrame) whenRendered(callback);
  else requestAnimationFrame(() => whenRendered(callback));
}

// Long tasks (50 ms and over) as Chromium reports them; the ones overlapping a reply
// are its worst stall. Kept short: only recent ones matter.
const longTasks = [];
try {
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) longTasks.push([performance.timeOrigin + e.startTime, e.duration]);
    if (longTasks.length > 256) longTasks.splice(0, longTasks.length - 256);
  }).observe({ type: 'longtask', buffered: true });
} catch { /* not supported (WebKit): longest_task_ms is then null */ }
const longTasksSupported = PerformanceObserver.supportedEntryTypes?.includes('longtask') ?? false;

function percentile(sorted, p) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
const round = (x) => (x == null ? null : Math.round(x * 10) / 10);
const span = (a, b) => (a != null && b != null ? round(b - a) : null);

/** The measurements of one reply, fed by the page as deltas arrive and get painted. */
export class ReplyMetrics {
  constructor(id, sent) {
    this.id = id;
    this.sent = sent;
    this.firstPaint = null;
    this.firstReasoningPaint = null;
    this.firstAnswerPaint = null;
    this.clock = null; // 'server': gateway send stamps; 'core': the worker's parse time
    this.waiting = []; // [sent (or parsed), parsed, arrived] of each chunk not yet painted
    this.samples = []; // chunk-to-paint, ms
    this.legs = { core: [], page: [], paint: [] }; // where that time went, per chunk
    this.inflight = 0; // paints not yet reported by the browser
    this.settled = null;
  }

  /** A `chat.delta` arrived. */
  arrived(msg) {
    const at = now();
    const parsed = typeof msg.t === 'number' ? msg.t : at;
    if (Array.isArray(msg.stamps) && msg.stamps.length) {
      this.clock = 'server';
      // A merged delta (flow control) carries the parse time of its first part: a later
      // part was parsed no earlier than it was sent, and its wait for the page's ack
      // counts in the page leg.
      for (const s of msg.stamps) if (typeof s === 'number') this.waiting.push([s, Math.max(parsed, s), at]);
    } else if (typeof msg.t === 'number') {
      this.clock ??= 'core';
      this.waiting.push([msg.t, parsed, at]);
    }
  }

  /** Everything that arrived is in the DOM now; `kinds`: whether it held reasoning,
   * answer text, or both (unknown: answer). */
  painted(inFrame, { reasoning = false, answer = !reasoning } = {}) {
    const batch = this.waiting;
    this.waiting = [];
    this.inflight += 1;
    afterPaint((t) => {
      if (this.firstPaint === null) this.firstPaint = t;
      if (reasoning && this.firstReasoningPaint === null) this.firstReasoningPaint = t;
      if (answer && this.firstAnswerPaint === null) this.firstAnswerPaint = t;
      for (const [sent, parsed, at] of batch) {
        this.samples.push(t - sent);
        this.legs.core.push(parsed - sent); // network and the core's parsing (0 without server stamps)
        this.legs.page.push(at - parsed); // the worker-to-page message
        this.legs.paint.push(t - at); // waiting for a frame, and painting it
      }
      this.inflight -= 1;
      if (this.inflight === 0) this.settled?.();
    }, inFrame);
  }

  /** The reply ended (`chat.done` or `chat.error`): its summary, once the last paint is in. */
  async close(msg) {
    if (this.inflight > 0) await new Promise((resolve) => { this.settled = resolve; });
    return this.summary(msg);
  }

  summary(msg) {
    const t = msg.timings || {};
    const done = t.done ?? now();
    const tokens = msg.usage?.completion_tokens;
    const sorted = this.samples.slice().sort((a, b) => a - b);
    let longest = null;
    if (longTasksSupported) {
      longest = 0;
      for (const [start, duration] of longTasks) {
        if (start + duration >= this.sent && start <= done) longest = Math.max(longest, duration);
      }
    }
    return {
      id: this.id,
      send_to_request_ms: span(this.sent, t.send),
      send_to_first_byte_ms: span(this.sent, t.first_byte),
      send_to_first_delta_ms: span(this.sent, t.first_delta),
      send_to_first_paint_ms: span(this.sent, this.firstPaint),
      send_to_first_reasoning_paint_ms: span(this.sent, this.firstReasoningPaint),
      send_to_first_answer_paint_ms: span(this.sent, this.firstAnswerPaint),
      first_byte_to_first_paint_ms: span(t.first_byte, this.firstPaint),
      completion_tokens: tokens ?? null,
      tokens_per_s: tokens && t.first_delta != null && t.done > t.first_delta
        ? round(tokens / ((t.done - t.first_delta) / 1000)) : null,
      chunk_clock: this.clock,
      chunks: sorted.length,
      chunk_to_paint_ms: {
        p50: round(percentile(sorted, 50)),
        p95: round(percentile(sorted, 95)),
        max: round(sorted[sorted.length - 1] ?? null),
      },
      // Every chunk's latency, in arrival order of its paint (ms, 0.1 ms steps): what a
      // benchmark plots as a distribution (bench/native.py).
      chunk_to_paint_samples_ms: this.samples.map(round),
      // The same, split: server → core parsed, core → page, page → painted (p50 / p95).
      chunk_legs_ms: Object.fromEntries(Object.entries(this.legs).map(([leg, xs]) => {
        const s = xs.slice().sort((a, b) => a - b);
        return [leg, [round(percentile(s, 50)), round(percentile(s, 95))]];
      })),
      long_task_ms: round(longest), // the longest task of 50 ms or more; 0: none
    };
  }
}

/** The summary in one line (under the reply, and in the header), in the reader's
 * language (js/page/i18n.js, `metrics.*`: each figure one message). */
export function describeMetrics(m) {
  const ms = (x) => (x == null ? '–' : `${Math.round(x)}`);
  const parts = [
    t('metrics.out', { v: ms(m.send_to_request_ms) }),
    t('metrics.firstByte', { v: ms(m.send_to_first_byte_ms) }),
    t('metrics.parsed', { v: ms(m.send_to_first_delta_ms) }),
    t('metrics.painted', { v: ms(m.send_to_first_paint_ms) }),
  ];
  // A reply that reasoned: when its thinking showed, and when its answer did.
  if (m.send_to_first_reasoning_paint_ms != null) {
    parts.push(t('metrics.reasoning', { v: ms(m.send_to_first_reasoning_paint_ms) }),
      t('metrics.answer', { v: ms(m.send_to_first_answer_paint_ms) }));
  }
  if (m.tokens_per_s != null) parts.push(t('metrics.rate', { v: String(Math.round(m.tokens_per_s)) }));
  if (m.chunks) {
    parts.push(t('metrics.chunkToPaint', { p50: ms(m.chunk_to_paint_ms.p50), p95: ms(m.chunk_to_paint_ms.p95) }));
  }
  if (m.long_task_ms) parts.push(t('metrics.longTask', { v: ms(m.long_task_ms) }));
  return parts.join(' · ');
}
