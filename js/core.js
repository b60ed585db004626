// The link between the page and the Python core running in a PyScript worker.
//
// It speaks the firsttoken message protocol (bridge/PROTOCOL.md): JSON text messages
// with a `type` and, for requests, an `id`. Messages sent before Python is ready are
// queued and go out the moment it answers `hello`, so the page never waits on Python
// to accept input.

const PROTOCOL = 1;

export class CoreLink extends EventTarget {
  constructor() {
    super();
    this.ready = false;
    this.worker = null;
    this.queue = [];
    this.bootStarted = performance.timeOrigin + performance.now();
  }

  // Start the worker. PyScript is imported here, after the shell has painted.
  async start({ pyscript = 'vendor/pyscript/core.js', entry = 'py/boot.py', config = 'pyscript.toml' } = {}) {
    const base = document.baseURI;
    this.progress('Loading runtime…');
    try {
      addEventListener('py:progress', (e) => this.progress(String(e.detail)));
      const [{ PyWorker }, toml] = await Promise.all([
        import(new URL(pyscript, base).href),
        fetch(new URL(config, base)).then((r) => {
          if (!r.ok) throw new Error(`${config}: HTTP ${r.status}`);
          return r.text();
        }),
      ]);
      const interpreter = /^\s*interpreter\s*=\s*"([^"]+)"/m.exec(toml);
      if (!interpreter) throw new Error(`${config} names no interpreter`);
      // The config goes as text (PyScript parses it), so it is fetched once.
      const worker = await PyWorker(new URL(entry, base).href, {
        config: toml,
        version: new URL(interpreter[1], base).href,
      });
      this.worker = worker;
      worker.onmessage = (event) => this.receive(event.data);
      this.progress('Python started, saying hello…');
      worker.postMessage(JSON.stringify({ v: PROTOCOL, type: 'hello', id: 'hello' }));
    } catch (error) {
      this.emit('failed', { message: String(error && error.message || error) });
    }
  }

  progress(text) {
    this.emit('progress', { text });
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }

  receive(data) {
    let msg;
    try {
      msg = typeof data === 'string' ? JSON.parse(data) : data;
    } catch {
      return; // not ours (PyScript's own channel messages are filtered before this)
    }
    if (!msg || typeof msg.type !== 'string') return;
    if (msg.type === 'ready' && !this.ready) {
      this.ready = true;
      msg.boot = { ...(msg.boot || {}), ready_ms: performance.timeOrigin + performance.now() - this.bootStarted };
      for (const queued of this.queue.splice(0)) this.worker.postMessage(queued);
    }
    this.emit('message', msg);
  }

  // Send a request; queued until Python is ready.
  send(msg) {
    const text = JSON.stringify({ v: PROTOCOL, ...msg });
    if (this.ready) this.worker.postMessage(text);
    else this.queue.push(text);
  }
}
