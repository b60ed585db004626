// Images attached in the composer: from the picker (`accept="image/*"`, which offers the
// camera on phones), a paste or a drop; each shown as a thumbnail with a Remove button
// while it is prepared (js/images/shrink.js) and until it is sent.
//
// Bounds, each refused with a line saying why, nothing else lost (what was attached
// stays, the draft too):
// - MAX_AT_ONCE images a message;
// - MAX_HELD_BYTES of images in a conversation, this message's included: every request
//   carries the whole conversation, and the firsttoken gateway takes request bodies of
//   up to 4 MiB by default (`--max-body-bytes`), under the protocol's own 8 MB
//   (py/firsttoken/protocol.py, MAX_MESSAGE_BYTES); the rest is left to the text.
//   IndexedDB keeps them with the conversation.
//
// An image as kept with its message (the entry's `images`, conversation.js) and as
// attached: `{url: 'data:image/jpeg;base64,…', width, height, bytes, detail}`.
//
// On the list: `data-pending` while an image is being prepared (tests and hosts wait on
// it); Send waits for none: it says to wait. On each thumbnail once prepared: its
// `data-width`, `data-height` and `data-prepare-ms`.

import { ImageError } from '../images/header.js';
import { t } from './i18n.js';

export const MAX_AT_ONCE = 20;
export const MAX_HELD_BYTES = 3 * 1024 * 1024;
/** What the page asks for: the count and the resize are exact at "high" (at "auto" the
 * model decides, OpenAI's vision guide), and a phone's photo is sent to be read. */
export const DETAIL = 'high';

/** Whether `url` is an image the page made (a JPEG, PNG, WebP or GIF data URL): a
 * stored or imported record may hold anything, and nothing else is ever shown. */
export function isImageUrl(url) {
  return typeof url === 'string' && /^data:image\/(jpeg|png|webp|gif);base64,/.test(url) && url.length < MAX_HELD_BYTES;
}

/** The images of a conversation's entries, in bytes of their data URLs. */
export function heldBytes(entries) {
  let n = 0;
  for (const m of entries) for (const image of m.images ?? []) n += image.url?.length ?? 0;
  return n;
}

export class Attachments extends EventTarget {
  /** `els`: {button, input, list, note, prompt, drop}; `shrinker`: js/images/shrink.js's;
   * `held()`: the bytes of images the open conversation holds already. Dispatches
   * 'change' when the images attached change. */
  constructor(els, { shrinker, held = () => 0 }) {
    super();
    Object.assign(this, els, { shrinker, held });
    this.items = []; // {li, image?, pending, dropped}
    this.button.addEventListener('click', () => this.input.click());
    this.input.addEventListener('change', () => {
      this.add([...this.input.files]);
      this.input.value = '';
    });
    this.prompt.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData?.files ?? [])];
      if (!files.length) return; // text: pasted as usual
      e.preventDefault();
      this.add(files);
    });
    this.drop.addEventListener('dragover', (e) => {
      if (![...(e.dataTransfer?.types ?? [])].includes('Files')) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    });
    this.drop.addEventListener('drop', (e) => {
      const files = [...(e.dataTransfer?.files ?? [])];
      if (!files.length) return;
      e.preventDefault();
      this.add(files);
    });
  }

  /** The images ready to send. */
  get images() {
    return this.items.filter((i) => i.image).map((i) => i.image);
  }

  get pending() {
    return this.items.some((i) => i.pending);
  }

  /** Attach `files`; refusals are said in the note, one line. */
  add(files) {
    if (!files.length) return;
    const refused = this.tooMany(files.length);
    if (refused) {
      this.say(refused.message, refused.code);
      return;
    }
    this.say('');
    for (const file of files) this.prepare(file);
  }

  /** The refusal of `n` more images, or null if they fit in one message. */
  tooMany(n) {
    if (this.items.length + n <= MAX_AT_ONCE) return null;
    return new ImageError('too_many', t('attachments.tooMany', { max: MAX_AT_ONCE, count: n, attached: this.items.length }));
  }

  /** Attach one `file` as `add` does, for a host (`composer.attach`): a promise of
   * `{width, height, bytes}` once it is ready to send, or a rejection with the
   * ImageError the note shows. */
  async attach(file) {
    const refused = this.tooMany(1);
    if (refused) {
      this.say(refused.message, refused.code);
      throw refused;
    }
    const { image, error } = await this.prepare(file);
    if (error) throw error;
    return { width: image.width, height: image.height, bytes: image.bytes };
  }

  /** Prepare `file` into a thumbnail: `{image}` once ready, `{error}` if refused (said
   * in the note) or removed meanwhile. */
  async prepare(file) {
    const item = { li: this.thumbnail(file.name), image: null, pending: true, dropped: false };
    const started = performance.now();
    this.items.push(item);
    this.changed();
    try {
      const shrunk = await this.shrinker.prepare(file);
      if (item.dropped) {
        item.pending = false;
        return { error: new ImageError('removed', t('attachments.removed')) };
      }
      const bytes = this.images.reduce((n, i) => n + i.url.length, 0) + shrunk.url.length;
      if (this.held() + bytes > MAX_HELD_BYTES) {
        throw new ImageError('storage', t('attachments.full', { mb: Math.round(MAX_HELD_BYTES / 1048576) }));
      }
      item.image = { url: shrunk.url, width: shrunk.width, height: shrunk.height, bytes: shrunk.bytes, detail: DETAIL };
      const img = item.li.querySelector('img');
      img.src = shrunk.url;
      img.alt = t('attachments.ready', { name: file.name || t('attachments.imageName'), width: String(shrunk.width), height: String(shrunk.height) });
      // How long it took, from the file to the JPEG, for hosts and benchmarks (bench/images.py).
      item.li.dataset.prepareMs = String(Math.round(performance.now() - started));
      item.li.dataset.width = String(shrunk.width);
      item.li.dataset.height = String(shrunk.height);
    } catch (e) {
      item.pending = false;
      const error = e instanceof ImageError ? e : new ImageError('undecodable', file.name ? t('attachments.undecodable', { name: file.name }) : t('attachments.undecodableUnnamed'));
      if (item.dropped) return { error };
      this.remove(item);
      this.say(error.message, error.code);
      return { error };
    }
    item.pending = false;
    delete item.li.dataset.pending;
    this.changed();
    return { image: item.image };
  }

  thumbnail(name) {
    const li = document.createElement('li');
    li.className = 'attachment';
    li.dataset.pending = '';
    const img = document.createElement('img');
    img.alt = t('attachments.preparing', { name: name || t('attachments.imageName') });
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'remove';
    remove.textContent = '×';
    remove.setAttribute('aria-label', t('attachments.remove', { name: name || t('attachments.image') }));
    remove.addEventListener('click', () => {
      const item = this.items.find((i) => i.li === li);
      if (item) this.remove(item);
      this.prompt.focus();
    });
    li.append(img, remove);
    this.list.append(li);
    return li;
  }

  remove(item) {
    item.dropped = true;
    item.li.remove();
    this.items = this.items.filter((i) => i !== item);
    this.changed();
  }

  /** The images ready to send, taken out of the composer. */
  take() {
    const images = this.images;
    for (const item of this.items) item.li.remove();
    this.items = [];
    this.say('');
    this.changed();
    return images;
  }

  say(text, code = '') {
    this.note.textContent = text;
    this.note.hidden = !text;
    if (code) this.note.dataset.code = code;
    else delete this.note.dataset.code;
  }

  changed() {
    this.list.hidden = !this.items.length;
    if (this.pending) this.list.dataset.pending = '';
    else delete this.list.dataset.pending;
    this.list.dataset.count = String(this.images.length);
    this.dispatchEvent(new Event('change'));
  }
}
