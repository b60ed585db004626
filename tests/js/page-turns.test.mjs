// The page's turns on Node (js/page/conversation.js, conversation-store.js): what goes to
// the model, by turn, so that no two user turns in a row are ever sent, whatever failed;
// the conversation made well formed after a reload; and what a Retry sends and where its
// answer goes. The buttons themselves are tested in Chromium (tests/e2e/test_actions.py).
//
// Plain JS under Node's test runner (issue 47, item 6); tests/unit/test_js.py runs every
// tests/js/*.test.mjs file, so `make test-fast` and `make test` include them.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { conversation, promptOf, wellFormed } from '../../js/page/conversation.js';
import { ConversationStore } from '../../js/page/conversation-store.js';

/** A store over an in-memory storage, with a failed, an interrupted and two done turns. */
function fourTurns() {
  const kept = new Map();
  const storage = { getItem: (k) => kept.get(k) ?? null, setItem: (k, v) => kept.set(k, v) };
  // The store takes its options as one object: given `storage` alone (as this test once
  // did), it destructured nothing from it and silently fell back to the real localStorage.
  const store = new ConversationStore({ storage });
  const u1 = store.add('user', 'one');
  const a1 = store.add('assistant', 'first answer'); a1.state = 'done';
  const u2 = store.add('user', 'two');
  const a2 = store.add('assistant', ''); a2.state = 'error'; a2.error = { code: 'http_status', status: 500 };
  store.add('user', 'three');
  const a3 = store.add('assistant', 'third, cut'); a3.state = 'interrupted';
  store.add('user', 'four');
  const a4 = store.add('assistant', 'fourth answer'); a4.state = 'done';
  return { store, storage, u1, a1, u2, a2 };
}

/** As older versions left it after a failure and a reload: orphan prompts in a row, an
 * answer marked incomplete, and one that was streaming when the page went away. */
function oldConversation() {
  return [
    { role: 'user', content: 'a' },
    { role: 'user', content: 'b' },
    { role: 'assistant', content: 'partial b', incomplete: true },
    { role: 'user', content: 'c' },
    { role: 'assistant', content: 'c so far', state: 'streaming' },
    { role: 'user', content: 'd' },
  ];
}

const contents = (messages) => messages.map((m) => m.content);

function assertRolesAlternate(messages) {
  const roles = messages.filter((m) => m.role !== 'system').map((m) => m.role);
  roles.slice(1).forEach((role, i) => assert.notEqual(role, roles[i], JSON.stringify(messages)));
}

test('the store keeps what it keeps where it was told', () => {
  const { store, storage, a1 } = fourTurns();
  a1.id = 'a1';
  store.rescue(a1); // an answer kept as the page goes away: into the storage given
  const kept = JSON.parse(storage.getItem('firsttoken.rescue.v1'));
  assert.equal(kept.a1.entry.content, 'first answer');
  assert.equal(kept.a1.conversation, store.active.id);
});

test('a turn whose answer has no text is left out whole', () => {
  const { store, u1, u2 } = fourTurns();
  const all = conversation('sys', store.entries);
  assert.deepEqual(contents(all), ['sys', 'one', 'first answer', 'three', 'third, cut', 'four', 'fourth answer']);
  const draft = conversation('', store.entries.slice(0, 4), [{ role: 'user', content: 'draft' }]);
  assert.deepEqual(contents(draft), ['one', 'first answer', 'draft']);
  const fixed = oldConversation();
  wellFormed(fixed);
  for (const sent of [all, draft, conversation('sys', store.upTo(u2)), conversation('', store.upTo(u1)),
    conversation('', fixed)]) {
    assertRolesAlternate(sent);
  }
  const seeded = conversation('', [{ role: 'system', content: 'seeded' }, { role: 'user', content: 'q' }]);
  assert.deepEqual(seeded, [{ role: 'system', content: 'seeded' }, { role: 'user', content: 'q' }]);
  // Only what the model may see: roles and text, never the page's own fields.
  for (const m of all) assert.deepEqual(Object.keys(m).sort(), ['content', 'role']);
});

test('a retry sends the conversation up to its turn and answers in its place', () => {
  const { store, u1, a1, u2, a2 } = fourTurns();
  assert.deepEqual(contents(conversation('sys', store.upTo(u2))), ['sys', 'one', 'first answer', 'two']);
  assert.deepEqual(contents(conversation('', store.upTo(u1))), ['one']);
  assert.equal(promptOf(store.entries, a2).content, 'two');
  store.remove(a1);
  store.insertAfter(u1, 'assistant', 'retried');
  assert.deepEqual(contents(store.entries),
    ['one', 'retried', 'two', '', 'three', 'third, cut', 'four', 'fourth answer']);
});

test('an old conversation is made well formed once', () => {
  const old = oldConversation();
  assert.equal(wellFormed(old), true);
  assert.deepEqual(old.map((m) => [m.role, m.content, m.state ?? null]), [
    ['user', 'a', null], ['assistant', '', 'interrupted'],
    ['user', 'b', null], ['assistant', 'partial b', 'interrupted'],
    ['user', 'c', null], ['assistant', 'c so far', 'interrupted'],
    ['user', 'd', null], ['assistant', '', 'interrupted'],
  ]);
  assert.ok(old.every((m) => !('incomplete' in m)));
  assert.equal(wellFormed(old), false);
  // The next request after it: every prompt with text in its answer, no two in a row.
  assert.deepEqual(contents(conversation('', old)), ['b', 'partial b', 'c', 'c so far']);
});
