// @ts-check
// Light and dark: the system's choice unless the user picked one with the toggle (kept
// in localStorage). `data-theme` on <html> is always the theme in force ('light' or
// 'dark': page.css and the renderers' colours read it), `data-theme-choice` what the
// user chose ('system', 'light' or 'dark').

import { webStorage } from './storage.js';
import { onLocaleChange, t } from './i18n.js';

const KEY = 'firsttoken.theme';
const CHOICES = ['system', 'light', 'dark'];
/** @type {Record<string, import('./i18n.js').Key>} */
const NAMES = { system: 'theme.system', light: 'theme.light', dark: 'theme.dark' };

export class Theme {
  constructor(button, { root = document.documentElement, storage = webStorage('localStorage') } = {}) {
    this.button = button;
    this.root = root;
    this.storage = storage;
    this.dark = matchMedia('(prefers-color-scheme: dark)');
    let choice = null;
    try {
      choice = storage.getItem(KEY);
    } catch { /* no storage: the system's */ }
    this.choice = CHOICES.includes(choice) ? choice : 'system';
    this.dark.addEventListener('change', () => this.apply());
    button?.addEventListener('click', () => this.set(CHOICES[(CHOICES.indexOf(this.choice) + 1) % CHOICES.length]));
    this.apply();
    onLocaleChange(() => this.apply());
  }

  set(choice) {
    this.choice = choice;
    try {
      this.storage.setItem(KEY, choice);
    } catch { /* holds for this visit */ }
    this.apply();
  }

  /** The theme in force: 'light' or 'dark'. */
  get current() {
    return this.choice === 'system' ? (this.dark.matches ? 'dark' : 'light') : this.choice;
  }

  apply() {
    this.root.dataset.theme = this.current;
    this.root.dataset.themeChoice = this.choice;
    this.root.style.colorScheme = this.current;
    if (this.button) {
      const next = CHOICES[(CHOICES.indexOf(this.choice) + 1) % CHOICES.length];
      this.button.setAttribute('aria-label', t('theme.label', { name: t(NAMES[this.choice]) }));
      this.button.title = t('theme.title', { name: t(NAMES[this.choice]), next: t(NAMES[next]) });
    }
  }
}
