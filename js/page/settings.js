// The Settings form and what it keeps: base URL, model, system prompt and compression in
// localStorage; the API key in sessionStorage only (it dies with the tab, is never
// written to localStorage, and is never logged). `forRequest()` gives the `settings` of
// a protocol request (bridge/PROTOCOL.md).
//
// Advanced, with no UI: `headers` in the stored settings adds request headers (set by an
// embedding host, or by tests to steer the built-in model: {"x-firsttoken-sim": "tps=20"}),
// and `stall_notice_s` / `stall_timeout_s` (seconds: when a silent server is shown as
// such, and when the request gives up; the core's defaults are 10 and 60).

const KEY = 'firsttoken.settings.v1';
const API_KEY = 'firsttoken.api_key';

export class Settings extends EventTarget {
  /** `fields`: the form's {baseUrl, model, system, compress, apiKey} elements. Emits
   * `system` when the system prompt changed (it is counted with the conversation). */
  constructor(fields, { local = localStorage, session = sessionStorage } = {}) {
    super();
    this.fields = fields;
    this.local = local;
    let stored = {};
    try {
      stored = JSON.parse(local.getItem(KEY)) ?? {};
    } catch { /* unreadable: defaults */ }
    this.stored = stored && typeof stored === 'object' ? stored : {};

    for (const [el, name] of [[fields.baseUrl, 'base_url'], [fields.model, 'model']]) {
      el.value = this.stored[name] || '';
      el.addEventListener('change', () => this.keep(name, el.value.trim()));
    }
    fields.system.value = typeof this.stored.system === 'string' ? this.stored.system : '';
    fields.system.addEventListener('change', () => {
      this.keep('system', fields.system.value);
      this.dispatchEvent(new Event('system'));
    });
    fields.compress.checked = this.stored.compress !== 'off';
    fields.compress.addEventListener('change', () => this.keep('compress', fields.compress.checked ? 'on' : 'off'));
    fields.apiKey.value = session.getItem(API_KEY) || '';
    fields.apiKey.addEventListener('change', () => session.setItem(API_KEY, fields.apiKey.value));
  }

  /** The system prompt, or '' for none. */
  get system() {
    return typeof this.stored.system === 'string' ? this.stored.system.trim() : '';
  }

  /** The `settings` of a `chat.send` or `tokens.count` request. */
  forRequest() {
    const { fields, stored } = this;
    const s = {
      // Absolute, as the protocol asks: the core's fetch has no page to resolve against.
      base_url: new URL(fields.baseUrl.value.trim() || '/v1', document.baseURI).href.replace(/\/$/, ''),
      model: fields.model.value.trim() || 'firsttoken-sim',
    };
    if (fields.apiKey.value) s.api_key = fields.apiKey.value;
    s.compress = fields.compress.checked ? (stored.compress_level || 'balanced') : 'off';
    if (stored.headers && typeof stored.headers === 'object') s.headers = stored.headers;
    for (const name of ['stall_notice_s', 'stall_timeout_s']) {
      if (typeof stored[name] === 'number' && stored[name] > 0) s[name] = stored[name];
    }
    return s;
  }

  keep(name, value) {
    this.stored[name] = value;
    try {
      this.local.setItem(KEY, JSON.stringify(this.stored));
    } catch { /* storage full: the setting holds for this visit */ }
  }
}
