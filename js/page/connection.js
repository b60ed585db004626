// @ts-check
// "Test connection" and the model list: one `GET {base}/models` (OpenAI's and
// Anthropic's `GET /v1/models` alike) with the configured key, sent as the chat's API
// wants it, and what its outcome means to a person. The one request the page makes
// itself: it sends no prompt, so it needs none of the core's preparation, and Settings
// can use it before Python is ready.

import { ANTHROPIC_VERSION } from '../link/protocol.js';
import { networkText, statusText } from './status-text.js';
import { t } from './i18n.js';

const TIMEOUT_MS = 10_000;

/** `{ok: true, models: [id, …], text}` or `{ok: false, text}`, `text` for people. `api`:
 * the dialect the chat speaks (Settings' `dialect`), which says how the key goes. */
export async function testConnection(baseUrl, apiKey, api = 'chat_completions') {
  const headers = { accept: 'application/json', ...keyHeaders(api, apiKey) };
  let response;
  try {
    response = await fetch(`${baseUrl}/models`, { headers, signal: AbortSignal.timeout(TIMEOUT_MS), cache: 'no-store' });
  } catch {
    return { ok: false, text: networkText(baseUrl) };
  }
  let body = null;
  try {
    body = await response.json();
  } catch { /* not JSON: judged by the status alone */ }
  if (!response.ok) {
    const message = typeof body?.error?.message === 'string' ? body.error.message.slice(0, 200) : '';
    return { ok: false, text: statusText(response.status, message) };
  }
  const models = Array.isArray(body?.data)
    ? body.data.map((m) => m?.id).filter((id) => typeof id === 'string').sort()
    : [];
  if (!models.length) return { ok: true, models, text: t('connection.noModels') };
  return { ok: true, models, text: t('connection.models', { count: models.length }) };
}

/** The key's headers, as the core sends them with a chat (firsttoken.stream.dialects,
 * `credentials` and `request_headers`): to Anthropic's API `x-api-key` with its version,
 * and, with a user's own key, the header by which Anthropic lets a browser call it;
 * else a bearer token. */
export function keyHeaders(api, apiKey) {
  if (api === 'anthropic_messages') {
    const headers = { 'anthropic-version': ANTHROPIC_VERSION };
    if (apiKey) {
      headers['x-api-key'] = apiKey;
      headers['anthropic-dangerous-direct-browser-access'] = 'true';
    }
    return headers;
  }
  return apiKey ? { authorization: `Bearer ${apiKey}` } : {};
}
