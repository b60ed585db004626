// @ts-check
// "Reply ready" without a host (issue 46, item 4): an answer done while the page is
// hidden becomes a notification shown by the service worker (sw.js), tagged by
// conversation, that opens that conversation. With a host attached the host is told
// instead (`reply.ready`, page.js) and nothing is shown here: the app notifies natively.
//
// Why the service worker's registration and never `new Notification()`: Chrome on
// Android throws a TypeError on the constructor ("Illegal constructor. Use
// ServiceWorkerRegistration.showNotification() instead"), and iOS delivers web
// notifications only to an installed web app, through its service worker.
// https://notifications.spec.whatwg.org/#dom-serviceworkerregistration-shownotification
//
// What it cannot do: a page the system has suspended runs no code. iOS suspends an
// installed web app soon after it leaves the screen, and Android freezes background tabs
// after a while; an answer that ends after that is painted, not notified, when the page
// comes back. Reaching a suspended page takes Web Push from the gateway (a push
// subscription and VAPID keys), which is not built; a native host's ReplyWatch polls the
// stream's status instead (bridge/hosts).
//
// The permission policy (issue 46: "never at first load"):
// - Nothing is asked at load, nor by the page on its own: a prompt out of the blue is
//   what people refuse, and a refusal is for good (the browser remembers `denied`).
// - Once the person has waited for an answer (it took WAITED_MS or more, or the page was
//   hidden while it came), a small offer appears under it: "Notify me when replies are
//   ready" / "No thanks". Only the tap on "Notify me" calls requestPermission(): Safari
//   grants only from a user gesture, and Chrome quiets prompts that come without one.
// - The offer is shown once. "No thanks" is kept (`notify: false`) as the switch off.
// - The Settings switch "Notify when a reply is ready" asks too, from its own tap. It
//   shows only where Notification and service workers exist (not in iOS Safari's tabs,
//   not in a WebView) and no host is attached.
// - Permission granted (here or in the browser's site settings) and the switch never
//   turned off: notifications are on.

import { t } from './i18n.js';

/** @typedef {import('./i18n.js').Key} Key */

/** An answer that took this long was waited for (ms), and earns the offer. */
export const WAITED_MS = 8000;
/** A notification's title (the conversation's) is cut here; its body comes cut already. */
export const TITLE_CHARS = 80;
/** A conversation id longer than this, from the URL or the service worker, is nobody's. */
const ID_CHARS = 200;
/** How long a notification waits for a worker still installing (a first visit). */
const ACTIVE_WAIT_MS = 30_000;
/** The URL fragment that names a conversation to open (sw.js builds it). */
const FRAGMENT = /^#conversation=([^&]*)$/;

export class ReplyNotifier {
  /**
   * @param {object} o
   * @param {import('./settings.js').Settings} o.settings
   * @param {() => boolean} o.hostAttached
   * @param {(id: string) => void} o.open opens a conversation by id
   * @param {() => string} o.current the id of the conversation open now
   * @param {HTMLElement} o.after the offer goes just after it (the messages)
   * @param {{field?: HTMLElement | null, input?: HTMLInputElement | null, note?: HTMLElement | null}} [o.sheet]
   * @param {Window & typeof globalThis} [o.win]
   * @param {() => number} [o.now]
   */
  constructor({ settings, hostAttached, open, current, after, sheet = {}, win = window, now = () => performance.now() }) {
    this.settings = settings;
    this.hostAttached = hostAttached;
    this.open = open;
    this.current = current;
    this.after = after;
    this.sheet = sheet;
    this.win = win;
    this.now = now;
    this.started = -1; // when the answer in flight was sent, or -1
    this.hiddenDuring = false;
    /** @type {HTMLElement | null} */
    this.offer = null;
    this.shown = 0;
    win.document.addEventListener('visibilitychange', () => {
      if (this.started >= 0 && win.document.visibilityState === 'hidden') this.hiddenDuring = true;
      this.seen();
    });
    sheet.input?.addEventListener('change', () => this.switched());
    // The conversation a notification names: in the URL when the worker opened a new
    // window (sw.js), by message when it focused one already open.
    win.navigator.serviceWorker?.addEventListener('message', (e) => {
      const data = e.data;
      if (data && typeof data === 'object' && data.type === 'conversation.open') this.openNamed(data.conversation);
    });
    win.addEventListener('hashchange', () => this.fromUrl());
  }

  /** Open the conversation the URL names, if it names one (the page calls this once it
   * is wired: opening waits for the kept conversations to be read). */
  start() {
    this.fromUrl();
  }

  /** Where notifications can be shown at all. */
  get available() {
    const { win } = this;
    return typeof win.Notification === 'function' && 'serviceWorker' in win.navigator && win.isSecureContext && /^https?:$/.test(win.location.protocol);
  }

  get permission() {
    return this.available ? this.win.Notification.permission : 'denied';
  }

  /** Whether a reply done while hidden becomes a notification now. */
  get on() {
    return this.permission === 'granted' && this.settings.notify !== false && !this.hostAttached();
  }

  /** The Settings switch, as things are now (called as the sheet opens). */
  refresh() {
    const { field, input } = this.sheet;
    if (field) field.hidden = !this.available || this.hostAttached();
    if (input) input.checked = this.on;
  }

  /** An answer started (`busy` true) or ended; the offer makes way for the next one. */
  busy(busy) {
    if (busy) {
      this.started = this.now();
      this.hiddenDuring = this.win.document.visibilityState === 'hidden';
      this.removeOffer();
    }
  }

  /** An answer ended as `state`; offered once if the person waited for it. */
  settled(state) {
    const waited = this.started >= 0 && (this.hiddenDuring || this.now() - this.started >= WAITED_MS);
    this.started = -1;
    if (state !== 'done' || !waited || this.offer) return;
    if (!this.available || this.hostAttached() || this.permission !== 'default') return;
    if (this.settings.notify !== null || this.settings.notifyOffered) return;
    this.settings.keep('notify_offered', true);
    this.showOffer();
  }

  /** Show `reply` ({conversation: {id, title}, text}) as a notification, if on. Resolves
   * to whether one was shown; never rejects (a revoked permission, no worker: none). */
  async notify({ conversation, text }) {
    if (!this.on) return false;
    try {
      const registration = await this.registration();
      if (!registration) return false;
      const id = typeof conversation.id === 'string' ? conversation.id : '';
      await registration.showNotification(clip(conversation.title, TITLE_CHARS), {
        body: text,
        // One per conversation: a later answer there replaces it, and says so again.
        tag: tagOf(id),
        renotify: true,
        data: { conversation: id || null },
        dir: 'auto',
        lang: this.win.document.documentElement.lang || '',
      });
      this.shown += 1;
      this.win.document.documentElement.dataset.notified = String(this.shown); // tests wait on it
      return true;
    } catch (error) {
      console.warn('firsttoken: no notification:', /** @type {Error} */ (error)?.message || error);
      return false;
    }
  }

  /** The open conversation is in view (the page shown again, another conversation
   * opened): its notification has done its work and goes, as a chat app's do. Those of
   * other conversations stay. */
  async seen() {
    if (this.permission !== 'granted' || this.win.document.visibilityState !== 'visible') return;
    try {
      const registration = await this.win.navigator.serviceWorker.getRegistration();
      for (const shown of (await registration?.getNotifications({ tag: tagOf(this.current()) })) ?? []) shown.close();
    } catch { /* nothing to close */ }
  }

  /** The page's service worker, once active (a first visit's may still be installing:
   * waited for, within ACTIVE_WAIT_MS); null where there is none. */
  async registration() {
    const container = this.win.navigator.serviceWorker;
    const registration = await container.getRegistration();
    if (!registration || registration.active) return registration ?? null;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    const late = new Promise((resolve) => { timer = setTimeout(resolve, ACTIVE_WAIT_MS, null); });
    const ready = await Promise.race([container.ready, late]);
    clearTimeout(timer);
    return ready;
  }

  // ---- asking ----------------------------------------------------------------------
  /** Ask the browser (only ever from a tap: the offer's button or the switch). */
  async ask() {
    let answer = 'denied';
    try {
      answer = await this.win.Notification.requestPermission();
    } catch { /* an engine with the old callback form only, or refused outright: as denied */ }
    return answer === 'granted';
  }

  async switched() {
    const { input, note } = this.sheet;
    if (!input) return;
    if (note) worded(note, null);
    if (!input.checked) {
      this.settings.keep('notify', false);
      return;
    }
    const granted = this.permission === 'granted' || (this.permission === 'default' && await this.ask());
    if (granted) this.settings.keep('notify', true);
    input.checked = granted;
    if (!granted && note) worded(note, 'notify.blocked');
  }

  showOffer() {
    const doc = this.win.document;
    const offer = doc.createElement('div');
    offer.className = 'notify-offer';
    offer.setAttribute('role', 'group');
    // Worded by key, so that another language words it again (i18n.js translateDocument).
    offer.dataset.i18nLabel = 'notify.offerLabel';
    offer.setAttribute('aria-label', t('notify.offerLabel'));
    const text = doc.createElement('p');
    worded(text, 'notify.offer');
    const yes = doc.createElement('button');
    yes.type = 'button';
    yes.className = 'notify-yes';
    worded(yes, 'notify.accept');
    const no = doc.createElement('button');
    no.type = 'button';
    no.className = 'notify-no';
    worded(no, 'notify.dismiss');
    yes.addEventListener('click', async () => {
      this.removeOffer();
      // Refused at the browser's prompt: the browser remembers; the switch stays off.
      if (await this.ask()) this.settings.keep('notify', true);
    });
    no.addEventListener('click', () => {
      this.removeOffer();
      this.settings.keep('notify', false);
    });
    offer.append(text, yes, no);
    this.after.after(offer);
    this.offer = offer;
  }

  removeOffer() {
    this.offer?.remove();
    this.offer = null;
  }

  // ---- opening ---------------------------------------------------------------------
  fromUrl() {
    const match = FRAGMENT.exec(this.win.location.hash);
    if (!match) return;
    let id = '';
    try {
      id = decodeURIComponent(match[1]);
    } catch { /* malformed: nothing to open */ }
    // The fragment has done its work: a reload must not switch back to it.
    this.win.history.replaceState(this.win.history.state, '', this.win.location.pathname + this.win.location.search);
    this.openNamed(id);
  }

  openNamed(id) {
    if (typeof id === 'string' && id && id.length <= ID_CHARS) this.open(id);
  }
}

/** `el` worded by catalogue `key` (i18n.js), now and in another language; null: empty. */
function worded(/** @type {HTMLElement} */ el, /** @type {Key | null} */ key) {
  if (key) el.dataset.i18n = key;
  else delete el.dataset.i18n;
  el.textContent = key ? t(key) : '';
}

/** The tag of a conversation's notification: one per conversation (sw.js reads `data`). */
function tagOf(id) {
  return `firsttoken-reply:${id}`;
}

/** `text` on one line, at most `max` characters (an ellipsis where cut). */
function clip(text, max) {
  const flat = String(text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}
