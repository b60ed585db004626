// The counts the page shows, on Node (js/page/live-count.js, js/render/compression-note.js):
// a count the core calls an estimate (`exact: false`: Claude, whose tokenizer is not
// published; a dialect whose chat format is not verified) reads as one, "≈ 1,234", and an
// exact one never does. In Chromium: tests/e2e/test_dialects_page.py.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { LiveCount } from '../../js/page/live-count.js';
import { compressionFigures, compressionSummary } from '../../js/render/compression-note.js';

const element = () => ({ textContent: '', dataset: {}, classList: { toggle() {} } });

test('an estimate reads as one and an exact count never does', () => {
  const el = element();
  const count = new LiveCount(el, { send() {}, messages: () => [], settings: () => ({}) });
  count.seq = 1;
  const shown = (fields) => {
    count.show({ type: 'tokens.counted', id: 'c1', budget: 195904, uncompressed: 1300, dropped: [], ...fields });
    return [el.textContent, el.dataset.exact];
  };
  const prepared = (exact, unit = 'tokens') => ({
    saved: [52], saved_unit: unit, prompt_tokens: 1204, exact, dropped: [], truncated: [],
    compression: { chars_before: 5000, chars_after: 4800, tokens_after: 1204 },
  });
  const note = (msg) => compressionSummary(compressionFigures(msg));

  assert.deepEqual(shown({ tokens: 1234, exact: true }), ['1,234 / 195,904 tokens', 'true']);
  assert.deepEqual(shown({ tokens: 1234, exact: false }), ['≈ 1,234 / 195,904 tokens', 'false']);
  assert.equal(note(prepared(true)), 'sent 1,204 tokens instead of 1,256 (−4%)');
  assert.equal(note(prepared(false)), 'sent ≈ 1,204 tokens instead of ≈ 1,256 (−4%)');
  // Characters are counted, not estimated.
  assert.equal(note({ ...prepared(false, 'chars'), saved: [200] }), 'sent 4,800 characters instead of 5,000 (−4%)');
});

test('an answer to an older count never clears pending during the debounce', async () => {
  // The answer to a count asked before the latest change is stale even while the newer
  // one waits out its debounce: shown, it cleared `data-pending`, and hosts and tests
  // waiting on that read the old count (772 tokens for a photo and its text's 778).
  const el = element();
  const sent = [];
  let asked = null; // resolved by the next count asked (the debounce ended)
  const next = () => new Promise((resolve) => { asked = resolve; });
  const count = new LiveCount(el, {
    send: (m) => { sent.push(m.id); asked?.(); }, messages: () => [{ role: 'user', content: 'x' }], settings: () => ({}),
  });
  let wait = next();
  count.request(); // an attachment's change: asked once the debounce ends
  await wait;
  wait = next();
  count.request(); // then the user types, and its answer comes back inside the new debounce
  count.show({ type: 'tokens.counted', id: sent[0], tokens: 772, budget: 1000, exact: true });
  assert.deepEqual({ tokens: el.dataset.tokens ?? null, pending: 'pending' in el.dataset }, { tokens: null, pending: true });
  await wait;
  count.show({ type: 'tokens.counted', id: sent[1], tokens: 778, budget: 1000, exact: true });
  assert.equal(sent.length, 2);
  assert.notEqual(sent[0], sent[1]);
  assert.deepEqual({ tokens: el.dataset.tokens, pending: 'pending' in el.dataset }, { tokens: '778', pending: false });
});
