// @ts-check
// Whether the device has a network, as the browser tells it, and the quiet banner that
// says so. `navigator.onLine` false is reliable (no network interface at all); true is
// not (it says nothing of the route to the server), so only "offline" changes what the
// page does: a prompt sent then goes to the outbox (outbox.js) instead of failing after
// four retries. https://html.spec.whatwg.org/multipage/system-state.html#dom-navigator-online

import { t } from './i18n.js';

export class Connection extends EventTarget {
  /** Emits `online` when the connection returns. The banner goes just before the
   * conversation (`before`), a `role=status` region that stays in the page and is filled only while offline, so a
   * screen reader announces the change (a region shown with its text already in it
   * may not be read). */
  constructor({ win = window, before = document.getElementById('chat') } = {}) {
    super();
    this.win = win;
    this.banner = win.document.createElement('div');
    this.banner.className = 'offline-banner';
    this.banner.setAttribute('role', 'status');
    before.before(this.banner);
    const update = () => {
      this.banner.textContent = this.online ? '' : t('offline.notice');
      win.document.documentElement.dataset.online = String(this.online);
    };
    win.addEventListener('offline', update);
    win.addEventListener('online', () => {
      update();
      this.dispatchEvent(new Event('online'));
    });
    update();
  }

  get online() {
    return this.win.navigator.onLine !== false;
  }
}
