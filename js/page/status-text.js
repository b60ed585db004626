// @ts-check
// What the page says about a reply's progress and failures, and about the quota: the
// words only, for messages.js to show, in the reader's language (i18n.js). Each message
// is one whole template: a server's own words go in as a value, never a sentence made
// of pieces.

import { formatNumber, t } from './i18n.js';

/** `s` seconds, as the locale writes them: "2.5 s", "42 s"; "2.5 秒". */
export function seconds(s) {
  const n = s < 10 ? formatNumber(s, { minimumFractionDigits: 1, maximumFractionDigits: 1 }) : formatNumber(Math.round(s));
  return t('thinking.seconds', { s: n });
}

/** A `chat.error`'s (or `error`'s) `error` object, for people: what happened and what to
 * do about it. `baseUrl`: where the request went (a network error names it). */
export function describeError(error, { baseUrl = '' } = {}) {
  if (!error) return t('error.generic');
  switch (error.code) {
    case 'aborted': return t('error.stopped');
    case 'network': return networkText(baseUrl);
    case 'timeout': return t('error.timeout', { time: seconds(error.timeout_s ?? 0) });
    case 'http_status': return statusText(error.status, error.message);
    case 'upstream_error': return t('error.upstream', { message: error.message });
    case 'truncated': return t('error.truncated');
    // (With no text yet the prompt waits in the outbox instead, and this is never shown.)
    case 'offline': return t('error.offline');
    case 'stream_gone': return t('error.streamGone');
    default: return error.message || error.code;
  }
}

/** A request that never got an answer from `baseUrl`. */
export function networkText(baseUrl) {
  return baseUrl ? t('error.networkTo', { url: baseUrl }) : t('error.network');
}

/** A non-2xx answer, with what to do for the ones a person can fix. */
export function statusText(status, message = '') {
  const code = String(status);
  const said = message ? `${message}${/[.!?。！？]$/.test(message) ? '' : t('error.fullStop')}` : '';
  if (status === 401 || status === 403) {
    return said ? t('error.statusKeySaid', { status: code, message: said }) : t('error.statusKey', { status: code });
  }
  if (status === 404) return said ? t('error.status404Said', { message: said }) : t('error.status404');
  return said ? t('error.statusSaid', { status: code, message: said }) : t('error.status', { status: code });
}

/** A `chat.stall`: no text for `waiting_s` seconds. `connected`: bytes (a keep-alive)
 * came within that silence, so the server is there and its model is thinking; without
 * it nothing at all came, and the connection may be stalled. */
export function stallText(msg) {
  const s = Math.round(msg.waiting_s);
  if (msg.connected) return t('stall.connected', { s });
  return t('stall.silent', { s });
}

/** A `chat.reconnecting`: the connection was lost; the answer goes on on the server. */
export function reconnectingText(msg) {
  if (msg.reason === 'offline') return t('reconnect.offline');
  return msg.wait_s > 0 ? t('reconnect.in', { time: seconds(msg.wait_s) }) : t('reconnect.now');
}

export function waitText(msg) {
  return t('wait.rateLimit', { time: seconds(msg.wait_s) });
}

export function retryText(msg) {
  const values = { status: String(msg.status), time: seconds(msg.wait_s), attempt: msg.attempt + 1 };
  return msg.status ? t('retry.status', values) : t('retry.network', values);
}

/** Remaining quota as the server last reported it (x-ratelimit-* headers), or null. */
export function quotaText(quota) {
  if (!quota) return null;
  const fmt = (b) => (b && b.limit != null && b.remaining != null ? `${b.remaining}/${b.limit}` : null);
  const parts = [];
  if (fmt(quota.requests)) parts.push(t('quota.requests', { n: fmt(quota.requests) }));
  if (fmt(quota.tokens)) parts.push(t('quota.tokens', { n: fmt(quota.tokens) }));
  if (quota.wait_s > 0) parts.push(t('quota.wait', { time: seconds(quota.wait_s) }));
  return parts.join(' · ');
}

/** What `chat.prepared` says Python did to the prompt: `{saved}` (compression saving, in
 * `saved_unit`) and `{fit}` (what was left out to fit the model's budget), each or null. */
export function preparedText(msg) {
  const saved = msg.saved?.[msg.saved.length - 1];
  const dropped = msg.dropped?.length || 0;
  const cut = msg.truncated?.length || 0;
  const images = msg.images_dropped || 0;
  const parts = [];
  if (dropped) parts.push(t('prepared.dropped', { count: dropped }));
  if (cut) parts.push(t('prepared.shortened', { count: cut }));
  if (images) parts.push(t('prepared.images', { count: images }));
  const unit = msg.saved_unit === 'tokens' ? 'prepared.savedTokens' : 'prepared.savedChars';
  return {
    saved: saved > 0 ? { amount: saved, text: t(unit, { n: String(saved) }) } : null,
    fit: parts.length ? t('prepared.fit', { parts: parts.join(t('list.separator')) }) : null,
  };
}
