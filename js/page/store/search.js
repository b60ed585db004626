// @ts-check
// Finding conversations by their title or text (the list's search field,
// conversations.js): pure, over conversations already read. Split out of
// ConversationStore (issue 47, item 3), which reads every conversation's messages once
// before the first search and then asks this.

/** The conversations of `listed` (most recent first) whose title (`untitled` when it
 * has none) or text contains `query` (case-insensitive): `[{conversation, snippet}]`,
 * where `snippet` is the text around the first match in a message ('' if only the
 * title matched). Every conversation when `query` is blank. */
export function findConversations(listed, query, untitled) {
  const q = query.trim().toLocaleLowerCase();
  if (!q) return listed.map((conversation) => ({ conversation, snippet: '' }));
  const found = [];
  for (const c of listed) {
    const inTitle = (c.title || untitled).toLocaleLowerCase().includes(q);
    let snippet = '';
    for (const m of c.entries ?? []) {
      const at = m.content.toLocaleLowerCase().indexOf(q);
      if (at < 0) continue;
      const from = Math.max(0, at - 30);
      snippet = `${from ? '…' : ''}${m.content.slice(from, at + q.length + 50).replace(/\s+/g, ' ').trim()}`;
      break;
    }
    if (inTitle || snippet) found.push({ conversation: c, snippet });
  }
  return found;
}
