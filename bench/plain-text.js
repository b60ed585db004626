// Answers painted as plain text into one text node, as the page did before markdown: no
// parsing, no sanitizing. The peers of bench/render.py (render-plain.js) and
// bench/reasoning.py (reasoning-peer.js) start the real page with these as its answers.

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

/** `startPage`'s `answers`: each answer one text node. */
export const plainAnswers = {
  open: (container) => new PlainText(container),
  show: (container, text) => new PlainText(container).append(text),
};
