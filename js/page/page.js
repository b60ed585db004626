// The page, wired: the conversation (conversation-store.js) painted at once, the composer taking
// input before Python is even imported (composer.js), the header (title, model,
// connection), Settings (settings.js, in the sheet of settings-sheet.js), the theme
// (theme.js), the live token count (live-count.js), the replies in flight (replies.js),
// a status line for screen readers, the keyboard shortcuts, and the link to Python
// (js/link/python-link.js), which starts last. All logic about prompts and answers
// (request building, SSE parsing, counting, compression) runs in Python, in a worker.

import { HostOverlay, attachHosts } from '../../bridge/page/hosts.js';
import { describeBoot } from '../boot/timeline.js';
import { link as pageLink } from '../link/python-link.js';
import { CoreSizes, Shrinker } from '../images/shrink.js';
import { base64Bytes, headerOnly } from '../images/header.js';
import { Attachments, DETAIL, heldBytes } from './attachments.js';
import { conversation, withImages } from './conversation.js';
import { ConversationList } from './conversations.js';
import { Composer } from './composer.js';
import { ConversationStore } from './conversation-store.js';
import { LiveCount } from './live-count.js';
import { MessageList } from './messages.js';
import { Connection } from './offline.js';
import { Replies } from './replies.js';
import { Awake } from './awake.js';
import { Haptics } from './haptics.js';
import { ReplyNotifier } from './notify.js';
import { Dictation } from './dictation.js';
import { Share } from './share.js';
import { Settings } from './settings.js';
import { SettingsSheet } from './settings-sheet.js';
import { StorageNotice } from './storage.js';
import { Theme } from './theme.js';
import { ThinkingControl } from './thinking-control.js';
import { Warmer } from './warm.js';
import { formatNumber, locale, onLocaleChange, setHostLocale, t, translateDocument } from './i18n.js';
import { languageField } from './language-field.js';
import { early as storedConversations } from './store/db.js';

/** Start the page. It is the page's composition root, and long for that reason (issue
 * 47, item 3): it makes each collaborator and connects their events, in the order they
 * depend on one another, and holds no behaviour of its own beyond a line or two per
 * event; what a piece does lives in its module (and the status lines, the shortcuts and
 * Send/Stop below it). Cut into parts, the same wiring would pass two dozen objects
 * between them and hide the one thing to read here: who talks to whom.
 *
 * `answers` renders answers: `open(container)` gives a stream with
 * `append(text)`, `end()` and, if it paints a caret, `renewCaret()`, `show(container, text)` renders a whole one (from
 * history), `user(container, text)`, if given, a user's message. main.js passes the markdown renderer; the render benchmark, a plain-text
 * one (bench/render-plain.js). */
// eslint-disable-next-line max-lines-per-function -- the composition root: its head says why it stays whole
export function startPage({ answers, link = pageLink } = {}) {
  const $ = (id) => document.getElementById(id);
  const els = {
    boot: $('boot'), bootTimings: $('boot-timings'), metrics: $('metrics'), quota: $('quota'),
    chat: $('chat'), messages: $('messages'), jump: $('jump'), status: $('status'), modelName: $('model-name'),
    form: $('composer'), prompt: $('prompt'), send: $('send'), stop: $('stop'), count: $('count'),
  };
  // The page's own words in the reader's language first (i18n.js): <html lang>, labels.
  translateDocument(document);
  languageField($('language'));
  // What hosts set (bridge/page/hosts.js): filled by attachHosts (below), applied to the
  // page's own requests as they leave. Its `settings.set` may name a locale
  // (bridge/PROTOCOL.md, "Settings").
  const overlay = new HostOverlay();
  overlay.addEventListener('change', () => setHostLocale(overlay.locale));
  new StorageNotice({ before: els.chat, say: t });
  new Theme($('theme'));
  const composer = new Composer(els.form, els.prompt);
  const store = new ConversationStore();
  const settings = new Settings({
    baseUrl: $('base-url'), baseUrlError: $('base-url-error'), model: $('model'), system: $('system'),
    api: $('api'), apiHint: $('api-help'), compress: $('compress'), compressHint: $('compress-hint'), apiKey: $('api-key'),
    reasoningSummary: $('reasoning-summary'), haptics: $('haptics'), awake: $('awake'),
  });
  // Haptics (haptics.js): through the host once attachHosts (below) has run, else the
  // browser's vibrate; the person's switch and a host's `haptics: false` both say off.
  let hosts = null;
  const haptics = new Haptics({
    host: (msg) => hosts?.post(msg) ?? false,
    hostAttached: () => hosts?.attached() ?? false,
    enabled: () => settings.haptics && hosts?.setting('haptics') !== false,
  });
  // The screen kept on while an answer streams (awake.js): the Wake Lock API, else the host.
  const awake = new Awake({
    host: (msg) => hosts?.post(msg) ?? false,
    hostAttached: () => hosts?.attached() ?? false,
    enabled: () => settings.awake && hosts?.setting('awake') !== false,
  });
  settings.addEventListener('awake', () => awake.update());
  // Each switch shows only where it can do something (a host, navigator.vibrate, a wake lock).
  const showHapticsField = () => {
    const field = $('haptics-field');
    if (field) field.hidden = !haptics.available;
    const awakeField = $('awake-field');
    if (awakeField) awakeField.hidden = !awake.available;
  };
  $('open-settings')?.addEventListener('click', showHapticsField);
  // Reply ready without a host: a notification through the service worker, and the one
  // offer to allow them after an answer the person waited for (notify.js says when).
  const notifier = new ReplyNotifier({
    settings, hostAttached: () => hosts?.attached() ?? false, after: els.messages,
    open: (id) => adopted.then(() => store.open(id)), current: () => store.active.id,
    sheet: { field: $('notify-field'), input: /** @type {HTMLInputElement | null} */ ($('notify')), note: $('notify-note') },
  });
  $('open-settings')?.addEventListener('click', () => notifier.refresh());
  // The first token of each of the page's own answers ticks once (a host's chats are its own).
  const ticked = new Set();
  // The Thinking level, per conversation (thinking-control.js).
  // (Auto shows a host's default level: bridge/page/hosts.js says when one is set.)
  if ($('thinking')) {
    new ThinkingControl({ button: $('thinking'), menu: $('thinking-menu') }, store, {
      hostLevel: () => overlay.effective({}).reasoning ?? null,
      onHostChange: (show) => overlay.addEventListener('change', show),
    });
  }
  const sheet = new SettingsSheet({
    dialog: $('settings'), form: $('settings-form'), open: $('open-settings'), test: $('test-connection'), result: $('connection-result'),
    models: $('models'), help: $('help'), openHelp: $('open-help'),
  }, settings);
  const showModel = () => { els.modelName.textContent = settings.model; };
  showModel();
  settings.addEventListener('model', showModel);
  const view = new MessageList(els.messages, els.chat, answers, els.jump);
  const attachments = new Attachments({
    button: $('attach'), input: $('attach-input'), list: $('attachments'), note: $('attach-note'), prompt: els.prompt, drop: els.form,
  }, {
    // Shrunk to the size the model of the next chat keeps (host settings included).
    shrinker: new Shrinker({ sizeFor: (w, h) => sizes.size(w, h, DETAIL) }),
    held: () => heldBytes(store.entries),
  });
  const sizes = new CoreSizes(link, () => replies.target().model);
  const countUrls = new WeakMap(); // image → its header-only URL, cut once
  const countUrl = (image) => {
    let url = countUrls.get(image);
    if (url === undefined) countUrls.set(image, (url = headerOnly(image.url)));
    return url;
  };
  const count = new LiveCount(els.count, {
    send: (request) => link.send(overlay.apply(request)),
    // Images go as their headers only: what the core counts them from (headerOnly).
    messages: () => {
      const draft = els.prompt.value;
      const images = attachments.images;
      const content = images.length ? withImages(draft, images, countUrl) : draft;
      return conversation(settings.system, store.entries, content.length ? [{ role: 'user', content }] : [], countUrl);
    },
    settings: () => settings.forRequest(),
  });
  // The connection to the API, opened while the person types (warm.js).
  const warmer = new Warmer(() => replies.target());
  const replies = new Replies({
    link, overlay, view, store, settings, header: els, onRequest: () => warmer.used(),
    // Screen readers hear "Thinking" once per answer, as its row appears; the row's
    // seconds are hidden from them (thinking.js).
    onThinking: () => announce(t('status.thinking')),
    connection: new Connection({ before: els.chat }),
    onBusy: (busy) => {
      showSendOrStop(els, busy);
      awake.set(busy);
      notifier.busy(busy);
    },
    onSettled: (li, state, msg, entry) => {
      count.request();
      settled(li, state, msg);
      if (state === 'done') replyReady(msg, entry);
      notifier.settled(state);
    },
  });

  // "Reply ready" (issue 46, item 4): an answer done while the page is hidden (the app in
  // the background, the phone locked) is told to the host, with the conversation's title
  // and the answer's first words, for a notification of its own (bridge/PROTOCOL.md,
  // "Reply ready, for hosts"). Nothing is posted while the page shows.
  const replyReady = (msg, entry) => {
    if (document.visibilityState !== 'hidden' || !hosts) return;
    const c = entry ? store.ownerOf(entry) : null;
    const text = typeof entry?.content === 'string' ? entry.content : '';
    const reply = { conversation: { id: c?.id ?? null, title: c?.title || t('conversations.untitled') }, text: firstWords(text) };
    const id = typeof msg?.id === 'string' ? `page:${msg.id}` : undefined;
    // No host to tell: the service worker's notification, where allowed (notify.js).
    if (!hosts.post({ type: 'reply.ready', id, ...reply })) notifier.notify(reply);
  };

  // ---- header, status ------------------------------------------------------------
  const { connection, announce } = statusLines(els);
  const settled = (li, state, msg) => {
    if (state === 'done') haptics.pulse('light', { defer: true });
    else if (state !== 'stopped') haptics.pulse('error', { defer: true });
    if (state === 'done') {
      announce(t('status.finished'));
      connection('ready', t('connection.connected'), 'connection.connected');
    } else if (state === 'stopped') {
      announce(t('status.stopped'));
    } else {
      announce(li?.querySelector(':scope > .error')?.textContent || t('status.failed'));
      if (msg?.error?.code === 'network') connection('offline', t('connection.unreachable'), 'connection.unreachable');
    }
  };

  // ---- Python ---------------------------------------------------------------------
  link.addEventListener('progress', (e) => {
    const text = bootText(e.detail);
    connection('starting', text);
    replies.booting(text);
    // A first visit's download (js/boot/progress.js): a bar only while bytes arrive.
    const bar = $('boot-progress');
    if (bar) {
      bar.hidden = e.detail.fraction == null;
      if (e.detail.fraction != null) bar.value = e.detail.fraction;
    }
  });
  link.addEventListener('failed', (e) => {
    document.documentElement.dataset.python = 'failed';
    connection('failed', t('boot.failed', { message: e.detail.message }));
    announce(t('boot.failedShort'));
  });
  link.addEventListener('message', (e) => {
    const msg = e.detail;
    if (msg.type === 'ready') {
      document.documentElement.dataset.python = 'ready';
      connection('ready', t('boot.ready'), 'boot.ready');
      const boot = describeBoot(link.boot);
      els.bootTimings.textContent = boot;
      delete els.bootTimings.dataset.i18n; // filled: no longer the placeholder line
      // Until a reply has its figures there (one sent through the gateway while Python
      // started may have, already: early-send.js), the boot's stand in.
      if (!els.metrics.dataset.reply) els.metrics.textContent = boot;
      delete els.metrics.dataset.i18n;
      replies.pythonReady();
    } else if (msg.type === 'tokens.counted') {
      count.show(msg);
    } else if (msg.type === 'image.sized') {
      sizes.answer(msg);
    } else {
      if (msg.type === 'chat.delta' && (msg.text || msg.reasoning) && typeof msg.id === 'string' && !msg.id.startsWith('host:') && !ticked.has(msg.id)) {
        ticked.add(msg.id);
        haptics.pulse('light');
      }
      replies.onEvent(msg);
    }
  });
  // ---- input ----------------------------------------------------------------------
  els.form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = els.prompt.value.trim();
    if ((!text && !attachments.images.length) || replies.busy) return; // one answer at a time: the draft waits
    if (attachments.pending) {
      attachments.say(t('composer.imagePending'));
      return;
    }
    conversations.settle();
    els.prompt.value = '';
    composer.fit();
    replies.send(text, attachments.take());
    haptics.pulse('light');
  });
  els.prompt.addEventListener('input', () => count.request());
  attachments.addEventListener('change', () => count.request());
  els.stop.addEventListener('click', () => replies.stop());
  settings.addEventListener('system', () => count.request());
  settings.addEventListener('compress', () => count.request());
  // The model and the API say how a prompt is counted, and whether the count is exact.
  settings.addEventListener('model', () => count.request());
  settings.addEventListener('api', () => count.request());

  keyboardShortcuts({
    prompt: els.prompt, replies, help: () => sheet.showHelp(),
    settings: () => {
      showHapticsField();
      notifier.refresh();
      sheet.show();
    },
  });

  // ---- conversations (conversation-store.js, conversations.js) --------------------------------
  // The open conversation, painted whole: at start, once IndexedDB has answered (read
  // since the first module was evaluated), and whenever another one is opened.
  // (replies.js `show` makes it well formed, paints each message with its actions, and
  // puts back an answer still streaming into it.)
  const paintConversation = () => replies.show(store);
  const conversations = new ConversationList({
    store, panel: $('conversations'), toggle: $('conversations-toggle'), newChat: $('new-chat'), title: $('conversation-title'),
  });
  store.addEventListener('switch', () => {
    paintConversation();
    count.request();
    notifier.seen();
  });
  const adopted = store.adopt(storedConversations).catch((e) => store.setStore('memory', e));

  // ---- start ----------------------------------------------------------------------
  paintConversation();
  warmer.watch(els.prompt);
  els.prompt.focus();
  document.documentElement.dataset.interactive = String(Math.round(performance.now()));
  // Native hosts and embedding windows (bridge/PROTOCOL.md, "Hosts"), attached before
  // the link starts so that `ready` is seen and can be replayed to a late host.
  // Dictation (dictation.js) and shares into the composer (share.js): issue 46, items 1 and 3.
  const dictation = new Dictation({ button: $('dictate'), partial: $('dictation'), prompt: els.prompt }, {
    host: { can: () => hosts?.can('dictation') ?? false, post: (msg) => hosts?.postTo('dictation', msg) ?? false },
    locale, say: (text, code) => attachments.say(text, code),
  });
  const share = new Share({ store, attachments, prompt: els.prompt });
  hosts = attachHosts(link, {
    overlay, capabilities: () => dictation.update(), warm: () => warmer.warm(), attach: (image) => attachments.attach(hostFile(image)),
    dictation: (msg) => dictation.fromHost(msg),
    share: ({ images, ...rest }) => share.land({ ...rest, images: (images ?? []).map(hostFile) }),
  });
  share.fromServiceWorker(window, (text, code) => attachments.say(text, code));
  showHapticsField();
  notifier.refresh();
  // A notification's conversation, opened once the kept ones are read (notify.js).
  notifier.start();
  link.start();
  return { link };
}

/** The first words of an answer, for a notification: whitespace folded, at most
 * REPLY_READY_CHARS characters, cut at a word where one ends near there. */
const REPLY_READY_CHARS = 120;
function firstWords(text) {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= REPLY_READY_CHARS) return flat;
  const cut = flat.slice(0, REPLY_READY_CHARS);
  const space = cut.lastIndexOf(' ');
  return `${space > REPLY_READY_CHARS / 2 ? cut.slice(0, space) : cut}…`;
}

// ---- the header's connection line and the status for screen readers -----------------
// The connection as the user cares about it: Python starting, ready, or failed; the
// server reached or not by the last reply. A line the page words itself (`key`, i18n.js)
// is worded again when the language changes (the boot's progress and errors keep their
// words). `announce` says a line once to screen readers (role=status): how a reply
// ended, not its text.
function statusLines({ boot, status }) {
  let said = null;
  const connection = (state, text, key = null) => {
    boot.dataset.state = state;
    boot.textContent = text;
    said = key;
  };
  onLocaleChange(() => {
    if (said) boot.textContent = t(said);
  });
  if (boot.dataset.state === 'starting') connection('starting', t('boot.starting'));
  let flip = false;
  const announce = (text) => {
    flip = !flip;
    status.textContent = flip ? text : `${text}\u00a0`;
  };
  return { connection, announce };
}

// ---- keyboard shortcuts (listed in the help dialog, index.html) ----------------------
function keyboardShortcuts({ prompt, replies, settings, help }) {
  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.isComposing) return;
    const mod = (e.ctrlKey || e.metaKey) && !e.altKey;
    if (mod && e.key === ',') {
      e.preventDefault();
      settings();
    } else if (mod && e.key === '/') {
      e.preventDefault();
      help();
    } else if (e.key === 'Escape' && e.shiftKey) {
      e.preventDefault();
      prompt.focus();
    } else if (e.key === 'Escape' && !document.querySelector('dialog[open]') && replies.busy) {
      e.preventDefault();
      replies.stop();
    }
  });
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

/** A host's image (`composer.attach`: base64, checked by bridge/page/host-messages.js)
 * as the File a picker would give. */
function hostFile({ data, type, name }) {
  return new File([base64Bytes(data)], name || 'photo', { type });
}

/** The boot's progress line (js/boot/progress.js `view()`) in the reader's language. */
function bootText({ text, stage, shown, total }) {
  if (typeof shown === 'number' && typeof total === 'number') {
    const mb = (bytes) => formatNumber(bytes / 1e6, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
    return t('boot.downloading', { shown: mb(shown), total: mb(total) });
  }
  return Object.hasOwn(BOOT_STAGES, stage) ? t(BOOT_STAGES[stage]) : text;
}

/** @type {Record<string, import('./i18n.js').Key>} */
const BOOT_STAGES = {
  pyscript: 'boot.starting', runtime: 'boot.loading', wasm: 'boot.interpreter', snapshot: 'boot.restoring',
  interpreter: 'boot.loadingFirsttoken', hello: 'boot.hello', ready: 'boot.pythonReady',
};
