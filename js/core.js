// The link between the page and the Python core running in a PyScript worker.
//
// It speaks the firsttoken message protocol (bridge/PROTOCOL.md): JSON text messages
// with a `type` and, for requests, an `id`. Messages sent before Python is ready are
// queued and go out the moment it answers `hello`, so the page never waits on Python
// to accept input.
//
// Boot: PyScript loads Pyodide through js/boot-pyodide.js (pyscript.toml's
// `interpreter`), which restores a memory snapshot when there is one (stored by an
// earlier visit, or the gateway's install-time one). That module reports each stage
// as a `boot.progress` message; `ready` carries the timings (`boot`), which this link
// places on the page's timeline (`worker_ms`, `ready_ms`). Once Python is ready, the
// service worker (sw.js) is registered so that the next visit loads with no network
// at all, and, if Python did not come from a snapshot, one is made in the background
// for the next visit; doing both later keeps them off the boot's critical path.

import { RUNTIME } from './boot-snapshot.js';

const PROTOCOL = 1;
const DELTA_ACK = JSON.stringify({ v: PROTOCOL, type: 'delta.ack' });

// What the page shows for each boot stage reported by js/boot-pyodide.js.
const STAGE_TEXT = {
  runtime: 'Loading Python…',
  snapshot: 'Restoring Python…',
  wasm: 'Starting Python…',
  interpreter: 'Python started, loading firsttoken…',
};

const now = () => performance.timeOrigin + performance.now();

// A first visit (no service worker yet) has Pyodide's 13 MB to download. Start now,
// while the shell and PyScript load: the worker's own requests for these files later
// find them in the HTTP cache (a 304). Later visits have them in the service worker's
// cache, where this would only read them twice.
if (typeof navigator !== 'undefined' && !navigator.serviceWorker?.controller) {
  for (const url of RUNTIME) fetch(url).then((r) => r.arrayBuffer()).catch(() => {});
}

export class CoreLink extends EventTarget {
  constructor() {
    super();
    this.ready = false;
    this.worker = null;
    this.queue = [];
    this.boot = null; // the `boot` field of `ready`, once it arrived
    this.stages = {}; // boot stage → ms since bootStarted
    this.bootStarted = now();
  }

  // Start the worker. PyScript is imported here, after the shell has painted.
  async start({
    pyscript = 'vendor/pyscript/core.js', entry = 'py/boot.py', config = 'pyscript.toml',
    serviceWorker = 'sw.js',
  } = {}) {
    const base = document.baseURI;
    this.bootStarted = now();
    performance.mark('firsttoken:boot:start');
    this.serviceWorker = serviceWorker && new URL(serviceWorker, base).href;
    this.progress('Loading runtime…', 'pyscript');
    try {
      // PyScript's own progress texts, until js/boot-pyodide.js reports its stages.
      addEventListener('py:progress', (e) => {
        if (!this.ready && !Object.keys(this.stages).length) this.progress(String(e.detail));
      });
      const [core, toml] = await Promise.all([
        import(new URL(pyscript, base).href),
        fetch(new URL(config, base)).then((r) => {
          if (!r.ok) throw new Error(`${config}: HTTP ${r.status}`);
          return r.text();
        }),
      ]);
      const interpreter = /^\s*interpreter\s*=\s*"([^"]+)"/m.exec(toml);
      if (!interpreter) throw new Error(`${config} names no interpreter`);
      // PyScript hands the worker over only once Python has run py/boot.py: too late
      // to hear how the boot went. So js/boot-pyodide.js reports its stages on a
      // BroadcastChannel whose name, unique to this page, travels as the fragment of
      // the interpreter's URL (`#<name>/`: js/boot-pyodide.js says why the slash); a
      // fragment reaches neither the server nor any cache key.
      const channel = `firsttoken-boot-${typeof crypto.randomUUID === 'function' ? crypto.randomUUID() : Math.random().toString(36).slice(2)}`;
      if (typeof BroadcastChannel === 'function') {
        this.bootChannel = new BroadcastChannel(channel);
        this.bootChannel.onmessage = (event) => this.receive(event.data);
      }
      // The config goes as text (PyScript parses it), so it is fetched once.
      const worker = await core.PyWorker(new URL(entry, base).href, {
        config: toml,
        version: `${new URL(interpreter[1], base).href}#${channel}/`,
      });
      this.worker = worker;
      worker.addEventListener('message', (event) => this.receive(event.data));
      // The protocol gets a channel of its own, handed over with `hello`: on the
      // worker's own channel every message also goes through PyScript's listeners,
      // which cost as much as ours on a slow phone at hundreds of deltas a second.
      this.port = null;
      let hand = [];
      if (typeof MessageChannel === 'function') {
        const channel = new MessageChannel();
        channel.port1.onmessage = (event) => this.receive(event.data);
        this.port = channel.port1;
        hand = [channel.port2];
      }
      this.progress('Python started, saying hello…', 'hello');
      // `flow`: we acknowledge each chat.delta as we take it, and the core holds what
      // arrives meanwhile (py/firsttoken/core.py, _DeltaPacer), so a fast stream costs
      // this thread one message per turn of its event loop, not one per chunk.
      worker.postMessage(JSON.stringify({ v: PROTOCOL, type: 'hello', id: 'hello', flow: true }), hand);
    } catch (error) {
      this.emit('failed', { message: String(error && error.message || error) });
    }
  }

  progress(text, stage = null) {
    this.emit('progress', { text, stage });
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  receive(data) {
    // Protocol messages are JSON text; PyScript's own channel carries other values.
    if (typeof data !== 'string') return;
    let msg;
    try {
      msg = JSON.parse(data);
    } catch {
      return;
    }
    if (!msg || typeof msg.type !== 'string') return;
    if (msg.type === 'chat.delta') this.post(DELTA_ACK);
    if (msg.type === 'boot.progress') {
      this.stages[msg.stage] = Math.round(now() - this.bootStarted);
      // User Timing marks: tests and benchmarks wait on them (e.g. the snapshot stored).
      performance.mark(`firsttoken:boot:${msg.stage}`, { detail: msg });
      if (STAGE_TEXT[msg.stage] && !this.ready) this.progress(STAGE_TEXT[msg.stage], msg.stage);
      if (msg.stage === 'snapshot.failed') console.warn('firsttoken: no snapshot was made:', msg.error);
    } else if (msg.type === 'ready' && !this.ready) {
      this.ready = true;
      // Stage times arrive relative to the loader's start in the worker; shift them to
      // the page's own boot start so that every *_ms but import_ms reads "this long
      // after the page began starting Python" (bridge/PROTOCOL.md, `ready`).
      const boot = { ...(msg.boot || {}) };
      if (typeof boot.worker_start === 'number') {
        const shift = boot.worker_start - this.bootStarted;
        boot.worker_ms = Math.round(shift);
        for (const key of ['assets_ms', 'snapshot_ms', 'wasm_ms', 'interpreter_ms', 'loader_ms']) {
          if (typeof boot[key] === 'number') boot[key] = Math.round(boot[key] + shift);
        }
      }
      delete boot.worker_start;
      // py/boot.py started running: what PyScript did after the loader shows between
      // loader_ms and entry_ms.
      if (typeof boot.entry_start === 'number') boot.entry_ms = Math.round(boot.entry_start - this.bootStarted);
      delete boot.entry_start;
      boot.ready_ms = now() - this.bootStarted;
      msg.boot = this.boot = boot;
      // A User Timing mark: benchmarks and tests read the boot record from it.
      performance.mark('firsttoken:python-ready', { detail: boot });
      for (const queued of this.queue.splice(0)) this.post(queued);
      this.progress('Python ready', 'ready');
      this.registerServiceWorker();
      if (boot.snapshot !== 'restored') this.makeSnapshot();
    }
    this.emit('message', msg);
  }

  // One line for the page's metrics: how long Python took, and where the time went.
  bootSummary() {
    const b = this.boot;
    if (!b) return '';
    const ms = (v) => (typeof v === 'number' ? `${Math.round(v)}` : '–');
    const parts = [`snapshot ${b.snapshot ?? 'none'}${b.snapshot_from ? ` from ${b.snapshot_from}` : ''}`];
    for (const [key, label] of [['worker_ms', 'worker'], ['assets_ms', 'assets'], ['wasm_ms', 'wasm'],
      ['interpreter_ms', 'interpreter'], ['import_ms', 'firsttoken']]) {
      if (b[key] != null) parts.push(`${label} ${ms(b[key])}`);
    }
    return `Python ready in ${ms(b.ready_ms)} ms (${parts.join(' · ')})`;
  }

  // Send a request; queued until Python is ready.
  send(msg) {
    const text = JSON.stringify({ v: PROTOCOL, ...msg });
    if (this.ready) this.post(text);
    else this.queue.push(text);
  }

  post(text) {
    (this.port ?? this.worker).postMessage(text);
  }

  // Have the interpreter's memory snapshot made for the next visit, in a worker of its
  // own (js/boot-snapshot-worker.js), while this page's Python serves the page. Its
  // `boot.progress` (snapshot.stored / snapshot.failed) is relayed like the boot's.
  makeSnapshot() {
    if (this.snapshotMaker || typeof caches === 'undefined') return;
    const maker = new Worker(new URL('./boot-snapshot-worker.js', import.meta.url), { type: 'module' });
    this.snapshotMaker = maker;
    const end = () => { maker.terminate(); this.snapshotMaker = null; };
    maker.addEventListener('message', (event) => {
      this.receive(event.data);
      end();
    });
    maker.addEventListener('error', (event) => {
      event.preventDefault(); // the page goes on without a snapshot: not an uncaught error
      console.warn('firsttoken: the snapshot maker failed:', event.message);
      end();
    });
  }

  // Offline after the first visit (sw.js). Failure only costs the offline copy.
  async registerServiceWorker() {
    if (!this.serviceWorker || !('serviceWorker' in navigator)) return;
    try {
      await navigator.serviceWorker.register(this.serviceWorker, { scope: new URL('./', this.serviceWorker).href });
    } catch (error) {
      console.warn('firsttoken: service worker not registered:', error && error.message || error);
    }
  }
}
