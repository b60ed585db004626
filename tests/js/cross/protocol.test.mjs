// The page's copy of the protocol (js/link/protocol.js, generated from firsttoken.protocol)
// read in JavaScript against the Python definitions, and the rules both sides apply: the
// one size rule (bytes of UTF-8), the API a model is served on, and the key's headers. The
// Python side is computed on the same run by tests/unit/test_protocol_js.py.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fixture } from './fixture.mjs';
import * as p from '../../../js/link/protocol.js';
import { EVENT_TYPES } from '../../../js/link/envelope.js';
import { HOST_REQUEST_TYPES, parseHostMessage } from '../../../bridge/page/host-messages.js';
import { apiFor } from '../../../js/page/settings.js';
import { keyHeaders } from '../../../js/page/connection.js';

const sorted = (xs) => [...xs].sort();

test('JavaScript reads the Python definitions', () => {
  const { definitions: py } = fixture;
  assert.equal(p.PROTOCOL_VERSION, py.version);
  assert.equal(p.MAX_MESSAGE_BYTES, py.max);
  assert.ok(Object.isFrozen(p.REQUESTS['chat.send'].fields));
  assert.deepEqual(Object.keys(p.REQUESTS), py.requests);
  assert.deepEqual(Object.keys(p.EVENTS), Object.keys(py.events));
  for (const [kind, fields] of Object.entries(py.events)) assert.deepEqual(Object.keys(p.EVENTS[kind].fields), fields, kind);
  assert.ok(p.REQUESTS['chat.send'].id === 'required' && p.REQUESTS.hello.id === 'optional');
  assert.equal(p.REQUESTS['chat.send'].fields.resume, 'optional');
  assert.equal(p.EVENTS['chat.delta'].fields.reasoning, 'optional');
});

test('the page and the core take their types from it', () => {
  assert.deepEqual(sorted(new Set(EVENT_TYPES)), fixture.types.events);
  assert.deepEqual(sorted(new Set(HOST_REQUEST_TYPES)), fixture.types.hosts);
});

test('the page refuses exactly the sizes the core refuses', () => {
  const { prefix, suffix, cases, expected } = fixture.sizes;
  const page = cases.map(({ unit, count, fill }) => {
    try {
      parseHostMessage(prefix + unit.repeat(count) + 'x'.repeat(fill) + suffix);
      return false;
    } catch (e) {
      if (!/larger than/.test(e.message)) throw e;
      return true;
    }
  });
  assert.deepEqual(page, expected);
});

test('the page picks the API the core picks, for every model name', () => {
  const { names, auto, unknown } = fixture.apis;
  assert.deepEqual(names.map((name) => apiFor('', name)), auto);
  assert.deepEqual(names.map((name) => apiFor('responses', name)), names.map(() => 'responses'));
  assert.deepEqual(names.map((name) => apiFor('chat', name)), unknown);
});

test('the model list sends the key as the core sends it with a chat', () => {
  for (const { api, key, headers } of fixture.keys) assert.deepEqual(keyHeaders(api, key), headers, `${api} ${key}`);
});
