// @ts-check
// Answers in flight, kept synchronously as the page goes away: an IndexedDB write
// started in `pagehide` may never commit (a reload tears the page down first), while
// localStorage is written before the call returns. Folded back into their conversation
// the next time it is read, then dropped. Split out of ConversationStore (issue 47,
// item 3): the store asks it to keep an answer and to fold what it kept into a
// conversation just read; it knows nothing else of the store.

const RESCUE_KEY = 'firsttoken.rescue.v1';
const RESCUE_MAX = 8; // answers in flight at once is one per conversation; bound it anyway

export class Rescue {
  /** `storage`: a Storage (localStorage), or null where there is none (then a no-op). */
  constructor(storage) {
    this.storage = storage;
  }

  /** Keep answer `entry` of conversation `conversation` (an id). */
  keep(conversation, entry) {
    if (!this.storage || !entry?.id || entry.role !== 'assistant') return;
    const kept = this.read();
    kept[entry.id] = { conversation, entry: { ...entry } };
    const ids = Object.keys(kept);
    for (const id of ids.slice(0, Math.max(0, ids.length - RESCUE_MAX))) delete kept[id];
    try {
      this.storage.setItem(RESCUE_KEY, JSON.stringify(kept));
    } catch { /* storage full: the IndexedDB write may still make it */ }
  }

  /** Fold what `keep` kept for conversation `c` (its messages just read) back in: the
   * answer of the same id gets the rescued text and state, if it is the same turn's
   * answer and the text is longer (never an older copy over a newer one). Whether an
   * entry of `c` changed. */
  foldInto(c) {
    if (!this.storage || !c.entries) return false;
    const kept = this.read();
    let found = false;
    let changed = false;
    for (const [id, { conversation, entry } = {}] of Object.entries(kept)) {
      if (conversation !== c.id) continue;
      delete kept[id];
      found = true;
      const into = c.entries.find((e) => e.id === id && e.role === 'assistant');
      if (!into || typeof entry?.content !== 'string' || typeof entry.state !== 'string') continue;
      if (entry.content.length < (into.content ?? '').length) continue;
      into.content = entry.content;
      into.state = entry.state;
      // The reasoning and its time go with the text (the same paint wrote them).
      if (typeof entry.reasoning === 'string') into.reasoning = entry.reasoning;
      if (Number.isFinite(entry.reasoning_ms)) into.reasoning_ms = entry.reasoning_ms;
      // The stream and its last painted event go with the text they describe.
      const { stream } = entry;
      if (stream && typeof stream.id === 'string' && typeof stream.base_url === 'string' && Number.isSafeInteger(stream.after)) {
        into.stream = { id: stream.id, base_url: stream.base_url, after: stream.after };
      } else {
        delete into.stream;
      }
      changed = true;
    }
    if (!found) return false;
    try {
      if (Object.keys(kept).length) this.storage.setItem(RESCUE_KEY, JSON.stringify(kept));
      else this.storage.removeItem(RESCUE_KEY);
    } catch { /* left for the next read */ }
    return changed;
  }

  /** What is kept: `{[answer id]: {conversation, entry}}`; {} when unreadable. */
  read() {
    try {
      const kept = JSON.parse(this.storage?.getItem(RESCUE_KEY) ?? 'null');
      return kept && typeof kept === 'object' && !Array.isArray(kept) ? kept : {};
    } catch {
      return {}; // unreadable: nothing to fold back
    }
  }
}
