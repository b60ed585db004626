// @ts-check
// One answer's text, assembled once, from what the page receives: the `chat.delta`
// texts in order, and, when the reply fails, the text of `chat.error.error.partial`
// that no delta brought (the core sends everything it received as deltas first, so
// this is a guard, not the rule). `chat.done.content`, which repeats the answer, is not
// read: the answer on screen and in history is what the deltas assembled.
//
// The model's reasoning (`chat.delta.reasoning`: what it thought before answering, in
// any wire shape the core reads) is assembled beside it, into the entry's `reasoning`.
// Both are taken and painted together, frame by frame, so that the stream event kept
// with them (`stream.after`) describes the answer *and* its reasoning: a resume after a
// reload asks for exactly what neither has yet, and the resumed reasoning continues the
// stored one, nothing doubled.
//
// The text lives in the answer's history entry, so the conversation sent or counted
// while the answer still streams holds what has been painted of it.

export class Reply {
  /** `entry`: the answer's history entry, `{role: 'assistant', content: ''}`. */
  constructor(id, entry) {
    this.id = id;
    this.entry = entry;
    this.pending = ''; // answer text received, not yet painted
    this.pendingReasoning = ''; // reasoning received, not yet painted
    this.pendingEvent = 0; // the last stream event the pending text completes
  }

  /** The text painted so far. */
  get text() {
    return this.entry.content;
  }

  /** Whether anything received waits for a paint. */
  get waiting() {
    return Boolean(this.pending || this.pendingReasoning);
  }

  /** A `chat.delta`'s text (and reasoning) arrived; `event`: the last stream event it
   * completes. */
  take(text, event = 0, reasoning = '') {
    if (typeof text === 'string') this.pending += text;
    if (typeof reasoning === 'string') this.pendingReasoning += reasoning;
    if (Number.isSafeInteger(event) && event > this.pendingEvent) this.pendingEvent = event;
  }

  /** Whatever the core received that the page has not: the tail of `partial` (all the
   * text the core received) beyond what the deltas brought, if it extends it. */
  reconcile(partial) {
    const have = this.entry.content + this.pending;
    if (typeof partial === 'string' && partial.length > have.length && partial.startsWith(have)) {
      this.pending += partial.slice(have.length);
    }
  }

  /** The received text and reasoning not yet painted, now counted as painted
   * (`{text, reasoning}`): a resumable answer's entry keeps, with them, the last stream
   * event painted (`stream.after`), so that a resume after a reload asks for exactly
   * what is not on screen. */
  flush() {
    const text = this.pending;
    const reasoning = this.pendingReasoning;
    this.entry.content += text;
    if (reasoning) this.entry.reasoning = (this.entry.reasoning ?? '') + reasoning;
    this.pending = '';
    this.pendingReasoning = '';
    const { stream } = this.entry;
    if (stream && this.pendingEvent > stream.after) stream.after = this.pendingEvent;
    return { text, reasoning };
  }
}
