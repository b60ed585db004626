// @ts-check
// A conversation as a file the user keeps: Markdown to read, JSON to load elsewhere
// (and to import again: `fromJson`, every message field back as it was, an answer's
// reasoning included).
// Downloaded from a Blob (no server round trip, works offline and under the page's
// CSP), named after the conversation's title.

import { isImageUrl } from './attachments.js';
import { newEntryId } from './conversation.js';
import { t } from './i18n.js';
import { titleFrom, validMessages } from './store/records.js';

const ROLE_NAMES = { user: 'You', assistant: 'Assistant', system: 'System' };

/** Markdown: the title, then each message under who said it. Answers are markdown
 * already and go in as they are; the user's words too (they were typed as text, and
 * read the same either way). */
export function toMarkdown(c) {
  const parts = [`# ${c.title || 'Conversation'}`, ''];
  for (const m of c.entries ?? []) {
    parts.push(`## ${ROLE_NAMES[m.role] ?? m.role}`, '');
    // A message's images as Markdown images of their data URLs: the file keeps them
    // whole, with no other file beside it (the JSON has them as kept, in `images`).
    for (const image of m.images ?? []) if (isImageUrl(image?.url)) parts.push(`![Image, ${image.width}×${image.height}](${image.url})`, '');
    // What an answer's model thought, before its answer, quoted: the file keeps what the
    // page showed (the JSON keeps it as kept, in `reasoning`).
    if (m.role === 'assistant' && typeof m.reasoning === 'string' && m.reasoning.trim()) {
      const s = Number.isFinite(m.reasoning_ms) ? ` for ${Math.max(1, Math.round(m.reasoning_ms / 1000))} s` : '';
      parts.push(`> *Thought${s}:*`, '>', ...m.reasoning.trimEnd().split('\n').map((line) => (line ? `> ${line}` : '>')), '');
    }
    parts.push(m.content.trimEnd(), '');
    if (m.incomplete) parts.push('*(This answer was interrupted.)*', '');
  }
  return `${parts.join('\n').trimEnd()}\n`;
}

/** JSON: the conversation as kept, every message field included. */
export function toJson(c) {
  const { id, title, created, updated, reasoning } = c;
  return `${JSON.stringify({
    format: 'firsttoken.conversation', version: 1, id, title,
    created: new Date(created).toISOString(), updated: new Date(updated).toISOString(),
    ...(reasoning && { reasoning }), // its Thinking level (thinking-control.js)
    messages: c.entries ?? [],
  }, null, 2)}\n`;
}

/** A conversation from a file `toJson` wrote (here or on another device), checked as
 * a stored one is (store/records.js: a message that does not pass is left out, an
 * answer's reasoning fields that are not what this build writes are dropped):
 * `{title, entries, reasoning?}`. What belonged to the other page is not taken: an
 * answer's resumable stream (that device's), and its outbox ids (fresh ones here).
 * Throws an Error saying why a file is not one. */
export function fromJson(text) {
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    throw new Error(t('import.notJson'));
  }
  if (data?.format !== 'firsttoken.conversation' || data.version !== 1) {
    throw new Error(t('import.notConversation'));
  }
  const entries = (validMessages(data.messages) ?? []).map((m) => {
    const { stream: _stream, id: _id, ...entry } = m;
    if (entry.role === 'assistant' || entry.role === 'user') entry.id = newEntryId();
    return entry;
  });
  if (!entries.length) throw new Error(t('import.empty'));
  const first = entries.find((m) => m.role === 'user');
  const title = typeof data.title === 'string' && data.title.trim() ? titleFrom(data.title) : titleFrom(first?.content ?? '');
  const out = { title, entries };
  if (typeof data.reasoning === 'string') out.reasoning = data.reasoning;
  return out;
}

/** A file name from a title: characters file systems refuse, and control characters,
 * become dashes; at most 60 characters; "conversation" if nothing is left. */
export function fileName(title, extension) {
  const stem = Array.from(String(title ?? '')
    // eslint-disable-next-line no-control-regex -- control characters are what it removes
    .replace(/[\\/:*?"<>|\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\s+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')).slice(0, 60).join('').replace(/[-.]+$/, '');
  return `${stem || 'conversation'}.${extension}`;
}

/** Save `text` as a file named `name`. */
export function download(text, name, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  // Revoked once the download has had its turn to start (revoking at once can cancel it).
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export function exportConversation(c, format) {
  if (format === 'json') download(toJson(c), fileName(c.title, 'json'), 'application/json');
  else download(toMarkdown(c), fileName(c.title, 'md'), 'text/markdown');
}
