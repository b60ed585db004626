// Hostile input at the host bridge's parser (bridge/page/host-messages.js): every case of
// tests/bridge_cases.py, which the Chromium and WebKitGTK tests send to the real page, is
// refused here as an InvalidHostMessage. The cases come from tests/unit/test_host_bridge.py.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fixture } from './fixture.mjs';
import { parseHostMessage } from '../../../bridge/page/host-messages.js';

test('hostile input is refused by the parser', () => {
  const cases = Object.entries(fixture.hostile);
  assert.ok(cases.length > 0);
  const notRefused = [];
  for (const [name, text] of cases) {
    try {
      parseHostMessage(text);
      notRefused.push([name, 'accepted']);
    } catch (e) {
      if (e.name !== 'InvalidHostMessage') notRefused.push([name, e.name]);
    }
  }
  assert.deepEqual(notRefused, []);
});
