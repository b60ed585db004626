// The main-thread shell: it paints, and nothing else. All logic (request building,
// SSE parsing, counting, compression) runs in Python in a worker, reached through
// CoreLink. Text arriving from the worker is painted at most once per animation frame.

import { CoreLink } from './core.js';
import { MarkdownStream, renderMarkdown } from './render.js';
import { ReplyMetrics, reportMetrics } from './render-metrics.js';
import { attachHosts } from '../bridge/page/hosts.js';

const $ = (id) => document.getElementById(id);
const els = {
  boot: $('boot'), metrics: $('metrics'), quota: $('quota'), chat: $('chat'), messages: $('messages'),
  form: $('composer'), prompt: $('prompt'), send: $('send'), stop: $('stop'),
  baseUrl: $('base-url'), model: $('model'), apiKey: $('api-key'), clear: $('clear'),
  compress: $('compress'), count: $('count'), system: $('system'),
};

const HISTORY_KEY = 'firsttoken.history.v1';
const SETTINGS_KEY = 'firsttoken.settings.v1';
// The API key lives in sessionStorage only: it dies with the tab, is never written to
// localStorage, and is never logged.
const KEY_KEY = 'firsttoken.api_key';

// ---- state ----------------------------------------------------------------------
const history = loadJSON(localStorage, HISTORY_KEY, []).filter(
  (m) => m && typeof m.role === 'string' && typeof m.content === 'string');
const settings = loadJSON(localStorage, SETTINGS_KEY, {});
const live = new Map(); // request id → {el, content, pending, entry}
let counter = 0;

function loadJSON(store, key, fallback) {
  try {
    const value = JSON.parse(store.getItem(key));
    return value ?? fallback;
  } catch {
    return fallback;
  }
}
function saveHistory() {
  try { localStorage.setItem(HISTORY_KEY, JSON.stringify(history)); } catch { /* storage full: keep going in memory */ }
}

// ---- painting -------------------------------------------------------------------
function bubble(role, text) {
  const li = document.createElement('li');
  li.className = 'msg';
  li.dataset.role = role;
  const content = document.createElement('div');
  content.className = 'content';
  // The user's words are shown as typed; answers are markdown, rendered safely.
  if (role === 'assistant') {
    content.classList.add('md');
    renderMarkdown(content, text);
  } else {
    content.textContent = text;
  }
  li.append(content);
  els.messages.append(li);
  return li;
}

function note(li, cls, text) {
  let el = li.querySelector('.' + cls);
  if (!el) {
    el = document.createElement('span');
    el.className = cls;
    li.append(el);
  }
  el.textContent = text;
  return el;
}

// Follow the answer unless the user scrolled up. Told by the direction of a scroll, not
// by how far the view is from the bottom: the answer can grow between our scroll and the
// frame that lays it out (an earlier message coming on screen gets its real height then), which
// leaves the view short of the bottom with nobody having scrolled.
let stick = true;
let ourTop = 0; // where we last put the view
els.chat.addEventListener('scroll', () => {
  const { scrollTop, scrollHeight, clientHeight } = els.chat;
  if (scrollHeight - scrollTop - clientHeight < 48) stick = true;
  else if (scrollTop < ourTop - 1) stick = false;
  ourTop = scrollTop;
}, { passive: true });
function follow() {
  if (!stick) return;
  els.chat.scrollTop = els.chat.scrollHeight;
  ourTop = els.chat.scrollTop;
}

let frameRequested = false;
function schedulePaint() {
  if (!frameRequested) {
    frameRequested = true;
    requestAnimationFrame(paint);
  }
}
function paint(frameTime) {
  frameRequested = false;
  const inFrame = frameTime !== undefined; // called by requestAnimationFrame, not by finish()
  for (const r of live.values()) {
    if (!r.pending) continue;
    r.md.append(r.pending); // re-renders the open block only: cost independent of answer length
    r.entry.content += r.pending;
    r.pending = '';
    r.el.dataset.paints = String(+(r.el.dataset.paints || 0) + 1);
    r.metrics.painted(inFrame, (t) => { r.firstPaint = t; }); // t: when the browser painted it
  }
  follow();
}

// ---- the core -------------------------------------------------------------------
const core = new CoreLink();
core.addEventListener('progress', (e) => {
  els.boot.textContent = e.detail.text;
  // A prompt sent early shows how far Python's boot has got while it waits.
  if (!core.ready) for (const r of live.values()) note(r.el, 'note', `Waiting for Python: ${e.detail.text}`);
});
core.addEventListener('failed', (e) => {
  document.documentElement.dataset.python = 'failed';
  els.boot.textContent = `Python failed to start: ${e.detail.message}`;
});
core.addEventListener('message', (e) => onCoreMessage(e.detail));
// Native hosts and embedding windows (bridge/PROTOCOL.md, "Hosts").
attachHosts(core);

function onCoreMessage(msg) {
  if (msg.type === 'ready') {
    document.documentElement.dataset.python = 'ready';
    els.metrics.textContent = core.bootSummary(); // e.g. Python ready in 420 ms (snapshot restored · …)
    for (const r of live.values()) note(r.el, 'note', 'Sending…');
    return;
  }
  if (msg.type === 'tokens.counted') return showCount(msg);
  const r = live.get(msg.id);
  if (!r) return;
  switch (msg.type) {
    case 'chat.delta':
      r.el.querySelector('.note')?.remove();
      r.pending += msg.text || '';
      r.metrics.arrived(msg);
      schedulePaint();
      break;
    case 'chat.prepared':
      showPrepared(r, msg);
      break;
    case 'chat.wait':
      note(r.el, 'note', `Rate limit reached: sending in ${seconds(msg.wait_s)}…`);
      showQuota(msg.quota);
      break;
    case 'chat.retry':
      note(r.el, 'note', `${msg.status ? `The server answered ${msg.status}` : 'Network error'}; retrying in ${seconds(msg.wait_s)} (attempt ${msg.attempt + 1})…`);
      showQuota(msg.quota);
      break;
    case 'notice': // not an error, but worth knowing (e.g. the prompt cache fell back to memory)
      note(r.el, 'notice', msg.message).dataset.code = msg.code;
      break;
    case 'chat.done':
      finish(r, 'done', msg);
      break;
    case 'chat.error':
      finish(r, msg.error?.code === 'aborted' ? 'stopped' : 'error', msg);
      break;
    case 'error':
      finish(r, 'error', msg);
      break;
  }
}

// What Python did to the prompt before it left: compression saving, and what was left
// out to fit the model's budget.
function showPrepared(r, msg) {
  const saved = msg.saved?.[msg.saved.length - 1];
  if (saved > 0) {
    note(r.userEl, 'note', `compressed: −${saved} ${msg.saved_unit}`);
    r.userEl.dataset.saved = String(saved);
  }
  const dropped = msg.dropped?.length || 0;
  const cut = msg.truncated?.length || 0;
  if (dropped || cut) {
    const parts = [];
    if (dropped) parts.push(`${dropped} earlier message${dropped > 1 ? 's' : ''} left out`);
    if (cut) parts.push(`${cut} shortened`);
    note(r.el, 'fit', `To fit the model's budget: ${parts.join(', ')}.`);
  }
  if (msg.prompt_tokens != null) r.promptTokens = msg.prompt_tokens;
}

function seconds(s) {
  return s < 10 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
}

// Remaining quota as the server last reported it (x-ratelimit-* headers).
function showQuota(quota) {
  if (!quota) return;
  const fmt = (b) => (b && b.limit != null && b.remaining != null ? `${b.remaining}/${b.limit}` : null);
  const parts = [];
  if (fmt(quota.requests)) parts.push(`requests ${fmt(quota.requests)}`);
  if (fmt(quota.tokens)) parts.push(`tokens ${fmt(quota.tokens)}`);
  if (quota.wait_s > 0) parts.push(`wait ${seconds(quota.wait_s)}`);
  els.quota.textContent = parts.join(' · ');
}

function describe(error) {
  if (!error) return 'Something went wrong.';
  switch (error.code) {
    case 'aborted': return 'Stopped.';
    case 'network': return `Network error: ${error.message}`;
    case 'http_status': return `The server answered ${error.status}: ${error.message}`;
    case 'upstream_error': return `The model reported an error: ${error.message}`;
    case 'truncated': return 'The answer was cut off: the connection ended early.';
    default: return error.message || error.code;
  }
}

function finish(r, state, msg) {
  // An error carries all the text received; anything not yet delivered as a delta is
  // painted now, so nothing the server sent is lost.
  const partial = msg.error?.partial;
  const have = r.entry.content + r.pending;
  if (partial && partial.length > have.length && partial.startsWith(have)) r.pending += partial.slice(have.length);
  paint(); // flush what is pending so that nothing received is lost
  r.md.end(); // the open block is final now
  r.metrics.close(msg).then((summary) => reportMetrics(r.el, summary));
  live.delete(r.id);
  r.el.dataset.state = state;
  r.el.querySelector('.note')?.remove();
  if (state !== 'done') note(r.el, 'error', describe(msg.error));
  if (!r.entry.content) {
    // Keep an empty failed answer out of the conversation sent next time.
    history.splice(history.indexOf(r.entry), 1);
  } else if (state !== 'done') {
    r.entry.incomplete = true;
  }
  saveHistory();
  if (msg.timings) showMetrics(r, msg.timings, msg.usage);
  showQuota(msg.quota);
  if (live.size === 0) els.stop.disabled = true;
  requestCount();
}

function showMetrics(r, t, usage) {
  const ms = (a, b) => (a != null && b != null ? Math.round(b - a) : '–');
  const parts = [`first byte ${ms(t.send, t.first_byte)} ms`, `first paint ${ms(r.sent, r.firstPaint)} ms`];
  if (usage && t.first_delta != null && t.done != null && t.done > t.first_delta) {
    parts.push(`${(usage.completion_tokens / ((t.done - t.first_delta) / 1000)).toFixed(0)} tok/s`);
  }
  els.metrics.textContent = parts.join(' · ');
}

// ---- input ----------------------------------------------------------------------
function currentSettings() {
  const s = { base_url: els.baseUrl.value.trim() || '/v1', model: els.model.value.trim() || 'firsttoken-sim' };
  const key = els.apiKey.value;
  if (key) s.api_key = key;
  s.compress = els.compress.checked ? (settings.compress_level || 'balanced') : 'off';
  // Extra request headers (no UI: set by an embedding host, or by tests to steer the
  // built-in model, e.g. {"x-firsttoken-sim": "tps=20"}).
  if (settings.headers && typeof settings.headers === 'object') s.headers = settings.headers;
  const absolute = new URL(s.base_url, document.baseURI).href.replace(/\/$/, '');
  s.base_url = absolute;
  return s;
}

// What goes to the model: the system prompt from Settings (a setting, not part of the
// conversation: changing it applies from the next message on), then the conversation.
// The core prepares the system message once and keeps it by hash (IndexedDB), so a long
// one costs nothing to count or compress again, and goes to the firsttoken gateway as
// a reference.
function conversation(extra = []) {
  const messages = [];
  const system = typeof settings.system === 'string' ? settings.system.trim() : '';
  if (system) messages.push({ role: 'system', content: system });
  for (const { role, content } of history) if (content) messages.push({ role, content });
  return messages.concat(extra);
}

function sendPrompt(text) {
  const id = `r${Date.now().toString(36)}${(counter++).toString(36)}`;
  history.push({ role: 'user', content: text });
  const userEl = bubble('user', text);
  const messages = conversation();
  const entry = { role: 'assistant', content: '' };
  history.push(entry);
  saveHistory();
  const el = bubble('assistant', '');
  el.dataset.state = 'streaming';
  el.dataset.id = id;
  if (!core.ready) note(el, 'note', 'Waiting for Python to start…');
  const sent = performance.timeOrigin + performance.now();
  const md = new MarkdownStream(el.querySelector('.content'));
  live.set(id, { id, el, userEl, md, pending: '', entry, sent, metrics: new ReplyMetrics(id, sent) });
  els.stop.disabled = false;
  stick = true;
  follow();
  core.send({ type: 'chat.send', id, messages, settings: currentSettings() });
}

els.form.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = els.prompt.value.trim();
  if (!text) return;
  els.prompt.value = '';
  sendPrompt(text);
});
els.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    els.form.requestSubmit();
  }
});
els.stop.addEventListener('click', () => {
  for (const id of live.keys()) core.send({ type: 'chat.abort', id });
});
els.clear.addEventListener('click', () => {
  history.length = 0;
  saveHistory();
  els.messages.replaceChildren();
});

for (const [el, name] of [[els.baseUrl, 'base_url'], [els.model, 'model']]) {
  el.value = settings[name] || '';
  el.addEventListener('change', () => {
    settings[name] = el.value.trim();
    localStorage.setItem(SETTINGS_KEY, JSON.stringify(settings));
  });
}
els.system.value = typeof settings.system === 'string' ? settings.system : '';
els.system.addEventListener('change', () => {
  settings.system = els.system.value;
  localStorage.setItem(SETTINGS_KEY, JSON.stringify(settings));
  requestCount();
});
els.compress.checked = settings.compress !== 'off';
els.compress.addEventListener('change', () => {
  settings.compress = els.compress.checked ? 'on' : 'off';
  localStorage.setItem(SETTINGS_KEY, JSON.stringify(settings));
});

// Live token count of the conversation plus the draft, counted exactly in Python. The
// request is debounced; answers to older requests are ignored, so none is shown late.
let countSeq = 0;
let countTimer = 0;
function requestCount() {
  clearTimeout(countTimer);
  countTimer = setTimeout(() => {
    const draft = els.prompt.value;
    const messages = conversation(draft ? [{ role: 'user', content: draft }] : []);
    if (!messages.length) { els.count.textContent = ''; return; }
    core.send({ type: 'tokens.count', id: `c${++countSeq}`, messages, settings: currentSettings() });
  }, 120);
}
els.prompt.addEventListener('input', requestCount);
function showCount(msg) {
  if (msg.id !== `c${countSeq}`) return; // a newer count is on its way
  const n = msg.tokens.toLocaleString('en');
  els.count.textContent = `${msg.exact ? '' : '~'}${n} / ${msg.budget.toLocaleString('en')} tokens`;
  els.count.dataset.tokens = String(msg.tokens);
  els.count.dataset.exact = String(msg.exact);
  els.count.classList.toggle('over', msg.tokens > msg.budget);
}

els.apiKey.value = sessionStorage.getItem(KEY_KEY) || '';
els.apiKey.addEventListener('change', () => sessionStorage.setItem(KEY_KEY, els.apiKey.value));

// ---- start ----------------------------------------------------------------------
for (const m of history) {
  const li = bubble(m.role, m.content);
  if (m.incomplete) note(li, 'error', 'This answer was interrupted.');
}
follow();
els.prompt.focus();
document.documentElement.dataset.interactive = String(Math.round(performance.now()));
core.start();
