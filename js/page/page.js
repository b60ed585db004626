// The page, wired: the conversation (history.js) painted at once, the composer taking
// input before Python is even imported, Settings (settings.js), the live token count
// (live-count.js), the replies in flight (replies.js), and the link to Python
// (js/link/python-link.js), which starts last. All logic about prompts and answers
// (request building, SSE parsing, counting, compression) runs in Python, in a worker.

import { attachHosts } from '../../bridge/page/hosts.js';
import { describeBoot } from '../boot/timeline.js';
import { link as pageLink } from '../link/python-link.js';
import { conversation } from './conversation.js';
import { ConversationList } from './conversations.js';
import { History } from './history.js';
import { LiveCount } from './live-count.js';
import { MessageList } from './messages.js';
import { Connection } from './offline.js';
import { Replies } from './replies.js';
import { Settings } from './settings.js';
import { early as storedConversations } from './store/db.js';

/** Start the page. `answers` renders answers: `open(container)` gives a stream with
 * `append(text)` and `end()`, `show(container, text)` renders a whole one (from
 * history), `user(container, text)`, if given, a user's message. main.js passes the markdown renderer; the render benchmark, a plain-text
 * one (bench/render-plain.js). */
export function startPage({ answers, link = pageLink } = {}) {
  const $ = (id) => document.getElementById(id);
  const els = {
    boot: $('boot'), metrics: $('metrics'), quota: $('quota'), chat: $('chat'), messages: $('messages'),
    form: $('composer'), prompt: $('prompt'), send: $('send'), stop: $('stop'), clear: $('clear'), count: $('count'),
  };
  const history = new History();
  const settings = new Settings({
    baseUrl: $('base-url'), model: $('model'), system: $('system'), compress: $('compress'), apiKey: $('api-key'),
  });
  const view = new MessageList(els.messages, els.chat, answers);
  const count = new LiveCount(els.count, {
    send: (request) => link.send(request),
    messages: () => {
      const draft = els.prompt.value;
      return conversation(settings.system, history.entries, draft ? [{ role: 'user', content: draft }] : []);
    },
    settings: () => settings.forRequest(),
  });
  const replies = new Replies({
    link, view, history, settings, header: els,
    connection: new Connection({ before: els.chat }),
    onBusy: (busy) => showSendOrStop(els, busy),
    onSettled: () => count.request(),
  });

  // ---- Python ---------------------------------------------------------------------
  link.addEventListener('progress', (e) => {
    els.boot.textContent = e.detail.text;
    replies.booting(e.detail.text);
    // A first visit's download (js/boot/progress.js): a bar only while bytes arrive.
    const bar = $('boot-progress');
    if (bar) {
      bar.hidden = e.detail.fraction == null;
      if (e.detail.fraction != null) bar.value = e.detail.fraction;
    }
  });
  link.addEventListener('failed', (e) => {
    document.documentElement.dataset.python = 'failed';
    els.boot.textContent = `Python failed to start: ${e.detail.message}`;
  });
  link.addEventListener('message', (e) => {
    const msg = e.detail;
    if (msg.type === 'ready') {
      document.documentElement.dataset.python = 'ready';
      els.metrics.textContent = describeBoot(link.boot);
      replies.pythonReady();
    } else if (msg.type === 'tokens.counted') {
      count.show(msg);
    } else {
      replies.onEvent(msg);
    }
  });

  // ---- input ----------------------------------------------------------------------
  els.form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = els.prompt.value.trim();
    if (!text || replies.busy) return; // one answer at a time: the draft waits
    conversations.settle();
    els.prompt.value = '';
    replies.send(text);
  });
  els.prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      els.form.requestSubmit();
    }
  });
  els.prompt.addEventListener('input', () => count.request());
  els.stop.addEventListener('click', () => replies.stop());
  els.clear.addEventListener('click', () => {
    replies.stop();
    history.clear();
    replies.show(history);
  });
  settings.addEventListener('system', () => count.request());

  // ---- conversations (history.js, conversations.js) --------------------------------
  // The open conversation, painted whole: at start, once IndexedDB has answered (read
  // since the first module was evaluated), and whenever another one is opened.
  // (replies.js `show` makes it well formed, paints each message with its actions, and
  // puts back an answer still streaming into it.)
  const paintConversation = () => replies.show(history);
  const conversations = new ConversationList({
    history, panel: $('conversations'), toggle: $('conversations-toggle'), newChat: $('new-chat'), title: $('conversation-title'),
  });
  history.addEventListener('switch', () => {
    paintConversation();
    count.request();
  });
  history.adopt(storedConversations).catch((e) => history.setStore('memory', e));

  // ---- start ----------------------------------------------------------------------
  paintConversation();
  els.prompt.focus();
  document.documentElement.dataset.interactive = String(Math.round(performance.now()));
  // Native hosts and embedding windows (bridge/PROTOCOL.md, "Hosts"), attached before
  // the link starts so that `ready` is seen and can be replayed to a late host.
  attachHosts(link);
  link.start();
  return { link };
}

// ---- Send becomes Stop ------------------------------------------------------------
// One button's place: Send while the conversation is idle, Stop while its answer streams
// (replies.js says why not a queue). The hidden one leaves the accessibility tree, so
// "Send" and "Stop" are never offered at once; focus follows the swap. Stop takes taps
// only after a moment: the second tap of a double-tapped Send would land on it.
const STOP_GUARD_MS = 350;

function showSendOrStop({ send, stop }, busy) {
  const hadFocus = document.activeElement === (busy ? send : stop);
  send.hidden = busy;
  stop.hidden = !busy;
  stop.disabled = true;
  clearTimeout(stop.guard);
  if (busy) {
    stop.guard = setTimeout(() => {
      stop.disabled = stop.hidden;
      if (hadFocus && document.activeElement === document.body) stop.focus({ preventScroll: true });
    }, STOP_GUARD_MS);
  } else if (hadFocus) {
    send.focus({ preventScroll: true });
  }
}
