// Starting Python for the page: PyScript loads Pyodide through
// js/boot/pyodide-loader.js (pyscript.toml's `interpreter`), which restores a memory
// snapshot when there is one. That module reports each stage as a `boot.progress`
// event; `ready` carries the timings (`boot`), placed here on the page's timeline
// (timeline.js). Once Python is ready, the page is made ready for the next visit
// (next-visit.js). The boot line and the download's share are progress.js's.
//
// The page has one PythonBoot (`python`). Its first module (js/boot/early.js, an async
// module of its own in index.html) starts the worker, so Python boots while the rest of
// the page's modules are still being fetched and evaluated: a warm boot spent about a
// third of its time waiting for that graph (about 300 ms of 1.1 s here) before the worker
// even started. The link to Python (js/link/python-link.js) takes the started worker over
// once the page is built (`listen`, then `start`), with what the boot said meanwhile;
// the messaging is the link's.

import './idb-fallback.js'; // before PyScript, which opens an IndexedDB map as it loads
import { RUNTIME } from './snapshot.js';
import { makeSnapshotInBackground, registerServiceWorker } from './next-visit.js';
import { BootProgress, wireBytes } from './progress.js';
import { onPageTimeline } from './timeline.js';

const now = () => performance.timeOrigin + performance.now();

// A first visit (no service worker yet) has Pyodide's runtime to download (4.6 MB as
// brotli). Start now, while the page and PyScript load: the worker's own requests for
// these files later find them in the HTTP cache (a 304). Later visits have them in the
// service worker's cache, where this would only read them twice. What arrives is
// counted, for the progress bar (js/boot/progress.js).
const firstVisit = typeof navigator !== 'undefined' && !navigator.serviceWorker?.controller;
const meter = new BootProgress(firstVisit ? RUNTIME.length : 0);

// But not before the page itself (issue 45, item 2). On a slow link those 4.6 MB are
// most of what the link carries for half a minute, and a link is one queue: begun at
// once, they sat ahead of the page's styles (the composer showed later) and of the
// answer to a prompt sent meanwhile (bench/network.py, shaped 3G: its first token came
// 8 s after Send, against the plain page's 2 s). A prompt needs no Python on a first
// visit (js/boot/first-send.js, js/page/early-send.js: the gateway prepares it), so
// here the download and the worker wait for the page's own load (its modules and
// styles), then for every answer sent through the gateway meanwhile to end. Python is
// ready that much later on a first visit; later visits (the service worker's cache)
// start at once, as before.
const pageFirst = firstVisit && typeof document !== 'undefined' ? linkFree() : Promise.resolve();

async function linkFree() {
  if (document.readyState !== 'complete') {
    await new Promise((resolve) => window.addEventListener('load', resolve, { once: true }));
  }
  const early = /** @type {any} */ (globalThis).firsttokenFirstSend;
  while (early?.inFlight() > 0) {
    await new Promise((resolve) => window.addEventListener(early.IDLE, resolve, { once: true }));
  }
}
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
if (firstVisit) pageFirst.then(() => { for (const url of RUNTIME) prefetch(url); });

export class PythonBoot {
  constructor() {
    this.onProgress = () => {};
    this.heard = []; // what the worker said before anyone listened
    this.hear = (text) => this.heard.push(text);
    this.worker = null; // the promise of PyScript's worker, once started
    this.stages = {}; // boot stage → ms since bootStarted
    this.bootStarted = now();
    this.meter = meter;
    this.shown = null; // the last progress told, to tell only changes
    onBytes = () => this.progress();
  }

  /** Start the worker, once (later calls get the same one). Resolves to it; throws
   * what stopped it. `options`: startWorker's. */
  start(options = {}) {
    this.worker ??= pageFirst.then(() => this.startWorker(options, (text) => this.hear(text)));
    return this.worker;
  }

  /** From now on, `receive(text)` hears the loader's `boot.progress` (what came before
   * first, in order), and `onProgress({text, stage, fraction})` hears the boot line move
   * (it only moves forward; on a first visit, with the share of Python downloaded): told
   * at once what it shows now. */
  listen({ receive, onProgress }) {
    this.onProgress = onProgress;
    this.hear = receive;
    if (this.shown) onProgress(this.shown);
    for (const text of this.heard.splice(0)) receive(text);
  }

  /** Start PyScript's worker running `entry`, and resolve to it; `receive(text)` hears
   * the loader's `boot.progress` on the way. PyScript is imported here, after the page
   * has painted. Throws what stopped it. */
  async startWorker({
    pyscript = 'vendor/pyscript/core.js', entry = 'py/boot.py', config = 'pyscript.toml',
    serviceWorker = 'sw.js',
  } = {}, receive) {
    const base = document.baseURI;
    this.bootStarted = now();
    performance.mark('firsttoken:boot:start');
    this.serviceWorker = serviceWorker && new URL(serviceWorker, base).href;
    this.progress('pyscript');
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
      this.bootChannel.onmessage = (event) => receive(event.data);
    }
    const core = await import(new URL(pyscript, base).href);
    // The config goes as text (PyScript parses it), so it is fetched once.
    return core.PyWorker(new URL(entry, base).href, {
      config: toml,
      version: `${new URL(interpreter[1], base).href}#${channel}/`,
    });
  }

  /** A `boot.progress` event arrived (`pythonReady`: whether `ready` came first). */
  stage(msg, pythonReady) {
    this.stages[msg.stage] = Math.round(now() - this.bootStarted);
    // User Timing marks: tests and benchmarks wait on them (e.g. the snapshot stored).
    performance.mark(`firsttoken:boot:${msg.stage}`, { detail: msg });
    // The gateway's snapshot, when the loader chose to download it, counts as Python too.
    if (msg.stage === 'snapshot.fetch' && msg.bytes > 0) this.meter.expect('snapshot', msg.bytes);
    if (msg.stage === 'snapshot') this.meter.done('snapshot');
    if (!pythonReady) this.progress(msg.stage);
    if (msg.stage === 'snapshot.failed') console.warn('firsttoken: no snapshot was made:', msg.error);
  }

  /** `ready`'s boot record, placed on the page's timeline. */
  timeline(boot) {
    return onPageTimeline(boot, this.bootStarted, now());
  }

  /** Python is ready (its boot record: `boot`): the page is made ready for the next
   * visit; `receive(text)` hears the snapshot maker's `boot.progress`. */
  ready(boot, receive) {
    this.progress('ready');
    registerServiceWorker(this.serviceWorker);
    if (boot.snapshot !== 'restored') makeSnapshotInBackground(receive);
  }

  /** Move the boot line to `stage` (if it is past the one shown) and tell what changed;
   * without a stage, the byte count moved. */
  progress(stage = null) {
    if (stage) this.meter.stage(stage);
    const view = this.meter.view();
    const fraction = view.fraction === null ? null : Math.round(view.fraction * 1000) / 1000;
    if (this.shown && this.shown.text === view.text && this.shown.fraction === fraction) return;
    this.shown = { ...view, fraction };
    this.onProgress(this.shown);
  }
}

/** The page's one boot: js/boot/early.js starts it, the page's link takes it over. */
export const python = new PythonBoot();
