// Bench only (bench/sse.py via harness/bench_page.py): the same SSE bytes, cut into the same
// network chunks, decoded to events in this page by firsttoken.stream.sse.SSEDecoder in Pyodide
// and by npm eventsource-parser, interleaved, in one run.
//
// Query: ?repeat=R. Data: /bench/data/stream.bin (the body) and
// /bench/data/chunk_lengths.json (where the network cut it). Result in
// window.benchResult, then <html data-bench="done">; see harness/bench_page.py.
import { loadPyodide } from '/vendor/pyodide/pyodide.mjs';
import { createParser } from '/bench/node_modules/eventsource-parser/dist/index.js';

const PY_SETUP = `
import gc
from firsttoken.stream.sse import SSEDecoder

def load_chunks(body, lengths):
    global CHUNKS
    data = body.to_bytes()
    CHUNKS = []
    pos = 0
    for n in lengths:
        CHUNKS.append(data[pos : pos + n])
        pos += n
    assert pos == len(data)

def count_events():
    # What a reader of the stream does: feed each chunk, take its events.
    decoder = SSEDecoder()
    feed = decoder.feed
    n = 0
    for chunk in CHUNKS:
        n += len(feed(chunk))
    decoder.close()
    return n

def event_data():
    decoder = SSEDecoder()
    return [event.data for chunk in CHUNKS for event in decoder.feed(chunk)]
`;

async function fetchOk(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

// A page reading fetch() gets bytes; eventsource-parser takes strings, so a streaming
// TextDecoder is part of its cost, as in any page that uses it.
function eventsourceParserCount(chunks) {
  let n = 0;
  const parser = createParser({ onEvent() { n++; } });
  const text = new TextDecoder();
  for (const chunk of chunks) parser.feed(text.decode(chunk, { stream: true }));
  parser.feed(text.decode());
  return n;
}

function eventsourceParserData(chunks) {
  const out = [];
  const parser = createParser({ onEvent(event) { out.push(event.data); } });
  const text = new TextDecoder();
  for (const chunk of chunks) parser.feed(text.decode(chunk, { stream: true }));
  parser.feed(text.decode());
  return out;
}

function timed(fn) {
  globalThis.gc?.();
  const start = performance.now();
  const n = fn();
  return [performance.now() - start, n];
}

async function main() {
  const repeat = Number(new URLSearchParams(location.search).get('repeat') ?? 7);
  const t0 = performance.now();
  const pyodide = await loadPyodide({ indexURL: '/vendor/pyodide/' });
  const zip = await (await fetchOk('/py/firsttoken.zip')).arrayBuffer();
  pyodide.unpackArchive(zip, 'zip');
  pyodide.runPython(PY_SETUP);
  const bootMs = performance.now() - t0;

  const body = new Uint8Array(await (await fetchOk('/bench/data/stream.bin')).arrayBuffer());
  const lengths = await (await fetchOk('/bench/data/chunk_lengths.json')).json();
  // Both decoders get the same chunks, made once, before any timing: views here, one
  // transfer of the whole body into Python there.
  const chunks = [];
  let pos = 0;
  for (const n of lengths) {
    chunks.push(body.subarray(pos, pos + n));
    pos += n;
  }
  const py = (name) => pyodide.globals.get(name);
  py('load_chunks')(body, lengths);
  const pyCount = py('count_events');
  const pyCollect = () => pyodide.runPython('gc.collect()');

  // Agreement, event for event, before any timing (and a warm-up for both).
  const pyData = py('event_data')().toJs();
  const jsData = eventsourceParserData(chunks);
  if (pyData.length !== jsData.length) {
    throw new Error(`event counts differ: pyodide ${pyData.length}, eventsource-parser ${jsData.length}`);
  }
  const differ = pyData.findIndex((data, i) => data !== jsData[i]);
  if (differ >= 0) throw new Error(`event ${differ} differs between the decoders`);

  // Interleaved, alternating who goes first, so drift and other load hit both alike.
  const pyMs = [];
  const jsMs = [];
  const runPy = () => { pyCollect(); const [ms, n] = timed(pyCount); pyMs.push(ms); return n; };
  const runJs = () => { const [ms, n] = timed(() => eventsourceParserCount(chunks)); jsMs.push(ms); return n; };
  for (let i = 0; i < repeat; i++) {
    const counts = i % 2 ? [runJs(), runPy()] : [runPy(), runJs()];
    if (counts.some((n) => n !== jsData.length)) throw new Error(`a timed run counted ${counts}`);
  }

  window.benchResult = {
    events: jsData.length,
    bytes: body.length,
    chunks: chunks.length,
    repeat,
    pyodide_ms: pyMs,
    eventsource_parser_ms: jsMs,
    boot_ms: bootMs,
    python: pyodide.runPython('import sys; sys.version.split()[0]'),
  };
}

main().then(
  () => { document.documentElement.dataset.bench = 'done'; },
  (error) => {
    window.benchError = String(error?.stack ?? error);
    document.documentElement.dataset.bench = 'error';
  },
);
