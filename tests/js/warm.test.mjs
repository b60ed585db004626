// js/page/warm.js on a fake clock and a fake fetch: a warm-up goes to the API's origin as
// one keyless `GET {base}/models`, not again while that origin had a request in the last
// minute (a warm-up or a chat), again after it, per origin, and never for a base URL
// that is not http(s).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Warmer, WARM_FOR_MS } from '../../js/page/warm.js';

test('warm-ups go once per cold origin', () => {
  let t = 0;
  let base = 'https://api.example/v1/';
  const sent = [];
  const fetch = (url, init) => {
    sent.push({ url, headers: init.headers, at: t });
    return Promise.resolve({ arrayBuffer: () => Promise.resolve(new ArrayBuffer(0)) });
  };
  const w = new Warmer(() => ({ base_url: base }), { fetch, now: () => t });
  const log = [];
  log.push(w.warm()); // cold: goes
  t += 1000; log.push(w.warm()); // warm: not again
  t += WARM_FOR_MS - 1000 - 1; log.push(w.warm()); // 1 ms short of a minute: still warm
  t += 1; log.push(w.warm()); // a minute since the last: goes
  t += 30_000; w.used(); // a chat went
  t += WARM_FOR_MS - 1; log.push(w.warm()); // within a minute of the chat: warm
  base = 'http://127.0.0.1:9/v1'; log.push(w.warm()); // another origin: cold
  base = 'javascript:alert(1)'; log.push(w.warm());
  base = 'not a url'; log.push(w.warm());

  assert.deepEqual(log, [true, false, false, true, false, true, false, false]);
  assert.deepEqual(sent.map((s) => s.url), [
    'https://api.example/v1/models', 'https://api.example/v1/models', 'http://127.0.0.1:9/v1/models']);
  assert.equal(w.sent, 3);
  assert.equal(WARM_FOR_MS, 60_000);
  // No key, nothing but what asks for JSON: a simple request, no CORS preflight.
  for (const s of sent) assert.deepEqual(s.headers, { accept: 'application/json' });
});
