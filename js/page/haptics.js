// @ts-check
// Haptics (issue 46, item 2): a light tick when the person sends, when the first answer
// token arrives and when the answer is done; an error pattern when it fails. Through the
// host (`haptic {kind}`: bridge/PROTOCOL.md, "Hosts"), which has the phone's own engine
// (iOS has no `navigator.vibrate`), else `navigator.vibrate` where it exists, else
// nothing. Never more than one pulse every PACE_MS: a stream is not a drum roll ("a
// 30-second reply… 90 pulses" is the complaint this avoids).
//
// Whether it is on: the person's switch in Settings (on by default, shown only where
// haptics exist), and a host may turn it off for the page's life (`settings.set`
// `haptics: false`); either one off is off.

/** The shortest gap between two pulses, in ms. */
export const PACE_MS = 300;

/** The kinds a host is sent, and what `navigator.vibrate` plays for each (ms). */
export const PATTERNS = Object.freeze({ light: [10], error: [30, 60, 30] });

export class Haptics {
  /**
   * @param {object} o
   * @param {(msg: object) => boolean} o.host posts to the host; false when none is there
   * @param {() => boolean} o.hostAttached whether a host is there now
   * @param {() => boolean} o.enabled the person's switch and the host's setting together
   * @param {any} [o.navigator]
   * @param {() => number} [o.now]
   */
  constructor({ host, hostAttached, enabled, navigator = globalThis.navigator, now = () => performance.now() }) {
    this.host = host;
    this.hostAttached = hostAttached;
    this.enabled = enabled;
    this.navigator = navigator;
    this.now = now;
    this.last = -Infinity;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.pending = undefined;
  }

  /** Whether this page can make the phone tick at all (the Settings switch shows then). */
  get available() {
    return this.hostAttached() || typeof this.navigator?.vibrate === 'function';
  }

  /** One pulse of `kind` ('light' or 'error'), unless off or too soon after the last:
   * then it is dropped, or, with `defer` (how an answer ended: done, failed), played once
   * the gap has passed (a fast answer still says it is done; a new pulse meanwhile
   * replaces it). Returns whether it went now. */
  pulse(kind, { defer = false } = {}) {
    if (!this.enabled() || !Object.hasOwn(PATTERNS, kind)) return false;
    const now = this.now();
    const wait = this.last + PACE_MS - now;
    if (wait > 0) {
      if (defer) {
        clearTimeout(this.pending);
        this.pending = setTimeout(() => {
          this.pending = undefined;
          this.pulse(kind);
        }, Math.ceil(wait));
      }
      return false;
    }
    clearTimeout(this.pending);
    this.pending = undefined;
    let sent = false;
    if (this.hostAttached()) sent = this.host({ type: 'haptic', kind });
    if (!sent && typeof this.navigator?.vibrate === 'function') {
      try {
        sent = this.navigator.vibrate(PATTERNS[kind]) !== false;
      } catch { /* refused (no user activation yet): nothing */ }
    }
    if (sent) this.last = now;
    return sent;
  }
}
