// The render benchmark's peer (bench/render.py): the real page, started as js/page/main.js
// starts it, but painting answers as plain text into one text node, as the page did
// before markdown: no parsing, no sanitizing, no markdown warm-up. Measured in the same
// run, it shows what markdown costs on top and what the machine allows at all.
// bench/render.py serves the page with this module as its entry instead of main.js.

import { startPage } from '../js/page/page.js';

class PlainText {
  constructor(container) {
    // The same nodes as an open markdown tail holding one text node.
    const tail = document.createElement('div');
    tail.className = 'md-tail';
    this.node = document.createTextNode('');
    tail.append(this.node);
    container.style.whiteSpace = 'pre-wrap'; // (CSSOM, which the page's CSP allows)
    container.replaceChildren(tail);
  }

  append(text) {
    if (text) this.node.appendData(text);
  }

  end() {}
}

startPage({
  answers: {
    open: (container) => new PlainText(container),
    show: (container, text) => new PlainText(container).append(text),
  },
});
