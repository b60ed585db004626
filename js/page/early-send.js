// A prompt sent before Python is ready, answered through the gateway.
//
// A first visit on a slow link downloads Python for half a minute (docs/boot.md). A
// prompt sent meanwhile need not wait: the gateway that served this page runs the same
// preparation on CPython (gateway/prepare.py, `x-firsttoken-prepare: <level>`:
// compress, count exactly, fit), sends the prepared prompt to its model, and streams the
// answer back, led by a `firsttoken.prepared` event holding what `chat.prepared` holds.
//
// The request is posted by js/boot/first-send.js (`post`), the page's first step, which
// may have sent it already, before this module was even loaded: then it is claimed
// (`claim`), not sent again, and everything it received is read here from its first
// byte. This module is the one place where that stream becomes the core's protocol
// events (bridge/PROTOCOL.md): `chat.prepared`, `chat.delta`, then one `chat.done` or
// `chat.error`. The page hands them to the same code that takes the core's
// (reply-events.js), so the answer, its counts and its compression note are painted,
// stored and ended exactly as when Python sends. The bytes are parsed by
// eventsource-parser (vendor/eventsource-parser/, from node_modules: no CDN); what the
// events mean in each API (Chat Completions, Responses, Anthropic Messages: the
// text, the reasoning, the usage, how it ended) is read here in a few lines each, rather
// than in a second copy of the core's decoders, because this path lives only until
// Python is ready.
//
// Only to this very gateway (the page's own origin): another server does not take the
// header, and its key and the page's origin are its own. Then, and once Python is
// ready, prompts go through Python as always. What this path leaves out, and Python
// does: retries after a 429 or a 5xx, the stall notice, resumable streams, cache
// references, a Thinking level and an output limit (such a prompt waits for Python),
// reasoning summaries asked of Responses and Messages. An error is shown at once, with Retry.

import { createParser } from '../../vendor/eventsource-parser/index.js';
import '../boot/first-send.js';
import { apiFor } from './settings.js';

// The page's first step: a classic script (it says why), which offers its sender here.
const { claim, post, PREPARE_HEADER: header } = /** @type {any} */ (globalThis).firsttokenFirstSend;
export const PREPARE_HEADER = header;
const PREPARED_EVENT = 'firsttoken.prepared';
// The core's SSE decoder takes at most 4 MiB per event (py/firsttoken/stream/sse.py):
// the same bound here, past which the parser stops rather than grows.
const MAX_EVENT_CHARS = 4 << 20;

const now = () => performance.timeOrigin + performance.now();

/** Whether a request with `settings` (Settings.forRequest) may go early: to the gateway
 * that served this page, in any of the three APIs. */
export function sendsEarly(settings, origin = globalThis.location?.origin) {
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
    this.running = new Map(); // request id → its Flight
  }

  /** Send `messages` (the conversation as written) with `settings` as request `id`:
   * the first step's request for the same prompt if it sent one, else a new one. */
  send({ id, messages, settings }) {
    const api = apiFor(settings.api ?? '', settings.model ?? '');
    const last = messages.at(-1);
    const text = typeof last?.content === 'string' ? last.content : null;
    const flight = (text !== null && claim(text, api, settings.base_url)) || post(api, text ?? '', messages, settings);
    this.running.set(id, flight);
    answer(id, flight, this.onEvent, () => this.running.delete(id));
  }

  /** Stop request `id`: it ends with `chat.error`, code `aborted`, its text kept. */
  abort(id) {
    this.running.get(id)?.abort();
  }
}

/** One request, from its response to its last event (`emit`ted); `done()` after it. */
function answer(id, flight, emit, done) {
  const timings = { send: flight.sent, headers: null, first_byte: null, first_delta: null, done: null, bytes: 0 };
  const read = new (READERS[flight.api] ?? ChatStream)(id, emit, timings);
  const finish = (msg) => {
    emit(msg);
    done();
  };
  const fail = (error) => {
    read.flush();
    finish({ type: 'chat.error', id, error: { ...error, partial: read.text }, timings, quota: null });
  };
  let failed = false;
  flight.listen((event) => {
    if (failed) return;
    if (event.response) {
      timings.headers = now();
      if (!event.response.ok) {
        failed = true;
        fail(statusError(event.response));
      }
    } else if (event.text !== undefined) {
      timings.first_byte ??= flight.firstByte ?? now();
      timings.bytes = flight.bytes;
      read.feed(event.text);
      // One `chat.delta` per network chunk, as the core sends them.
      read.flush();
      if (read.fault) {
        failed = true;
        flight.abort();
        fail(read.fault);
      }
    } else if (event.end) {
      failed = true;
      if (event.end.error) return fail(event.end.error);
      if (!flight.response?.ok) return; // told already
      read.flush();
      if (read.fault) return fail(read.fault);
      if (!read.ended) return fail({ code: 'truncated', message: `The stream ended before its end (${read.endName}).` });
      timings.done = now();
      finish({
        type: 'chat.done', id, finish_reason: read.finish, usage: read.usage, timings, quota: null, attempts: 1,
        prompt: { estimate: read.promptTokens, actual: read.usage?.prompt_tokens ?? null, adjusted: null },
        request_bytes: flight.requestBytes,
      });
    }
  });
}

/** What every API's stream shares: the gateway's report first, the SSE parser with its
 * bound, the text and reasoning gathered into one `chat.delta` per chunk. A subclass
 * reads its API's events (`data(event, json)`). */
class EventStream {
  constructor(id, emit, timings) {
    Object.assign(this, { id, emit, timings });
    this.text = ''; // every piece of the answer so far (a `chat.error`'s `partial`)
    this.pending = ''; // arrived, not yet sent as a delta
    this.pendingReasoning = ''; // reasoning arrived, not yet sent as a delta
    this.seq = 0;
    this.ended = false; // the API's last event came
    this.endName = '[DONE]';
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
    this.data(event, data);
  }

  /** `data` as a JSON object, else a fault (null). */
  json(data) {
    const chunk = parseJSON(data);
    if (chunk === null || typeof chunk !== 'object' || Array.isArray(chunk)) {
      this.fault = { code: 'invalid_chunk', message: `The server sent a chunk that is not JSON: ${String(data).slice(0, 80)}` };
      return null;
    }
    return chunk;
  }

  /** An error the server reported in the stream. */
  failed(error) {
    const message = String(error?.message ?? 'The server reported an error.');
    this.fault = { code: 'upstream_error', message, error: error ?? {}, status: null };
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

/** A Chat Completions stream. */
class ChatStream extends EventStream {
  constructor(...args) {
    super(...args);
    this.tags = new ThinkTags();
  }

  data(event, data) {
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
    const chunk = this.json(data);
    if (!chunk) return;
    if (chunk.error) return this.failed(chunk.error); // the built-in model's error_after, an upstream's
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

// The Responses API's end of an answer cut short → Chat Completions' finish_reason, as
// the core maps it (py/firsttoken/stream/responses.py `_INCOMPLETE`).
const INCOMPLETE = { max_output_tokens: 'length', content_filter: 'content_filter' };

/** A Responses stream: typed events, ended by `response.completed`, `.incomplete` or
 * `.failed` (no `[DONE]`); reasoning summaries and reasoning text as reasoning. */
class ResponsesStream extends EventStream {
  constructor(...args) {
    super(...args);
    this.endName = 'response.completed';
  }

  data(_event, data) {
    const chunk = this.json(data);
    if (!chunk) return;
    const type = chunk.type;
    if (type === 'response.output_text.delta' && typeof chunk.delta === 'string') this.pending += chunk.delta;
    else if ((type === 'response.reasoning_summary_text.delta' || type === 'response.reasoning_text.delta') && typeof chunk.delta === 'string') {
      this.pendingReasoning += chunk.delta;
    } else if (type === 'response.completed' || type === 'response.incomplete') {
      const response = chunk.response ?? {};
      const why = response.incomplete_details?.reason;
      this.finish = type === 'response.completed' ? 'stop' : (INCOMPLETE[why] ?? (why || 'length'));
      const u = response.usage;
      if (u && typeof u === 'object') {
        this.usage = {
          prompt_tokens: u.input_tokens ?? null, completion_tokens: u.output_tokens ?? null,
          total_tokens: u.total_tokens ?? null,
          prompt_tokens_details: { cached_tokens: u.input_tokens_details?.cached_tokens ?? 0 },
          completion_tokens_details: { reasoning_tokens: u.output_tokens_details?.reasoning_tokens ?? 0 },
        };
      }
      this.ended = true;
    } else if (type === 'response.failed') {
      this.failed(chunk.response?.error);
    } else if (type === 'error') {
      this.failed(chunk.error ?? chunk);
    }
  }
}

// Messages' stop_reason → Chat Completions' finish_reason, as the core maps it
// (py/firsttoken/stream/messages.py).
const STOP = { end_turn: 'stop', stop_sequence: 'stop', max_tokens: 'length', model_context_window_exceeded: 'length', tool_use: 'tool_calls' };

/** An Anthropic Messages stream: `message_start`, content blocks, `message_delta`,
 * `message_stop`; `thinking_delta`s as reasoning; usage counts cumulative. */
class MessagesStream extends EventStream {
  constructor(...args) {
    super(...args);
    this.endName = 'message_stop';
    this.counts = {};
  }

  data(_event, data) {
    const chunk = this.json(data);
    if (!chunk) return;
    const type = chunk.type;
    if (type === 'message_start') this.take(chunk.message?.usage);
    else if (type === 'content_block_delta') {
      const d = chunk.delta ?? {};
      if (d.type === 'text_delta' && typeof d.text === 'string') this.pending += d.text;
      else if (d.type === 'thinking_delta' && typeof d.thinking === 'string') this.pendingReasoning += d.thinking;
    } else if (type === 'message_delta') {
      this.take(chunk.usage);
      const why = chunk.delta?.stop_reason;
      if (typeof why === 'string') this.finish = STOP[why] ?? why;
    } else if (type === 'message_stop') {
      this.ended = true;
    } else if (type === 'error') {
      this.failed(chunk.error);
    }
  }

  /** Usage so far: each count replaces the last (they are cumulative). */
  take(usage) {
    if (!usage || typeof usage !== 'object') return;
    for (const [k, v] of Object.entries(usage)) if (v !== null && v !== undefined) this.counts[k] = v;
    const c = this.counts;
    const cached = c.cache_read_input_tokens ?? 0;
    const prompt = (c.input_tokens ?? 0) + cached + (c.cache_creation_input_tokens ?? 0);
    this.usage = {
      prompt_tokens: prompt, completion_tokens: c.output_tokens ?? null, total_tokens: prompt + (c.output_tokens ?? 0),
      prompt_tokens_details: { cached_tokens: cached },
    };
  }
}

const READERS = { chat_completions: ChatStream, responses: ResponsesStream, anthropic_messages: MessagesStream };

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

/** A non-2xx answer, as the core reports one (`http_status`, the API's error object). */
function statusError(response) {
  const error = response.error ?? {};
  const retry = Number(response.retryAfter);
  return {
    code: 'http_status', status: response.status, error,
    message: String(error.message || `The server answered HTTP ${response.status}.`),
    retry_after_s: response.retryAfter !== null && Number.isFinite(retry) ? retry : null,
  };
}
