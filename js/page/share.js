// @ts-check
// Shared into the chat (issue 46, item 3): text, a link or photos another app shares
// land in the composer, in a new conversation or a named existing one, for the person
// to read, edit and send. Nothing is sent by itself.
//
// Two ways in:
// - a host's `composer.share {text?, url?, images?, conversation?}` (a native share
//   extension or intent: bridge/PROTOCOL.md, "Share"), checked like every host message
//   by bridge/page/host-messages.js (sizes bounded, http(s) URLs only) and answered with
//   `composer.shared`, or an error that changes nothing (an unknown conversation);
// - the Web Share Target of the installed web app (manifest.webmanifest, Android): the
//   share sheet POSTs a multipart form to SHARE_ACTION, the service worker (sw.js) keeps
//   it in Cache Storage under SHARE_CACHE and sends the page to `./?share=<key>`, and the
//   page takes it from there once.
//
// The text is put in the textarea as its value: HTML in it stays text, never markup.
// Images go through the picker's own path (js/page/attachments.js): shrunk, counted and
// refused exactly as if the person had picked them.

import { MAX_SHARE_TEXT_CHARS, sharedUrl } from '../../bridge/page/host-messages.js';
import { t } from './i18n.js';

/** Where the share sheet posts (manifest.webmanifest's `share_target.action`), relative
 * to the page. */
export const SHARE_ACTION = 'share-target';
/** The Cache Storage cache sw.js keeps a share in until the page takes it. */
export const SHARE_CACHE = 'firsttoken-share';
/** The query that names a kept share (`?share=<key>`), or says it was refused. */
export const SHARE_PARAM = 'share';

/** A typed refusal, told to the host as `error {code, message}`. */
export class ShareRefused extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'ShareRefused';
    this.code = code;
  }
}

/** The composer's words for a share: its text, then its link on a line of its own unless
 * the text holds it already (Android's share sheets often put the link in the text). */
export function sharedText({ text = '', url = '' }) {
  const parts = [];
  if (text.trim()) parts.push(text.trim());
  if (url && !text.includes(url)) parts.push(url);
  return parts.join('\n');
}

export class Share {
  /**
   * @param {object} o
   * @param {any} o.store the conversations (conversation-store.js)
   * @param {any} o.attachments the composer's images (attachments.js)
   * @param {HTMLTextAreaElement} o.prompt the composer's box
   */
  constructor({ store, attachments, prompt }) {
    this.store = store;
    this.attachments = attachments;
    this.prompt = prompt;
  }

  /** The conversations are read (IndexedDB answered): until then an id cannot be found,
   * and the one last open would be opened over a share landed meanwhile. */
  async adopted() {
    if (this.store.store !== 'starting') return;
    await new Promise((resolve) => this.store.addEventListener('store', resolve, { once: true }));
  }

  /**
   * Land a share (`{text?, url?, images?: File[], conversation?: 'new' | id}`, checked)
   * in the composer. Refused whole, nothing changed, with a ShareRefused: an unknown
   * conversation, more images than a message takes. Returns what `composer.shared`
   * says: the conversation it landed in and each image's size, or why it was refused.
   */
  async land({ text, url, images = [], conversation }) {
    const tooMany = this.attachments.tooMany(images.length);
    if (tooMany) throw new ShareRefused(tooMany.code, tooMany.message);
    await this.adopted();
    if (conversation === 'new') {
      this.store.newChat();
    } else if (conversation !== undefined && conversation !== this.store.active.id) {
      if (!this.store.conversations.has(conversation) || !(await this.store.open(conversation))) {
        throw new ShareRefused('unknown_conversation', `no conversation '${conversation.slice(0, 80)}' here`);
      }
    }
    this.fill(sharedText({ text, url }));
    const sizes = await Promise.all(images.map((file) => this.attachments.attach(file).catch(
      (e) => ({ error: { code: typeof e?.code === 'string' ? e.code : 'invalid_image', message: String(e?.message ?? e) } }),
    )));
    return { conversation: this.store.active.id, images: sizes };
  }

  /** The words after what the box holds already (a draft is never lost), caret at the end. */
  fill(words) {
    if (!words) return;
    const el = this.prompt;
    el.value = el.value.trim() ? `${el.value.replace(/\s+$/, '')}\n\n${words}` : words;
    el.focus();
    el.setSelectionRange(el.value.length, el.value.length);
    el.dispatchEvent(new Event('input', { bubbles: true }));
  }

  /**
   * A Web Share Target's share, if the page was opened for one (`?share=<key>`): taken
   * from Cache Storage once, then forgotten, and the query removed so a reload does not
   * take it again. `say(text, code)` tells what could not be taken. Returns whether a
   * share was there.
   */
  async fromServiceWorker(win = window, say = (/** @type {string} */ _text, /** @type {string} */ _code) => {}) {
    const params = new URLSearchParams(win.location.search);
    const key = params.get(SHARE_PARAM);
    if (key === null) return false;
    params.delete(SHARE_PARAM);
    const rest = params.toString();
    win.history.replaceState(win.history.state, '', `${win.location.pathname}${rest ? `?${rest}` : ''}${win.location.hash}`);
    if (key === 'refused') {
      say(t('share.tooLarge'), 'share_too_large');
      return true;
    }
    let form;
    try {
      const cache = await win.caches.open(SHARE_CACHE);
      const request = new URL(`${SHARE_ACTION}/${encodeURIComponent(key)}`, win.document.baseURI).href;
      const kept = await cache.match(request);
      if (!kept) return false;
      await cache.delete(request);
      form = await kept.formData();
    } catch {
      say(t('share.unreadable'), 'share_unreadable');
      return true;
    }
    const field = (name) => {
      const value = form.get(name);
      return typeof value === 'string' ? value : '';
    };
    let text = field('text') || field('title');
    if (text.length > MAX_SHARE_TEXT_CHARS) {
      say(t('share.tooLarge'), 'share_too_large');
      text = '';
    }
    const rawUrl = field('url');
    const url = rawUrl ? sharedUrl(rawUrl) : null;
    if (rawUrl && !url) say(t('share.badUrl'), 'share_bad_url');
    const files = form.getAll('images').filter((f) => typeof f !== 'string');
    await this.adopted();
    this.store.newChat();
    this.fill(sharedText({ text, url: url ?? '' }));
    // As if picked: too many are refused with the picker's own note.
    this.attachments.add(files);
    return true;
  }
}
