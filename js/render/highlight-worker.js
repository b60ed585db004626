// @ts-check
// The highlighting worker (code-blocks.js starts it with the first block to highlight):
// highlight.js runs here, off the thread that paints (highlighter.js says why).
//
// Message in: {id, language, source}. Message out: {id, html} or {id, error}. The page
// still checks the HTML before it uses it (code-blocks.js `spansOnly`).

import { highlightHTML } from './highlighter.js';

self.onmessage = async ({ data }) => {
  const { id, language, source } = data ?? {};
  try {
    self.postMessage({ id, html: await highlightHTML(language, String(source)) });
  } catch (error) {
    self.postMessage({ id, error: String(error?.message ?? error) });
  }
};
