// @ts-check
// The screen stays on while an answer streams and the page is visible (issue 46, item
// 5): the Screen Wake Lock API where the browser has it and grants it, else the host's
// `screen.awake {on}` (bridge/PROTOCOL.md, "Screen awake, for hosts"). Released at the
// end of the answer, on Stop, on error, when the page is hidden, and as the page goes
// away (a reload): every `on: true` a host is sent is followed by one `on: false`.
//
// Whether it is on: the person's switch in Settings (on by default) and a host's
// `settings.set` `awake: false`; either one off is off.

export class Awake {
  /**
   * @param {object} o
   * @param {(msg: object) => boolean} o.host posts to the host; false when none is there
   * @param {() => boolean} o.hostAttached
   * @param {() => boolean} o.enabled
   * @param {Document} [o.doc]
   * @param {any} [o.navigator]
   * @param {Window} [o.win]
   */
  constructor({ host, hostAttached, enabled, doc = document, navigator = globalThis.navigator, win = window }) {
    this.host = host;
    this.hostAttached = hostAttached;
    this.enabled = enabled;
    this.doc = doc;
    this.navigator = navigator;
    this.streaming = false;
    /** @type {any} the WakeLockSentinel held, or a promise of one */
    this.lock = null;
    this.hostOn = false; // an `on: true` the host was sent and not yet undone
    doc.addEventListener('visibilitychange', () => this.update());
    // A reload or a navigation away: the host hears `off` before the page goes.
    win.addEventListener('pagehide', () => {
      this.streaming = false;
      this.update();
    });
  }

  /** Where the screen can be kept on: the Wake Lock API, or a host. */
  get available() {
    return typeof this.navigator?.wakeLock?.request === 'function' || this.hostAttached();
  }

  /** Whether an answer streams now (replies.js's busy). */
  set(streaming) {
    this.streaming = Boolean(streaming);
    this.update();
  }

  update() {
    const want = this.streaming && this.enabled() && this.doc.visibilityState === 'visible';
    if (want) this.take();
    else this.release();
  }

  take() {
    if (this.lock || this.hostOn) return;
    const wakeLock = this.navigator?.wakeLock;
    if (typeof wakeLock?.request !== 'function') {
      this.hostOn = this.host({ type: 'screen.awake', on: true });
      return;
    }
    const pending = wakeLock.request('screen').then(
      (sentinel) => {
        // Let go meanwhile (the answer ended, the page hid): released at once.
        if (this.lock !== pending) {
          sentinel.release().catch(() => {});
          return;
        }
        this.lock = sentinel;
        // The browser lets go by itself when the page hides; taken again when visible.
        sentinel.addEventListener('release', () => {
          if (this.lock === sentinel) {
            this.lock = null;
            this.doc.documentElement.dataset.awake = 'off';
          }
        });
        this.doc.documentElement.dataset.awake = 'lock';
      },
      () => {
        // Refused (a web view without the permission, a policy): the host, if any.
        if (this.lock !== pending) return;
        this.lock = null;
        if (this.streaming) this.hostOn = this.host({ type: 'screen.awake', on: true });
      },
    );
    this.lock = pending;
  }

  release() {
    const lock = this.lock;
    this.lock = null;
    if (lock && typeof lock.release === 'function') {
      lock.release().catch(() => {});
      this.doc.documentElement.dataset.awake = 'off';
    }
    if (this.hostOn) {
      this.hostOn = false;
      this.host({ type: 'screen.awake', on: false });
    }
  }
}
