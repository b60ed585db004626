// The compression note says what kind of text compression took out of code, with the
// counts (js/render/compression-note.js `removedSummary`), from the report the core sends
// in `chat.prepared.compression` (issue 45, item 5). The reports are the core's own,
// made on the same run by tests/unit/test_compress_note.py.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fixture } from './fixture.mjs';
import { removedSummary } from '../../../js/render/compression-note.js';

test('the note names each kind with its count', () => {
  assert.deepEqual(fixture.code.map(removedSummary), [
    '5 comments (2 remarks, 1 licence header, 1 block of commented-out code, 1 rule or banner) and 2 blank lines',
    '6 comments (2 remarks, 1 licence header, 1 block of commented-out code, 1 rule or banner, 1 TODO or question)'
      + ' and 2 blank lines',
  ]);
});

test('nothing removed, or an old report, says nothing', () => {
  assert.deepEqual(fixture.nothing.map(removedSummary), ['', '', '']);
});
