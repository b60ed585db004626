// Warming the connection before Send (issue 26, item 3).
//
// On a phone, the first message after the app opens pays for the connection: DNS, the
// TCP handshake (one round trip) and, to a real API, TLS (one more), at 100–300 ms a
// round trip. None of that needs the prompt, so it is done while the person is still
// typing: when the composer gets focus or the first keystroke, the page sends one cheap
// request to the API's origin, and the chat request that follows finds the connection
// open. A host can ask for the same at app start (`connection.warm`, bridge/PROTOCOL.md).
//
// The request: `GET {base}/models`, the one route that OpenAI's API, Anthropic's and
// every OpenAI-compatible server (the firsttoken gateway too) answer, and cheaply. It
// carries no key: a warm-up needs the connection, not an answer, and without an
// `authorization` header it is a simple request, so a cross-origin API is reached with
// no CORS preflight; a 401 leaves the connection as open as a 200 does. Its body is read
// to the end, so an HTTP/1.1 connection goes back to the browser's pool for reuse.
// It is sent from the page, not Python's worker: it is needed most before Python is
// ready, and a document and its dedicated worker share one connection pool (the same
// network partition, in Chromium and WebKit alike).
//
// Not repeated while the connection is warm: within WARM_FOR_MS of the last request to
// that origin (a warm-up, or a chat the page sent). Servers close idle connections: the
// firsttoken gateway after 75 s (gateway/server.py, nginx's default), hence 60 s here.

export const WARM_FOR_MS = 60_000;
const TIMEOUT_MS = 10_000;

export class Warmer {
  /** `target()`: where chats go now ({base_url}); `fetch`, `now`: injectable. */
  constructor(target, { fetch: fetchImpl = globalThis.fetch.bind(globalThis), now = () => performance.now() } = {}) {
    Object.assign(this, { target, fetchImpl, now });
    this.last = new Map(); // origin → when a request to it was last sent
    this.sent = 0;
  }

  /** A request to the API's origin is being sent (a chat): the connection is in use. */
  used() {
    const origin = originOf(this.target().base_url);
    if (origin) this.last.set(origin, this.now());
  }

  /** Warm the connection to the API unless it is warm. Returns whether a request went. */
  warm() {
    const base = this.target().base_url;
    const origin = originOf(base);
    if (!origin) return false;
    const last = this.last.get(origin);
    if (last !== undefined && this.now() - last < WARM_FOR_MS) return false;
    this.last.set(origin, this.now());
    this.sent += 1;
    // For tests and benchmarks: how many warm-ups went.
    if (globalThis.document) document.documentElement.dataset.warmups = String(this.sent);
    this.fetchImpl(`${base.replace(/\/+$/, '')}/models`, {
      headers: { accept: 'application/json' }, cache: 'no-store', signal: AbortSignal.timeout(TIMEOUT_MS),
    }).then((response) => response.arrayBuffer()).catch(() => {
      // Unreachable, refused by CORS, timed out: the chat will say so if it matters.
    });
    return true;
  }

  /** Warm on the composer's focus and keystrokes (each a check; a request only when cold). */
  watch(prompt) {
    prompt.addEventListener('focus', () => this.warm());
    prompt.addEventListener('input', () => this.warm());
    // Focused already (index.html's autofocus): no focus event will come.
    if (prompt.ownerDocument.activeElement === prompt) this.warm();
  }
}

function originOf(url) {
  try {
    const { origin, protocol } = new URL(url);
    return protocol === 'http:' || protocol === 'https:' ? origin : null;
  } catch {
    return null;
  }
}
