// A prompt sent before Python is ready, answered through the gateway.
//
// A first visit on a slow link downloads Python for half a minute (docs/boot.md). A
// prompt sent meanwhile need not wait: the gateway that served this page runs the same
// preparation on CPython (gateway/prepare.py, `x-firsttoken-prepare: <level>`:
// compress, count exactly, fit), sends the prepared prompt to its model, and streams the
// answer back, led by a `firsttoken.prepared` event holding what `chat.prepared` holds.
//
// This module is the one place where that stream becomes the core's protocol events
// (bridge/PROTOCOL.md): `chat.prepared`, `chat.delta`, then one `chat.done` or
// `chat.error`. The page hands them to the same code that takes the core's
// (reply-events.js), so the answer, its counts and its compression note are painted,
// stored and ended exactly as when Python sends. The bytes are parsed by
// eventsource-parser (vendor/eventsource-parser/, from node_modules: no CDN); what the
// events mean in Chat Completions is read here, in a few lines, rather than in a second
// copy of the core's decoders, because this path lives only until Python is ready.
//
// Only to this very gateway (the page's own origin) and in Chat Completions: another
// server does not take the header, and its key and the page's origin are its own. Then,
// and once Python is ready, prompts go through Python as always. What this path leaves
// out, and Python does: retries after a 429 or a 5xx, the stall notice, resumable
// streams, cache references. An error is shown at once, with Retry.

import { createParser } from '../../vendor/eventsource-parser/index.js';
import { apiFor } from './settings.js';

export const PREPARE_HEADER = 'x-firsttoken-prepare';
const PREPARED_EVENT = 'firsttoken.prepared';
// The core's SSE decoder takes at most 4 MiB per event (py/firsttoken/stream/sse.py):
// the same bound here, past which the parser stops rather than grows.
const MAX_EVENT_CHARS = 4 << 20;

const now = () => performance.timeOrigin + performance.now();

/** Whether a request with `settings` (Settings.forRequest) may go early: to the gateway
 * that served this page, in Chat Completions. */
export function sendsEarly(settings, origin = globalThis.location?.origin) {
  if (apiFor(settings.api ?? '', settings.model ?? '') !== 'chat_completions') return false;
  // A Thinking level or an output limit is the core's to map and to retry without
  // (a model that refuses the parameter): such a prompt waits for Python.
  if (settings.reasoning || settings.max_tokens) return false;
  try {
    return new URL(settings.base_url).origin === origin;
  } catch {
    return false;
  }
}

export class EarlySend {
  /** `onEvent(msg)` hears each protocol event about the requests sent here. */
  constructor(onEvent) {
    this.onEvent = onEvent;
    this.running = new Map(); // request id → its AbortController
  }

  /** Send `messages` (the conversation as written) with `settings` as request `id`. */
  send({ id, messages, settings }) {
    const controller = new AbortController();
    this.running.set(id, controller);
    answer(id, messages, settings, controller.signal, this.onEvent)
      .finally(() => this.running.delete(id));
  }

  /** Stop request `id`: it ends with `chat.error`, code `aborted`, its text kept. */
  abort(id) {
    this.running.get(id)?.abort();
  }
}

/** One request, from fetch to its last event (`emit`ted). Never throws. */
async function answer(id, messages, settings, signal, emit) {
  const timings = { send: now(), headers: null, first_byte: null, first_delta: null, done: null, bytes: 0 };
  const body = JSON.stringify({ model: settings.model, messages, stream: true, stream_options: { include_usage: true } });
  const headers = {
    'content-type': 'application/json',
    accept: 'text/event-stream',
    ...(settings.headers ?? {}),
    ...(settings.api_key ? { authorization: `Bearer ${settings.api_key}` } : {}),
    [PREPARE_HEADER]: settings.compress ?? 'balanced',
  };
  const read = new ChatStream(id, emit, timings);
  const fail = (error) => {
    read.flush();
    emit({ type: 'chat.error', id, error: { ...error, partial: read.text }, timings, quota: null });
  };
  let response;
  try {
    // `priority`: a person waits on this request; the runtime downloading beside it
    // (js/boot/boot.js) can wait its turn for a connection.
    response = await fetch(`${settings.base_url.replace(/\/+$/, '')}/chat/completions`, {
      method: 'POST', headers, body, signal, cache: 'no-store', priority: 'high',
    });
  } catch (error) {
    return fail(transportError(error, signal));
  }
  timings.headers = now();
  if (!response.ok) return fail(await statusError(response));
  const reader = response.body.getReader();
  // Bytes are decoded as a stream: a character split between two chunks is joined.
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      timings.first_byte ??= now();
      timings.bytes += value.byteLength;
      read.feed(decoder.decode(value, { stream: true }));
      // One `chat.delta` per network chunk, as the core sends them.
      read.flush();
      if (read.fault) {
        reader.cancel().catch(() => {});
        return fail(read.fault);
      }
    }
    read.feed(decoder.decode());
  } catch (error) {
    return fail(transportError(error, signal));
  }
  read.flush();
  if (read.fault) return fail(read.fault);
  if (!read.ended) return fail({ code: 'truncated', message: 'The stream ended before its end ([DONE]).' });
  timings.done = now();
  emit({
    type: 'chat.done', id, finish_reason: read.finish, usage: read.usage, timings, quota: null, attempts: 1,
    prompt: { estimate: read.promptTokens, actual: read.usage?.prompt_tokens ?? null, adjusted: null },
    request_bytes: new TextEncoder().encode(body).length,
  });
}

/** A Chat Completions stream, led by the gateway's report, as protocol events. */
class ChatStream {
  constructor(id, emit, timings) {
    Object.assign(this, { id, emit, timings });
    this.text = ''; // every piece of the answer so far (a `chat.error`'s `partial`)
    this.pending = ''; // arrived, not yet sent as a delta
    this.pendingReasoning = ''; // reasoning arrived, not yet sent as a delta
    this.tags = new ThinkTags();
    this.seq = 0;
    this.ended = false; // `data: [DONE]` came
    this.finish = null;
    this.usage = null;
    this.promptTokens = null;
    this.fault = null; // the stream broke its format: the request ends with this error
    this.parser = createParser({
      onEvent: (event) => this.event(event),
      // Unknown fields and a bad `retry` are ignored, as the SSE standard says a reader
      // does; only the bound ends the stream.
      onError: (error) => {
        if (error.type === 'max-buffer-size-exceeded') {
          this.fault ??= { code: 'sse_buffer_overflow', message: 'The server sent an event larger than 4 MiB.', limit: MAX_EVENT_CHARS };
        }
      },
      maxBufferSize: MAX_EVENT_CHARS,
    });
  }

  feed(text) {
    if (!this.fault && text) this.parser.feed(text);
  }

  event({ event, data }) {
    if (this.fault || this.ended) return;
    if (event === PREPARED_EVENT) {
      const report = parseJSON(data);
      if (report?.type !== 'chat.prepared') {
        this.fault = { code: 'invalid_chunk', message: 'The gateway sent a preparation report that is not one.' };
        return;
      }
      this.promptTokens = report.prompt_tokens ?? null;
      this.emit({ ...report, id: this.id });
      return;
    }
    // Other named events are not Chat Completions' (an OpenAI client skips them too).
    if (event !== undefined && event !== 'message') return;
    if (data === '[DONE]') {
      this.ended = true;
      if (!this.tagsDone) { // no finish_reason came: what the splitter holds is the answer's
        this.tagsDone = true;
        const { reasoning, text } = this.tags.finish(false);
        this.pending += text;
        this.pendingReasoning += reasoning;
      }
      return;
    }
    const chunk = parseJSON(data);
    if (chunk === null || typeof chunk !== 'object' || Array.isArray(chunk)) {
      this.fault = { code: 'invalid_chunk', message: `The server sent a chunk that is not JSON: ${data.slice(0, 80)}` };
    } else if (chunk.error) {
      // An error in the stream (the built-in model's error_after, an upstream's).
      const message = String(chunk.error.message ?? 'The server reported an error.');
      this.fault = { code: 'upstream_error', message, error: chunk.error, status: null };
    } else {
      if (chunk.usage) this.usage = chunk.usage;
      const choice = Array.isArray(chunk.choices) ? chunk.choices.find((c) => (c?.index ?? 0) === 0) : null;
      const piece = choice?.delta?.content;
      if (typeof piece === 'string') {
        const { reasoning, text } = this.tags.feed(piece);
        this.pending += text;
        this.pendingReasoning += reasoning;
      }
      // Reasoning, as the core reads it from Chat Completions (DeepSeek's and vLLM's
      // `reasoning_content`, OpenRouter's and Ollama's `reasoning`): shown in the
      // answer's thinking row here too.
      const thought = choice?.delta?.reasoning_content ?? choice?.delta?.reasoning;
      if (typeof thought === 'string') this.pendingReasoning += thought;
      if (choice?.finish_reason) this.finish = choice.finish_reason;
      if (choice?.finish_reason && !this.tagsDone) {
        this.tagsDone = true;
        const { reasoning, text } = this.tags.finish(this.finish === 'length');
        this.pending += text;
        this.pendingReasoning += reasoning;
      }
    }
  }

  /** What arrived since the last one, as a `chat.delta`. */
  flush() {
    if (!this.pending && !this.pendingReasoning) return;
    this.timings.first_delta ??= now();
    this.text += this.pending;
    this.seq += 1;
    const delta = { type: 'chat.delta', id: this.id, seq: this.seq, text: this.pending, t: now() };
    if (this.pendingReasoning) delta.reasoning = this.pendingReasoning;
    this.emit(delta);
    this.pending = '';
    this.pendingReasoning = '';
  }
}

/** Inline `<think>…</think>` at the start of the content (servers without a reasoning
 * parser: Ollama, vLLM, the built-in model's `think_tags=1`), split from the answer as
 * it streams, cut anywhere. The rules are the core's (py/firsttoken/stream/think_tags.py,
 * which says why and knows every tag form): only at the very start, after whitespace;
 * whitespace after the closing tag dropped; unclosed at a `stop`, the reasoning was the
 * answer too; unclosed at a cut, it stays reasoning. This path lives only until Python
 * is ready, so it takes the one tag those servers send, not the core's whole list. */
export class ThinkTags {
  constructor() {
    this.state = 'start'; // 'start' (undecided), 'think', 'after' (dropping whitespace), 'answer'
    this.held = '';
    this.reasoning = ''; // all of it, for an unclosed tag at a stop
  }

  feed(piece) {
    let out = { reasoning: '', text: '' };
    this.held += piece;
    for (;;) {
      if (this.state === 'answer') return { ...out, text: out.text + this.take(this.held.length) };
      if (this.state === 'start') {
        const lead = this.held.length - this.held.trimStart().length;
        const rest = this.held.slice(lead);
        if (rest.startsWith(OPEN)) {
          this.held = rest.slice(OPEN.length);
          this.state = 'think';
        } else if (OPEN.startsWith(rest) && lead <= 256) {
          return out; // may still become the tag
        } else {
          this.state = 'answer';
        }
      } else if (this.state === 'think') {
        const at = this.held.indexOf(CLOSE);
        if (at < 0) {
          // All but what may be the start of the closing tag.
          let keep = Math.min(CLOSE.length - 1, this.held.length);
          while (keep > 0 && !CLOSE.startsWith(this.held.slice(-keep))) keep -= 1;
          const thought = this.take(this.held.length - keep);
          this.reasoning += thought;
          return { ...out, reasoning: out.reasoning + thought };
        }
        const thought = this.take(at);
        this.reasoning += thought;
        out = { ...out, reasoning: out.reasoning + thought };
        this.held = this.held.slice(CLOSE.length);
        this.state = 'after';
      } else { // after the closing tag: whitespace before the answer is not the answer
        const trimmed = this.held.trimStart();
        this.held = trimmed;
        if (!trimmed) return out;
        this.state = 'answer';
      }
    }
  }

  /** The stream ended (`cut`: at its output limit): what is still held. */
  finish(cut) {
    const held = this.take(this.held.length);
    if (this.state === 'think') {
      // Unclosed: cut, it stays reasoning; stopped, the reasoning was the answer too.
      return cut ? { reasoning: held, text: '' } : { reasoning: held, text: this.reasoning + held };
    }
    if (this.state === 'start') this.state = 'answer';
    return { reasoning: '', text: this.state === 'answer' ? held : '' };
  }

  take(n) {
    const out = this.held.slice(0, n);
    this.held = this.held.slice(n);
    return out;
  }
}
const OPEN = '<think>';
const CLOSE = '</think>';

function parseJSON(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A fetch or read that failed: stopped, offline, or the network (the core's codes). */
function transportError(error, signal) {
  if (signal.aborted) return { code: 'aborted', message: 'Stopped.' };
  // No network: the page keeps the prompt in its outbox when no text had come.
  if (globalThis.navigator?.onLine === false) return { code: 'offline', message: String(error?.message ?? error) };
  return { code: 'network', message: String(error?.message ?? error) };
}

/** A non-2xx answer, as the core reports one (`http_status`, the API's error object). */
async function statusError(response) {
  let error = {};
  try {
    const body = await response.json();
    if (body && typeof body.error === 'object' && body.error) error = body.error;
  } catch { /* an unreadable error body is still an HTTP error */ }
  const retry = Number(response.headers.get('retry-after'));
  return {
    code: 'http_status', status: response.status, error,
    message: String(error.message || `The server answered HTTP ${response.status}.`),
    retry_after_s: Number.isFinite(retry) && response.headers.has('retry-after') ? retry : null,
  };
}
