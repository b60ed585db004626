// Math: `$…$` inline and `$$…$$` displayed, typeset by KaTeX, which is imported only
// once an answer holds a formula (KaTeX is 119 KB as brotli, its fonts 296 KB more).
//
// When `$` starts math is pandoc's rule (tex_math_dollars), so that prices stay text:
// an opening `$` has a non-space character right after it, a closing `$` a non-space
// character right before it and no digit right after it; `$$` opens display math. So
// "$5 and $10" is text (the second `$` follows a space), "$x^2$" is math, and `\$` is a
// dollar sign. Math never spans a paragraph (inline tokens live inside one), so half a
// formula mid-stream is text until its closing `$` arrives and breaks nothing after it.
//
// marked turns a formula into a placeholder, `<span class="md-math">TeX</span>` (TeX as
// escaped text, through the sanitizer like everything else). `typesetMath` then has
// KaTeX build the formula's nodes in place: KaTeX makes DOM nodes and sets their styles
// through the CSSOM, which the page's CSP allows (an HTML string with `style`
// attributes would be refused). Untrusted TeX is safe with KaTeX's defaults (`trust`
// off: no \href, \url, \htmlClass…); `maxExpand` and `maxSize` bound macro bombs.

const loadKatex = () => import('../../vendor/katex/katex.mjs');
const STYLESHEET = new URL('../../vendor/katex/katex.min.css', import.meta.url);

const INLINE = /^\$(?!\s)((?:\\[^]|[^\\$])+?)(?<!\s)\$(?!\d)/;
const DISPLAY = /^\$\$((?:\\[^]|[^\\$]|\$(?!\$))+?)\$\$/;
const ESCAPES = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHTML = (text) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

/** marked's extension for math (an inline-level token: `{type: 'math', text, display}`). */
export const mathExtension = {
  name: 'math',
  level: 'inline',
  start: (src) => {
    const at = src.indexOf('$');
    return at < 0 ? undefined : at;
  },
  tokenizer(src) {
    const display = DISPLAY.exec(src);
    if (display && display[1].trim()) return { type: 'math', raw: display[0], text: display[1].trim(), display: true };
    if (src.startsWith('$$')) return undefined;
    const inline = INLINE.exec(src);
    if (inline) return { type: 'math', raw: inline[0], text: inline[1], display: false };
    return undefined;
  },
  renderer: ({ text, display }) => `<span class="md-math${display ? ' md-math-display' : ''}">${escapeHTML(text)}</span>`,
};

const OPTIONS = { throwOnError: true, output: 'htmlAndMathml', maxExpand: 500, maxSize: 20, strict: 'ignore', trust: false };
// Formulas typeset recently, by TeX: the open block is rendered again on every frame,
// and its formulas with it; a copy of the nodes costs far less than KaTeX.
const typeset = new Map();
const TYPESET_KEEP = 256;
let katex = null;
let loading = null;

/** Typeset the math placeholders in `root` (sanitized markdown). Before KaTeX is here,
 * they stay TeX, marked pending, and KaTeX is fetched; `onLoaded` runs once it is. */
export function typesetMath(root) {
  const spans = root.querySelectorAll('span.md-math');
  if (!spans.length) return;
  if (!katex) {
    for (const span of spans) span.dataset.pending = '';
    load();
    return;
  }
  for (const span of spans) render(span);
}

function render(span) {
  const tex = span.dataset.tex ?? span.textContent;
  const display = span.classList.contains('md-math-display');
  const key = (display ? '$$' : '$') + tex;
  let done = typeset.get(key);
  if (!done) {
    const nodes = document.createElement('span');
    let error = null;
    try {
      katex.render(tex, nodes, { ...OPTIONS, displayMode: display });
    } catch (e) {
      // Not TeX that KaTeX knows: shown as written, with the reason on hover.
      nodes.replaceChildren(display ? `$$${tex}$$` : `$${tex}$`);
      error = String(e?.message ?? e);
    }
    done = { nodes, error };
    typeset.set(key, done);
    if (typeset.size > TYPESET_KEEP) typeset.delete(typeset.keys().next().value);
  }
  if (done.error !== null) {
    span.classList.add('md-math-error');
    span.title = done.error;
  }
  span.dataset.tex = tex;
  delete span.dataset.pending;
  span.replaceChildren(...done.nodes.cloneNode(true).childNodes);
}

function load() {
  if (loading) return;
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = STYLESHEET.href;
  document.head.append(link);
  loading = loadKatex().then((module) => {
    katex = module.default;
    typesetPending();
  }, () => {
    loading = null; // offline before KaTeX was ever kept: formulas stay TeX; try again later
  });
}

// Formulas that waited for KaTeX, in slices of a few milliseconds (a long history of
// them must not become one long task).
function typesetPending() {
  const started = performance.now();
  for (const span of document.querySelectorAll('span.md-math[data-pending]')) {
    render(span);
    if (performance.now() - started > 8) {
      setTimeout(typesetPending, 0);
      return;
    }
  }
}

/** Whether KaTeX has been imported (tests: it is fetched only when math appears). */
export const mathLoaded = () => katex !== null;
