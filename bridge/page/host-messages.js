// @ts-check
// What a host may send the page, and the check every host message passes before the
// page acts on it (bridge/PROTOCOL.md, "Hosts"). Pure: no window, no I/O.
//
// A host message is untrusted input: it may come from a native app with a bug, from a
// page that framed us, or from text an attacker got into either. So it is refused
// unless it is exactly what the protocol allows, and nothing in it is ever evaluated:
// it is parsed as JSON data (never `eval`, `Function` or a script element), its fields
// are copied into a fresh object by name, and keys that could reach an object's
// prototype are refused outright rather than trusted to be harmless.

import { ACCEPTED_VERSIONS, APIS, MAX_MESSAGE_BYTES, PROTOCOL_VERSION, REQUESTS as CORE_REQUESTS } from '../../js/link/protocol.js';

/** Longest request id a host may use (it is echoed in every event about the request). */
export const MAX_ID_LENGTH = 256;

// `__proto__` in JSON.parse's output is an own data property, harmless by itself; but a
// later `Object.assign`, a merge or a `for…in` copy would turn it into a prototype
// change. Refusing these keys anywhere in a message keeps every later step simple.
const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

const COMPRESS_LEVELS = new Set(['off', 'safe', 'balanced', 'max']);

/** The page's own requests, which no host may send: flow control between the page and
 * its worker (PROTOCOL.md, "What the page refuses"). */
const PAGE_ONLY = new Set(['delta.ack']);

/**
 * Request types a host may send, and the checks for each beyond the envelope: the
 * core's requests (js/link/protocol.js) but the page's own, with only the fields a host
 * gives: `messages` as the core needs them, and `settings` optional, since the page's
 * own settings fill them in (a host's `flow` or `resume` is not taken); and
 * `settings.set`, `connection.warm` and `composer.attach`, which the page answers itself.
 */
const REQUESTS = {
  'settings.set': { id: 'optional', settings: 'required' },
  'connection.warm': { id: 'optional' },
  'composer.attach': { id: 'optional', image: 'required' },
  // Dictation by the host's recogniser (js/page/dictation.js) and a share into the
  // composer (js/page/share.js): bridge/PROTOCOL.md, "Dictation" and "Share".
  'composer.dictation': { id: 'optional', dictation: 'required' },
  'composer.share': { id: 'optional', share: 'required' },
};
for (const [type, { id, fields }] of Object.entries(CORE_REQUESTS)) {
  if (PAGE_ONLY.has(type)) continue;
  const spec = { id };
  if (fields.messages) spec.messages = fields.messages;
  if (fields.settings) spec.settings = 'optional';
  REQUESTS[type] = spec;
}
export const HOST_REQUEST_TYPES = Object.freeze(Object.keys(REQUESTS));

/** A host message the page refuses; `id` is the request's id when one could be read. */
export class InvalidHostMessage extends Error {
  constructor(message, id = null) {
    super(message);
    this.name = 'InvalidHostMessage';
    this.id = id;
  }
}

function utf8Length(text) {
  return new TextEncoder().encode(text).length;
}

function refuseUnsafeKeys(key, value) {
  if (UNSAFE_KEYS.has(key)) throw new InvalidHostMessage(`the key '${key}' is not allowed`);
  return value;
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Check one host message (JSON text) and return a fresh request object holding only
 * the fields the protocol defines for its type. Throws `InvalidHostMessage`.
 */
export function parseHostMessage(data) {
  return parseHostEnvelope(data).request;
}

/**
 * `parseHostMessage`, and the protocol version the message was sent in (its `v`; absent:
 * 1, as version 1 said), which the page answers that host in (PROTOCOL.md, "Versions").
 */
export function parseHostEnvelope(data) {
  if (typeof data !== 'string') throw new InvalidHostMessage('a message must be JSON text (a string)');
  // Length in UTF-16 units is at most the UTF-8 length; the exact count is needed only
  // near the bound.
  if (data.length > MAX_MESSAGE_BYTES || (data.length * 3 > MAX_MESSAGE_BYTES && utf8Length(data) > MAX_MESSAGE_BYTES)) {
    throw new InvalidHostMessage(`the message is larger than ${MAX_MESSAGE_BYTES} bytes`);
  }
  let msg;
  try {
    msg = JSON.parse(data, refuseUnsafeKeys);
  } catch (error) {
    if (error instanceof InvalidHostMessage) throw error;
    throw new InvalidHostMessage('the message is not valid JSON');
  }
  if (!isObject(msg)) throw new InvalidHostMessage('a message must be a JSON object');
  const id = typeof msg.id === 'string' && msg.id.length <= MAX_ID_LENGTH ? msg.id : null;
  const fail = (message) => { throw new InvalidHostMessage(message, id); };
  if ('v' in msg && !ACCEPTED_VERSIONS.includes(msg.v)) {
    fail(`unsupported protocol version; this page speaks ${PROTOCOL_VERSION} (and ${ACCEPTED_VERSIONS[0]})`);
  }
  if (typeof msg.type !== 'string') fail("the message has no string 'type'");
  const spec = Object.hasOwn(REQUESTS, msg.type) ? REQUESTS[msg.type] : null;
  if (!spec) fail(`unknown message type '${msg.type.slice(0, 60)}'`);
  if ('id' in msg && (typeof msg.id !== 'string' || !msg.id || msg.id.length > MAX_ID_LENGTH)) {
    fail(`'id' must be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
  if (spec.id === 'required' && id === null) fail(`'${msg.type}' needs an 'id'`);
  const request = { type: msg.type };
  if (id !== null) request.id = id;
  if (spec.messages) request.messages = checkMessages(msg.messages, fail);
  if (spec.image) request.image = checkImage(msg.image, fail);
  if (spec.dictation) Object.assign(request, checkDictation(msg, fail));
  if (spec.share) Object.assign(request, checkShare(msg, fail));
  // What the host can do for the page (`hello {capabilities}`): only `dictation` so far.
  if (msg.type === 'hello' && msg.capabilities !== undefined) request.capabilities = checkCapabilities(msg.capabilities, fail);
  if (spec.settings === 'required' || (spec.settings === 'optional' && msg.settings !== undefined)) {
    request.settings = checkSettings(msg.settings, fail);
  }
  return { request, version: 'v' in msg ? msg.v : 1 };
}

/** Longest file name a host may give an image (it is shown as the thumbnail's label). */
export const MAX_NAME_LENGTH = 256;

// `composer.attach`'s image: the file's bytes as base64 (RFC 4648 §4, padded or not),
// its media type, and a name to show. What the bytes are is the shrink worker's to
// find out from their header (js/images/header.js), as for a file the user picked: the
// type only refuses what is plainly not an image.
function checkImage(image, fail) {
  if (!isObject(image)) fail("'image' must be an object: {data, type, name?}");
  const { data, type, name } = image;
  if (typeof data !== 'string' || !data || data.length % 4 === 1 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) {
    fail('image.data must be the image file in base64');
  }
  if (typeof type !== 'string' || !/^image\/[a-z0-9.+-]+$/i.test(type)) fail("image.type must be an image media type ('image/jpeg')");
  if (name !== undefined && (typeof name !== 'string' || name.length > MAX_NAME_LENGTH)) {
    fail(`image.name must be a string of at most ${MAX_NAME_LENGTH} characters`);
  }
  return { data, type: type.toLowerCase(), name: typeof name === 'string' ? name : '' };
}

/** What a host may say it can do in its `hello`; unknown names are ignored (forward
 * compatible), a known one must be a boolean. */
const CAPABILITIES = ['dictation'];

function checkCapabilities(capabilities, fail) {
  if (!isObject(capabilities)) fail("'capabilities' must be an object of booleans");
  const out = {};
  for (const name of CAPABILITIES) {
    if (!(name in capabilities)) continue;
    if (typeof capabilities[name] !== 'boolean') fail(`capabilities.${name} must be a boolean`);
    out[name] = capabilities[name];
  }
  return out;
}

/** Longest text one `composer.dictation` may carry: one utterance's transcript, which
 * SFSpeechRecognizer and Android's SpeechRecognizer give whole each time (a minute of
 * speech is ~1,000 characters; this is far past any). */
export const MAX_DICTATION_CHARS = 16384;
/** How a host's recogniser may fail: `denied` (the person refused the microphone or
 * speech recognition), `unavailable` (no recogniser for the locale, offline), `failed`. */
export const DICTATION_ERRORS = Object.freeze(['denied', 'unavailable', 'failed']);

// `composer.dictation {text, final, listening?, error?}`: the utterance so far (`final`
// false: provisional, replaced by the next) or its final text; `listening: false` when
// the recogniser stopped; `error` (one of DICTATION_ERRORS) stops it too.
function checkDictation(msg, fail) {
  const out = {};
  if (msg.error !== undefined) {
    if (!DICTATION_ERRORS.includes(msg.error)) fail(`'error' must be one of ${DICTATION_ERRORS.join(', ')}`);
    out.error = msg.error;
  }
  if (msg.text !== undefined || out.error === undefined) {
    if (typeof msg.text !== 'string' || msg.text.length > MAX_DICTATION_CHARS) fail(`'text' must be a string of at most ${MAX_DICTATION_CHARS} characters`);
    out.text = msg.text;
  }
  for (const name of ['final', 'listening']) {
    if (msg[name] !== undefined && typeof msg[name] !== 'boolean') fail(`'${name}' must be a boolean`);
  }
  out.final = msg.final === true;
  out.listening = out.error === undefined && msg.listening !== false;
  return out;
}

/** Longest text a share may put in the composer. The whole message is bounded already
 * (MAX_MESSAGE_BYTES, 8 MB: a 50 MB share never gets parsed); the text is bounded again
 * because it becomes a prompt: the gateway takes request bodies of 4 MiB by default and
 * the largest context windows hold about a million tokens, so past this a prompt cannot
 * be sent anyway, and refusing it now (the host keeps it) beats a composer that cannot
 * send. An article or a chat log shared whole fits many times over. */
export const MAX_SHARE_TEXT_CHARS = 1_000_000;
/** Longest URL a share may carry (browsers and servers commonly stop near 8 KiB). */
export const MAX_SHARE_URL_CHARS = 8192;
/** Most images one share may carry: as many as one message takes (js/page/attachments.js). */
export const MAX_SHARE_IMAGES = 20;
/** Longest conversation id (ours are UUIDs). */
const MAX_CONVERSATION_ID = 128;

/**
 * A shared URL as the composer will hold it: http(s) only, so a `javascript:`, `data:`
 * or `file:` URL never lands where a person might follow or send it; null when it is not
 * one. Pure: also used for a Web Share Target's `url` (js/page/share.js).
 */
export function sharedUrl(text) {
  if (typeof text !== 'string' || text.length > MAX_SHARE_URL_CHARS) return null;
  let url;
  try {
    url = new URL(text.trim());
  } catch {
    return null;
  }
  return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
}

// `composer.share {text?, url?, images?, conversation?}`: at least one of text, url and
// images. The text is plain text (the composer is a textarea: HTML in it stays text).
function checkShare(msg, fail) {
  const out = {};
  if (msg.text !== undefined) {
    if (typeof msg.text !== 'string' || msg.text.length > MAX_SHARE_TEXT_CHARS) fail(`'text' must be a string of at most ${MAX_SHARE_TEXT_CHARS} characters`);
    if (msg.text) out.text = msg.text;
  }
  if (msg.url !== undefined) {
    const url = sharedUrl(msg.url);
    if (url === null) fail(`'url' must be an http(s) URL of at most ${MAX_SHARE_URL_CHARS} characters`);
    out.url = url;
  }
  if (msg.images !== undefined) {
    if (!Array.isArray(msg.images) || msg.images.length > MAX_SHARE_IMAGES) fail(`'images' must be an array of at most ${MAX_SHARE_IMAGES} images`);
    out.images = msg.images.map((image) => checkImage(image, fail));
  }
  if (msg.conversation !== undefined) {
    const c = msg.conversation;
    if (typeof c !== 'string' || !c || c.length > MAX_CONVERSATION_ID) fail("'conversation' must be \"new\" or a conversation's id");
    out.conversation = c;
  }
  if (!out.text && !out.url && !out.images?.length) fail('a share needs text, a url or images');
  return out;
}

function checkMessages(messages, fail) {
  if (!Array.isArray(messages) || !messages.length) fail("'messages' must be a non-empty array");
  return messages.map((m, i) => {
    if (!isObject(m) || typeof m.role !== 'string') fail(`messages[${i}] needs a string 'role'`);
    const content = m.content;
    if (content !== null && content !== undefined && typeof content !== 'string' && !Array.isArray(content)) {
      fail(`messages[${i}].content must be a string, an array or null`);
    }
    const copy = { role: m.role, content: content ?? null };
    if (typeof m.name === 'string') copy.name = m.name;
    return copy;
  });
}

/**
 * Host settings: every field optional; `null` clears a field set earlier. Unknown
 * fields are ignored (forward compatible), a known one of the wrong type is refused.
 */
const REASONING_LEVELS = new Set(['auto', 'off', 'low', 'medium', 'high']);

function checkSettings(settings, fail) {
  if (!isObject(settings)) fail("'settings' must be an object");
  const out = {};
  for (const name of ['base_url', 'model', 'api', 'system', 'api_key', 'compress']) {
    if (!(name in settings)) continue;
    const value = settings[name];
    if (value !== null && typeof value !== 'string') fail(`settings.${name} must be a string or null`);
    out[name] = value;
  }
  if (typeof out.base_url === 'string') out.base_url = checkBaseUrl(out.base_url, fail);
  if (typeof out.api === 'string' && !APIS.includes(out.api)) fail(`settings.api must be one of ${APIS.join(', ')}`);
  if (typeof out.compress === 'string' && !COMPRESS_LEVELS.has(out.compress)) {
    fail(`settings.compress must be one of ${[...COMPRESS_LEVELS].join(', ')}`);
  }
  // The Thinking level (the composer's control: js/page/thinking-control.js) and
  // whether reasoning comes summarized: bridge/PROTOCOL.md, "Settings".
  if ('reasoning' in settings) {
    const level = settings.reasoning;
    if (level !== null && !REASONING_LEVELS.has(level)) fail(`settings.reasoning must be one of ${[...REASONING_LEVELS].join(', ')}, or null`);
    out.reasoning = level;
  }
  // The page's language (a BCP 47 tag such as `zh-CN`), for a host whose app has its
  // own language setting: the page's words follow it unless the person chose one in
  // Settings (js/page/i18n.js; docs/page.md, "Languages"). Not sent to the model.
  if ('locale' in settings) out.locale = checkLocale(settings.locale, fail);
  // The page's haptics (js/page/haptics.js) and screen kept on while answering
  // (js/page/awake.js): a host may turn either off (its own switch).
  for (const name of ['haptics', 'awake']) {
    if (!(name in settings)) continue;
    const on = settings[name];
    if (on !== null && typeof on !== 'boolean') fail(`settings.${name} must be a boolean or null`);
    out[name] = on;
  }
  if ('reasoning_summary' in settings) {
    const on = settings.reasoning_summary;
    if (on !== null && typeof on !== 'boolean') fail('settings.reasoning_summary must be a boolean or null');
    out.reasoning_summary = on;
  }
  if ('max_tokens' in settings) {
    const n = settings.max_tokens;
    if (n !== null && !(Number.isInteger(n) && n > 0)) fail('settings.max_tokens must be a positive integer or null');
    out.max_tokens = n;
  }
  for (const name of ['stall_notice_s', 'stall_timeout_s']) {
    if (!(name in settings)) continue;
    const n = settings[name];
    if (n !== null && !(typeof n === 'number' && Number.isFinite(n) && n > 0)) {
      fail(`settings.${name} must be a positive number of seconds or null`);
    }
    out[name] = n;
  }
  if ('headers' in settings) out.headers = checkHeaders(settings.headers, fail);
  return out;
}

/** Only http(s): a `javascript:` or `data:` URL is refused, never handed to fetch. */
function checkBaseUrl(value, fail) {
  let url;
  try {
    url = new URL(value, globalThis.document?.baseURI ?? 'http://localhost/');
  } catch {
    fail('settings.base_url is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') fail('settings.base_url must be an http(s) URL');
  return url.href.replace(/\/$/, '');
}

/** A BCP 47 tag in its canonical form, or null (cleared). */
function checkLocale(tag, fail) {
  if (tag === null) return null;
  if (typeof tag !== 'string') fail('settings.locale must be a BCP 47 language tag or null');
  try {
    return Intl.getCanonicalLocales(tag)[0];
  } catch {
    return fail('settings.locale is not a BCP 47 language tag');
  }
}

/** Headers fetch would accept, copied, or null (cleared). */
function checkHeaders(headers, fail) {
  if (headers === null) return null;
  if (!isObject(headers)) fail('settings.headers must be an object of strings');
  for (const [k, v] of Object.entries(headers)) {
    // The names and values fetch would accept (RFC 9110 token; no CR, LF or NUL).
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k) || typeof v !== 'string' || /[\r\n\0]/.test(v)) {
      fail(`settings.headers['${k.slice(0, 60)}'] is not a valid header`);
    }
  }
  return { ...headers };
}
