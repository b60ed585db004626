// @ts-check
// The page's link to the Python core, which runs in a PyScript worker.
//
// The link speaks the firsttoken protocol, v1 (bridge/PROTOCOL.md): JSON text
// messages with a `type` and, for requests, an `id`. It is the one object that
// page code and host adapters (bridge/) use to drive Python and to hear from it:
//
//   import { link } from './js/link/python-link.js';  // the page's one link
//   link.send({ type: 'chat.send', id, messages, settings });
//       A protocol request, as an object (`v` is added). Requests sent before
//       Python is ready are queued, in order, and go out once it answers `hello`,
//       so nobody waits on Python to accept input. Anything but an object with
//       a string `type` is a TypeError (the core answers the rest: PROTOCOL.md).
//   link.addEventListener('message', (e) => e.detail);
//       Every protocol event from the core, after its envelope was checked
//       (envelope.js): `ready`, `boot.progress`, `chat.*`, `tokens.counted`,
//       `notice`, `error`, `pong`. Events that fail the check are dropped,
//       counted in `link.dropped` and warned about on the console; the link
//       never throws on what it receives.
//   link.addEventListener('metrics', (e) => e.detail);
//       Each reply's latency summary (js/render/reply-metrics.js), once its last
//       paint is in; also dispatched on `window` as `firsttoken:metrics`. The page
//       measures it and hands it over with `link.emitMetrics(summary)`.
//   link.lastReady
//       The last `ready` event (null before): replay it to a host that attaches
//       after Python came up. `link.ready` says whether it has come.
//   link.addEventListener('progress', (e) => e.detail);   // {text, stage, fraction}: a boot line
//       that only moves forward, and on a first visit the share of Python downloaded
//       (`fraction`, 0–1; null when there is no bar to show): js/boot/progress.js
//   link.addEventListener('failed', (e) => e.detail);     // {message}: Python did not start
//   link.start();   // the page's entry calls this once; a host never needs to
//
// Boot: starting Python (PyScript's worker, the snapshot, the boot line, the next
// visit) is js/boot/boot.js's; the link starts it, hands it the boot's events, and
// keeps the messaging.

import { python } from '../boot/boot.js';
import { readEvent } from './envelope.js';
import { PROTOCOL_VERSION } from './protocol.js';

const DELTA_ACK = JSON.stringify({ v: PROTOCOL_VERSION, type: 'delta.ack' });
// Dropped messages are all counted; only the first few are worth a console line each.
const WARN_LIMIT = 20;

export class PythonLink extends EventTarget {
  constructor() {
    super();
    this.started = false;
    this.ready = false;
    this.lastReady = null;
    this.boot = null; // the `boot` record of `ready`, on the page's timeline
    this.dropped = 0; // received messages that failed the envelope check
    this.worker = null;
    this.port = null;
    this.queue = [];
    this.booting = python; // started early by js/boot/early.js, or by start()
  }

  /** Start Python (js/boot/boot.js), then open the protocol's channel with `hello`. */
  async start(options = {}) {
    if (this.started) return;
    this.started = true;
    try {
      this.booting.listen({ receive: (text) => this.receive(text), onProgress: (view) => this.emit('progress', view) });
      const worker = await this.booting.start(options);
      this.worker = worker;
      // PyScript's own channel carries its values (not text) too: only text is ours.
      worker.addEventListener('message', (event) => {
        if (typeof event.data === 'string') this.receive(event.data);
      });
      // The protocol gets a channel of its own, handed over with `hello`: on the
      // worker's own channel every message also goes through PyScript's listeners,
      // which cost as much as ours on a slow phone at hundreds of deltas a second.
      let hand = [];
      if (typeof MessageChannel === 'function') {
        const port = new MessageChannel();
        port.port1.onmessage = (event) => this.receive(event.data);
        this.port = port.port1;
        hand = [port.port2];
      }
      this.booting.progress('hello');
      // `flow`: we acknowledge each chat.delta as we take it, and the core holds what
      // arrives meanwhile (flow control, bridge/PROTOCOL.md), so a fast stream costs
      // this thread one message per turn of its event loop, not one per chunk.
      worker.postMessage(JSON.stringify({ v: PROTOCOL_VERSION, type: 'hello', id: 'hello', flow: true }), hand);
    } catch (error) {
      this.emit('failed', { message: String(error && error.message || error) });
    }
  }

  /** Send a protocol request (an object with a string `type`); queued until Python is ready. */
  send(request) {
    if (!request || typeof request !== 'object' || typeof request.type !== 'string') {
      throw new TypeError('a protocol request is an object with a string `type`');
    }
    const text = JSON.stringify({ v: PROTOCOL_VERSION, ...request });
    if (this.ready) this.post(text);
    else this.queue.push(text);
  }

  /** Tell listeners (and `window`, as `firsttoken:metrics`) a reply's metrics summary. */
  emitMetrics(summary) {
    this.emit('metrics', summary);
    window.dispatchEvent(new CustomEvent('firsttoken:metrics', { detail: summary }));
  }

  // ---- inside the link ------------------------------------------------------------
  receive(data) {
    const { event: msg, reason } = readEvent(data);
    if (!msg) {
      this.dropped += 1;
      if (this.dropped <= WARN_LIMIT) console.warn(`firsttoken: dropped a message from Python (${reason})`);
      return;
    }
    if (msg.type === 'chat.delta') this.post(DELTA_ACK);
    if (msg.type === 'boot.progress') this.booting.stage(msg, this.ready);
    else if (msg.type === 'ready' && !this.ready) this.onReady(msg);
    this.emit('message', msg);
  }

  onReady(msg) {
    this.ready = true;
    msg.boot = this.boot = this.booting.timeline(msg.boot);
    this.lastReady = msg;
    // A User Timing mark: benchmarks and tests read the boot record from it.
    performance.mark('firsttoken:python-ready', { detail: this.boot });
    for (const queued of this.queue.splice(0)) this.post(queued);
    this.booting.ready(this.boot, (text) => this.receive(text));
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  post(text) {
    (this.port ?? this.worker)?.postMessage(text);
  }
}

/** The page's one link to Python: the page and host adapters share it. */
export const link = new PythonLink();
