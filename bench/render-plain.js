// The render benchmark's peer (bench/render.py): the real page, started as js/page/main.js
// starts it, but painting answers as plain text into one text node, as the page did
// before markdown: no parsing, no sanitizing, no markdown warm-up. Measured in the same
// run, it shows what markdown costs on top and what the machine allows at all.
// bench/render.py serves the page with this module as its entry instead of main.js.

import { startPage } from '../js/page/page.js';
import { plainAnswers } from './plain-text.js';

startPage({ answers: plainAnswers });
