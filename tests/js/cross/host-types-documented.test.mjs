// Every type the page's host bridge speaks has its row in bridge/PROTOCOL.md: what its
// modules answer (found in their source by tests/unit/test_protocol.py) and the requests
// it accepts (`HOST_REQUEST_TYPES`, made from js/link/protocol.js, so read here), against
// the names the document's tables give, parsed by that same Python test on this run.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fixture } from './fixture.mjs';
import { HOST_REQUEST_TYPES } from '../../../bridge/page/host-messages.js';

test('every type the host bridge speaks is documented', () => {
  const types = new Set([...fixture.answered, ...HOST_REQUEST_TYPES]);
  // Guards the scan: one that found nothing would pass vacuously.
  for (const kind of ['settings.set', 'settings.applied', 'chat.metrics', 'hello']) assert.ok(types.has(kind), kind);
  const documented = new Set(fixture.documented);
  const missing = [...types].filter((kind) => !documented.has(kind)).sort();
  assert.deepEqual(missing, [], `bridge/PROTOCOL.md has no table row for: ${missing}`);
});
