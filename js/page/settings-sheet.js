// @ts-check
// The Settings sheet (a modal <dialog>: a bottom sheet on phones, page.css) and the
// keyboard shortcuts dialog: opening and closing them, "Test connection", and the model
// list from the server, fetched when the sheet opens and after a test, with the key sent
// as the API the chat speaks wants it.

import { testConnection } from './connection.js';
import { t } from './i18n.js';

export class SettingsSheet {
  /** `els`: {dialog, form, open, test, result, models (the <datalist>), help, openHelp};
   * `settings`: the page's Settings. */
  constructor(els, settings) {
    this.els = els;
    this.settings = settings;
    this.listed = ''; // the base URL, API and key the model list was fetched for
    els.open.addEventListener('click', () => this.show());
    els.form?.addEventListener('submit', (e) => {
      e.preventDefault();
      if (this.settings.checkBaseUrl(true)) els.dialog.close();
    });
    els.test.addEventListener('click', () => this.test());
    els.openHelp?.addEventListener('click', () => showModal(els.help));
    for (const dialog of [els.dialog, els.help]) {
      if (!dialog) continue;
      for (const close of dialog.querySelectorAll('.close')) close.addEventListener('click', () => dialog.close());
      // A tap on the backdrop (outside the dialog's box) closes it, as sheets do.
      dialog.addEventListener('click', (e) => {
        if (e.target !== dialog) return;
        const r = dialog.getBoundingClientRect();
        if (e.clientX < r.left || e.clientX > r.right || e.clientY < r.top || e.clientY > r.bottom) dialog.close();
      });
    }
    // A test's outcome holds for the endpoint, key and API it was made with.
    for (const change of ['connection', 'api']) {
      settings.addEventListener(change, () => {
        els.result.textContent = '';
        delete els.result.dataset.ok;
      });
    }
  }

  get open() {
    return this.els.dialog.open;
  }

  show() {
    showModal(this.els.dialog);
    this.listModels();
  }

  showHelp() {
    showModal(this.els.help);
  }

  /** "Test connection": `GET {base}/models` with the key; the outcome said in the sheet. */
  async test() {
    const { test, result } = this.els;
    if (!this.settings.checkBaseUrl(true)) {
      this.settings.fields.baseUrl.focus();
      return;
    }
    test.disabled = true;
    result.dataset.ok = '';
    result.textContent = t('settings.testing');
    try {
      const outcome = await testConnection(this.settings.baseUrl, this.settings.apiKey, this.settings.dialect);
      result.dataset.ok = String(outcome.ok);
      result.textContent = outcome.text;
      if (outcome.ok) this.fill(outcome.models);
    } finally {
      test.disabled = false;
    }
  }

  // The server's models as the model field's suggestions (free text stays allowed).
  async listModels() {
    const { baseUrl, apiKey, dialect } = this.settings;
    const key = `${baseUrl} ${dialect} ${apiKey}`;
    if (key === this.listed) return;
    this.listed = key;
    const outcome = await testConnection(baseUrl, apiKey, dialect);
    if (outcome.ok) this.fill(outcome.models);
    else this.listed = '';
  }

  fill(models) {
    const options = models.map((id) => {
      const option = document.createElement('option');
      option.value = id;
      return option;
    });
    this.els.models.replaceChildren(...options);
    this.els.models.dataset.count = String(options.length);
  }
}

function showModal(dialog) {
  if (dialog && !dialog.open) dialog.showModal();
}
