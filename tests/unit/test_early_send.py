"""js/page/early-send.js on Node: the gateway's stream for a prompt sent before Python is
ready, turned into the core's events. The same events whether the bytes come whole,
one byte at a time or with CRLF line ends (a multibyte character split between
chunks); a stream cut before `[DONE]`, a chunk that is not JSON, an error event, an
HTTP error, a network failure and Stop each end in `chat.error` with the core's code
and the text so far. The page around it is tested in Chromium and WebKitGTK
(tests/e2e/test_early_send.py, tests/webkit/test_early_send.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

# The page imports the parser by its served URL (gateway/static.py: /vendor/ is
# node_modules); on Node a resolve hook points that URL at the file.
SCRIPT = r"""
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
const parser = pathToFileURL('node_modules/eventsource-parser/dist/index.js').href;
register('data:text/javascript,' + encodeURIComponent(`export async function resolve(s, c, next) {
  return next(s.endsWith('/vendor/eventsource-parser/index.js') ? ${JSON.stringify(parser)} : s, c);
}`));
const { EarlySend, sendsEarly } = await import('./js/page/early-send.js');

const PREPARED = { v: 1, type: 'chat.prepared', compression: null, saved: [], saved_unit: 'tokens', budget: 100,
  window_known: true, prompt_tokens: 12, exact: true, dropped: [], truncated: [], prepare_ms: 0.5, request_bytes: 80 };
const chunk = (content, extra = {}) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }], ...extra })}\n\n`;
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
    + ev('response.completed', { response: { status: 'completed', usage: { input_tokens: 12, output_tokens: 3, total_tokens: 15 } } }),
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
const settings = { base_url: 'http://gw.test/v1/', model: 'firsttoken-sim', compress: 'max', api_key: 'sk-user', headers: { 'x-firsttoken-sim': 'tps=1' } };
const request = { id: 'r1', messages: [{ role: 'user', content: 'hi' }], settings };
const out = { splits: {} };
for (const [name, cut] of Object.entries(pieces)) {
  for (const crlf of [false, true]) {
    serve(cut(bytes(crlf ? STREAM.replaceAll('\n', '\r\n') : STREAM)));
    const events = await run(request);
    out.splits[`${name}${crlf ? '-crlf' : ''}`] = {
      prepared: events.filter((e) => e.type === 'chat.prepared'),
      text: events.filter((e) => e.type === 'chat.delta').map((e) => e.text).join(''),
      seqs: events.filter((e) => e.type === 'chat.delta').map((e) => e.seq),
      end: events.at(-1),
    };
  }
}
out.request = sent[0];
out.apis = {};
for (const [api, text] of Object.entries(STREAMS)) {
  for (const [name, cut] of Object.entries(pieces)) {
    sent = [];
    serve(cut(bytes(text)));
    const events = await run({ ...request, settings: { ...settings, api } });
    out.apis[`${api}-${name}`] = {
      request: sent[0],
      text: events.filter((e) => e.type === 'chat.delta').map((e) => e.text).join(''),
      reasoning: events.filter((e) => e.type === 'chat.delta').map((e) => e.reasoning ?? '').join(''),
      end: events.at(-1),
    };
  }
  // Cut before its last event: truncated, in either API.
  serve([bytes(text.slice(0, text.lastIndexOf('event:')))]);
  out.apis[`${api}-cut`] = (await run({ ...request, settings: { ...settings, api } })).at(-1);
}
const failing = {
  truncated: [chunk('half') ],
  not_json: [chunk('half') + 'data: {not json\n\n' + chunk('more')],
  error_event: [chunk('half') + `data: ${JSON.stringify({ error: { message: 'Simulated error', code: 'simulated' } })}\n\n`],
  bad_report: ['event: firsttoken.prepared\ndata: 42\n\n'],
};
out.failing = {};
for (const [name, text] of Object.entries(failing)) {
  serve(text.map(bytes));
  out.failing[name] = (await run(request)).at(-1);
}
serve([bytes(JSON.stringify({ error: { message: 'Incorrect API key provided.', code: 'invalid_api_key' } }))], { status: 401, type: 'application/json' });
out.failing.status = (await run(request)).at(-1);
serve([], { status: 0 });
out.failing.network = (await run(request)).at(-1);
serve([bytes(chunk('so far'))], { hang: true });
out.failing.stopped = (await run(request, { abortAfterDelta: true })).at(-1);
out.sendsEarly = [
  sendsEarly({ base_url: 'http://gw.test/v1', model: 'gpt-4o' }, 'http://gw.test'),
  sendsEarly({ base_url: 'https://api.openai.com/v1', model: 'gpt-4o' }, 'http://gw.test'),
  sendsEarly({ base_url: 'http://gw.test/v1', model: 'claude-sonnet-4' }, 'http://gw.test'),
  sendsEarly({ base_url: 'http://gw.test/v1', model: 'gpt-4o', api: 'responses' }, 'http://gw.test'),
];
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def out() -> dict[str, Any]:
    done = subprocess.run(["node", "--input-type=module", "-e", SCRIPT], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_same_events_however_the_stream_is_cut(out: dict[str, Any]) -> None:
    splits = out["splits"]
    assert set(splits) == {"whole", "whole-crlf", "bytewise", "bytewise-crlf", "sevens", "sevens-crlf"}
    for name, got in splits.items():
        [prepared] = got["prepared"]
        assert prepared["id"] == "r1" and prepared["prompt_tokens"] == 12, name
        # U+2028 is text, never a line end (the SSE standard's line ends are CR and LF).
        assert got["text"] == "Déjà vu 🙂\u2028 fin", name
        assert got["seqs"] == list(range(1, len(got["seqs"]) + 1)), name
        end = got["end"]
        assert end["type"] == "chat.done" and end["finish_reason"] == "stop", name
        assert end["usage"] == {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}, name
        assert end["prompt"] == {"estimate": 12, "actual": 12, "adjusted": None}, name
        timings = end["timings"]
        assert timings["send"] <= timings["headers"] <= timings["first_byte"] <= timings["first_delta"] <= timings["done"]


def test_the_request_is_the_conversation_as_written_with_the_header_and_the_key(out: dict[str, Any]) -> None:
    request = out["request"]
    assert request["url"] == "http://gw.test/v1/chat/completions"
    assert request["body"] == {"model": "firsttoken-sim", "messages": [{"role": "user", "content": "hi"}],
                               "stream": True, "stream_options": {"include_usage": True}}
    headers = request["headers"]
    assert headers["x-firsttoken-prepare"] == "max"
    assert headers["authorization"] == "Bearer sk-user" and headers["x-firsttoken-sim"] == "tps=1"


@pytest.mark.parametrize("case, code, partial", [
    ("truncated", "truncated", "half"),
    ("not_json", "invalid_chunk", "half"),
    ("error_event", "upstream_error", "half"),
    ("bad_report", "invalid_chunk", ""),
    ("status", "http_status", ""),
    ("network", "network", ""),
    ("stopped", "aborted", "so far"),
])
def test_each_failure_ends_with_the_core_s_code_and_the_text_so_far(
        out: dict[str, Any], case: str, code: str, partial: str) -> None:
    end = out["failing"][case]
    assert end["type"] == "chat.error" and end["id"] == "r1"
    assert end["error"]["code"] == code and end["error"]["partial"] == partial
    assert end["error"]["message"]
    if case == "status":
        assert end["error"]["status"] == 401 and end["error"]["message"] == "Incorrect API key provided."


def test_only_this_gateway_in_any_api(out: dict[str, Any]) -> None:
    assert out["sendsEarly"] == [True, False, True, True]


@pytest.mark.parametrize("api, path, text_field", [
    ("responses", "/responses", "input"), ("anthropic_messages", "/messages", "messages"),
])
def test_responses_and_messages_streams_give_the_same_events(out: dict[str, Any], api: str, path: str,
                                                             text_field: str) -> None:
    for name in ("whole", "bytewise", "sevens"):
        got = out["apis"][f"{api}-{name}"]
        assert got["request"]["url"] == "http://gw.test/v1" + path
        assert got["request"]["body"][text_field] == [{"role": "user", "content": "hi"}]
        assert got["request"]["headers"]["x-firsttoken-prepare"] == "max"
        assert got["text"] == "Déjà vu 🙂\u2028 fin", name
        assert got["reasoning"] == "Hm.", name
        end = got["end"]
        assert end["type"] == "chat.done" and end["finish_reason"] == "stop", name
        assert end["usage"]["prompt_tokens"] == 12 and end["usage"]["completion_tokens"] == 3, name
    messages = out["apis"]["anthropic_messages-whole"]["request"]
    assert messages["headers"]["x-api-key"] == "sk-user" and messages["headers"]["anthropic-version"] == "2023-06-01"
    assert messages["body"]["max_tokens"] > 0
    cut = out["apis"][f"{api}-cut"]
    assert cut["type"] == "chat.error" and cut["error"]["code"] == "truncated"
