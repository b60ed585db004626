// The Thinking control in the composer: how hard the model thinks before it answers,
// per conversation. Auto (the model's own default), Off, Low, Medium, High; sent as
// `settings.reasoning` (bridge/PROTOCOL.md, "Settings"; the core maps it to each API's
// own field: `reasoning_effort`, `reasoning.effort`, Anthropic `thinking`).
//
// One tap opens it, one tap chooses (a menu of radio items, WAI-ARIA's menu button
// pattern: https://www.w3.org/WAI/ARIA/apg/patterns/menu-button/). It is the most asked-for
// mobile control in peers' trackers this year (issue 48), and a chat's effort is a
// property of that chat: a hard problem in one conversation does not make every later
// chat slow and costly (Chatbox#2753: trial credits gone at the highest effort). So the
// level is kept with the conversation (its record's `reasoning`, conversation-store.js),
// and a new chat starts at Auto.
//
// A host sets the default (`settings.set` with `reasoning`: bridge/page/hosts.js); the
// person's own choice here, for a conversation, wins over it.

import { onLocaleChange, t } from './i18n.js';

/** The levels, in the order the menu offers them, with the catalogue keys (i18n.js) of
 * each one's name and what it means in one line. */
export const LEVELS = {
  auto: ['thinking.auto', 'thinking.autoHint'],
  off: ['thinking.off', 'thinking.offHint'],
  low: ['thinking.low', 'thinking.lowHint'],
  medium: ['thinking.medium', 'thinking.mediumHint'],
  high: ['thinking.high', 'thinking.highHint'],
};

/** The Thinking level of `conversation` (a ConversationStore's active one, or any
 * object): one of LEVELS' keys; anything else, as the core reads it, is Auto. */
export function levelOf(conversation) {
  const level = conversation?.reasoning;
  return typeof level === 'string' && Object.hasOwn(LEVELS, level) ? level : 'auto';
}

export class ThinkingControl {
  /** `button`: the composer's toggle; `menu`: its menu (filled here); `store`: the
   * ConversationStore, whose open conversation the level belongs to. */
  constructor({ button, menu }, store, { hostLevel = () => null, onHostChange = () => {} } = {}) {
    Object.assign(this, { button, menu, store, hostLevel });
    onHostChange(() => this.show());
    this.items = Object.entries(LEVELS).map(([level, [name, hint]]) => {
      const item = document.createElement('button');
      item.type = 'button';
      item.setAttribute('role', 'menuitemradio');
      item.dataset.level = level;
      const title = document.createElement('span');
      title.className = 'level';
      title.textContent = t(name);
      title.dataset.key = name;
      const line = document.createElement('span');
      line.className = 'hint';
      line.textContent = t(hint);
      line.dataset.key = hint;
      item.append(title, line);
      item.addEventListener('click', () => this.choose(level));
      return item;
    });
    menu.replaceChildren(...this.items);
    button.addEventListener('click', () => this.setOpen(menu.hidden));
    menu.addEventListener('keydown', (e) => this.key(e));
    // A tap anywhere else closes it, as a menu does.
    document.addEventListener('pointerdown', (e) => {
      if (!menu.hidden && !menu.contains(e.target) && !button.contains(e.target)) this.setOpen(false, false);
    });
    store.addEventListener?.('switch', () => this.show());
    onLocaleChange(() => {
      for (const el of menu.querySelectorAll('[data-key]')) el.textContent = t(el.dataset.key);
      this.show();
    });
    this.show();
  }

  /** The level of the conversation shown. */
  get level() {
    return levelOf(this.store.active ?? this.store);
  }

  show() {
    const { level } = this;
    let name = t(LEVELS[level][0]);
    // Auto, where a host set a default level: the level the app's requests go with.
    const host = this.hostLevel();
    const label = level === 'auto' && host && host !== 'auto' && Object.hasOwn(LEVELS, host)
      ? t('thinking.autoWith', { level: (name = t(LEVELS[host][0])) }) : name;
    this.button.querySelector('.level').textContent = name;
    this.button.setAttribute('aria-label', t('thinking.label', { level: label }));
    this.button.dataset.level = level;
    for (const item of this.items) item.setAttribute('aria-checked', String(item.dataset.level === level));
  }

  setOpen(open, focus = true) {
    this.menu.hidden = !open;
    this.button.setAttribute('aria-expanded', String(open));
    if (open) this.items.find((i) => i.dataset.level === this.level)?.focus();
    else if (focus) this.button.focus();
  }

  /** The person chose `level` for this conversation. */
  choose(level) {
    this.store.setReasoning?.(level);
    this.show();
    this.setOpen(false);
  }

  key(e) {
    const at = this.items.indexOf(document.activeElement);
    const go = (i) => this.items[(i + this.items.length) % this.items.length].focus();
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      this.setOpen(false);
    } else if (e.key === 'ArrowDown') {
      e.preventDefault();
      go(at + 1);
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      go(at - 1);
    } else if (e.key === 'Home') {
      e.preventDefault();
      go(0);
    } else if (e.key === 'End') {
      e.preventDefault();
      go(-1);
    } else if (e.key === 'Tab') {
      this.setOpen(false, false);
    }
  }
}
