// @ts-check
// The page's first module (index.html loads it async, ahead of the rest): Python's
// worker starts now, while the page's own modules are still being fetched and
// evaluated, instead of after them. js/boot/boot.js says why; the link
// (js/link/python-link.js) takes the worker over once the page is built. On a first
// visit the start waits for the page's own load, and for an answer sent meanwhile
// (boot.js says why: issue 45).

import { python } from './boot.js';

python.start().catch(() => {}); // the link reports a failed start (`failed`), when it takes over
