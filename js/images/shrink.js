// @ts-check
// Photos made small enough to send, on the main thread's side: what is refused before a
// worker is even asked (too big a file, not an image by its type), and the shrink
// worker (shrink-worker.js) asked to check, decode and resize, to the size the model
// keeps of the image (`sizeFor`: the page asks the core, `image.size`).
//
// Why resize to exactly that size: the provider scales every image down to it before
// the model sees it (OpenAI's vision guide, "Calculating costs"; Anthropic's vision
// guide, "Evaluate image size"), so a larger upload costs bytes and time on the uplink
// and buys nothing, and a smaller one loses what the model would have read.

import { ImageError } from './header.js';

/** A file larger than this is refused before it is read: no phone photo comes near. */
export const MAX_FILE_BYTES = 50 * 1024 * 1024;
/** What any model family keeps at most (OpenAI's tile models fit 2048 × 2048): the size
 * used while the core cannot be asked yet; the count follows from what is sent. */
export const FALLBACK_LONG_SIDE = 2048;
/** JPEG quality: text in a photographed receipt or a screenshot stays legible. */
export const QUALITY = 0.85;

/** `width` × `height` scaled down (never up) to fit a `side` × `side` square. */
export function fitSide(width, height, side = FALLBACK_LONG_SIDE) {
  const long = Math.max(width, height);
  if (long <= side) return { width, height };
  return { width: Math.max(1, Math.round((width * side) / long)), height: Math.max(1, Math.round((height * side) / long)) };
}

/** Refuses what can be refused without reading a byte; null if the file may go on. */
export function refuseFile(file) {
  if (file.size > MAX_FILE_BYTES) {
    return new ImageError('too_large', `${file.name || 'This file'} is ${(file.size / 1048576).toFixed(0)} MB: at most ${MAX_FILE_BYTES / 1048576} MB an image.`);
  }
  if (file.type === 'image/svg+xml') {
    return new ImageError('svg', 'SVG drawings are not sent: export it as PNG or JPEG and attach that.');
  }
  // No type at all is common (a pasted file, some Android pickers): the header decides.
  if (file.type && !file.type.startsWith('image/')) {
    return new ImageError('not_image', `${file.name || 'This file'} is not an image.`);
  }
  return null;
}

/** How long the core is given to answer `image.size` before the fallback size is used
 * (it answers in a millisecond when idle; a long prepare may hold it). */
const SIZE_WAIT_MS = 3000;

/** The size the model keeps of an image, asked of the core (`image.size` →
 * `image.sized`, bridge/PROTOCOL.md); before Python is ready, or without an answer in
 * time, the fallback: what any model keeps at most. Feed it the `image.sized` events. */
export class CoreSizes {
  /** `link`: the page's PythonLink; `model()`: the model the next chat goes to. */
  constructor(link, model) {
    this.link = link;
    this.model = model;
    this.waiting = new Map(); // id → resolve
    this.counter = 0;
  }

  size(width, height, detail) {
    const fallback = fitSide(width, height);
    // Not queued behind Python's boot: the photo is shrunk now, the count follows.
    if (!this.link.ready) return Promise.resolve(fallback);
    const id = `s${++this.counter}`;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        resolve(fallback);
      }, SIZE_WAIT_MS);
      this.waiting.set(id, (msg) => {
        clearTimeout(timer);
        // Never larger than the image, never nothing: else the fallback.
        const ok = [[msg.width, width], [msg.height, height]].every(([kept, side]) => Number.isInteger(kept) && kept >= 1 && kept <= side);
        resolve(ok ? { width: msg.width, height: msg.height } : fallback);
      });
      this.link.send({ type: 'image.size', id, model: this.model(), width, height, detail });
    });
  }

  /** An `image.sized` event from the core. */
  answer(msg) {
    const resolve = this.waiting.get(msg.id);
    this.waiting.delete(msg.id);
    resolve?.(msg);
  }
}

export class Shrinker {
  /** `sizeFor(width, height)`: the size to resize a decoded image to (a promise). */
  constructor({ sizeFor = async (w, h) => fitSide(w, h), quality = QUALITY } = {}) {
    this.sizeFor = sizeFor;
    this.quality = quality;
    this.worker = null;
    this.waiting = new Map(); // id → {resolve, reject}
    this.counter = 0;
  }

  /** `file` prepared to send: `{url, width, height, bytes}`; rejects with an ImageError. */
  async prepare(file) {
    const refused = refuseFile(file);
    if (refused) throw refused;
    const id = `i${++this.counter}`;
    const probed = await this.ask({ type: 'probe', id, file });
    let size;
    try {
      size = await this.sizeFor(probed.width, probed.height);
    } catch {
      size = fitSide(probed.width, probed.height);
    }
    return this.ask({ type: 'shrink', id, width: size.width, height: size.height, quality: this.quality });
  }

  ask(request) {
    if (!this.worker) {
      this.worker = new Worker(new URL('./shrink-worker.js', import.meta.url), { type: 'module', name: 'shrink' });
      this.worker.onmessage = ({ data }) => {
        const waiter = this.waiting.get(data.id);
        if (!waiter) return;
        this.waiting.delete(data.id);
        if (data.type === 'refused') waiter.reject(new ImageError(data.code, data.message));
        else waiter.resolve(data);
      };
      this.worker.onerror = () => {
        for (const waiter of this.waiting.values()) waiter.reject(new ImageError('undecodable', 'The image could not be prepared.'));
        this.waiting.clear();
      };
    }
    return new Promise((resolve, reject) => {
      this.waiting.set(request.id, { resolve, reject });
      this.worker.postMessage(request);
    });
  }
}
