// @ts-check
// The page's words in the reader's language (issue 44): one catalogue per locale, a
// flat object of typed keys (`composer.send`), in js/page/i18n/<locale>.js.
//
// Decisions, and why (docs/page.md, "Languages", says the same for those who add one):
// - No library. The engine's `Intl` already does what the libraries measured in
//   ../shared/RESEARCH-REASONING.md §4 would add: plurals (`Intl.PluralRules`), numbers
//   (`Intl.NumberFormat`), dates and relative times (`Intl.DateTimeFormat`,
//   `Intl.RelativeTimeFormat`), with CLDR data that ships with the WebView. What is
//   left is a lookup and a `{name}` fill: about 0.2 KB gzip, against i18next's 16 KB or
//   intl-messageformat's 10 KB, on a page whose whole point is the first token's
//   latency on a phone. A message needing select or nested plurals is the sign to
//   revisit; none does today.
// - Catalogues are ES modules, not JSON: the page imports them with no fetch (they are
//   in the preloaded module graph), Node's unit tests import the same files, and
//   `tsc` checks that each translation has exactly English's keys (`Catalogue`).
// - Keys are opaque and flat, grouped by the part of the page (`thinking.thoughtFor`),
//   not English sentences: a reworded English string does not orphan its translations.
// - English is the fallback, key by key: a string missing from a catalogue shows in
//   English rather than as a key or nothing (tests/js/i18n.test.mjs forbids missing
//   keys anyway, and checks that every `{placeholder}` in English is in each
//   translation).
// - No sentence is assembled from pieces: each message is a whole template with named
//   places, so a translation can put them in its own order. Plurals are an object of
//   CLDR categories (`{ one, other }`) picked by `Intl.PluralRules`; Chinese has only
//   `other`.
// - The locale: a choice in Settings (remembered in localStorage) wins; else a host's
//   `settings.set` `locale` (bridge/PROTOCOL.md, "Settings"); else the first of
//   `navigator.languages` (in a WebView, the app's language) that a catalogue serves;
//   else English. `<html lang>` follows it, so that the engine picks CJK glyphs and
//   line breaking for Chinese, and screen readers the right voice.

import { en } from './i18n/en.js';
import { zhCN } from './i18n/zh-CN.js';
import { webStorage } from './storage.js';

/** @typedef {keyof typeof en} Key */
/** @typedef {string | Partial<Record<Intl.LDMLPluralRule, string>>} Message */

/** The locales served, each with its catalogue; English first, the fallback. */
export const CATALOGUES = /** @type {Record<string, Record<Key, Message>>} */ ({ en, 'zh-CN': zhCN });
export const LOCALES = Object.keys(CATALOGUES);
const STORAGE_KEY = 'firsttoken.locale';

const changes = new EventTarget();
let choice = readChoice(); // the person's, from Settings: a locale, or null (automatic)
let hostLocale = /** @type {string | null} */ (null);
let current = resolve();
let plurals = new Intl.PluralRules(current);
let numbers = new Intl.NumberFormat(current);

function readChoice() {
  try {
    const kept = webStorage('localStorage').getItem(STORAGE_KEY);
    return kept && LOCALES.includes(kept) ? kept : null;
  } catch {
    return null; // no storage: automatic
  }
}

/** The served locale for a list of BCP 47 tags, best first, or null: the tag itself,
 * else its language (`zh-Hans-CN`, `zh-SG` and `zh` read Simplified Chinese; `zh-TW`
 * too until a Traditional catalogue is added: more readable to its reader than English). */
export function match(tags) {
  for (const tag of tags ?? []) {
    if (typeof tag !== 'string' || !tag) continue;
    let language;
    try {
      language = new Intl.Locale(tag).language;
    } catch {
      continue; // not a BCP 47 tag
    }
    const exact = LOCALES.find((l) => l.toLowerCase() === tag.toLowerCase());
    if (exact) return exact;
    const same = LOCALES.find((l) => l.split('-')[0] === language);
    if (same) return same;
  }
  return null;
}

function resolve() {
  const nav = /** @type {{ languages?: readonly string[], language?: string } | undefined} */ (globalThis.navigator);
  return choice ?? match([hostLocale]) ?? match(nav?.languages ?? [nav?.language]) ?? 'en';
}

function update() {
  const next = resolve();
  if (next === current) return;
  current = next;
  plurals = new Intl.PluralRules(current);
  numbers = new Intl.NumberFormat(current);
  if (globalThis.document) translateDocument(document);
  changes.dispatchEvent(new Event('change'));
}

/** The locale in force ('en', 'zh-CN'). */
export function locale() {
  return current;
}

/** The person's choice in Settings (null: automatic). */
export function chosenLocale() {
  return choice;
}

/** Settings: `tag` from now on, remembered; null: automatic again. */
export function chooseLocale(tag) {
  choice = tag && LOCALES.includes(tag) ? tag : null;
  try {
    if (choice) webStorage('localStorage').setItem(STORAGE_KEY, choice);
    else webStorage('localStorage').removeItem(STORAGE_KEY);
  } catch { /* holds for this visit */ }
  update();
}

/** A host's `settings.set` `locale` (null: cleared). Memory only, as host settings are. */
export function setHostLocale(tag) {
  hostLocale = typeof tag === 'string' ? tag : null;
  update();
}

/** Call `fn` whenever the locale changes (to re-say what a module painted itself). */
export function onLocaleChange(fn) {
  changes.addEventListener('change', () => fn(current));
}

/** `n` as the locale writes numbers (`1,234`; grouping as CLDR says). */
export function formatNumber(n, options) {
  return options ? new Intl.NumberFormat(current, options).format(n) : numbers.format(n);
}

/** The message `key` in the current locale, its `{name}` places filled from `params`
 * (numbers formatted for the locale); a plural message picks its form by `params.count`. */
export function t(/** @type {Key} */ key, /** @type {Record<string, unknown>} */ params = {}) {
  /** @type {Message | undefined} */
  let message = CATALOGUES[current][key] ?? en[key];
  if (message === undefined) return key;
  if (typeof message !== 'string') {
    const count = Number(params.count ?? 0);
    const forms = message;
    message = forms[plurals.select(count)] ?? forms.other ?? '';
  }
  return message.replace(/\{(\w+)\}/g, (all, name) => {
    if (!(name in params)) return all;
    const value = params[name];
    return typeof value === 'number' ? numbers.format(value) : String(value);
  });
}

/** Put the current locale's words into the page's own markup: `data-i18n` (text),
 * `data-i18n-label` (aria-label), `data-i18n-placeholder`, `data-i18n-title`; and the
 * locale into `<html lang>`. */
export function translateDocument(doc) {
  doc.documentElement.lang = current;
  for (const el of doc.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of doc.querySelectorAll('[data-i18n-label]')) el.setAttribute('aria-label', t(el.dataset.i18nLabel));
  for (const el of doc.querySelectorAll('[data-i18n-placeholder]')) el.setAttribute('placeholder', t(el.dataset.i18nPlaceholder));
  for (const el of doc.querySelectorAll('[data-i18n-title]')) el.setAttribute('title', t(el.dataset.i18nTitle));
}
