// @ts-check
// The conversations the page keeps, and the one open among them: a store of many
// conversations (it was called History; a history is one conversation's past).
//
// Replies (replies.js) and the live count see one conversation, synchronously: the
// open one's `entries`, and `add`, `insertAfter`, `upTo`, `remove`, `save`, `clear` on
// it. Persistence happens behind them (store/db.js, IndexedDB): `save()` writes, in the
// background, whichever conversations changed since their last write.
//
// An answer belongs to the conversation it was asked in. Its entry is an object in that
// conversation's `entries`, and the methods that take an entry (`insertAfter`, `upTo`,
// `remove`) act on the conversation that holds it, open or not. So an answer still
// streaming into A when the user opens B goes on into A (its text, its end, its save),
// never into B; opening A again shows it where it has got to (page.js repaints it).
//
// Kept in memory if IndexedDB cannot be used or fails (a 'store' event says so, and the
// page says it quietly): nothing typed is lost while the page stays open.
//
// Events: 'switch' (another conversation is open: repaint), 'list' (the list or a title
// changed), 'store' (where conversations are kept: `store` is 'indexeddb' or 'memory'),
// 'pending' (writes in flight: `pending`).
//
// Two collaborators hold what is not the store's own: store/rescue.js keeps answers in
// flight as the page goes away (localStorage, synchronously), store/search.js finds
// conversations by title or text. Delete and its Undo stay here: they move a
// conversation in and out of the list the store owns, and nothing else.
//
// To add a method that changes messages (say, dropping what follows an entry): find the
// conversation with `ownerOf(entry)`, change its `entries` in place, and add it to
// `touched`; the next `save()` writes it.

import { removeLegacy } from './store/db.js';
import { plainText } from '../render/plain-text.js';
import { t } from './i18n.js';
import { newId, titleFrom } from './store/records.js';
import { Rescue } from './store/rescue.js';
import { findConversations } from './store/search.js';
import { webStorage } from './storage.js';

export class ConversationStore extends EventTarget {
  /** `now()`: the clock (ms since the epoch), for tests. Call `adopt(early)` with what
   * store/db.js read to show the kept conversations; until then, and without it, the
   * page works in memory. */
  constructor({ now = Date.now, storage = webStorage('localStorage') } = {}) {
    super();
    this.now = now;
    this.rescued = new Rescue(storage ?? null); // answers kept as the page goes (store/rescue.js)
    this.db = null;
    this.store = 'starting'; // until adopt(): then 'indexeddb' or 'memory'
    this.conversations = new Map(); // id → conversation, listed ones only
    this.owners = new WeakMap(); // entry → the conversation holding it
    this.touched = new Set(); // conversations that may have changed since written
    this.writes = new Map(); // id → {again}: a write in flight, and whether another is due
    this.pending = 0; // writes not yet committed (tests wait on 0)
    this.deleted = null; // {conversation, wasOpen}: what Undo brings back
    this.allRead = false;
    this.active = this.fresh();
  }

  // ---- the open conversation (replies.js, page.js) --------------------------------
  /** The open conversation's messages, `{role, content, ...}`, oldest first. */
  get entries() {
    return this.active.entries;
  }

  /** The open conversation's title ("New chat" until its first prompt). */
  get title() {
    return this.active.title || t('conversations.untitled');
  }

  /** Add a message to the open conversation (an answer starts empty and grows). The
   * first prompt of a new chat names it and puts it in the list. */
  add(role, content) {
    return this.place(this.active, this.active.entries.length, role, content);
  }

  /** Add a message right after `anchor`, in the conversation that holds it. */
  insertAfter(anchor, role, content) {
    const c = this.ownerOf(anchor);
    const at = c.entries.indexOf(anchor);
    return this.place(c, at < 0 ? c.entries.length : at + 1, role, content);
  }

  /** The entries of `entry`'s conversation up to and including it (all if it is gone). */
  upTo(entry) {
    const { entries } = this.ownerOf(entry);
    const at = entries.indexOf(entry);
    return at < 0 ? entries.slice() : entries.slice(0, at + 1);
  }

  remove(entry) {
    const c = this.ownerOf(entry);
    const at = c.entries.indexOf(entry);
    if (at >= 0) c.entries.splice(at, 1);
    this.touched.add(c);
  }

  /** Empty the open conversation. */
  clear() {
    this.active.entries.length = 0;
    this.touched.add(this.active);
    this.save();
  }

  /** Keep answer `entry` (in flight, the page going away) where a reload finds it even
   * if the IndexedDB write of `save(entry)` never commits (store/rescue.js). */
  rescue(entry) {
    if (entry?.id) this.rescued.keep(this.ownerOf(entry).id, entry);
  }

  // Fold what `rescue` kept for conversation `c` (its messages just read) back in.
  unrescue(c) {
    if (this.rescued.foldInto(c)) this.touched.add(c);
  }

  /** Write what changed, in the background; `entry`'s conversation too (an answer
   * streaming into a conversation that is not open changes it without adding to it). */
  save(entry) {
    if (entry) this.touched.add(this.ownerOf(entry));
    this.touched.add(this.active);
    for (const c of this.touched) {
      if (c.deleted || !this.conversations.has(c.id)) continue;
      const text = JSON.stringify(c.entries);
      if (text === c.written) continue;
      c.updated = this.now();
      this.persist(c);
    }
    this.touched.clear();
    this.touched.add(this.active);
  }

  place(c, at, role, content) {
    const entry = { role, content };
    c.entries.splice(at, 0, entry);
    this.owners.set(entry, c);
    this.touched.add(c);
    if (!this.conversations.has(c.id)) this.list(c);
    if (!c.title && role === 'user' && content.trim()) {
      // A title is plain text: the first prompt's markdown marks are taken out line by
      // line (`**注意：**请看` → `注意：请看`, issue 44); a rename is kept as typed.
      c.title = titleFrom(content.split('\n').map(plainText).join('\n'));
      this.emit('list');
    }
    return entry;
  }

  ownerOf(entry) {
    const c = this.owners.get(entry);
    if (c) return c;
    for (const other of this.conversations.values()) {
      if (other.entries?.includes(entry)) return other;
    }
    return this.active;
  }

  fresh() {
    const t = this.now();
    return { id: newId(t), title: '', created: t, updated: t, entries: [], written: null };
  }

  list(c) {
    this.conversations.set(c.id, c);
    this.emit('list');
  }

  own(c) {
    for (const entry of c.entries ?? []) this.owners.set(entry, c);
  }

  emit(type) {
    this.dispatchEvent(new Event(type));
  }

  // ---- the list (conversations.js) ------------------------------------------------
  /** The listed conversations, the most recently changed first. */
  listed() {
    return [...this.conversations.values()].sort((a, b) => b.updated - a.updated);
  }

  /** Take what store/db.js read at start (`early`, a promise of `{db, start, error}`):
   * the list, and the conversation last open, opened, unless the user already began a
   * new one meanwhile (what they typed stays open, and is saved now). An open that
   * timed out and answers later (`late`) is adopted then the same way: the page worked
   * in memory meanwhile, and what it holds is written. */
  async adopt(early) {
    const { db, start, error, late } = (await early) ?? { db: null, start: null, error: null };
    if (db && !this.db) {
      this.failedAtStart = false;
      // Conversations begun in memory: never written, so written now.
      for (const c of this.conversations.values()) if (c.entries?.length && c.written === null) this.touched.add(c);
    }
    this.db = db;
    for (const meta of start?.metas ?? []) {
      if (this.conversations.has(meta.id)) continue;
      const c = { ...meta, entries: null, written: null };
      if (meta.id === start.messagesOf && start.messages) {
        c.entries = start.messages;
        c.written = meta.legacy ? null : JSON.stringify(c.entries);
        this.own(c);
        this.unrescue(c);
      }
      if (c.legacy) this.touched.add(c);
      this.conversations.set(c.id, c);
    }
    this.setStore(db && !error ? 'indexeddb' : 'memory', error);
    const opened = start?.messagesOf ? this.conversations.get(start.messagesOf) : null;
    if (!this.active.entries.length && opened?.entries) {
      this.active = opened;
      this.emit('switch');
    } else if (start?.messagesOf && !opened?.entries) {
      this.conversations.delete(start.messagesOf); // its messages are unreadable: skipped
    }
    this.emit('list');
    this.save();
    if (late) late.then((opened) => opened && this.adopt(opened)).catch((e) => this.setStore('memory', e));
  }

  /** Conversation `id` with its messages read (from IndexedDB if they are not in
   * memory yet); null if it cannot be read (it then leaves the list). */
  async load(id) {
    const c = this.conversations.get(id);
    if (!c) return null;
    if (c.entries) return c;
    let messages = null;
    try {
      messages = this.db ? await this.db.readMessages(id) : null;
    } catch (e) {
      this.setStore('memory', e);
    }
    if (c.entries) return c; // read meanwhile (a search)
    if (!messages) {
      this.conversations.delete(id);
      this.emit('list');
      return null;
    }
    c.entries = messages;
    c.written = JSON.stringify(messages);
    this.own(c);
    this.unrescue(c);
    return c;
  }

  /** Open conversation `id`. False if it cannot be read. */
  async open(id) {
    const c = await this.load(id);
    if (!c) return false;
    if (c === this.active) return true;
    this.active = c;
    this.touched.add(c);
    this.tellOpen(c.id);
    this.emit('switch');
    this.emit('list');
    return true;
  }

  /** A new, empty chat (listed once its first prompt is sent); the open one if that is
   * already one. */
  newChat() {
    if (!this.active.entries.length) return;
    this.active = this.fresh();
    this.tellOpen('');
    this.emit('switch');
    this.emit('list');
  }

  /** The Thinking level of the open conversation (thinking-control.js), kept with it:
   * written now if it is listed, else with its first prompt. Auto is kept as none. */
  setReasoning(level) {
    const c = this.active;
    if ((c.reasoning ?? 'auto') === level) return;
    if (level === 'auto') delete c.reasoning;
    else c.reasoning = level;
    if (this.conversations.has(c.id)) this.persist(c);
  }

  /** A conversation from a file (export.js `fromJson`: `{title, entries, reasoning?}`),
   * listed, written and opened as a new one (a new id: the file may come back twice). */
  importConversation({ title, entries, reasoning }) {
    const c = this.fresh();
    c.title = title;
    c.entries = entries;
    if (reasoning && reasoning !== 'auto') c.reasoning = reasoning;
    this.own(c);
    this.conversations.set(c.id, c);
    this.persist(c);
    this.active = c;
    this.tellOpen(c.id);
    this.emit('switch');
    this.emit('list');
    return c;
  }

  rename(id, title) {
    const c = this.conversations.get(id);
    const name = titleFrom(title ?? '');
    if (!c || !name || name === c.title) return;
    c.title = name;
    c.renamed = true;
    this.emit('list');
    this.persist(c);
  }

  /** Delete conversation `id`; `undo()` brings it back until the next delete. */
  delete(id) {
    const c = this.conversations.get(id);
    if (!c) return;
    this.conversations.delete(id);
    c.deleted = true;
    const wasOpen = c === this.active;
    this.deleted = { conversation: c, wasOpen };
    this.write(c.id, () => this.db.delete(c.id));
    if (wasOpen) {
      this.active = this.fresh();
      this.tellOpen('');
      this.emit('switch');
    }
    this.emit('list');
  }

  /** Bring back the last deleted conversation (open again if it was open). */
  undo() {
    const d = this.deleted;
    if (!d) return false;
    this.deleted = null;
    const c = d.conversation;
    c.deleted = false;
    c.written = null;
    this.conversations.set(c.id, c);
    this.persist(c);
    if (d.wasOpen && !this.active.entries.length) {
      this.active = c;
      this.tellOpen(c.id);
      this.emit('switch');
    }
    this.emit('list');
    return true;
  }

  /** The delete can no longer be undone. */
  forgetDeleted() {
    this.deleted = null;
  }

  /** Conversations whose title or text contains `query` (case-insensitive), the most
   * recent first: `[{conversation, snippet}]` (store/search.js). Every conversation's
   * messages are read once, before the first search. */
  async search(query) {
    if (query.trim() && !this.allRead && this.db) {
      try {
        const all = await this.db.readAllMessages();
        for (const [id, messages] of all) {
          const c = this.conversations.get(id);
          if (c && !c.entries) {
            c.entries = messages;
            c.written = JSON.stringify(messages);
            this.own(c);
          }
        }
        this.allRead = true;
      } catch (e) {
        this.setStore('memory', e);
      }
    }
    return findConversations(this.listed(), query, t('conversations.untitled'));
  }

  // ---- persistence ----------------------------------------------------------------
  tellOpen(id) {
    if (this.db) this.write('open', () => this.db.setOpen(id));
  }

  /** Write `c` whole; writes of one conversation never overlap, and the last state wins. */
  persist(c) {
    if (!this.db) return;
    this.write(c.id, () => {
      if (c.deleted) return null;
      const text = JSON.stringify(c.entries ?? []);
      // The record without what is kept apart (the entries) or only in memory.
      const { entries: _entries, written: _written, deleted: _deleted, legacy: _legacy, ...meta } = c;
      const openId = c === this.active ? c.id : undefined;
      return this.db.put(meta, JSON.parse(text), openId).then(() => {
        c.written = text;
        if (c.legacy) { // the old localStorage conversation is in IndexedDB now
          delete c.legacy;
          removeLegacy();
        }
      });
    });
  }

  // One queue per key: a write asked for while one is in flight runs once after it.
  write(key, run) {
    if (!this.db) return;
    const queued = this.writes.get(key);
    if (queued) {
      queued.again = run;
      return;
    }
    const slot = { again: null };
    this.writes.set(key, slot);
    this.pending += 1;
    this.emit('pending');
    (async () => {
      let next = run;
      while (next) {
        slot.again = null;
        try {
          await next();
          if (this.store !== 'indexeddb' && !this.failedAtStart) this.setStore('indexeddb', null);
        } catch (e) {
          this.setStore('memory', e);
        }
        next = slot.again;
      }
      this.writes.delete(key);
      this.pending -= 1;
      this.emit('pending');
    })();
  }

  setStore(store, error) {
    if (store === 'memory' && !this.db) this.failedAtStart = true;
    this.error = error ?? null;
    if (store === this.store && store !== 'memory') return;
    this.store = store;
    this.emit('store');
  }
}
