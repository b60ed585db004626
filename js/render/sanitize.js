// Model output is untrusted: this turns the HTML that marked makes of it into DOM nodes
// that cannot run script, load anything, or navigate the page.
//
// The HTML is parsed into a document with no browsing context (nothing in it loads or
// runs), DOMPurify cleans that tree in place (script, event handlers, javascript: URLs,
// DOM clobbering), and only then are the nodes moved into the page: they are never
// serialized and parsed again, so there is no mutation-XSS round trip. This module
// states our policy on top of DOMPurify's:
//   - an allow-list of tags: what markdown produces, plus a few harmless inline tags a
//     model may write by hand. No svg/math, iframe, object, form, style, meta, base;
//   - no style attribute (the page's CSP forbids inline styles: one would only raise a
//     violation), no id/name (DOM clobbering), class only as code's language-* and a
//     formula's placeholder (`md-math`, typeset by math.js after this);
//   - links: absolute http(s) and mailto only, opened in a new tab without referrer or
//     opener. Relative and fragment links are dropped: they would navigate the page;
//   - images: only inline data: images. Any URL would be a request the model chose,
//     and its query string can carry the conversation to another host (the CSP's
//     img-src backs this up, but here the request is never even attempted).

import DOMPurify from '../../vendor/dompurify/purify.es.mjs';
import { t } from '../page/i18n.js';

const TAGS = [
  'a', 'abbr', 'b', 'blockquote', 'br', 'code', 'dd', 'del', 'details', 'div', 'dl', 'dt',
  'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'i', 'img', 'input', 'kbd', 'li', 'mark',
  'ol', 'p', 'pre', 'q', 's', 'samp', 'small', 'span', 'strong', 'sub', 'summary', 'sup',
  'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'u', 'ul',
];
const ATTRS = ['href', 'title', 'alt', 'src', 'align', 'class', 'start', 'type', 'checked', 'disabled', 'colspan', 'rowspan', 'open'];
// Checked again per attribute below; this only lets the candidates through DOMPurify.
const URI = /^(?:(?:https?|mailto):|data:image\/)/i;
const LINK_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);
const INLINE_IMAGE = /^data:image\/(?:png|gif|jpeg|webp|avif);base64,[a-z0-9+/=\s]*$/i;
const CODE_LANGUAGE = /^language-[\w+#.-]{1,40}$/;
// A formula's placeholder (math.js), typeset after sanitizing.
const MATH = /^md-math(?: md-math-display)?$/;
const ALIGN = new Set(['left', 'center', 'right']);

const purify = DOMPurify(window); // our own instance: its hooks touch nobody else's

purify.addHook('uponSanitizeAttribute', (node, data) => {
  if (data.attrName === 'class') {
    data.keepAttr = (node.nodeName === 'CODE' && CODE_LANGUAGE.test(data.attrValue))
      || (node.nodeName === 'SPAN' && MATH.test(data.attrValue));
  } else if (data.attrName === 'align') {
    data.keepAttr = ALIGN.has(data.attrValue.toLowerCase());
  }
});

purify.addHook('afterSanitizeAttributes', (node) => {
  switch (node.nodeName) {
    case 'A': {
      const href = node.getAttribute('href');
      if (href !== null && !LINK_PROTOCOLS.has(protocolOf(href))) node.removeAttribute('href');
      if (node.hasAttribute('href')) {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer nofollow ugc');
        node.setAttribute('referrerpolicy', 'no-referrer');
      }
      break;
    }
    case 'IMG': {
      const src = node.getAttribute('src');
      if (src === null || !INLINE_IMAGE.test(src)) {
        node.removeAttribute('src');
        node.setAttribute('alt', t('image.blockedAlt', { alt: node.getAttribute('alt') || t('image.notLoaded') }));
        node.setAttribute('class', 'md-img-blocked');
        node.setAttribute('title', t('image.blockedTitle'));
      }
      break;
    }
    case 'INPUT': // task-list checkboxes only, never a control the model can make the user fill in
      node.setAttribute('type', 'checkbox');
      node.setAttribute('disabled', '');
      break;
  }
  if (node.nodeName !== 'IMG' && node.hasAttribute?.('src')) node.removeAttribute('src');
});

function protocolOf(url) {
  try {
    return new URL(url).protocol; // relative URLs throw: no base on purpose
  } catch {
    return '';
  }
}

purify.setConfig({
  ALLOWED_TAGS: TAGS,
  ALLOWED_ATTR: ATTRS,
  ALLOWED_URI_REGEXP: URI,
  // DOMPurify checks every attribute it does not know as safe against the URI pattern;
  // these carry no URL, and the strict pattern above would drop them.
  ADD_URI_SAFE_ATTR: ['align', 'start', 'type', 'checked', 'disabled', 'colspan', 'rowspan', 'open'],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  SANITIZE_NAMED_PROPS: true,
  // Sanitize a tree we parsed ourselves, in place: DOMPurify then neither re-parses
  // its configuration nor builds a new document on every call (this runs every frame).
  IN_PLACE: true,
});

// A document with no browsing context: what is parsed into it never loads or runs.
// DOMPurify leaves a NodeIterator on it per call, and until they are garbage collected
// each change to the document is reported to every one of them: the cost of a call
// grew with the number of calls before it. A fresh document every few calls keeps it flat.
let inert = null;
let uses = 0;
function inertDocument() {
  if (uses++ % 32 === 0) inert = document.implementation.createHTMLDocument('');
  return inert;
}

// Markup DOMPurify, under the policy above, would leave exactly as parsed: tags from the
// allow-list with no attribute at all (marked's blocks and inline formatting, and the
// bare tags an answer may write), and the few attributes marked itself writes, in its
// own spelling. Links, images and task-list checkboxes are not here: our hooks rewrite
// those. Anything else, a comment or a `<!`, takes the full sanitizer.
const AS_PARSED = new RegExp(`^(?:</?(?:${TAGS.filter((t) => !['a', 'img', 'input'].includes(t)).join('|')})>`
  + '|<ol start="\\d{1,9}">|<code class="language-[\\w+#.-]{1,40}">|<t[hd] align="(?:left|center|right)">'
  + '|<span class="md-math(?: md-math-display)?">)$', 'i');
const MARKUP = /<[^>]*>?/g;

/** Whether parsing `html` can only make what DOMPurify would keep unchanged. marked
 * escapes `<`, `>` and `&` in every text it writes, so each `<` starts a tag and each
 * tag is checked; entities only ever make characters. (Exported for the test that
 * compares both paths, tests/e2e/test_render.py.) */
export function keptAsParsed(html) {
  for (const [tag] of html.matchAll(MARKUP)) if (!AS_PARSED.test(tag)) return false;
  return true;
}

/** Sanitized DOM for `html` (from marked), ready to insert into the page.
 *
 * DOMPurify walks every node and runs our hooks on it: most of what a streamed answer
 * costs per frame on a slow phone. When every tag in the HTML is one it would keep as
 * parsed (keptAsParsed), the walk can change nothing, and it is skipped: the result is
 * the same DOM (tests/e2e/test_render.py compares both paths on the corpora). */
export function safeFragment(html) {
  return keptAsParsed(html) ? adopt(parsed(html)) : purifiedFragment(html);
}

/** `html` through DOMPurify, always (safeFragment's slow path). */
export function purifiedFragment(html) {
  const root = parsed(html);
  purify.sanitize(root);
  return adopt(root);
}

function parsed(html) {
  // A div as the context element: a stray `</div>` in model HTML cannot close it.
  const root = inertDocument().createElement('div');
  root.innerHTML = html;
  return root;
}

function adopt(root) {
  const fragment = document.createDocumentFragment();
  fragment.append(...root.childNodes); // adopted into the page, already clean
  return fragment;
}
