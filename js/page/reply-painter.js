// What the replies put on screen as they stream: text at most once per animation frame,
// and, once a reply is over, its latency and the quota in the header. The stream
// re-renders the open block only, so a frame's cost does not grow with the answer.
//
// Reasoning is painted in the same frame as answer text, by the reply's thinking row
// (thinking.js): its one-line preview, and its panel only while the user has it open.
// A reasoning paint is a paint (reply-metrics.js counts it, apart from the answer's).

import { describeMetrics } from '../render/reply-metrics.js';
import { FramePacer, note } from './messages.js';
import { quotaText } from './status-text.js';

export class ReplyPainter {
  /** `live`: the replies on their way (request id → reply record, replies.js); `view`:
   * the MessageList; `header`: the {metrics, quota} lines; `link`: told each reply's
   * metrics (an embedding host listens). */
  constructor({ live, view, header, link }) {
    Object.assign(this, { live, view, header, link });
    this.frames = new FramePacer((inFrame) => this.paint(inFrame));
  }

  /** Text arrived: painted in the next animation frame. */
  request() {
    this.frames.request();
  }

  /** Text received since the last frame goes into the DOM (`inFrame`: called from an
   * animation frame, for the metrics). */
  paint(inFrame) {
    for (const r of this.live.values()) {
      if (!r.reply.waiting) continue;
      const { text, reasoning } = r.reply.flush();
      const { entry } = r.reply;
      if (reasoning) {
        r.thinking?.reason(entry.reasoning);
        if (!entry.content) entry.reasoning_ms = thoughtFor(r);
      }
      if (text) {
        // The answer begins: "Thought for N s", or the row goes and the answer takes
        // its place, in this very frame (nothing shifts between the two).
        if (r.thinking?.phase !== 'done' && entry.reasoning) entry.reasoning_ms = thoughtFor(r);
        r.thinking?.answerBegins(entry.reasoning_ms);
        r.stream.append(text);
      }
      r.li.dataset.paints = String(+(r.li.dataset.paints || 0) + 1);
      // The streaming caret is made anew each paint (page.css says why: no shift). The
      // switch is on the open block, not the message: an attribute an ancestor selector
      // reads makes the browser restyle everything under the element it changed on,
      // and on the message that was the whole answer every frame (bench-render: the
      // page's chunk-to-paint p95 went from 1.0x plain text to 1.4-1.6x).
      r.stream.renewCaret?.(); // a plain-text stream (bench/plain-text.js) has no caret
      r.metrics.painted(inFrame, { reasoning: Boolean(reasoning), answer: Boolean(text) });
    }
    this.view.follow();
  }

  /** The reply's latency, once its last paint is in: under it (behind Details), kept on
   * its element, in the header, and told to whoever listens to the link. */
  showMetrics(li, summary) {
    const line = describeMetrics(summary);
    li.dataset.metrics = JSON.stringify(summary);
    note(li, 'reply-metrics', line);
    this.header.metrics.textContent = line;
    delete this.header.metrics.dataset.i18n; // filled: no longer the placeholder line
    this.header.metrics.dataset.reply = 'true';
    this.link.emitMetrics(summary);
  }

  showQuota(quota) {
    const text = quotaText(quota);
    if (text !== null) {
      this.header.quota.textContent = text;
      delete this.header.quota.dataset.i18n;
    }
  }
}

/** How long reply `r` has thought so far: from its Send (for a resumed answer, the
 * moment the stored time says it began), ms. */
export function thoughtFor(r) {
  return Math.round(performance.timeOrigin + performance.now() - r.thinkingSince);
}
