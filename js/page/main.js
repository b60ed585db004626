// The page's entry (index.html): answers rendered as streaming markdown, whose libraries
// are compiled while the page waits for Python.

import { MarkdownStream, renderMarkdown, renderUserMarkdown, warmUp } from '../render/markdown-stream.js';
import { startPage } from './page.js';

startPage({
  answers: { open: (container) => new MarkdownStream(container), show: renderMarkdown, user: renderUserMarkdown },
});
warmUp();
