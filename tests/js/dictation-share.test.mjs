// The pure parts of dictation and sharing (issue 46, items 1 and 3): what a host's
// `hello {capabilities}`, `composer.dictation` and `composer.share` may hold
// (bridge/page/host-messages.js), where dictated words go in the box and in which
// language (js/page/dictation.js), and the composer's words for a share
// (js/page/share.js). The page itself is tested in Chromium and WebKitGTK
// (tests/e2e/test_dictation_host.py, test_share_host.py, tests/webkit/test_host_dictation.py,
// test_host_share.py).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { InvalidHostMessage, parseHostMessage, sharedUrl } from '../../bridge/page/host-messages.js';
import { dictationLocale, insertion } from '../../js/page/dictation.js';
import { sharedText } from '../../js/page/share.js';

const parse = (msg) => parseHostMessage(JSON.stringify(msg));
const refused = (msg) => assert.throws(() => parse(msg), InvalidHostMessage, JSON.stringify(msg).slice(0, 120));

test('capabilities keep known booleans only', () => {
  assert.deepEqual(parse({ type: 'hello', id: 'h', capabilities: { dictation: true } }),
    { type: 'hello', id: 'h', capabilities: { dictation: true } });
  assert.deepEqual(parse({ type: 'hello', capabilities: { dictation: false, teleport: 'yes' } }).capabilities, { dictation: false });
  refused({ type: 'hello', capabilities: { dictation: 'yes' } });
  refused({ type: 'hello', capabilities: ['dictation'] });
});

test('a dictation is text and flags, or a known error', () => {
  assert.deepEqual(parse({ type: 'composer.dictation', text: 'hel' }),
    { type: 'composer.dictation', text: 'hel', final: false, listening: true });
  const final = parse({ type: 'composer.dictation', text: 'hello', final: true });
  assert.equal(final.final, true);
  assert.equal(final.listening, true);
  assert.equal(parse({ type: 'composer.dictation', text: '', final: true, listening: false }).listening, false);
  const denied = parse({ type: 'composer.dictation', error: 'denied' });
  assert.equal(denied.error, 'denied');
  assert.equal(denied.listening, false);
  for (const msg of [
    { type: 'composer.dictation' },
    { type: 'composer.dictation', text: 5 },
    { type: 'composer.dictation', text: 'x'.repeat(16385) },
    { type: 'composer.dictation', text: 'a', listening: 'no' },
    { type: 'composer.dictation', text: 'a', final: 'yes' },
    { type: 'composer.dictation', error: 'eval' },
  ]) refused(msg);
});

test('a share is bounded and takes only http(s) links', () => {
  const image = { data: 'iVBORw0KGgo=', type: 'image/PNG', name: 'a.png' };
  assert.deepEqual(
    parse({ type: 'composer.share', id: 's', text: '<b>hi</b>', url: 'https://example.com/a b', images: [image], conversation: 'new', extra: 1 }),
    { type: 'composer.share', id: 's', text: '<b>hi</b>', url: 'https://example.com/a%20b',
      images: [{ data: 'iVBORw0KGgo=', type: 'image/png', name: 'a.png' }], conversation: 'new' },
  );
  for (const msg of [
    { type: 'composer.share' },
    { type: 'composer.share', text: '' },
    { type: 'composer.share', text: 'a'.repeat(1_000_001) },
    { type: 'composer.share', url: 'javascript:alert(1)' },
    { type: 'composer.share', url: ' JAVASCRIPT:alert(1)' },
    { type: 'composer.share', url: 'data:text/html,x' },
    { type: 'composer.share', url: `https://${'a'.repeat(8200)}.com` },
    { type: 'composer.share', images: Array(21).fill(image) },
    { type: 'composer.share', images: [{ data: '!!', type: 'image/png' }] },
    { type: 'composer.share', text: 'a', conversation: '' },
    { type: 'composer.share', text: 'a', conversation: { id: 'x' } },
  ]) refused(msg);
  assert.throws(() => parse({ type: 'composer.share', url: 'javascript:alert(1)' }), /http\(s\)/);
});

test('shared links are http(s) or nothing', () => {
  assert.deepEqual(
    ['http://a.example/', 'https://a.example/x?y#z', 'javascript:alert(1)', 'ftp://a.example/', 'mailto:a@b.c',
      '//a.example/', '', '  https://a.example/  ', 42].map(sharedUrl),
    ['http://a.example/', 'https://a.example/x?y#z', null, null, null, null, null, 'https://a.example/', null],
  );
});

test('dictated words go in at the caret', () => {
  for (const [value, start, end, text, want] of [
    ['', 0, 0, 'hello', 'hello'],
    ['Dear world', 4, 4, 'dear', 'Dear dear world'], // a space where words meet
    ['Dear  world', 5, 5, 'dear', 'Dear dear world'], // none where one is there
    ['say ', 4, 4, 'hi', 'say hi'],
    ['a\n', 2, 2, 'line', 'a\nline'],
    ['replace THIS now', 8, 12, 'that', 'replace that now'], // a selection is replaced
    ['你好', 2, 2, '世界', '你好世界'], // no spaces between CJK words
    ['hello', 5, 5, '世界', 'hello世界'],
  ]) {
    const got = insertion(value, start, end, text);
    assert.equal(value.slice(0, start) + got.text + value.slice(end), want);
    assert.equal(got.caret, start + got.text.length);
  }
});

test("the recogniser's language is the interface's, regional where the browser prefers it", () => {
  assert.equal(dictationLocale('en', ['en-GB', 'fr']), 'en-GB');
  assert.equal(dictationLocale('en', ['fr-FR']), 'en');
  assert.equal(dictationLocale('zh-CN', ['zh-TW', 'en']), 'zh-CN');
  assert.equal(dictationLocale('zh-CN', []), 'zh-CN');
});

test("the composer's words for a share", () => {
  assert.equal(sharedText({ text: 'Look', url: 'https://a.example/' }), 'Look\nhttps://a.example/');
  assert.equal(sharedText({ text: 'see https://a.example/', url: 'https://a.example/' }), 'see https://a.example/');
  assert.equal(sharedText({ url: 'https://a.example/' }), 'https://a.example/');
  assert.equal(sharedText({ text: '  padded  ' }), 'padded');
  assert.equal(sharedText({}), '');
});
