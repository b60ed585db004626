// The conversation as the page keeps it: user and assistant messages in localStorage,
// so that the next visit shows it at once, before Python starts. The system prompt is
// a setting (settings.js), not part of it.

const KEY = 'firsttoken.history.v1';

export class History {
  constructor(storage = localStorage) {
    this.storage = storage;
    let stored = [];
    try {
      stored = JSON.parse(storage.getItem(KEY)) ?? [];
    } catch { /* unreadable: start afresh */ }
    /** `{role, content, incomplete?}`, oldest first. */
    this.entries = (Array.isArray(stored) ? stored : []).filter(
      (m) => m && typeof m.role === 'string' && typeof m.content === 'string');
  }

  /** Add a message (an answer starts empty and grows as it is painted). */
  add(role, content) {
    const entry = { role, content };
    this.entries.push(entry);
    return entry;
  }

  /** Add a message right after `anchor` (a retried answer takes its turn's place). */
  insertAfter(anchor, role, content) {
    const entry = { role, content };
    const at = this.entries.indexOf(anchor);
    this.entries.splice(at < 0 ? this.entries.length : at + 1, 0, entry);
    return entry;
  }

  /** The entries up to and including `entry` (all of them if it is gone). */
  upTo(entry) {
    const at = this.entries.indexOf(entry);
    return at < 0 ? this.entries.slice() : this.entries.slice(0, at + 1);
  }

  remove(entry) {
    const at = this.entries.indexOf(entry);
    if (at >= 0) this.entries.splice(at, 1);
  }

  clear() {
    this.entries.length = 0;
    this.save();
  }

  save() {
    try {
      this.storage.setItem(KEY, JSON.stringify(this.entries));
    } catch { /* storage full: keep going in memory */ }
  }
}
