// @ts-check
// What a stored conversation is, checked before use: records read back from IndexedDB
// (or the old localStorage key) may come from an older build, another tab, a disk that
// lost a write, or a person with DevTools. A record that does not pass is skipped, never
// thrown at the page; a message that does not pass is dropped from its conversation.
// Fields this build does not know (`incomplete`, `error`, whatever another module adds
// to an entry) are kept as they are, so that a save never loses them.

/** A conversation's listing: `{id, title, created, updated, renamed?}` (times in ms
 * since the epoch). The messages live apart (see db.js), so the list reads small. */
export function validMeta(r) {
  if (!r || typeof r !== 'object') return null;
  const { id, title, created, updated } = r;
  if (typeof id !== 'string' || !id || typeof title !== 'string') return null;
  if (!Number.isFinite(created) || !Number.isFinite(updated)) return null;
  return { ...r };
}

/** The messages of a conversation, oldest first: entries that are not
 * `{role: string, content: string, ...}` are left out; `null` if `r` is no list. An
 * answer's reasoning fields that are not what this build writes are dropped from it
 * (the answer stays): `reasoning` (text), `reasoning_ms` (a duration), `replay` (what
 * goes back to the API: `{api, model, items: [...]}`, sent to the core as kept, so
 * never a shape the core would refuse), `cut` and `max_tokens`. */
export function validMessages(r) {
  const list = Array.isArray(r) ? r : Array.isArray(r?.messages) ? r.messages : null;
  if (!list) return null;
  return list.filter((m) => m && typeof m === 'object' && typeof m.role === 'string' && typeof m.content === 'string')
    .map(validReasoning);
}

function validReasoning(m) {
  if (!('reasoning' in m || 'reasoning_ms' in m || 'replay' in m || 'cut' in m || 'max_tokens' in m)) return m;
  const out = { ...m };
  if ('reasoning' in out && typeof out.reasoning !== 'string') delete out.reasoning;
  if ('reasoning_ms' in out && !(Number.isFinite(out.reasoning_ms) && out.reasoning_ms >= 0)) delete out.reasoning_ms;
  if ('replay' in out && !validReplay(out.replay)) delete out.replay;
  if ('cut' in out && !(out.cut && typeof out.cut === 'object' && (out.cut.tokens === null || (Number.isSafeInteger(out.cut.tokens) && out.cut.tokens > 0)))) delete out.cut;
  if ('max_tokens' in out && !(Number.isSafeInteger(out.max_tokens) && out.max_tokens > 0)) delete out.max_tokens;
  if (out.role !== 'assistant') for (const k of ['reasoning', 'reasoning_ms', 'replay', 'cut', 'max_tokens']) delete out[k];
  return out;
}

/** `chat.done.replay` as kept: `{api, model, items}`, items plain objects. */
export function validReplay(replay) {
  return Boolean(replay) && typeof replay === 'object' && !Array.isArray(replay)
    && typeof replay.api === 'string' && typeof replay.model === 'string'
    && Array.isArray(replay.items) && replay.items.length > 0
    && replay.items.every((i) => i && typeof i === 'object' && !Array.isArray(i));
}

const TITLE_MAX = 60;

/** A title from a first prompt: its first line that says something, whitespace
 * squeezed, cut at a word near `TITLE_MAX` characters (never inside a surrogate pair). */
export function titleFrom(text) {
  const line = String(text).split('\n').map((l) => l.replace(/\s+/g, ' ').trim()).find((l) => l) ?? '';
  const chars = Array.from(line);
  if (chars.length <= TITLE_MAX) return line;
  const cut = chars.slice(0, TITLE_MAX).join('');
  const space = cut.lastIndexOf(' ');
  return `${(space > TITLE_MAX / 2 ? cut.slice(0, space) : cut).replace(/[\s.,;:!?-]+$/, '')}…`;
}

/** A fresh conversation id: time-ordered, unique enough per device. */
export function newId(now = Date.now()) {
  const random = Math.random().toString(36).slice(2, 10);
  return `c${now.toString(36)}${random}`;
}
