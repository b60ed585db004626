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
// Boot: PyScript loads Pyodide through js/boot/pyodide-loader.js (pyscript.toml's
// `interpreter`), which restores a memory snapshot when there is one. That module
// reports each stage as a `boot.progress` event; `ready` carries the timings
// (`boot`), which the link places on the page's timeline (js/boot/timeline.js). Once
// Python is ready, the page is made ready for the next visit (js/boot/next-visit.js).

import '../boot/idb-fallback.js'; // before PyScript, which opens an IndexedDB map as it loads
import { RUNTIME } from '../boot/snapshot.js';
import { makeSnapshotInBackground, registerServiceWorker } from '../boot/next-visit.js';
import { BootProgress, wireBytes } from '../boot/progress.js';
import { onPageTimeline } from '../boot/timeline.js';
import { readEvent } from './envelope.js';
import { PROTOCOL_VERSION } from './protocol.js';

const DELTA_ACK = JSON.stringify({ v: PROTOCOL_VERSION, type: 'delta.ack' });
// Dropped messages are all counted; only the first few are worth a console line each.
const WARN_LIMIT = 20;

const now = () => performance.timeOrigin + performance.now();

// A first visit (no service worker yet) has Pyodide's runtime to download (4.6 MB as
// brotli). Start now, while the page and PyScript load: the worker's own requests for
// these files later find them in the HTTP cache (a 304). Later visits have them in the
// service worker's cache, where this would only read them twice. What arrives is
// counted, for the progress bar (js/boot/progress.js).
const firstVisit = typeof navigator !== 'undefined' && !navigator.serviceWorker?.controller;
const meter = new BootProgress(firstVisit ? RUNTIME.length : 0);
let onBytes = () => {};
async function prefetch(url) {
  try {
    const response = await fetch(url);
    const { total, scale } = wireBytes(response.headers);
    meter.expect(url, total);
    onBytes();
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      meter.add(url, value.byteLength * scale);
      onBytes();
    }
  } catch {
    // Offline, or cut: the worker asks again and reports what fails.
  } finally {
    meter.done(url);
    onBytes();
  }
}
if (firstVisit) for (const url of RUNTIME) prefetch(url);

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
    this.stages = {}; // boot stage → ms since bootStarted
    this.bootStarted = now();
    this.meter = meter;
    this.shown = null; // the last progress told, to tell only changes
    onBytes = () => this.progress();
  }

  /** Start Python. PyScript is imported here, after the page has painted. */
  async start({
    pyscript = 'vendor/pyscript/core.js', entry = 'py/boot.py', config = 'pyscript.toml',
    serviceWorker = 'sw.js',
  } = {}) {
    if (this.started) return;
    this.started = true;
    const base = document.baseURI;
    this.bootStarted = now();
    performance.mark('firsttoken:boot:start');
    this.serviceWorker = serviceWorker && new URL(serviceWorker, base).href;
    this.progress('pyscript');
    try {
      // (PyScript's own `py:progress` texts are not shown: they come in no fixed order.)
      // The config first, then PyScript, and from PyScript's import to PyWorker nothing
      // is awaited but PyScript itself. Its PyWorker (@pyscript/core 0.7.31, src/core.js:64)
      // awaits `configs.get(TYPE).plugins`, a function rather than a promise, and so takes
      // its worker hooks as they are at that moment: none, until the six plugin chunks
      // its import starts loading have arrived (src/core.js:186 and :302). A worker
      // without them is all we need. One with them gets PyScript's `pyscript` package,
      // imported before py/boot.py, which we never use, and building them calls
      // `Function(...)` on this thread (src/hooks.js:42). That is what failed the boot
      // under a CSP without 'unsafe-eval', whenever this config took longer to arrive
      // than those chunks (gateway/headers.py).
      const toml = await fetch(new URL(config, base)).then((r) => {
        if (!r.ok) throw new Error(`${config}: HTTP ${r.status}`);
        return r.text();
      });
      const interpreter = /^\s*interpreter\s*=\s*"([^"]+)"/m.exec(toml);
      if (!interpreter) throw new Error(`${config} names no interpreter`);
      // PyScript hands the worker over only once Python has run py/boot.py: too late
      // to hear how the boot went. So the loader reports its stages on a
      // BroadcastChannel whose name, unique to this page, travels as the fragment of
      // the interpreter's URL (`#<name>/`: js/boot/pyodide-loader.js says why the
      // slash); a fragment reaches neither the server nor any cache key.
      const channel = `firsttoken-boot-${typeof crypto.randomUUID === 'function' ? crypto.randomUUID() : Math.random().toString(36).slice(2)}`;
      if (typeof BroadcastChannel === 'function') {
        this.bootChannel = new BroadcastChannel(channel);
        this.bootChannel.onmessage = (event) => this.receive(event.data);
      }
      const core = await import(new URL(pyscript, base).href);
      // The config goes as text (PyScript parses it), so it is fetched once.
      const worker = await core.PyWorker(new URL(entry, base).href, {
        config: toml,
        version: `${new URL(interpreter[1], base).href}#${channel}/`,
      });
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
      this.progress('hello');
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
    if (msg.type === 'boot.progress') this.onBootProgress(msg);
    else if (msg.type === 'ready' && !this.ready) this.onReady(msg);
    this.emit('message', msg);
  }

  onBootProgress(msg) {
    this.stages[msg.stage] = Math.round(now() - this.bootStarted);
    // User Timing marks: tests and benchmarks wait on them (e.g. the snapshot stored).
    performance.mark(`firsttoken:boot:${msg.stage}`, { detail: msg });
    // The gateway's snapshot, when the loader chose to download it, counts as Python too.
    if (msg.stage === 'snapshot.fetch' && msg.bytes > 0) this.meter.expect('snapshot', msg.bytes);
    if (msg.stage === 'snapshot') this.meter.done('snapshot');
    if (!this.ready) this.progress(msg.stage);
    if (msg.stage === 'snapshot.failed') console.warn('firsttoken: no snapshot was made:', msg.error);
  }

  onReady(msg) {
    this.ready = true;
    msg.boot = this.boot = onPageTimeline(msg.boot, this.bootStarted, now());
    this.lastReady = msg;
    // A User Timing mark: benchmarks and tests read the boot record from it.
    performance.mark('firsttoken:python-ready', { detail: this.boot });
    for (const queued of this.queue.splice(0)) this.post(queued);
    this.progress('ready');
    registerServiceWorker(this.serviceWorker);
    if (this.boot.snapshot !== 'restored') makeSnapshotInBackground((text) => this.receive(text));
  }

  /** Move the boot line to `stage` (if it is past the one shown) and tell listeners
   * what changed; without a stage, the byte count moved. */
  progress(stage = null) {
    if (stage) this.meter.stage(stage);
    const view = this.meter.view();
    const fraction = view.fraction === null ? null : Math.round(view.fraction * 1000) / 1000;
    if (this.shown && this.shown.text === view.text && this.shown.fraction === fraction) return;
    this.shown = { ...view, fraction };
    this.emit('progress', this.shown);
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
