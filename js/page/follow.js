// @ts-check
// Keeping the conversation's view at its end: while an answer streams, when it finishes,
// after a reload, and whatever the layout does meanwhile, until the user scrolls up;
// then a "Jump to latest" button brings it back.
//
// Why this is more than `scrollTop = scrollHeight`: earlier messages are skipped by
// `content-visibility: auto` (page.css), laid out at a placeholder size until they come
// near the screen. Two things follow.
// - An answer that just finished switches from "streaming" (always rendered) to skipped
//   when off screen. Without a remembered size it would be laid out for a frame at the
//   placeholder (10em): the list shrinks, the browser clamps `scrollTop`, and the scroll
//   event that arrives once it has grown back reads like the user scrolling up (the
//   issue's 234 px short in Chromium, the top in WebKit). So a finished message keeps
//   rendering (`data-fresh`) until it has been laid out whole, and then carries its
//   measured height as its placeholder (`contain-intrinsic-size: auto <h>px`): whenever
//   it is skipped, it takes the room it takes.
// - After a reload every message starts at the placeholder and gets its real height as
//   it comes near the screen, after our scroll to the end. A ResizeObserver on the list
//   scrolls to the end again, before paint, each time the list's height changes while
//   the view is following.
// And whatever layout does, only the user unsticks the view: a scroll upwards counts as
// theirs only right after their own input (wheel, touch, keys, a pointer on the
// scrollbar). A scroll the browser made (a clamp while the list was shorter for a frame)
// is undone instead.

const NEAR_END_PX = 48;
const INTENT_MS = 1000; // how long after an input a scroll is the user's
const KEYS = new Set(['ArrowUp', 'PageUp', 'Home', ' ', 'Tab', 'ArrowDown', 'PageDown', 'End']);

export class EndFollower {
  /** `scroller`: the element that scrolls; `list`: the messages (its children);
   * `jump`: the "Jump to latest" button (shown while the user has scrolled up). */
  constructor(scroller, list, jump = null) {
    this.scroller = scroller;
    this.list = list;
    this.jump = jump;
    // Told by the direction of a scroll, not by the distance from the bottom: the answer
    // can grow between our scroll and the frame that lays it out.
    this.stick = true;
    this.ourTop = 0; // where we last put the view
    scroller.addEventListener('scroll', () => this.scrolled(), { passive: true });
    this.intent = -Infinity; // when the user last did something that scrolls
    const intent = () => { this.intent = performance.now(); };
    for (const type of ['wheel', 'touchstart', 'touchmove']) scroller.addEventListener(type, intent, { passive: true });
    // On the scroller itself: its scrollbar (a press on a message's button is not a scroll).
    scroller.addEventListener('pointerdown', (e) => { if (e.target === scroller) intent(); }, { passive: true });
    // Keys that scroll, unless typed into a field (a space in the composer scrolls nothing).
    scroller.ownerDocument.addEventListener('keydown', (e) => {
      if (KEYS.has(e.key) && !e.target.closest?.('textarea, input, select, [contenteditable]')) intent();
    }, { passive: true });
    jump?.addEventListener('click', () => this.stickToEnd());
    // Focus on an earlier message (its Edit button, the editor that opens in its place,
    // Copy): the user is looking at that message, so the view stays there. Otherwise the
    // editor growing the list would pull the view back to the end, away from the field
    // being typed in, and a scroll the browser made to show a focused control would be
    // undone as not the user's. The next prompt (or an edit's resend) follows again.
    list.addEventListener('focusin', (e) => {
      const message = e.target.closest?.('.msg');
      if (message && message !== list.lastElementChild) this.stick = false;
    });

    this.fresh = new Set();
    this.measured = []; // [message, width, height]: measured, to settle next frame
    this.pending = false; // a frame is asked for, to settle and follow
    new MutationObserver((records) => this.changed(records))
      .observe(list, { subtree: true, attributes: true, attributeFilter: ['data-state'], attributeOldValue: true });
    // One observer for the list's height (a reload's late layout, an answer growing) and
    // the fresh messages' (measured once laid out whole).
    this.sizes = new ResizeObserver((entries) => this.resized(entries));
    this.sizes.observe(list);
  }

  /** How far the view is from the end, in CSS px. */
  get distance() {
    const { scrollTop, scrollHeight, clientHeight } = this.scroller;
    return scrollHeight - scrollTop - clientHeight;
  }

  scrolled() {
    const top = this.scroller.scrollTop;
    if (this.distance < NEAR_END_PX) {
      this.stick = true;
    } else if (top < this.ourTop - 1) {
      if (performance.now() - this.intent < INTENT_MS) this.stick = false;
      else if (this.stick) {
        this.follow(); // not the user: back to the end
        return;
      }
    }
    this.ourTop = top;
    this.showJump();
  }

  /** Keep the view at the end from now on (a new prompt, or "Jump to latest"). */
  stickToEnd() {
    this.stick = true;
    this.follow();
  }

  /** To the end, if following. */
  follow() {
    if (!this.stick) {
      this.showJump();
      return;
    }
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.ourTop = this.scroller.scrollTop;
    this.showJump();
  }

  showJump() {
    if (!this.jump) return;
    const hidden = this.stick || this.distance < NEAR_END_PX;
    if (this.jump.hidden !== hidden) this.jump.hidden = hidden;
  }

  // A message left the "streaming" state: keep it rendered until measured.
  changed(records) {
    for (const r of records) {
      const li = r.target;
      if (r.oldValue !== 'streaming' || li.dataset.state === 'streaming' || li.parentElement !== this.list) continue;
      li.dataset.fresh = '';
      this.fresh.add(li);
      this.sizes.observe(li);
    }
  }

  // Called after layout, before paint: reading sizes here costs no extra layout. The
  // measured message settles at the next frame's start, not here: settling can change
  // its height by a fraction of a pixel (the placeholder is rounded up, and WebKit may
  // use it until it has decided the message is on screen), and a size changed inside
  // this callback makes the list's own report wait a frame, which the engine reports as
  // an error ("ResizeObserver loop completed with undelivered notifications",
  // https://drafts.csswg.org/resize-observer/#deliver-resize-error; seen in WebKitGTK).
  resized(entries) {
    const measured = this.measured;
    for (const { target, contentRect } of entries) {
      if (!this.fresh.has(target)) continue;
      this.fresh.delete(target);
      this.sizes.unobserve(target);
      // The placeholder stands for the content box (padding and border come on top).
      measured.push([target, Math.ceil(contentRect.width), Math.ceil(contentRect.height)]);
    }
    // Following waits for the next frame's start too: a scroll here brings messages
    // of `content-visibility: auto` on screen, whose real heights then replace their
    // placeholders inside this callback, changing the list's size again (the same loop
    // error; WebKitGTK, tests/webkit/test_render.py under load). A reply's text is
    // followed where it is painted (reply-painter.js), so only late layout (a reload,
    // highlighting, typeset math) waits this frame.
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      for (const [target, w, h] of measured.splice(0)) {
        if (!target.isConnected) continue;
        target.style.containIntrinsicSize = `auto ${w}px auto ${h}px`;
        delete target.dataset.fresh;
      }
      this.follow();
    });
  }
}
