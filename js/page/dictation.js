// @ts-check
// Dictation (issue 46, item 1): a microphone button in the composer, shown only where a
// recogniser exists. Two of them, the host's first:
// - the host's own (SFSpeechRecognizer, Android's SpeechRecognizer), when it said so in
//   its hello (`capabilities: {dictation: true}`): the page sends
//   `composer.dictate {on, locale}`, the host streams `composer.dictation {text, final}`
//   (bridge/PROTOCOL.md, "Dictation"). iOS has no Web Speech API in standalone web apps
//   and WebViews, so there the host's is the only one;
// - the Web Speech API (SpeechRecognition, webkitSpeechRecognition in Chromium and
//   Safari): https://webaudio.github.io/web-speech-api/#speechreco-section
//
// What the person sees: the utterance so far, provisional (in a line of its own beside
// the box, marked `data-provisional`, in italics), replaced as the recogniser revises
// it; its final text placed at the caret in the box, where it can be edited. Nothing is
// ever sent by dictation: only Send sends. A refused microphone (`not-allowed` from Web
// Speech, `error: "denied"` from a host) is said once, in the composer's note line.

import { t } from './i18n.js';

/** The recogniser's language: the interface's (`en`, `zh-CN`), made regional from the
 * browser's own preference when that is a variant of it (`en-GB` for `en`): the accent a
 * recogniser is tuned for. */
export function dictationLocale(uiLocale, preferred = globalThis.navigator?.languages ?? []) {
  const base = uiLocale.toLowerCase();
  for (const tag of preferred) {
    if (typeof tag === 'string' && tag.toLowerCase().startsWith(`${base}-`)) return tag;
  }
  return uiLocale;
}

/** Where `text` goes into `value` at [start, end): with a space between it and a word
 * before or after it, none where a line or a space is already there, and none in CJK
 * text, which has no spaces between words. */
export function insertion(value, start, end, text) {
  const before = value.slice(0, start);
  const after = value.slice(end);
  const cjk = /[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef]/;
  const gap = (a, b) => (a && b && !/\s/.test(a) && !/\s/.test(b) && !(cjk.test(a) || cjk.test(b)) ? ' ' : '');
  const lead = gap(before.slice(-1), text[0]);
  const trail = gap(text.slice(-1), after[0]);
  return { text: lead + text + trail, caret: start + lead.length + text.length + trail.length };
}

/** Web Speech's error codes (https://webaudio.github.io/web-speech-api/#speechreco-error)
 * as the page tells them: a refusal, no recogniser here, or nothing to say (silence, our
 * own abort: the button simply comes up again). */
const WEB_ERRORS = {
  'not-allowed': 'denied', 'service-not-allowed': 'denied',
  'language-not-supported': 'unavailable', network: 'unavailable', 'audio-capture': 'unavailable',
  'no-speech': 'quiet', aborted: 'quiet',
};

export class Dictation {
  /**
   * @param {object} els
   * @param {HTMLButtonElement} els.button the microphone (aria-pressed while listening)
   * @param {HTMLElement} els.partial where the provisional text shows
   * @param {HTMLTextAreaElement} els.prompt the composer's box
   * @param {object} o
   * @param {{can: () => boolean, post: (msg: object) => boolean}} o.host the host's recogniser
   * @param {() => string} o.locale the interface's language
   * @param {(text: string, code: string) => void} o.say the composer's note line
   * @param {any} [o.win]
   */
  constructor({ button, partial, prompt }, { host, locale, say, win = globalThis }) {
    this.button = button;
    this.partial = partial;
    this.prompt = prompt;
    this.host = host;
    this.locale = locale;
    this.say = say;
    this.Speech = win.SpeechRecognition ?? win.webkitSpeechRecognition ?? null;
    /** @type {'host' | 'web' | null} which recogniser listens now */
    this.listening = null;
    this.recognition = null;
    this.toldDenied = false;
    button.addEventListener('click', () => (this.listening ? this.stop() : this.start()));
    this.update();
  }

  /** Whether a recogniser exists here: the button shows then. */
  get available() {
    return this.host.can() || this.Speech !== null;
  }

  /** Show or hide the button (a host attached or said its capabilities). */
  update() {
    this.button.hidden = !this.available;
    if (!this.available && this.listening) this.stopped();
  }

  start() {
    if (this.listening) return;
    const lang = dictationLocale(this.locale());
    if (this.host.can()) {
      if (!this.host.post({ type: 'composer.dictate', on: true, locale: lang })) return;
      this.listening = 'host';
    } else if (this.Speech) {
      const recognition = new this.Speech();
      recognition.lang = lang;
      recognition.continuous = true;
      recognition.interimResults = true;
      recognition.onresult = (/** @type {any} */ e) => this.webResult(e);
      recognition.onerror = (/** @type {any} */ e) => this.failed(WEB_ERRORS[e.error] ?? 'failed');
      recognition.onend = () => {
        if (this.recognition === recognition) this.stopped();
      };
      this.recognition = recognition;
      this.listening = 'web';
      try {
        recognition.start();
      } catch {
        this.stopped(); // already started elsewhere, or refused outright
        return;
      }
    } else {
      return;
    }
    this.button.setAttribute('aria-pressed', 'true');
  }

  /** The person pressed the button again (or the composer went): the recogniser stops;
   * what it heard last is kept as final. */
  stop() {
    if (this.listening === 'host') {
      // The host answers with its last result, final (PROTOCOL.md, "Dictation"): the
      // provisional line stays until then.
      this.host.post({ type: 'composer.dictate', on: false });
    } else {
      this.place(this.partial.textContent ?? '');
    }
    this.stopped();
  }

  /** A host's `composer.dictation` (checked by bridge/page/host-messages.js). */
  fromHost({ text, final, listening, error }) {
    if (error) {
      this.failed(error);
      return;
    }
    if (final) this.place(text);
    else this.showPartial(text);
    if (!listening) {
      if (!final) this.place(text); // the host stopped on a provisional result: it stays
      this.stopped();
    }
  }

  // Web Speech: each result list holds the session's results; those from resultIndex on
  // changed. Finals are placed once; the rest is the provisional line.
  webResult(e) {
    let provisional = '';
    for (let i = e.resultIndex; i < e.results.length; i++) {
      const result = e.results[i];
      const text = result[0]?.transcript ?? '';
      if (result.isFinal) this.place(text);
      else provisional += text;
    }
    this.showPartial(provisional);
  }

  showPartial(text) {
    this.partial.textContent = text;
    this.partial.hidden = !text;
  }

  /** Final text at the caret (replacing a selection), editable, and nothing sent. */
  place(text) {
    this.showPartial('');
    const words = text.trim();
    if (!words) return;
    const el = this.prompt;
    const { text: put, caret } = insertion(el.value, el.selectionStart, el.selectionEnd, words);
    el.setRangeText(put, el.selectionStart, el.selectionEnd, 'end');
    el.setSelectionRange(caret, caret);
    // As typed text: the count, the box's height and the connection warm-up follow it.
    el.dispatchEvent(new Event('input', { bubbles: true }));
  }

  failed(code) {
    if (code === 'denied' && !this.toldDenied) {
      // Said once: the person decided, and the button says the rest (it stays un-pressed).
      this.toldDenied = true;
      this.say(t('dictation.denied'), 'dictation_denied');
    } else if (code !== 'denied' && code !== 'quiet') {
      this.say(t('dictation.failed'), `dictation_${code}`);
    }
    this.showPartial('');
    this.stopped();
  }

  stopped() {
    const recognition = this.recognition;
    this.recognition = null;
    this.listening = null;
    if (recognition) {
      recognition.onresult = recognition.onerror = recognition.onend = null;
      try { recognition.abort(); } catch { /* ended already */ }
    }
    this.button.setAttribute('aria-pressed', 'false');
  }
}
