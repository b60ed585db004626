// What goes to the model: the system prompt from Settings (a setting, not part of the
// conversation: changing it applies from the next message on), then the conversation
// as kept (history.js), then `extra` (a draft being counted). The core prepares the
// system message once and keeps it by hash, so a long one costs nothing to count or
// compress again, and goes to the firsttoken gateway as a reference.

/** OpenAI chat messages for `chat.send` and `tokens.count`. */
export function conversation(system, entries, extra = []) {
  const messages = [];
  if (system) messages.push({ role: 'system', content: system });
  for (const { role, content } of entries) if (content) messages.push({ role, content });
  return messages.concat(extra);
}
