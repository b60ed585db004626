// @ts-check
// What the page says about a reply's progress and failures, and about the quota: the
// words only, for messages.js to show.

export function seconds(s) {
  return s < 10 ? `${s.toFixed(1)} s` : `${Math.round(s)} s`;
}

/** A `chat.error`'s (or `error`'s) `error` object, for people: what happened and what to
 * do about it. `baseUrl`: where the request went (a network error names it). */
export function describeError(error, { baseUrl = '' } = {}) {
  if (!error) return 'Something went wrong.';
  switch (error.code) {
    case 'aborted': return 'Stopped.';
    case 'network': return networkText(baseUrl);
    case 'timeout': return `No answer from the server for ${seconds(error.timeout_s ?? 0)}: gave up. Retry, or check the base URL in Settings.`;
    case 'http_status': return statusText(error.status, error.message);
    case 'upstream_error': return `The model reported an error: ${error.message}`;
    case 'truncated': return 'The answer was cut off: the connection ended early.';
    // (With no text yet the prompt waits in the outbox instead, and this is never shown.)
    case 'offline': return 'This device went offline, so the answer stopped here. Retry once you are back online.';
    case 'stream_gone': return 'This answer was interrupted, and the server no longer has the rest of it.';
    default: return error.message || error.code;
  }
}

/** A request that never got an answer from `baseUrl`. */
export function networkText(baseUrl) {
  const where = baseUrl ? ` ${baseUrl}` : ' the server';
  return `Could not reach${where}. Check your connection, and the base URL in Settings.`;
}

/** A non-2xx answer, with what to do for the ones a person can fix. */
export function statusText(status, message = '') {
  const said = message ? `: ${message}${/[.!?]$/.test(message) ? '' : '.'}` : '.';
  if (status === 401 || status === 403) {
    return `The server answered ${status}${said} Check the API key in Settings.`;
  }
  if (status === 404) return `The server answered 404${said} Check the base URL and the model in Settings.`;
  return `The server answered ${status}${said}`;
}

/** A `chat.stall`: no text for `waiting_s` seconds. `connected`: bytes (a keep-alive)
 * came within that silence, so the server is there and its model is thinking; without
 * it nothing at all came, and the connection may be stalled. */
export function stallText(msg) {
  const s = Math.round(msg.waiting_s);
  if (msg.connected) return `Still thinking… the server is connected (${s} s)`;
  return `still waiting for the server, ${s} s`;
}

/** A `chat.reconnecting`: the connection was lost; the answer goes on on the server. */
export function reconnectingText(msg) {
  if (msg.reason === 'offline') return 'Offline: the answer goes on on the server, and continues here once you are back online…';
  return msg.wait_s > 0 ? `Connection lost: reconnecting in ${seconds(msg.wait_s)}…` : 'Connection lost: reconnecting…';
}

export function waitText(msg) {
  return `Rate limit reached: sending in ${seconds(msg.wait_s)}…`;
}

export function retryText(msg) {
  return `${msg.status ? `The server answered ${msg.status}` : 'Network error'}; retrying in ${seconds(msg.wait_s)} (attempt ${msg.attempt + 1})…`;
}

/** Remaining quota as the server last reported it (x-ratelimit-* headers), or null. */
export function quotaText(quota) {
  if (!quota) return null;
  const fmt = (b) => (b && b.limit != null && b.remaining != null ? `${b.remaining}/${b.limit}` : null);
  const parts = [];
  if (fmt(quota.requests)) parts.push(`requests ${fmt(quota.requests)}`);
  if (fmt(quota.tokens)) parts.push(`tokens ${fmt(quota.tokens)}`);
  if (quota.wait_s > 0) parts.push(`wait ${seconds(quota.wait_s)}`);
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
  if (dropped) parts.push(`${dropped} earlier message${dropped > 1 ? 's' : ''} left out`);
  if (cut) parts.push(`${cut} shortened`);
  if (images) parts.push(`${images} earlier photo${images > 1 ? 's' : ''} not sent`);
  return {
    saved: saved > 0 ? { amount: saved, text: `compressed: −${saved} ${msg.saved_unit}` } : null,
    fit: parts.length ? `To fit the model's budget: ${parts.join(', ')}.` : null,
  };
}
