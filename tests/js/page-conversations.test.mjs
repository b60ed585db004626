// The page's conversations on Node (js/page/conversation-store.js, store/records.js,
// export.js), over a fake store: an answer streaming into one conversation while another
// is open stays in its own; what is saved and when; titles, records, file names. The page
// itself is tested in Chromium (tests/e2e/test_conversations.py) and WebKitGTK.

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';

import { ConversationStore } from '../../js/page/conversation-store.js';
import { fileName, toJson, toMarkdown } from '../../js/page/export.js';
import { titleFrom, validMessages, validMeta } from '../../js/page/store/records.js';

/** One scenario, step by step (each step depends on the ones before); what it saw at
 * each step, for the tests below to check. */
async function scenario() {
  let clock = 1000;
  const puts = [];
  const db = {
    put: async (meta, messages, openId) => { puts.push({ meta: { ...meta }, messages, openId }); },
    setOpen: async () => {}, delete: async () => {},
    readMessages: async (id) => (id === 'old' ? [{ role: 'user', content: 'kept text' }] : null),
    readAllMessages: async () => new Map([['old', [{ role: 'user', content: 'kept text' }]]]),
  };
  const flush = () => new Promise((r) => setTimeout(r, 0));
  const out = {};

  const h = new ConversationStore({ now: () => ++clock });
  await h.adopt(Promise.resolve({ db, error: null, start: {
    metas: [{ id: 'old', title: 'Old one', created: 1, updated: 2 }], openId: '', messages: null } }));
  out.startTitle = h.title;

  // A: a question, its answer streaming; then B is opened (a new chat) and asked.
  const qa = h.add('user', '  What is\n a generator?  ');
  const aa = h.insertAfter(qa, 'assistant', '');
  h.save();
  const a = h.active;
  h.newChat();
  aa.content += 'half of it'; // replies.js keeps writing into A's entry
  h.add('user', 'second chat');
  out.bEntries = h.entries.map((m) => m.content);
  out.upToA = h.upTo(qa).map((m) => m.content);
  aa.content += ', the rest';
  aa.incomplete = true;
  h.save(); // replies.js finish(): A is written, not B only
  await flush(); await flush();
  const last = (id) => puts.filter((p) => p.meta.id === id).at(-1);
  out.aSaved = last(a.id).messages;
  out.aOpen = last(a.id).openId;
  out.bSaved = last(h.active.id).messages.map((m) => m.content);
  out.titles = h.listed().map((c) => c.title);
  // A failed empty answer in A, removed while B is open, leaves A only.
  const ab = h.insertAfter(aa, 'user', 'again?');
  const ab2 = h.insertAfter(ab, 'assistant', '');
  h.remove(ab2);
  out.aAfterRemove = a.entries.map((m) => m.content);
  out.bAfterRemove = h.entries.map((m) => m.content);

  // Search reads what is not in memory yet; delete and undo.
  out.search = (await h.search('KEPT')).map((f) => [f.conversation.id, f.snippet]);
  out.searchTitle = (await h.search('generator')).map((f) => f.conversation.title);
  h.delete(a.id);
  out.afterDelete = h.listed().map((c) => c.title);
  h.undo();
  out.afterUndo = h.listed().map((c) => c.title).sort();
  h.rename(a.id, '  Renamed\n  ');
  out.renamed = a.title;
  await flush(); await flush();
  out.pending = h.pending;

  // A title made from a first prompt shows no markdown marks (issue 44); a rename is kept.
  h.newChat();
  h.add('user', '**注意：**请看下面的代码。\n这是**我想做的事。**');
  out.markdownTitle = h.title;
  h.rename(h.active.id, '**as typed**');
  out.renamedMarks = h.title;
  return out;
}

describe('conversations', () => {
  let out;
  before(async () => { out = await scenario(); });

  test('an answer streaming into a conversation left for another stays in its own', () => {
    assert.equal(out.startTitle, 'New chat');
    assert.deepEqual(out.bEntries, ['second chat']);
    assert.deepEqual(out.upToA, ['  What is\n a generator?  ']);
    assert.deepEqual(out.aSaved, [{ role: 'user', content: '  What is\n a generator?  ' },
      { role: 'assistant', content: 'half of it, the rest', incomplete: true }]);
    assert.equal(out.aOpen ?? null, null); // writing A does not make it the open one
    assert.deepEqual(out.bSaved, ['second chat']);
    assert.deepEqual(out.titles, ['second chat', 'What is', 'Old one']);
    assert.deepEqual(out.aAfterRemove, ['  What is\n a generator?  ', 'half of it, the rest', 'again?']);
    assert.deepEqual(out.bAfterRemove, ['second chat']);
  });

  test('search, delete, undo, rename', () => {
    assert.deepEqual(out.search, [['old', 'kept text']]);
    assert.deepEqual(out.searchTitle, ['What is']);
    assert.ok(!out.afterDelete.includes('What is'));
    assert.deepEqual(out.afterUndo, ['Old one', 'What is', 'second chat']);
    assert.equal(out.renamed, 'Renamed');
    assert.equal(out.pending, 0);
  });

  test('titles from markdown, and a rename as typed', () => {
    assert.equal(out.markdownTitle, '注意：请看下面的代码。');
    assert.equal(out.renamedMarks, '**as typed**');
  });
});

test('titles, records and file names', () => {
  const long = titleFrom('word '.repeat(40));
  assert.ok(long.endsWith('…') && long.length <= 61, long);
  assert.equal(titleFrom('😀'.repeat(70)), '😀'.repeat(60) + '…');
  assert.deepEqual([validMeta({ id: 'x', title: 't', created: 1, updated: 2, extra: 1 }), validMeta({ id: 3 }), validMeta(null),
    validMeta({ id: 'x', title: 't', created: NaN, updated: 2 })],
  [{ id: 'x', title: 't', created: 1, updated: 2, extra: 1 }, null, null, null]);
  assert.deepEqual([validMessages({ messages: [{ role: 'user', content: 'a', keep: 1 }, null, { role: 1 }] }), validMessages('no')],
    [[{ role: 'user', content: 'a', keep: 1 }], null]);
  assert.deepEqual([fileName('What is "this": a/b?', 'md'), fileName('  ', 'json'), fileName('..', 'md'), fileName('a'.repeat(80), 'md')],
    ['What-is-this-a-b.md', 'conversation.json', 'conversation.md', 'a'.repeat(60) + '.md']);
  const c = { id: 'i', title: 'T', created: 0, updated: 0, entries: [{ role: 'user', content: 'q' },
    { role: 'assistant', content: 'a\n', incomplete: true }] };
  assert.equal(toMarkdown(c), '# T\n\n## You\n\nq\n\n## Assistant\n\na\n\n*(This answer was interrupted.)*\n');
  const json = JSON.parse(toJson(c));
  assert.deepEqual(json.messages[1], { role: 'assistant', content: 'a\n', incomplete: true });
  assert.equal(json.created, '1970-01-01T00:00:00.000Z');
});
