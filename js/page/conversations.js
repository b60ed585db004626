// The conversation list: a sidebar on wide screens, a drawer from the header's button on
// phones (conversations.css decides which, by width). New chat, open, rename, export,
// delete with Undo, and search over titles and text. It paints what the
// ConversationStore (conversation-store.js) holds and asks it to change; the
// conversation on screen is repainted by page.js on the store's 'switch' event. The open conversation's title goes into the header
// (`#conversation-title`) and the document's title.

import { exportConversation, fromJson } from './export.js';
import { locale, onLocaleChange, t } from './i18n.js';

const untitled = () => t('conversations.untitled');

const WIDE = '(min-width: 60rem)';
const UNDO_MS = 8000;
const SEARCH_DEBOUNCE_MS = 120;

function button(text, className, label) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = className;
  b.textContent = text;
  if (label) b.setAttribute('aria-label', label);
  return b;
}

function when(t) {
  const d = new Date(t);
  const today = new Date();
  return d.toDateString() === today.toDateString()
    ? d.toLocaleTimeString(locale(), { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString(locale(), { month: 'short', day: 'numeric' });
}

export class ConversationList {
  /** `store`: the page's ConversationStore; `panel`: the <nav> to fill; `toggle`: the header's
   * button that shows it; `newChat`: the "New chat" button; `title`: where the open
   * conversation's title goes. */
  constructor({ store, panel, toggle, newChat, title }) {
    Object.assign(this, { store, panel, toggle, newChat, title });
    this.wide = matchMedia(WIDE);
    this.expanded = null; // id whose actions are shown
    this.renaming = null;
    this.query = '';
    this.searchSeq = 0;
    this.build();

    store.addEventListener('list', () => this.render());
    store.addEventListener('switch', () => this.showTitle());
    store.addEventListener('store', () => this.showStore());
    store.addEventListener('pending', () => {
      panel.dataset.pending = String(store.pending);
    });
    toggle.addEventListener('click', () => this.setOpen(!this.isOpen()));
    newChat.addEventListener('click', () => {
      this.settle();
      store.newChat();
      this.afterChoice();
    });
    this.wide.addEventListener?.('change', () => this.syncToggle());
    document.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && !this.wide.matches && this.isOpen()) {
        this.setOpen(false);
        toggle.focus();
      }
    });
    this.render();
    this.showTitle();
    this.syncToggle();
  }

  build() {
    const { panel } = this;
    const search = document.createElement('input');
    search.type = 'search';
    search.className = 'conv-search';
    search.placeholder = t('conversations.search');
    search.setAttribute('aria-label', t('conversations.search'));
    search.dir = 'auto';
    search.addEventListener('input', () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => {
        this.query = search.value;
        this.render();
      }, SEARCH_DEBOUNCE_MS);
    });
    const list = document.createElement('ul');
    list.className = 'conv-list';
    const empty = document.createElement('p');
    empty.className = 'conv-empty';
    const store = document.createElement('p');
    store.className = 'conv-store';
    store.setAttribute('role', 'status');
    store.hidden = true;
    // Import: a conversation exported as JSON (here or on another device), back as it
    // was, reasoning included (export.js `fromJson`).
    const importFile = document.createElement('input');
    importFile.type = 'file';
    importFile.accept = '.json,application/json';
    importFile.hidden = true;
    importFile.className = 'conv-import-file';
    const importButton = button(t('conversations.import'), 'conv-import');
    importButton.addEventListener('click', () => importFile.click());
    const importNote = document.createElement('p');
    importNote.className = 'conv-import-note';
    importNote.setAttribute('role', 'status');
    importFile.addEventListener('change', () => {
      const [file] = importFile.files;
      importFile.value = '';
      if (file) this.importFile(file);
    });
    panel.replaceChildren(search, list, empty, store, importButton, importFile, importNote);
    panel.dataset.pending = '0';
    this.els = { search, list, empty, store, importNote };
    // Another language: the panel's own words again, and the list (its dates, "New chat").
    onLocaleChange(() => {
      search.placeholder = t('conversations.search');
      search.setAttribute('aria-label', t('conversations.search'));
      importButton.textContent = t('conversations.import');
      this.render();
    });

    const backdrop = document.createElement('div');
    backdrop.className = 'conv-backdrop';
    backdrop.addEventListener('click', () => this.setOpen(false));
    panel.after(backdrop);

    const toast = document.createElement('div');
    toast.className = 'conv-toast';
    toast.setAttribute('role', 'status');
    toast.hidden = true;
    document.body.append(toast);
    this.els.toast = toast;
  }

  // ---- open and closed ------------------------------------------------------------
  isOpen() {
    const html = document.documentElement;
    return this.wide.matches ? html.dataset.sidebar !== 'closed' : html.dataset.drawer === 'open';
  }

  setOpen(open) {
    const html = document.documentElement;
    if (this.wide.matches) {
      html.dataset.sidebar = open ? 'open' : 'closed';
    } else {
      if (open) {
        const header = this.toggle.closest('header');
        html.style.setProperty('--conv-top', `${Math.round(header?.getBoundingClientRect().bottom ?? 0)}px`);
      }
      html.dataset.drawer = open ? 'open' : 'closed';
      if (open) this.els.search.focus();
    }
    this.syncToggle();
  }

  syncToggle() {
    this.toggle.setAttribute('aria-expanded', String(this.isOpen()));
  }

  // After choosing a conversation on a phone, the drawer gives the screen back.
  afterChoice() {
    if (!this.wide.matches && this.isOpen()) this.setOpen(false);
    document.getElementById('prompt')?.focus({ preventScroll: true });
  }

  // ---- the list -------------------------------------------------------------------
  async render() {
    if (this.renaming) return; // repainted once the rename is done
    const seq = ++this.searchSeq;
    const found = await this.store.search(this.query);
    if (seq !== this.searchSeq || this.renaming) return; // a newer render is on its way
    const { list, empty } = this.els;
    list.replaceChildren(...found.map(({ conversation, snippet }) => this.item(conversation, snippet)));
    empty.hidden = found.length > 0;
    empty.textContent = this.query.trim() ? t('conversations.noneFound') : t('conversations.none');
    this.panel.dataset.count = String(found.length);
    this.showTitle();
  }

  item(c, snippet) {
    const li = document.createElement('li');
    li.className = 'conv';
    li.dataset.id = c.id;
    const open = button('', 'conv-open');
    const name = document.createElement('span');
    name.className = 'conv-title';
    name.textContent = c.title || untitled();
    name.dir = 'auto';
    const time = document.createElement('span');
    time.className = 'conv-when';
    time.textContent = when(c.updated);
    open.append(name, time);
    if (snippet) {
      const s = document.createElement('span');
      s.className = 'conv-snippet';
      s.textContent = snippet;
      open.append(s);
    }
    if (c === this.store.active) open.setAttribute('aria-current', 'true');
    open.addEventListener('click', async () => {
      this.settle();
      if (await this.store.open(c.id)) this.afterChoice();
      else this.say(t('conversations.unreadable', { title: c.title || untitled() }));
    });
    const more = button('⋯', 'conv-more', t('conversations.actionsFor', { title: c.title || untitled() }));
    const expanded = this.expanded === c.id;
    more.setAttribute('aria-expanded', String(expanded));
    more.addEventListener('click', () => {
      this.expanded = expanded ? null : c.id;
      this.render();
    });
    li.append(open, more);
    if (expanded) li.append(this.actions(c, li, name));
    return li;
  }

  actions(c, li, _name) {
    const row = document.createElement('div');
    row.className = 'conv-actions';
    const rename = button(t('conversations.rename'), 'conv-rename');
    const markdown = button(t('conversations.exportMarkdown'), 'conv-export');
    const json = button(t('conversations.exportJson'), 'conv-export');
    const del = button(t('conversations.delete'), 'conv-delete');
    rename.addEventListener('click', () => this.rename(c, li));
    markdown.addEventListener('click', () => this.export(c, 'md'));
    json.addEventListener('click', () => this.export(c, 'json'));
    del.addEventListener('click', () => this.delete(c));
    row.append(rename, markdown, json, del);
    return row;
  }

  rename(c, li) {
    this.settle();
    this.renaming = c.id;
    const input = document.createElement('input');
    input.type = 'text';
    input.className = 'conv-rename-input';
    input.value = c.title || '';
    input.setAttribute('aria-label', t('conversations.titleField'));
    input.dir = 'auto';
    input.maxLength = 200;
    let done = false;
    const finish = (keep) => {
      if (done) return;
      done = true;
      this.renaming = null;
      this.expanded = null;
      if (keep) this.store.rename(c.id, input.value);
      this.render();
    };
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        finish(true);
      } else if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        finish(false);
      }
    });
    input.addEventListener('blur', () => finish(true));
    li.replaceChildren(input);
    input.focus();
    input.select();
  }

  async export(c, format) {
    this.settle();
    const loaded = await this.store.load(c.id);
    if (loaded) exportConversation(loaded, format);
  }

  /** Import `file` (JSON, as exported): opened as a new conversation, or a line says
   * why not. */
  async importFile(file) {
    this.settle();
    try {
      const c = this.store.importConversation(fromJson(await file.text()));
      this.els.importNote.textContent = t('conversations.imported', { title: c.title || untitled() });
      this.afterChoice();
    } catch (e) {
      this.els.importNote.textContent = t('conversations.importFailed', { name: file.name, message: e.message });
    }
  }

  delete(c) {
    this.settle();
    this.expanded = null;
    this.store.delete(c.id);
    const { toast } = this.els;
    const text = document.createElement('span');
    text.textContent = t('conversations.deleted', { title: c.title || untitled() });
    const undo = button(t('conversations.undo'), 'conv-undo');
    undo.addEventListener('click', () => {
      this.store.undo();
      this.hideToast();
    });
    toast.replaceChildren(text, undo);
    toast.hidden = false;
    this.toastTimer = setTimeout(() => this.settle(), UNDO_MS);
    (this.isOpen() && this.wide.matches ? this.els.search : undo).focus({ preventScroll: true });
  }

  hideToast() {
    clearTimeout(this.toastTimer);
    this.els.toast.hidden = true;
    this.els.toast.replaceChildren();
  }

  /** The next action: a delete can no longer be undone. page.js calls it on Send. */
  settle() {
    if (this.els.toast.hidden) return;
    this.store.forgetDeleted();
    this.hideToast();
  }

  // ---- the header and the store ---------------------------------------------------
  showTitle() {
    const title = this.store.title;
    if (this.title.textContent !== title) this.title.textContent = title;
    document.title = this.store.active.title ? `${title} · firsttoken` : 'firsttoken';
    for (const b of this.els.list.querySelectorAll('.conv-open')) {
      const current = b.parentElement.dataset.id === this.store.active.id;
      if (current) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
  }

  showStore() {
    const memory = this.store.store === 'memory';
    this.panel.dataset.store = this.store.store;
    this.say(memory ? t('conversations.memoryOnly') : '');
  }

  /** A quiet line under the list (a polite status). */
  say(text) {
    const { store } = this.els;
    store.hidden = !text;
    store.textContent = text;
  }
}
