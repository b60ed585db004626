// The page's catalogues on Node (js/page/i18n.js, js/page/i18n/*.js): every locale has
// every key English has, and no other; every `{placeholder}` of an English message is in
// its translation (a translation that drops `{s}` says "Thought for  s"); plural messages
// have an `other` form; and the lookup itself: English as the fallback, numbers and
// plurals by `Intl`, the locale matched from BCP 47 tags (issue 44).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CATALOGUES, LOCALES, chooseLocale, formatNumber, locale, match, t } from '../../js/page/i18n.js';

const english = CATALOGUES.en;
const forms = (message) => (typeof message === 'object' && message !== null ? Object.values(message) : [message]);
const placeholders = (message) => new Set(forms(message).flatMap((form) => [...form.matchAll(/\{(\w+)\}/g)].map((m) => m[1])));
const subset = (a, b) => [...a].every((x) => b.has(x));

test('every locale has every key and no other', () => {
  assert.equal(LOCALES[0], 'en');
  assert.ok(LOCALES.includes('zh-CN'));
  for (const [tag, catalogue] of Object.entries(CATALOGUES)) {
    assert.deepEqual(Object.keys(catalogue).sort(), Object.keys(english).sort(), tag);
    for (const [key, message] of Object.entries(catalogue)) {
      // ('' is a message: Chinese puts no space between sentences.)
      const ok = typeof message === 'string' ? Boolean(message) || key.endsWith('Gap') : typeof message === 'object' && message !== null;
      assert.ok(ok, `${tag} ${key}`);
      if (typeof message === 'object') assert.ok('other' in message, `${tag} ${key}`);
    }
  }
});

test('every English placeholder is in each translation', () => {
  for (const [tag, catalogue] of Object.entries(CATALOGUES)) {
    for (const [key, message] of Object.entries(english)) {
      // `count` may be left implicit in a plural's `one` form ("An image"), never in the
      // message as a whole.
      assert.ok(subset(placeholders(message), placeholders(catalogue[key])), `${tag} ${key}`);
      assert.ok(subset(placeholders(catalogue[key]), placeholders(message)), `${tag} ${key}`);
    }
  }
});

test('Chinese reads as Chinese', () => {
  // No English word of four letters or more, but the names the page keeps as named.
  const names = new Set(['Python', 'OpenAI', 'Claude', 'Chat', 'Completions', 'Responses', 'Anthropic', 'Messages',
    'codex', 'JSON', 'Markdown', 'firsttoken', 'https', 'http', 'openai',
    'TODO', 'FIXME', 'NOTE']); // markers in code, which the compression note names
  for (const [key, message] of Object.entries(CATALOGUES['zh-CN'])) {
    for (const form of forms(message)) {
      const words = (form.replace(/\{\w+\}/g, '').match(/[A-Za-z]{4,}/g) ?? []).filter((w) => !names.has(w));
      assert.deepEqual(words, [], key);
    }
  }
});

test('the locale is matched from language tags', () => {
  assert.deepEqual([['zh-CN'], ['zh-Hans-CN'], ['zh'], ['zh-TW'], ['fr-FR', 'zh-SG'], ['ar'], ['not a tag', 'en-GB'], []].map(match),
    ['zh-CN', 'zh-CN', 'zh-CN', 'zh-CN', 'zh-CN', null, 'en', null]);
});

test('messages are filled and formatted by Intl', () => {
  chooseLocale('en');
  assert.deepEqual([locale(), t('thinking.thoughtFor', { s: 12 }), t('message.images', { count: 1 }),
    t('message.images', { count: 3 }), t('composer.tokens', { count: 1234, budget: 200000 }), formatNumber(1234)],
  ['en', 'Thought for 12 s', 'An image', '3 images', '1,234 / 200,000 tokens', '1,234']);
  chooseLocale('zh-CN');
  assert.deepEqual([locale(), t('thinking.thoughtFor', { s: 12 }), t('message.images', { count: 1 }),
    t('composer.tokens', { count: 1234, budget: 200000 }), t('composer.send'), t('no.such.key')],
  ['zh-CN', '已思考 12 秒', '1 张图片', '1,234 / 200,000 词元', '发送', 'no.such.key']);
});
