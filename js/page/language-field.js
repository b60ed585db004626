// @ts-check
// Settings' Language field: Automatic (the app's or browser's language, or a host's),
// then each locale a catalogue serves, named in itself ("English", "简体中文") so
// that a reader finds theirs whatever the page speaks now. A choice applies at once and
// is remembered (i18n.js).

import { CATALOGUES, LOCALES, chooseLocale, chosenLocale, onLocaleChange, t } from './i18n.js';

// Each catalogue names its own language ('locale.name'): Intl.DisplayNames would say
// 中文（中国） where a Chinese reader looks for 简体中文.
const ownName = (tag) => String(CATALOGUES[tag]['locale.name']);

/** Fill `select` and keep it in step with the locale. */
export function languageField(select) {
  if (!select) return;
  const fill = () => {
    const auto = new Option(t('settings.languageAuto', { name: t('locale.name') }), '');
    select.replaceChildren(auto, ...LOCALES.map((tag) => {
      const option = new Option(ownName(tag), tag);
      option.lang = tag;
      return option;
    }));
    select.value = chosenLocale() ?? '';
  };
  fill();
  select.addEventListener('change', () => chooseLocale(select.value || null));
  onLocaleChange(fill);
}
