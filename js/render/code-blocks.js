// Code blocks: a bar with the block's language and a "Copy code" button over the code,
// and syntax highlighting by highlight.js once the block is finished.
//
// Cost while streaming stays what it was: an open fence is still one growing text node
// (markdown-stream.js); a block is highlighted once, when it is finished, in a task of
// its own after the frame that painted it, and never again. highlight.js's core (19 KB
// as brotli) is imported with the first block that needs it, and each language's module
// (1–6 KB) with the first block in that language: a conversation without code fetches
// none of it. Every module is named below by a literal import, so the service worker
// keeps them all for offline use (gateway/offline.py follows literal imports).
//
// highlight.js escapes the code it is given and wraps tokens in `<span class="hljs-…">`;
// its output is still checked to be exactly that (text in such spans) before it
// replaces the block's text, so a bug there can never put markup from a model on the page.

import { copyText } from './clipboard.js';

const LANGUAGES = {
  bash: () => import('../../vendor/highlight.js/languages/bash.js'),
  c: () => import('../../vendor/highlight.js/languages/c.js'),
  cpp: () => import('../../vendor/highlight.js/languages/cpp.js'),
  csharp: () => import('../../vendor/highlight.js/languages/csharp.js'),
  css: () => import('../../vendor/highlight.js/languages/css.js'),
  diff: () => import('../../vendor/highlight.js/languages/diff.js'),
  dockerfile: () => import('../../vendor/highlight.js/languages/dockerfile.js'),
  go: () => import('../../vendor/highlight.js/languages/go.js'),
  graphql: () => import('../../vendor/highlight.js/languages/graphql.js'),
  ini: () => import('../../vendor/highlight.js/languages/ini.js'),
  java: () => import('../../vendor/highlight.js/languages/java.js'),
  javascript: () => import('../../vendor/highlight.js/languages/javascript.js'),
  json: () => import('../../vendor/highlight.js/languages/json.js'),
  kotlin: () => import('../../vendor/highlight.js/languages/kotlin.js'),
  less: () => import('../../vendor/highlight.js/languages/less.js'),
  lua: () => import('../../vendor/highlight.js/languages/lua.js'),
  makefile: () => import('../../vendor/highlight.js/languages/makefile.js'),
  markdown: () => import('../../vendor/highlight.js/languages/markdown.js'),
  objectivec: () => import('../../vendor/highlight.js/languages/objectivec.js'),
  perl: () => import('../../vendor/highlight.js/languages/perl.js'),
  php: () => import('../../vendor/highlight.js/languages/php.js'),
  powershell: () => import('../../vendor/highlight.js/languages/powershell.js'),
  python: () => import('../../vendor/highlight.js/languages/python.js'),
  r: () => import('../../vendor/highlight.js/languages/r.js'),
  ruby: () => import('../../vendor/highlight.js/languages/ruby.js'),
  rust: () => import('../../vendor/highlight.js/languages/rust.js'),
  scss: () => import('../../vendor/highlight.js/languages/scss.js'),
  shell: () => import('../../vendor/highlight.js/languages/shell.js'),
  sql: () => import('../../vendor/highlight.js/languages/sql.js'),
  swift: () => import('../../vendor/highlight.js/languages/swift.js'),
  typescript: () => import('../../vendor/highlight.js/languages/typescript.js'),
  xml: () => import('../../vendor/highlight.js/languages/xml.js'),
  yaml: () => import('../../vendor/highlight.js/languages/yaml.js'),
};
const loadCore = () => import('../../vendor/highlight.js/core.js');

// The names models put after a fence, for the languages above.
const ALIASES = {
  sh: 'bash', zsh: 'bash', h: 'c', cc: 'cpp', 'c++': 'cpp', hpp: 'cpp', cxx: 'cpp', hh: 'cpp',
  cs: 'csharp', 'c#': 'csharp', patch: 'diff', docker: 'dockerfile', golang: 'go', gql: 'graphql',
  toml: 'ini', js: 'javascript', jsx: 'javascript', mjs: 'javascript', cjs: 'javascript', node: 'javascript',
  jsonc: 'json', json5: 'json', kt: 'kotlin', kts: 'kotlin', make: 'makefile', mk: 'makefile',
  md: 'markdown', objc: 'objectivec', 'objective-c': 'objectivec', pl: 'perl', ps1: 'powershell',
  pwsh: 'powershell', py: 'python', python3: 'python', py3: 'python', rb: 'ruby', rs: 'rust',
  console: 'shell', shellsession: 'shell', ts: 'typescript', tsx: 'typescript', mts: 'typescript',
  html: 'xml', xhtml: 'xml', svg: 'xml', plist: 'xml', yml: 'yaml', postgresql: 'sql', mysql: 'sql', sqlite: 'sql',
};

// Past this size a block is left as plain text: highlighting it would be one long task
// (highlight.js does ~1 MB/s for Python on a fast core, a quarter of that on a phone).
export const HIGHLIGHT_MAX_CHARS = 20_000;
const SCOPE_CLASS = /^hljs-[\w-]+(?: [\w-]+)*$/;

/** The language highlight.js knows a fence's `lang` by, or null. */
export function languageOf(lang) {
  const name = String(lang || '').toLowerCase();
  if (Object.hasOwn(LANGUAGES, name)) return name;
  return Object.hasOwn(ALIASES, name) ? ALIASES[name] : null;
}

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
  copy.textContent = 'Copy code';
  bar.append(label, copy);
  block.append(bar, pre);
  return block;
}

// ---- highlighting, once a block is finished ------------------------------------------

let core = null; // the highlight.js instance, once imported
const loading = new Map(); // language → Promise of its registration

// Which block goes first. A block on screen (or within a screen of it) is highlighted
// soon: in the main thread's idle time between frames where the browser has it, else
// after at most NEAR_WAIT_MS, one block per task (a block's first use of a language also
// compiles that language's rules: a few milliseconds, more on a phone). A block off
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
  try {
    await registered(language);
  } catch {
    return; // offline before it was ever kept, say: the block stays plain text
  }
  if (!code.isConnected || code.textContent !== source) return;
  const html = core.highlight(source, { language, ignoreIllegals: true }).value;
  const nodes = spansOnly(html);
  if (!nodes) return;
  code.replaceChildren(...nodes);
  code.dataset.highlighted = language;
}

function registered(language) {
  let promise = loading.get(language);
  if (!promise) {
    promise = Promise.all([loadCore(), LANGUAGES[language]()]).then(([c, definition]) => {
      core ??= c.default;
      if (!core.getLanguage(language)) core.registerLanguage(language, definition.default);
    });
    promise.catch(() => loading.delete(language)); // tried again by a later block
    loading.set(language, promise);
  }
  return promise;
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
