// The Settings form and what it keeps: base URL, model, API, system prompt and
// compression level in localStorage; the API key in sessionStorage only (it dies with
// the tab, is never written to localStorage, and is never logged). `forRequest()` gives
// the `settings` of a protocol request (bridge/PROTOCOL.md). Each field applies when it
// changes; the sheet that holds them is settings-sheet.js.
//
// The Thinking level is not here: it is the conversation's (thinking-control.js);
// whether reasoning comes summarized is (`reasoning_summary`, a switch in the sheet).
//
// Advanced, with no UI: `headers` in the stored settings adds request headers (set by an
// embedding host, or by tests to steer the built-in model: {"x-firsttoken-sim": "tps=20"}),
// `stall_notice_s` / `stall_timeout_s` (seconds: when a silent server is shown as
// such, and when the request gives up; the core's defaults are 10 and 60), and
// `max_tokens` (the output limit; the core's default is its reply reserve).

import { APIS, MODEL_APIS } from '../link/protocol.js';
import { webStorage } from './storage.js';
import { onLocaleChange, t } from './i18n.js';

const KEY = 'firsttoken.settings.v1';
const API_KEY = 'firsttoken.api_key';
export const DEFAULT_MODEL = 'firsttoken-sim';

/** The compression levels of firsttoken.compress (LEVELS there): the catalogue key of
 * each one's line (i18n.js). */
export const COMPRESSION = {
  off: 'settings.compressOffHint',
  safe: 'settings.compressSafeHint',
  balanced: 'settings.compressBalancedHint',
  max: 'settings.compressMaxHint',
};

/** The API dialects (js/link/protocol.js `APIS`), as the Settings sheet names them. */
export const API_NAMES = {
  chat_completions: 'Chat Completions',
  responses: 'Responses',
  anthropic_messages: 'Anthropic Messages',
};

// The model table's rules (generated from firsttoken.tokens.models.API_RULES), compiled
// once: anchored at both ends, as Python's `fullmatch` reads them.
const MODEL_RULES = MODEL_APIS.map(([pattern, api]) => [new RegExp(`^(?:${pattern})$`, 'su'), api]);

/** The API dialect a request with `api` and `model` speaks, as the core decides it
 * (`firsttoken.stream.dialects.api_for`): `api` when it names one; else the one the
 * model is served on when only one serves it (a name with a '/' is a router's: none);
 * else Chat Completions. tests/unit/test_protocol_js.py checks both sides agree. */
export function apiFor(api, model) {
  if (APIS.includes(api)) return api;
  const name = String(model ?? '').trim().toLowerCase();
  if (!name.includes('/')) {
    for (const [pattern, served] of MODEL_RULES) if (pattern.test(name)) return served;
  }
  return 'chat_completions';
}

/** `text` as a base URL: `{url}` (absolute, no trailing slash; '' for this gateway) or
 * `{error}`. A scheme is required: "api.example.com/v1" would otherwise be taken as a
 * path on this page's server. */
export function parseBaseUrl(text) {
  const value = text.trim();
  if (!value) return { url: '' };
  let url;
  try {
    url = new URL(value);
  } catch {
    return { error: t('settings.schemeMissing') };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { error: t('settings.httpOnly') };
  }
  return { url: url.href.replace(/\/$/, '') };
}

export class Settings extends EventTarget {
  /** `fields`: the form's {baseUrl, baseUrlError, model, api, apiHint, system, compress,
   * compressHint, apiKey} elements (baseUrlError, api, apiHint and compressHint
   * optional). Emits `system` when the system prompt changed (it is counted with the
   * conversation), `model` when the model did, `api` when the API did, `compress` when
   * the level did, and `connection` when the base URL or key did. */
  constructor(fields, { local = webStorage('localStorage'), session = webStorage('sessionStorage') } = {}) {
    super();
    this.fields = fields;
    this.local = local;
    let stored = {};
    try {
      stored = JSON.parse(local.getItem(KEY)) ?? {};
    } catch { /* unreadable: defaults */ }
    this.stored = stored && typeof stored === 'object' ? stored : {};

    fields.baseUrl.value = typeof this.stored.base_url === 'string' ? this.stored.base_url : '';
    fields.baseUrl.addEventListener('change', () => this.checkBaseUrl(true));
    fields.baseUrl.addEventListener('input', () => {
      if (fields.baseUrl.getAttribute('aria-invalid') === 'true') this.checkBaseUrl(false);
    });
    fields.model.value = typeof this.stored.model === 'string' ? this.stored.model : '';
    fields.model.addEventListener('change', () => {
      this.keep('model', fields.model.value.trim());
      this.explainApi();
      this.dispatchEvent(new Event('model'));
    });
    if (fields.api) {
      fields.api.value = this.api;
      fields.api.addEventListener('change', () => {
        // Automatic is kept as no value (JSON.stringify leaves an undefined field out).
        this.keep('api', APIS.includes(fields.api.value) ? fields.api.value : undefined);
        this.explainApi();
        this.dispatchEvent(new Event('api'));
      });
      this.explainApi();
    }
    fields.system.value = typeof this.stored.system === 'string' ? this.stored.system : '';
    fields.system.addEventListener('change', () => {
      this.keep('system', fields.system.value);
      this.dispatchEvent(new Event('system'));
    });
    fields.compress.value = this.level;
    this.hint();
    // Another language: the hints, which are worded here, again (i18n.js).
    onLocaleChange(() => {
      this.explainApi();
      this.hint();
    });
    fields.compress.addEventListener('change', () => {
      this.keep('compress', fields.compress.value);
      this.hint();
      this.dispatchEvent(new Event('compress'));
    });
    this.bindSwitches(fields);
    fields.apiKey.value = session.getItem(API_KEY) || '';
    fields.apiKey.addEventListener('change', () => {
      try {
        session.setItem(API_KEY, fields.apiKey.value);
      } catch { /* no session storage: the key holds for this page */ }
      this.dispatchEvent(new Event('connection'));
    });
  }

  /** The switches that are on by default and kept only when off (`name: false`), each
   * read back through its getter (the field's name). */
  bindSwitches(fields) {
    // Reasoning summaries: what lets a reasoning model show its thinking at once over
    // Responses and the newest Claude models at all, for 0.5-2 s more before the first
    // answer token (issue 48); a person who would rather have the answer sooner turns
    // them off. Haptics (haptics.js) and the screen kept on while an answer streams
    // (awake.js) are never sent with a request (forRequest names its fields); turning
    // the screen's switch says `awake`.
    for (const [field, name, event] of [['reasoningSummary', 'reasoning_summary', null], ['haptics', 'haptics', null],
      ['awake', 'awake', 'awake']]) {
      const box = fields[field];
      if (!box) continue;
      box.checked = this[field];
      box.addEventListener('change', () => {
        this.keep(name, box.checked ? undefined : false);
        if (event) this.dispatchEvent(new Event(event));
      });
    }
  }

  /** The compression level kept ('off', 'safe', 'balanced' or 'max'). Older versions
   * kept `compress: 'on' | 'off'` and `compress_level`. */
  get level() {
    const { compress, compress_level: old } = this.stored;
    if (typeof compress === 'string' && Object.hasOwn(COMPRESSION, compress)) return compress;
    return typeof old === 'string' && Object.hasOwn(COMPRESSION, old) ? old : 'balanced';
  }

  // What Automatic picks for the model now, and the rule in one line.
  explainApi() {
    const { apiHint } = this.fields;
    if (!apiHint) return;
    apiHint.textContent = this.api
      ? t('settings.apiFixed')
      : t('settings.apiNow', { api: API_NAMES[this.dialect], model: this.model });
  }

  hint() {
    if (this.fields.compressHint) this.fields.compressHint.textContent = Object.hasOwn(COMPRESSION, this.fields.compress.value) ? t(COMPRESSION[this.fields.compress.value]) : '';
  }

  /** Validate the base URL field; keep it if valid (`keep`), else say what is wrong. */
  checkBaseUrl(keep) {
    const { baseUrl, baseUrlError } = this.fields;
    const { url, error } = parseBaseUrl(baseUrl.value);
    baseUrl.setAttribute('aria-invalid', error ? 'true' : 'false');
    if (baseUrlError) baseUrlError.textContent = error || '';
    if (!error && keep) {
      this.keep('base_url', url);
      this.dispatchEvent(new Event('connection'));
    }
    return !error;
  }

  /** The system prompt, or '' for none. */
  get system() {
    return typeof this.stored.system === 'string' ? this.stored.system.trim() : '';
  }

  /** Where requests go: absolute, as the protocol asks (the core's fetch has no page to
   * resolve against). What the field says if it is valid, else what was kept. */
  get baseUrl() {
    const typed = parseBaseUrl(this.fields.baseUrl.value);
    const kept = parseBaseUrl(typeof this.stored.base_url === 'string' ? this.stored.base_url : '');
    const url = typed.url ?? kept.url ?? '';
    return url || new URL('/v1', document.baseURI).href;
  }

  /** The model requests name. */
  get model() {
    return this.fields.model.value.trim() || DEFAULT_MODEL;
  }

  /** The API chosen: one of APIS, or '' for Automatic (the model decides: `apiFor`).
   * A stored value this version does not know counts as Automatic. */
  get api() {
    return APIS.includes(this.stored.api) ? this.stored.api : '';
  }

  /** The API the next request speaks: the one chosen, else the model's. */
  get dialect() {
    return apiFor(this.api, this.model);
  }

  /** Whether reasoning models are asked for a summary of their thinking. */
  get reasoningSummary() {
    return this.stored.reasoning_summary !== false;
  }

  /** Whether the person wants haptics (the Settings switch; on by default). */
  get haptics() {
    return this.stored.haptics !== false;
  }

  /** Whether the screen stays on while an answer streams (the Settings switch; on by default). */
  get awake() {
    return this.stored.awake !== false;
  }

  /** Whether the person wants a notification when a reply is ready (notify.js): true
   * (they allowed it), false (they declined or turned it off), null (never said). */
  get notify() {
    return typeof this.stored.notify === 'boolean' ? this.stored.notify : null;
  }

  /** Whether the offer to notify (notify.js) was shown already: it is shown once. */
  get notifyOffered() {
    return this.stored.notify_offered === true;
  }

  /** The API key, or '' for none. */
  get apiKey() {
    return this.fields.apiKey.value;
  }

  /** The `settings` of a `chat.send` or `tokens.count` request. */
  forRequest() {
    const { stored } = this;
    const s = { base_url: this.baseUrl, model: this.model };
    if (this.api) s.api = this.api;
    if (this.apiKey) s.api_key = this.apiKey;
    s.compress = this.level;
    if (!this.reasoningSummary) s.reasoning_summary = false;
    if (stored.headers && typeof stored.headers === 'object') s.headers = stored.headers;
    for (const name of ['stall_notice_s', 'stall_timeout_s']) {
      if (typeof stored[name] === 'number' && stored[name] > 0) s[name] = stored[name];
    }
    if (Number.isSafeInteger(stored.max_tokens) && stored.max_tokens > 0) s.max_tokens = stored.max_tokens;
    return s;
  }

  keep(name, value) {
    this.stored[name] = value;
    try {
      this.local.setItem(KEY, JSON.stringify(this.stored));
    } catch { /* storage full: the setting holds for this visit */ }
  }
}
