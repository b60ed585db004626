// @ts-check
// Send, from the moment the composer shows: the page's first step, with no imports.
//
// On a first visit over 3G the page's own modules (js/page/, some sixty files) arrive
// seconds after the composer is painted (docs/boot.md, "Send with the HTML alone"). A
// plain chat page takes Send as soon as it shows; this script lets this one do the same.
// It runs inline: gateway/build/inline.mjs copies it, without its comments, into
// index.html's head, so Send works once the HTML alone has arrived, with no request of
// its own (a file, even a small one, cost a round trip on a new connection: on shaped
// 3G, Send usable at 2.0 s against a plain page's 1.0 s; bench/RESULTS.md).
//
// Before the page takes over (page.js marks `html[data-interactive]`):
// - Send (the form's submit, or Enter where composer.js sends on Enter) posts the prompt
//   at once, as a new chat (nothing older is on screen yet), to the gateway that served
//   the page, in the API the settings pick (Chat Completions, Responses or Messages),
//   with `x-firsttoken-prepare` (gateway/prepare.py: compressed, counted and fitted on
//   CPython, the report first in the stream);
// - the answer's text is painted as it streams, plainly (markdown waits for the page);
// - a prompt that cannot go early (another server, an output limit, another send
//   still going) stays in the composer and is
//   sent by the page's own Send the moment it takes over. Nothing is lost.
//
// Then the page takes over: this module submits the prompt again through the page's own
// form, the page's Replies call EarlySend (js/page/early-send.js), which claims this
// very request (`claim`) instead of posting a second: every byte received so far is read
// again by the page's full reader, then the rest as it comes. So the answer is painted,
// stored and ended as any other, once, from one POST. Should the page decide to send
// it another way after all (it never does for what `early` allows), this request is
// aborted so that it is not answered twice.
//
// What the page does and this step does not, until it takes over: Stop, reasoning shown,
// markdown, the compression note. The request itself is the same.
//
// Inline, a classic script runs where the parser meets it, in WebKit as in Chromium.
// (It was a `defer` file before, never `async`: WebKitGTK 2.50 holds `async` scripts,
// module or classic, until the document has loaded or first painted; tests/webkit/
// test_first_send.py saw one fetched at 0.1 s and not run 12 s later.) It has no import
// or export, so early-send.js imports this file too (for Node and for load order) and
// reads what it offers from `globalThis.firsttokenFirstSend`; evaluated twice (the
// page's inline copy, the module), the second does nothing. Edit this file, then run
// `node gateway/build/inline.mjs`: tests/gateway/test_inline_page.py fails on a stale
// copy, and the page's Content-Security-Policy hashes the copy as served
// (gateway/headers.py), so it cannot drift from what the browser allows.

(() => {
if (/** @type {any} */ (globalThis).firsttokenFirstSend) return;

const SETTINGS_KEY = 'firsttoken.settings.v1'; // js/page/settings.js `KEY`
const API_KEY = 'firsttoken.api_key'; // js/page/settings.js, session storage only
const LOCALE_KEY = 'firsttoken.locale'; // js/page/i18n.js `STORAGE_KEY`
const DEFAULT_MODEL = 'firsttoken-sim'; // js/page/settings.js `DEFAULT_MODEL`
const PREPARE_HEADER = 'x-firsttoken-prepare';
/** The header every Messages request carries (js/link/protocol.js `ANTHROPIC_VERSION`). */
const ANTHROPIC_VERSION = '2023-06-01';
/** A Messages request must name an output limit: the core's default when none is set
 * (py/firsttoken/stream/dialects.py, `anthropic_thinking`). */
const MESSAGES_MAX_TOKENS = 4096;
/** The most text kept for the page to read again (the core's SSE bound per event is
 * 4 MiB: py/firsttoken/stream/sse.py). Past it the request is stopped, with a typed
 * error, rather than held without end. */
const MAX_BUFFERED_CHARS = 4 << 20;
const PATHS = { chat_completions: '/chat/completions', responses: '/responses', anthropic_messages: '/messages' };

// The one fault this step words itself before the page is in (the page words the rest:
// the request is read again there). A zh-CN reader gets it in Chinese (js/page/i18n).
const FAULT = { en: 'Could not send: {message}', 'zh-CN': '无法发送：{message}' };

const now = () => performance.timeOrigin + performance.now();

/** One prompt in flight: its response, the text of its stream kept (bounded) until the
 * page's reader listens, and how it ended. */
class Flight {
  /** `api`: the dialect; `text`: the prompt as sent (the page claims by it). */
  constructor(api, text, baseUrl) {
    this.api = api;
    this.text = text;
    this.baseUrl = baseUrl;
    this.controller = new AbortController();
    this.sent = now();
    /** @type {{ok: boolean, status: number, retryAfter: string|null, error?: object}|null} */
    this.response = null;
    /** @type {string[]|null} text received, until `listen` */
    this.chunks = [];
    this.kept = 0;
    /** @type {{error?: {code: string, message: string, limit?: number}}|null} */
    this.end = null;
    this.firstByte = null;
    this.bytes = 0;
    this.requestBytes = 0;
    /** @type {((event: object) => void)|null} */
    this.listener = null;
    /** @type {((text: string) => void)|null} the first step's own painter */
    this.preview = null;
    /** @type {(() => void)|null} the first step's: it ended before the page claimed it */
    this.settled = null;
    /** @type {(() => void)|null} told once when it ends, however */
    this.ended = null;
    this.claimed = false;
  }

  /** Hear `{response}`, `{text}`, `{end}`: what came already, in order, then the rest. */
  listen(fn) {
    if (this.response) fn({ response: this.response });
    for (const text of this.chunks ?? []) fn({ text });
    this.chunks = null;
    if (this.end) fn({ end: this.end });
    else this.listener = fn;
  }

  abort() {
    this.controller.abort();
  }

  emit(event) {
    if (event.end) {
      if (this.end) return; // ended once (stopped for its size, then the read's end)
      this.end = event.end;
      if (!this.claimed) this.settled?.();
      this.ended?.();
    }
    if (event.response) this.response = event.response;
    if (this.listener) {
      this.listener(event);
      if (event.end) this.listener = null;
      return;
    }
    if (event.text !== undefined && this.chunks) {
      this.kept += event.text.length;
      if (this.kept > MAX_BUFFERED_CHARS) {
        this.chunks = [];
        this.chunks = [];
        this.abort();
        this.emit({ end: { error: { code: 'sse_buffer_overflow', message: 'The answer outgrew what the page keeps before it starts.', limit: MAX_BUFFERED_CHARS } } });
        return;
      }
      this.chunks.push(event.text);
      this.preview?.(event.text);
    }
  }
}

/** The request body of `messages` (Chat Completions messages, system first) in `api`.
 * The gateway prepares it and writes its prompt again through the core's own builder
 * (gateway/prepare.py), so only the shape each API takes is written here. */
function requestBody(api, model, messages) {
  if (api === 'chat_completions') return { model, messages, stream: true, stream_options: { include_usage: true } };
  const system = messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => textOf(m.content));
  const turns = messages.filter((m) => m.role !== 'system' && m.role !== 'developer');
  if (api === 'responses') {
    const body = {
      model, stream: true, store: false,
      input: turns.map((m) => ({ role: m.role, content: partsFor(m, api) })),
    };
    if (system.length) body.instructions = system.join('\n\n');
    return body;
  }
  const body = { model, max_tokens: MESSAGES_MAX_TOKENS, stream: true, messages: turns.map((m) => ({ role: m.role, content: partsFor(m, api) })) };
  if (system.length) body.system = system.join('\n\n');
  return body;
}

function textOf(content) {
  if (typeof content === 'string') return content;
  return (Array.isArray(content) ? content : []).filter((p) => p?.type === 'text').map((p) => p.text).join('');
}

/** A message's content in Responses or Messages: text as it is; images (Chat
 * Completions' `image_url` parts, data URLs from attachments.js) as each API takes them. */
function partsFor(message, api) {
  const { content } = message;
  if (typeof content === 'string') return content;
  const textType = api === 'responses' ? (message.role === 'assistant' ? 'output_text' : 'input_text') : 'text';
  return (Array.isArray(content) ? content : []).map((part) => {
    if (part?.type !== 'image_url') return { type: textType, text: String(part?.text ?? '') };
    const url = String(part.image_url?.url ?? '');
    if (api === 'responses') return { type: 'input_image', image_url: url, detail: part.image_url?.detail ?? 'auto' };
    const data = /^data:([^;,]+);base64,(.*)$/su.exec(url);
    return data ? { type: 'image', source: { type: 'base64', media_type: data[1], data: data[2] } } : { type: 'image', source: { type: 'url', url } };
  });
}

// Answers on their way through the gateway: Python's first download waits for them to
// end (js/boot/boot.js), and hears `IDLE` on `window` when the last one has.
const IDLE = 'firsttoken:early-idle';
let inFlight = 0;

/** Post `messages` as `api` with the request `settings` (the protocol's): a Flight. */
function post(api, text, messages, settings) {
  const base = settings.base_url.replace(/\/+$/, '');
  const flight = new Flight(api, text, settings.base_url);
  inFlight += 1;
  flight.ended = () => {
    inFlight -= 1;
    if (inFlight === 0) globalThis.dispatchEvent?.(new Event(IDLE));
  };
  const body = JSON.stringify(requestBody(api, settings.model, messages));
  flight.requestBytes = new TextEncoder().encode(body).length;
  /** @type {Record<string, string>} */
  const headers = { 'content-type': 'application/json', accept: 'text/event-stream', ...(settings.headers ?? {}) };
  if (settings.api_key) {
    if (api === 'anthropic_messages') headers['x-api-key'] = settings.api_key;
    else headers.authorization = `Bearer ${settings.api_key}`;
  }
  if (api === 'anthropic_messages') headers['anthropic-version'] = ANTHROPIC_VERSION;
  headers[PREPARE_HEADER] = settings.compress ?? 'balanced';
  read(flight, fetch(`${base}${PATHS[api]}`, {
    // `priority`: a person waits on this; Python's download beside it can wait its turn.
    // `credentials: 'omit'`: the gateway's API takes a key, never a cookie, and a request
    // without credentials goes on a connection of its own (Chromium keeps such sockets
    // apart). Over HTTP/1.1 the page's sixty module requests hold all six of its
    // connections on a first visit; queued behind them, the answer's first token came
    // 3.5 s later on shaped 3G (bench/network.py: Send to first token 5.6 s, 2.0 s
    // without them, as the plain page's). A deployment that puts the gateway behind a
    // cookie would have to send it here too.
    method: 'POST', headers, body, signal: flight.controller.signal, cache: 'no-store', priority: 'high', credentials: 'omit',
  }));
  return flight;
}

async function read(flight, pending) {
  const { signal } = flight.controller;
  try {
    const response = await pending;
    if (!response.ok) {
      let error = {};
      try {
        const json = await response.json();
        if (json && typeof json.error === 'object' && json.error) error = json.error;
      } catch { /* an unreadable error body is still an HTTP error */ }
      flight.emit({ response: { ok: false, status: response.status, retryAfter: response.headers.get('retry-after'), error } });
      flight.emit({ end: {} });
      return;
    }
    flight.emit({ response: { ok: true, status: response.status, retryAfter: null } });
    const reader = /** @type {ReadableStream<Uint8Array>} */ (response.body).getReader();
    // A character split between two chunks is joined (a streaming decode).
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      flight.firstByte ??= now();
      flight.bytes += value.byteLength;
      flight.emit({ text: decoder.decode(value, { stream: true }) });
      if (flight.end) return; // stopped for its size
    }
    const rest = decoder.decode();
    if (rest) flight.emit({ text: rest });
    flight.emit({ end: {} });
  } catch (error) {
    if (flight.end) return;
    const code = signal.aborted ? 'aborted' : globalThis.navigator?.onLine === false ? 'offline' : 'network';
    flight.emit({ end: { error: { code, message: String(error?.message ?? error) } } });
  }
}

// ---- the first step's own Send, until the page takes over ---------------------------

/** @type {Flight|null} the prompt sent here, until the page claims it */
let first = null;

/** The page's EarlySend asks for the request it would make: the prompt sent here, if it
 * is the same prompt to the same place in the same API (claimed once). */
function claim(text, api, baseUrl) {
  const f = first;
  if (!f || f.claimed || f.text !== text || f.api !== api || f.baseUrl !== baseUrl) return null;
  f.claimed = true;
  f.preview = null;
  f.settled = null;
  return f;
}

function stored() {
  try {
    const s = JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? 'null');
    return s && typeof s === 'object' ? s : {};
  } catch {
    return {}; // unreadable or no storage: the defaults, as the page's Settings read them
  }
}

function sessionKey() {
  try {
    return sessionStorage.getItem(API_KEY) || '';
  } catch {
    return '';
  }
}

/** What a new chat's request would carry, as the page's `Settings.forRequest` gives it,
 * or null when it waits for the page: another server, or an output limit (the core's to
 * map and retry). A host's settings (bridge/page/hosts.js) come through the page's host
 * adapter, which is not loaded yet: the page itself, sending at this moment, would use
 * its own settings too, and it claims this request before a host can say anything. */
function earlySettings() {
  const s = stored();
  const model = (typeof s.model === 'string' && s.model.trim()) || DEFAULT_MODEL;
  let baseUrl = new URL('/v1', document.baseURI).href;
  if (typeof s.base_url === 'string' && s.base_url.trim()) {
    try {
      baseUrl = new URL(s.base_url.trim()).href.replace(/\/$/, '');
    } catch {
      return null;
    }
  }
  if (new URL(baseUrl).origin !== location.origin) return null;
  if (Number.isSafeInteger(s.max_tokens) && s.max_tokens > 0) return null;
  const settings = { base_url: baseUrl, model, compress: typeof s.compress === 'string' ? s.compress : 'balanced' };
  const key = sessionKey();
  if (key) settings.api_key = key;
  if (s.headers && typeof s.headers === 'object') settings.headers = s.headers;
  return { settings, api: typeof s.api === 'string' ? s.api : '', system: typeof s.system === 'string' ? s.system.trim() : '' };
}

/** The API a request speaks: the one chosen; for Automatic, the default model's (Chat
 * Completions) or, for another model, the page's own rule (settings.js `apiFor`, the
 * core's table), loaded only then. */
async function dialectOf(api, model) {
  if (api in PATHS) return api;
  if (model === DEFAULT_MODEL) return 'chat_completions';
  // From the page's address: inline, a relative specifier resolves against the
  // document, not against this file's folder.
  const { apiFor } = await import(new URL('js/page/settings.js', document.baseURI).href);
  return apiFor(api, model);
}

function say(template, message) {
  let lang = '';
  try {
    lang = localStorage.getItem(LOCALE_KEY) || '';
  } catch { /* no storage: the browser's languages */ }
  lang ||= navigator.languages?.[0] ?? navigator.language ?? '';
  return (lang.toLowerCase().startsWith('zh') ? template['zh-CN'] : template.en).replace('{message}', message);
}

function bubble(list, role) {
  const li = document.createElement('li');
  li.className = 'msg';
  li.dataset.role = role;
  const content = document.createElement('div');
  content.className = 'content';
  content.dir = 'auto';
  li.append(content);
  list.append(li);
  return { li, content };
}

/** The text of an answer's events, for painting before the page is in: each API's text
 * deltas only (the page's reader, early-send.js, reads everything else). */
function previewer(api, content) {
  let buffer = '';
  return (text) => {
    buffer += text;
    for (;;) {
      const end = buffer.search(/\r\n\r\n|\n\n|\r\r/);
      if (end < 0) return;
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + (buffer.startsWith('\r\n\r\n', end) ? 4 : 2));
      const data = block.split(/\r\n|\n|\r/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      let event;
      try {
        event = JSON.parse(data);
      } catch {
        continue; // `[DONE]`, a comment, or what the page's reader will report
      }
      let piece = null;
      if (api === 'chat_completions') piece = event?.choices?.[0]?.delta?.content;
      else if (api === 'responses' && event?.type === 'response.output_text.delta') piece = event.delta;
      else if (event?.type === 'content_block_delta' && event.delta?.type === 'text_delta') piece = event.delta.text;
      if (typeof piece === 'string') content.append(piece);
    }
  };
}

let held = false; // a prompt waits in the composer for the page's own Send

async function sendFirst(form, prompt) {
  const text = prompt.value.trim();
  const early = earlySettings();
  if (!text) return;
  if (!early || (first && !first.end)) {
    held = true; // the page sends it the moment it takes over
    return;
  }
  const list = document.getElementById('messages');
  if (!list) return;
  prompt.value = '';
  bubble(list, 'user').content.textContent = text;
  const { li, content } = bubble(list, 'assistant');
  li.dataset.state = 'streaming';
  const messages = early.system ? [{ role: 'system', content: early.system }] : [];
  messages.push({ role: 'user', content: text });
  let api;
  try {
    api = await dialectOf(early.api, early.settings.model);
  } catch {
    api = 'chat_completions'; // the page's rule could not load: its default
  }
  if (taken) { // the page came in meanwhile: it sends it itself
    li.previousElementSibling?.remove();
    li.remove();
    prompt.value ||= text;
    held = true;
    takeOver(form, prompt);
    return;
  }
  const f = (first = post(api, text, messages, early.settings));
  f.preview = previewer(api, content);
  // Before the page is in, an error shows in the answer's place, in the reader's words.
  f.settled = () => {
    li.dataset.state = f.end?.error || !f.response?.ok ? 'error' : 'done';
    const fault = f.end?.error?.message ?? (f.response && !f.response.ok ? `HTTP ${f.response.status}` : null);
    if (fault) content.textContent = say(FAULT, fault);
  };
}

let taken = false;

/** The page is in: what was sent here is claimed through its own Send, or what waited
 * is sent by it. The draft typed meanwhile stays in the composer. */
function takeOver(form, prompt) {
  taken = true;
  const pending = first && !first.claimed ? first : null;
  if (!pending && !held) return;
  held = false;
  const draft = prompt.value;
  if (pending) prompt.value = pending.text;
  form.requestSubmit();
  if (pending) {
    prompt.value = draft;
    // Not claimed: the page sent it its own way, so this one must not be answered too.
    if (!pending.claimed) pending.abort();
  }
}

function start() {
  const root = document.documentElement;
  const controls = () => {
    const form = /** @type {HTMLFormElement|null} */ (document.getElementById('composer'));
    const prompt = /** @type {HTMLTextAreaElement|null} */ (document.getElementById('prompt'));
    return form && prompt ? { form, prompt } : null;
  };
  // Capture: ahead of anything else, and of the form's own (native) submission, which
  // would navigate away with the prompt in the URL.
  document.addEventListener('submit', (event) => {
    const c = controls();
    if (taken || !c || event.target !== c.form) return;
    event.preventDefault();
    sendFirst(c.form, c.prompt);
  }, true);
  // Enter sends where the page's composer sends on Enter (composer.js: not on a touch
  // screen, and not with Shift, Alt or while composing).
  document.addEventListener('keydown', (event) => {
    const c = controls();
    if (taken || !c || event.target !== c.prompt) return;
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing || event.altKey) return;
    if (matchMedia('(pointer: coarse)').matches && !(event.ctrlKey || event.metaKey)) return;
    event.preventDefault();
    c.form.requestSubmit();
  }, true);
  const ready = () => {
    const c = controls();
    if (!taken && c && root.dataset.interactive !== undefined) takeOver(c.form, c.prompt);
    return taken;
  };
  if (!ready()) {
    const observer = new MutationObserver(() => ready() && observer.disconnect());
    observer.observe(root, { attributes: true, attributeFilter: ['data-interactive'] });
  }
  root.dataset.sendReady = String(Math.round(performance.now()));
}

/** What the page's early path (js/page/early-send.js) takes from this step. */
/** @type {any} */ (globalThis).firsttokenFirstSend = Object.freeze({
  PREPARE_HEADER, MAX_BUFFERED_CHARS, IDLE, Flight, requestBody, post, claim, inFlight: () => inFlight,
});
if (typeof document !== 'undefined') start();
})();
