// ConversationStore's two collaborators on Node (issue 47, item 3): the rescue of answers
// in flight (js/page/store/rescue.js) and the search (js/page/store/search.js). The
// store's use of them is tested in Chromium (tests/e2e/test_resume.py, test_conversations.py).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Rescue } from '../../js/page/store/rescue.js';
import { findConversations } from '../../js/page/store/search.js';

function memoryStorage() {
  const kept = new Map();
  return {
    getItem: (k) => kept.get(k) ?? null, setItem: (k, v) => kept.set(k, String(v)), removeItem: (k) => kept.delete(k),
    size: () => kept.size,
  };
}

test('a rescued answer is folded into its conversation once, and only when longer', () => {
  const storage = memoryStorage();
  const rescue = new Rescue(storage);
  rescue.keep('c1', { id: 'a', role: 'assistant', content: 'longer text', state: 'streaming', stream: { id: 's', base_url: 'u', after: 7 } });
  rescue.keep('c2', { id: 'b', role: 'assistant', content: 'x', state: 'streaming' });
  const c1 = { id: 'c1', entries: [{ id: 'a', role: 'assistant', content: 'long', state: 'streaming' }] };
  assert.equal(rescue.foldInto(c1), true);
  assert.equal(c1.entries[0].content, 'longer text');
  assert.deepEqual(c1.entries[0].stream, { id: 's', base_url: 'u', after: 7 });
  assert.equal(rescue.foldInto(c1), false); // dropped once folded
  assert.deepEqual(Object.keys(rescue.read()), ['b']); // another conversation's stays
  const c2 = { id: 'c2', entries: [{ id: 'b', role: 'assistant', content: 'newer, longer', state: 'done' }] };
  assert.equal(rescue.foldInto(c2), false); // an older copy never goes over a newer one
  assert.equal(c2.entries[0].content, 'newer, longer');
  assert.equal(storage.size(), 0);
});

test('the rescue is bounded, ignores what is not an answer, and survives a broken store', () => {
  const storage = memoryStorage();
  const rescue = new Rescue(storage);
  for (let i = 0; i < 20; i++) rescue.keep('c', { id: `a${i}`, role: 'assistant', content: '', state: 'streaming' });
  rescue.keep('c', { id: 'u', role: 'user', content: 'q' });
  assert.equal(Object.keys(rescue.read()).length, 8);
  assert.ok(!('u' in rescue.read()));
  storage.setItem('firsttoken.rescue.v1', '{not json');
  assert.deepEqual(rescue.read(), {});
  assert.equal(new Rescue(null).foldInto({ id: 'c', entries: [] }), false);
});

test('search finds by title or text, with a snippet around the first match', () => {
  const listed = [
    { id: '1', title: 'Trip to Kyoto', entries: [{ role: 'user', content: 'plan' }] },
    { id: '2', title: '', entries: [{ role: 'user', content: `${'x '.repeat(40)}where is the Station?` }] },
    { id: '3', title: 'Other', entries: null },
  ];
  assert.deepEqual(findConversations(listed, 'kyoto', 'Untitled').map((f) => [f.conversation.id, f.snippet]), [['1', '']]);
  const [found] = findConversations(listed, 'STATION', 'Untitled');
  assert.equal(found.conversation.id, '2');
  assert.ok(found.snippet.startsWith('…') && found.snippet.includes('Station?'));
  assert.equal(findConversations(listed, 'untitled', 'Untitled')[0].conversation.id, '2');
  assert.equal(findConversations(listed, '  ', 'Untitled').length, 3);
});
