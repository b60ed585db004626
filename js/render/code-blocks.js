// @ts-check
// Code blocks: a bar with the block's language and a "Copy code" button over the code,
// and syntax highlighting by highlight.js once the block is finished.
//
// Cost while streaming stays what it was: an open fence is still one growing text node
// (markdown-stream.js); a block is highlighted once, when it is finished, and never
// again. highlight.js runs in a worker of its own (highlight-worker.js; highlighter.js
// holds the languages): this thread only sends the block's text and puts the answer in.
//
// highlight.js escapes the code it is given and wraps tokens in `<span class="hljs-…">`;
// its output is still checked to be exactly that (text in such spans) before it
// replaces the block's text, so a bug there can never put markup from a model on the page.

import { copyText } from './clipboard.js';
import { t } from '../page/i18n.js';
import { highlightHTML, languageOf } from './highlighter.js';

// Past this size a block is left as plain text: putting its spans in would be one long
// task here (and highlight.js does ~1 MB/s for Python on a fast core, a quarter of that
// on a phone).
export const HIGHLIGHT_MAX_CHARS = 20_000;
const SCOPE_CLASS = /^hljs-[\w-]+(?: [\w-]+)*$/;

/** A code block's elements: `{block, code, text}`, where `text` is the text node holding
 * the code (an open fence grows it). `lang` is what the `language-` class says ('' for none). */
export function codeBlock(lang, source) {
  const code = document.createElement('code');
  if (lang) code.className = `language-${lang}`;
  const text = document.createTextNode(source);
  code.append(text, '\n'); // marked ends a code block with a newline too: same nodes either way
  const pre = document.createElement('pre');
  pre.append(code);
  return { block: wrap(pre, lang), code, text };
}

/** Give every `pre > code` in `root` (sanitized markdown) its bar; returns the code elements. */
export function decorateCode(root) {
  const codes = [];
  for (const pre of root.querySelectorAll('pre')) {
    const code = pre.firstElementChild;
    if (!code || code.nodeName !== 'CODE' || pre.childNodes.length !== 1) continue;
    const lang = /^language-(\S+)$/.exec(code.className)?.[1] ?? '';
    const parent = pre.parentNode;
    const next = pre.nextSibling;
    parent.insertBefore(wrap(pre, lang), next);
    codes.push(code);
  }
  return codes;
}

function wrap(pre, lang) {
  const block = document.createElement('div');
  block.className = 'md-code';
  const bar = document.createElement('div');
  bar.className = 'md-code-bar';
  const label = document.createElement('span');
  label.className = 'md-code-lang';
  label.textContent = lang || 'text';
  const copy = document.createElement('button');
  copy.type = 'button';
  copy.className = 'md-code-copy';
  copy.textContent = t('code.copy');
  bar.append(label, copy);
  block.append(bar, pre);
  return block;
}

// ---- highlighting, once a block is finished ------------------------------------------

// Which block goes first. A block on screen (or within a screen of it) is highlighted
// soon: its spans are put in during the main thread's idle time between frames where the
// browser has it, else after at most NEAR_WAIT_MS, one block per task (parsing a block's
// spans and restyling them is the cost left on this thread). A block off
// screen waits for real idle time, with no deadline: a user's paste of fifty blocks, or
// an answer's early blocks scrolled away, must not take frames from the answer the user
// is watching stream (at 500 tok/s on a phone the main thread is never idle, and these
// tasks were what delayed its paints). They are all highlighted once the page rests, or
// as soon as they are scrolled near the screen.
const NEAR_WAIT_MS = 300;
const waiting = new Set(); // finished code elements not highlighted yet, oldest first
const near = new Set(); // those of them within a screen of the viewport
let scheduled = null; // 'near' | 'idle' | null: the callback asked for
let running = false; // a block is being highlighted (its language may still be loading)
const idle = typeof requestIdleCallback === 'function';
const channel = new MessageChannel();
channel.port1.onmessage = () => runQueue(null);
// Without IntersectionObserver every block counts as near (as before this ordering), and
// so without idle callbacks (WebKit): there nothing tells idle time apart, so blocks off
// screen would go as soon as near ones anyway, and in WebKitGTK highlighting a frame
// after the observer's first report made the follower's ResizeObserver report a loop
// (tests/webkit/test_render.py, about one run in two).
const watcher = idle && typeof IntersectionObserver === 'function'
  ? new IntersectionObserver((entries) => {
    for (const { target, isIntersecting } of entries) {
      if (!waiting.has(target)) watcher.unobserve(target);
      else if (isIntersecting) near.add(target);
      else near.delete(target);
    }
    schedule();
  }, { rootMargin: '100% 0px' })
  : null;

/** Highlight these finished code elements, soon if they are on screen, else when the
 * page is idle; each in a task of its own. Elements no longer in the document by then (a
 * warm-up's, a test's) are skipped and load nothing. */
export function highlightLater(codes) {
  for (const code of codes) {
    if (!code.className || waiting.has(code)) continue;
    waiting.add(code);
    if (watcher) watcher.observe(code);
    else near.add(code);
  }
  schedule();
}

function schedule() {
  const want = near.size ? 'near' : waiting.size ? 'idle' : null;
  if (!want || scheduled === want || scheduled === 'near') return;
  scheduled = want;
  // WebKit has no idle callbacks: the next block goes right after this task, near ones
  // first, as before this ordering (its frames still come between two blocks).
  if (!idle) channel.port2.postMessage(null);
  else if (want === 'near') requestIdleCallback(runQueue, { timeout: NEAR_WAIT_MS });
  else requestIdleCallback(runQueue);
}

// An idle callback (`deadline`), or null after a plain task. A block off screen is only
// taken in idle time with room left, or when nothing can tell idle time apart.
async function runQueue(deadline) {
  scheduled = null;
  if (running) return; // one block at a time: the one running schedules the next
  running = true;
  let code = near.values().next().value;
  const resting = !deadline || (!deadline.didTimeout && deadline.timeRemaining() > 4);
  if (!code && resting) code = waiting.values().next().value;
  if (code) {
    waiting.delete(code);
    near.delete(code);
    watcher?.unobserve(code);
  }
  try {
    if (code?.isConnected) await highlight(code);
  } finally {
    running = false;
    for (const c of waiting) {
      if (c.isConnected) break;
      waiting.delete(c); // gone from the page (a closed conversation): never highlighted
      near.delete(c);
      watcher?.unobserve(c);
    }
    schedule();
  }
}

async function highlight(code) {
  const language = languageOf(code.className.slice('language-'.length));
  const source = code.textContent;
  if (!language || source.length > HIGHLIGHT_MAX_CHARS || code.dataset.highlighted) return;
  let html;
  try {
    html = await highlighted(language, source);
  } catch {
    return; // offline before the language was ever kept, say: the block stays plain text
  }
  if (!code.isConnected || code.textContent !== source) return;
  const nodes = spansOnly(html);
  if (!nodes) return;
  code.replaceChildren(...nodes);
  code.dataset.highlighted = language;
}

// ---- the worker ---------------------------------------------------------------------
// Started with the first block to highlight. Should it fail to start (an engine without
// module workers) or die, highlighting goes on here, on this thread, as it used to.
let worker; // the Worker; null: highlight on this thread; undefined: not started yet
const asked = new Map(); // id → {resolve, reject, language, source}
let lastId = 0;

function highlighted(language, source) {
  if (worker === undefined) worker = startWorker();
  if (!worker) return highlightHTML(language, source);
  return new Promise((resolve, reject) => {
    const id = ++lastId;
    asked.set(id, { resolve, reject, language, source });
    worker.postMessage({ id, language, source });
  });
}

function startWorker() {
  let w;
  try {
    w = new Worker(new URL('./highlight-worker.js', import.meta.url), { type: 'module', name: 'highlight' });
  } catch {
    return null;
  }
  w.onmessage = ({ data }) => {
    const ask = asked.get(data?.id);
    if (!ask) return;
    asked.delete(data.id);
    if (typeof data.html === 'string') ask.resolve(data.html);
    else ask.reject(new Error(String(data.error)));
  };
  w.onerror = (event) => {
    event.preventDefault();
    w.terminate();
    worker = null;
    for (const { resolve, reject, language, source } of asked.values()) highlightHTML(language, source).then(resolve, reject);
    asked.clear();
  };
  return w;
}

// highlight.js's HTML as nodes, if it is only text in `hljs-` spans; else null.
let parser = null;
function spansOnly(html) {
  parser ??= document.implementation.createHTMLDocument('');
  const root = parser.createElement('div');
  root.innerHTML = html;
  const walker = parser.createTreeWalker(root, NodeFilter.SHOW_ALL);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.nodeType === Node.TEXT_NODE) continue;
    if (node.nodeName !== 'SPAN' || node.attributes.length !== 1 || !SCOPE_CLASS.test(node.getAttribute('class') ?? '')) return null;
  }
  return [...root.childNodes];
}

// ---- Copy code --------------------------------------------------------------------------

// One listener for every block, present and future (no work per block or per frame).
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button.md-code-copy') : null;
  const code = button?.closest('.md-code')?.querySelector('pre > code');
  if (code) copyCode(button, code.textContent.replace(/\n$/, ''));
});

async function copyCode(button, text) {
  const copied = await copyText(text);
  button.dataset.copied = copied ? 'yes' : 'no';
  clearTimeout(button.copiedTimer);
  button.copiedTimer = setTimeout(() => delete button.dataset.copied, 2000);
}
