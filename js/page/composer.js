// @ts-check
// The composer on phones and desktops: the message box grows with its text up to a
// limit, Enter sends on a keyboard-and-mouse machine (Shift+Enter: a new line) and makes
// a new line on a touch screen (the Send button sends: on a phone Enter is the only way
// to start a new line, and a half-written prompt sent by accident cannot be unsent), and
// the page is as tall as what the on-screen keyboard leaves visible.

/** Whether Enter sends: not where the main pointer is coarse (a finger). */
export function enterSends(win = window) {
  return !win.matchMedia('(pointer: coarse)').matches;
}

export class Composer {
  /** `form`: the composer; `prompt`: its textarea. */
  constructor(form, prompt, { win = window } = {}) {
    this.form = form;
    this.prompt = prompt;
    this.coarse = win.matchMedia('(pointer: coarse)');
    prompt.enterKeyHint = enterSends(win) ? 'send' : 'enter';
    prompt.addEventListener('keydown', (e) => {
      if (e.key !== 'Enter' || e.shiftKey || e.isComposing || e.altKey) return;
      if (this.coarse.matches && !(e.ctrlKey || e.metaKey)) return; // a new line
      e.preventDefault();
      form.requestSubmit();
    });
    // Where field-sizing is missing (WebKit), the height follows scrollHeight; the
    // stylesheet's max-height is the limit.
    this.grow = !CSS.supports('field-sizing', 'content');
    if (this.grow) prompt.addEventListener('input', () => this.fit());
    followKeyboard(win);
  }

  /** The box's height after its text changed from code (sent, restored). */
  fit() {
    if (!this.grow) return;
    const el = this.prompt;
    el.style.height = 'auto';
    el.style.height = `${el.scrollHeight + el.offsetHeight - el.clientHeight}px`;
  }
}

// The on-screen keyboard: the visual viewport shrinks while the layout viewport may not
// (iOS, and Android WebViews without resizes-content), which would put the composer
// under the keyboard. The page takes the visual viewport's height instead.
function followKeyboard(win) {
  const vv = win.visualViewport;
  if (!vv) return;
  const root = win.document.documentElement;
  let last = 0;
  const update = () => {
    if (vv.scale > 1.01) return; // pinch-zoomed: the page keeps its size
    const h = Math.round(vv.height);
    if (h === last) return;
    last = h;
    root.style.setProperty('--app-height', `${h}px`);
    // iOS scrolls the page to show the focused field; the app is exactly as tall as the
    // visible part, so it goes back to the top.
    if (win.scrollY) win.scrollTo(0, 0);
  };
  vv.addEventListener('resize', update);
  update();
}
