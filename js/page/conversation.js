// What goes to the model: the system prompt from Settings (a setting, not part of the
// conversation: changing it applies from the next message on), then the conversation
// as kept (history.js), then `extra` (a draft being counted). The core prepares the
// system message once and keeps it by hash, so a long one costs nothing to count or
// compress again, and goes to the firsttoken gateway as a reference.

/** OpenAI chat messages for `chat.send` and `tokens.count`. A user turn whose answer
 * failed before any text (so it has none in the history) and that a newer user turn
 * follows is left out: two user turns in a row are not a well-formed conversation, and
 * the newer one is what the user asked since (Retry sends the old one again, alone). */
export function conversation(system, entries, extra = []) {
  const turns = [];
  for (const { role, content } of entries) if (content) turns.push({ role, content });
  turns.push(...extra);
  const messages = system ? [{ role: 'system', content: system }] : [];
  turns.forEach((m, i) => {
    if (!(m.role === 'user' && turns[i + 1]?.role === 'user')) messages.push(m);
  });
  return messages;
}
