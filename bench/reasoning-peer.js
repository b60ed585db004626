// The reasoning benchmark's peer (bench/reasoning.py): the real page, started as
// js/page/main.js starts it, sending the same requests, but painting only the answer's
// text, as plain text into one text node, and nothing of the reasoning: what the page
// showed before issue 48 (a blank space under the question until the first answer
// token), with its markdown taken away too, so that its paints are the cheapest the
// page can make. bench/reasoning.py serves the page with this module as its entry.

import { startPage } from '../js/page/page.js';
import { plainAnswers } from './plain-text.js';
import { ThinkingRow } from '../js/page/thinking.js';

// The thinking row never shows: taken out of the reply as it is made, and deaf to the
// reasoning that streams (the same module instance the page's replies use).
const quiet = ThinkingRow.prototype;
quiet.setPhase = function setPhase(phase) {
  this.el.dataset.phase = phase;
  this.el.remove();
  clearInterval(this.timer);
};
quiet.tick = function tick() {};
quiet.reason = function reason(all) {
  this.reasoning = all;
};
quiet.showPreview = function showPreview() {};
quiet.done = function done() {
  this.el.remove();
};
quiet.answerBegins = function answerBegins() {};
quiet.end = function end() {};

startPage({ answers: plainAnswers });
