// js/page/early-send.js on Node: the gateway's stream for a prompt sent before Python is
// ready, turned into the core's events. The same events whether the bytes come whole,
// one byte at a time or with CRLF line ends (a multibyte character split between
// chunks); a stream cut before `[DONE]`, a chunk that is not JSON, an error event, an
// HTTP error, a network failure and Stop each end in `chat.error` with the core's code
// and the text so far. The page around it is tested in Chromium and WebKitGTK
// (tests/e2e/test_early_send.py, tests/webkit/test_early_send.py). Moved from a Python
// string run with `node -e` (tests/unit/test_early_send.py; issue 47, item 6).

import assert from 'node:assert/strict';
import { register } from 'node:module';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

// The page imports the parser by its served URL (gateway/static.py: /vendor/ is
// node_modules); on Node a resolve hook points that URL at the file.
const parser = pathToFileURL(fileURLToPath(new URL('../../node_modules/eventsource-parser/dist/index.js',
  import.meta.url))).href;
register('data:text/javascript,' + encodeURIComponent(`export async function resolve(s, c, next) {
  return next(s.endsWith('/vendor/eventsource-parser/index.js') ? ${JSON.stringify(parser)} : s, c);
}`));
const { EarlySend, sendsEarly } = await import('../../js/page/early-send.js');

const PREPARED = { v: 1, type: 'chat.prepared', compression: null, saved: [], saved_unit: 'tokens', budget: 100,
  window_known: true, prompt_tokens: 12, exact: true, dropped: [], truncated: [], prepare_ms: 0.5, request_bytes: 80 };
const chunk = (content, extra = {}) =>
  `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }], ...extra })}\n\n`;
const STREAM = `event: firsttoken.prepared\ndata: ${JSON.stringify(PREPARED)}\n\n`
  + ': keep-alive\n\n' + chunk('Déjà') + chunk(' vu 🙂\u2028') + chunk(' fin')
  + `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`
  + `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 } })}\n\n`
  + 'data: [DONE]\n\n';
// The same answer in the Responses API and in Anthropic Messages (issue 45, item 2),
// with reasoning in each, as the built-in model streams them.
const ev = (name, data) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
const LEAD = `event: firsttoken.prepared\ndata: ${JSON.stringify(PREPARED)}\n\n`;
const STREAMS = {
  responses: LEAD + ev('response.created', { response: { id: 'resp_1' } })
    + ev('response.reasoning_summary_text.delta', { delta: 'Hm.' })
    + ev('response.output_text.delta', { delta: 'Déjà' }) + ev('response.output_text.delta', { delta: ' vu 🙂\u2028' })
    + ev('response.output_text.delta', { delta: ' fin' })
    + ev('response.completed',
      { response: { status: 'completed', usage: { input_tokens: 12, output_tokens: 3, total_tokens: 15 } } }),
  anthropic_messages: LEAD + ev('message_start', { message: { usage: { input_tokens: 12, output_tokens: 1 } } })
    + ev('ping', {}) + ev('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking: 'Hm.' } })
    + ev('content_block_delta', { index: 1, delta: { type: 'text_delta', text: 'Déjà' } })
    + ev('content_block_delta', { index: 1, delta: { type: 'text_delta', text: ' vu 🙂\u2028' } })
    + ev('content_block_delta', { index: 1, delta: { type: 'text_delta', text: ' fin' } })
    + ev('message_delta', { delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } }) + ev('message_stop', {}),
};

const bytes = (text) => new TextEncoder().encode(text);
const pieces = {
  whole: (b) => [b],
  bytewise: (b) => [...b].map((x) => Uint8Array.of(x)),
  sevens: (b) => Array.from({ length: Math.ceil(b.length / 7) }, (_, i) => b.slice(i * 7, i * 7 + 7)),
};
let sent = [];
function serve(chunks, { status = 200, type = 'text/event-stream', hang = false } = {}) {
  globalThis.fetch = async (url, init) => {
    sent.push({ url, headers: init.headers, body: JSON.parse(init.body) });
    if (status === 0) throw new TypeError('Failed to fetch');
    const body = new ReadableStream({
      start(c) {
        for (const piece of chunks) c.enqueue(piece);
        if (!hang) c.close();
        init.signal.addEventListener('abort', () => c.error(new DOMException('aborted', 'AbortError')));
      },
    });
    return new Response(body, { status, headers: { 'content-type': type } });
  };
}
function run(request, { abortAfterDelta = false } = {}) {
  return new Promise((resolve) => {
    const events = [];
    const early = new EarlySend((msg) => {
      events.push(msg);
      if (abortAfterDelta && msg.type === 'chat.delta') early.abort(msg.id);
      if (msg.type === 'chat.done' || msg.type === 'chat.error') resolve(events);
    });
    early.send(request);
  });
}
const settings = { base_url: 'http://gw.test/v1/', model: 'firsttoken-sim', compress: 'max', api_key: 'sk-user',
  headers: { 'x-firsttoken-sim': 'tps=1' } };
const request = { id: 'r1', messages: [{ role: 'user', content: 'hi' }], settings };
const deltas = (events) => events.filter((e) => e.type === 'chat.delta');

test('the same events however the stream is cut', async () => {
  const names = [];
  for (const [name, cut] of Object.entries(pieces)) {
    for (const crlf of [false, true]) {
      const label = `${name}${crlf ? '-crlf' : ''}`;
      names.push(label);
      serve(cut(bytes(crlf ? STREAM.replaceAll('\n', '\r\n') : STREAM)));
      const events = await run(request);
      const [prepared, ...more] = events.filter((e) => e.type === 'chat.prepared');
      assert.equal(more.length, 0, label);
      assert.ok(prepared.id === 'r1' && prepared.prompt_tokens === 12, label);
      // U+2028 is text, never a line end (the SSE standard's line ends are CR and LF).
      assert.equal(deltas(events).map((e) => e.text).join(''), 'Déjà vu 🙂\u2028 fin', label);
      const seqs = deltas(events).map((e) => e.seq);
      assert.deepEqual(seqs, seqs.map((_, i) => i + 1), label);
      const end = events.at(-1);
      assert.ok(end.type === 'chat.done' && end.finish_reason === 'stop', label);
      assert.deepEqual(end.usage, { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 }, label);
      assert.deepEqual(end.prompt, { estimate: 12, actual: 12, adjusted: null }, label);
      const t = end.timings;
      assert.ok(t.send <= t.headers && t.headers <= t.first_byte && t.first_byte <= t.first_delta
        && t.first_delta <= t.done, label);
    }
  }
  assert.deepEqual(new Set(names), new Set(['whole', 'whole-crlf', 'bytewise', 'bytewise-crlf', 'sevens', 'sevens-crlf']));
});

test('the request is the conversation as written, with the header and the key', async () => {
  sent = [];
  serve([bytes(STREAM)]);
  await run(request);
  const [first] = sent;
  assert.equal(first.url, 'http://gw.test/v1/chat/completions');
  assert.deepEqual(first.body, { model: 'firsttoken-sim', messages: [{ role: 'user', content: 'hi' }],
    stream: true, stream_options: { include_usage: true } });
  assert.equal(first.headers['x-firsttoken-prepare'], 'max');
  assert.ok(first.headers.authorization === 'Bearer sk-user' && first.headers['x-firsttoken-sim'] === 'tps=1');
});

const FAILING = {
  truncated: () => serve([chunk('half')].map(bytes)),
  not_json: () => serve([chunk('half') + 'data: {not json\n\n' + chunk('more')].map(bytes)),
  error_event: () => serve([chunk('half')
    + `data: ${JSON.stringify({ error: { message: 'Simulated error', code: 'simulated' } })}\n\n`].map(bytes)),
  bad_report: () => serve(['event: firsttoken.prepared\ndata: 42\n\n'].map(bytes)),
  status: () => serve([bytes(JSON.stringify({ error: { message: 'Incorrect API key provided.', code: 'invalid_api_key' } }))],
    { status: 401, type: 'application/json' }),
  network: () => serve([], { status: 0 }),
  stopped: () => serve([bytes(chunk('so far'))], { hang: true }),
};
for (const [name, code, partial] of [
  ['truncated', 'truncated', 'half'],
  ['not_json', 'invalid_chunk', 'half'],
  ['error_event', 'upstream_error', 'half'],
  ['bad_report', 'invalid_chunk', ''],
  ['status', 'http_status', ''],
  ['network', 'network', ''],
  ['stopped', 'aborted', 'so far'],
]) {
  test(`each failure ends with the core's code and the text so far: ${name}`, async () => {
    FAILING[name]();
    const end = (await run(request, { abortAfterDelta: name === 'stopped' })).at(-1);
    assert.ok(end.type === 'chat.error' && end.id === 'r1');
    assert.equal(end.error.code, code);
    assert.equal(end.error.partial, partial);
    assert.ok(end.error.message);
    if (name === 'status') {
      assert.equal(end.error.status, 401);
      assert.equal(end.error.message, 'Incorrect API key provided.');
    }
  });
}

test('only this gateway, in any API', () => {
  assert.deepEqual([
    sendsEarly({ base_url: 'http://gw.test/v1', model: 'gpt-4o' }, 'http://gw.test'),
    sendsEarly({ base_url: 'https://api.openai.com/v1', model: 'gpt-4o' }, 'http://gw.test'),
    sendsEarly({ base_url: 'http://gw.test/v1', model: 'claude-sonnet-4' }, 'http://gw.test'),
    sendsEarly({ base_url: 'http://gw.test/v1', model: 'gpt-4o', api: 'responses' }, 'http://gw.test'),
  ], [true, false, true, true]);
});

for (const [api, path, field] of [['responses', '/responses', 'input'], ['anthropic_messages', '/messages', 'messages']]) {
  test(`Responses and Messages streams give the same events: ${api}`, async () => {
    const asked = { ...request, settings: { ...settings, api } };
    for (const [name, cut] of Object.entries(pieces)) {
      sent = [];
      serve(cut(bytes(STREAMS[api])));
      const events = await run(asked);
      const [got] = sent;
      assert.equal(got.url, 'http://gw.test/v1' + path);
      assert.deepEqual(got.body[field], [{ role: 'user', content: 'hi' }]);
      assert.equal(got.headers['x-firsttoken-prepare'], 'max');
      assert.equal(deltas(events).map((e) => e.text).join(''), 'Déjà vu 🙂\u2028 fin', name);
      assert.equal(deltas(events).map((e) => e.reasoning ?? '').join(''), 'Hm.', name);
      const end = events.at(-1);
      assert.ok(end.type === 'chat.done' && end.finish_reason === 'stop', name);
      assert.ok(end.usage.prompt_tokens === 12 && end.usage.completion_tokens === 3, name);
      if (api === 'anthropic_messages' && name === 'whole') {
        assert.ok(got.headers['x-api-key'] === 'sk-user' && got.headers['anthropic-version'] === '2023-06-01');
        assert.ok(got.body.max_tokens > 0);
      }
    }
    // Cut before its last event: truncated, in either API.
    serve([bytes(STREAMS[api].slice(0, STREAMS[api].lastIndexOf('event:')))]);
    const cut = (await run(asked)).at(-1);
    assert.ok(cut.type === 'chat.error' && cut.error.code === 'truncated');
  });
}
