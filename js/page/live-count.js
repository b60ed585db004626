// @ts-check
// The composer's live token count: the conversation plus the draft, counted in Python
// (`tokens.count` → `tokens.counted`). Requests are debounced while typing, and the
// answer to any but the latest request is ignored, so no count is shown late. A count
// the core calls an estimate (`exact: false`: a model whose maker publishes no
// tokenizer, such as Claude; a dialect whose chat format is not verified; no encoder
// yet) is shown as one, "≈ 1,234 / 200,000 tokens", never as exact.
//
// On its element: `data-tokens` and `data-exact`, the count shown (never one of another
// conversation: an empty one clears them), and `data-pending` while a newer count is on
// its way, for hosts and tests to wait on. Not styled: it is set on every keystroke.

import { t } from './i18n.js';

const DEBOUNCE_MS = 120;

export class LiveCount {
  /** `el`: where the count is shown; `send(request)`: to the core; `messages()`: what to
   * count now (or an empty list); `settings()`: the request's settings. */
  constructor(el, { send, messages, settings }) {
    this.el = el;
    this.send = send;
    this.messages = messages;
    this.settings = settings;
    this.seq = 0;
    this.timer = 0;
  }

  /** Count again, soon. */
  request() {
    clearTimeout(this.timer);
    this.el.dataset.pending = '';
    // The id is taken now, not when the debounce ends: an answer to a count asked before
    // this change (an attachment's, say) that arrives during the debounce is then stale
    // and ignored. Taken later, it matched, showed the old count and cleared
    // `data-pending` while the newer one was still to be asked (a test read 772 tokens
    // for a photo and its text, whose count was 778).
    const id = `c${++this.seq}`;
    this.timer = setTimeout(() => {
      const messages = this.messages();
      if (!messages.length) {
        this.el.textContent = '';
        for (const key of ['tokens', 'exact', 'pending']) delete this.el.dataset[key];
        this.el.classList.remove('over');
        return;
      }
      this.send({ type: 'tokens.count', id, messages, settings: this.settings() });
    }, DEBOUNCE_MS);
  }

  /** A `tokens.counted` event. */
  show(msg) {
    if (msg.id !== `c${this.seq}`) return; // a newer count is on its way
    delete this.el.dataset.pending;
    if (typeof msg.tokens !== 'number' || typeof msg.budget !== 'number') return;
    this.el.textContent = t(msg.exact ? 'composer.tokens' : 'composer.tokensEstimated', { count: msg.tokens, budget: msg.budget });
    this.el.dataset.tokens = String(msg.tokens);
    this.el.dataset.exact = String(msg.exact);
    this.el.classList.toggle('over', msg.tokens > msg.budget);
  }
}
