// Encodes every golden case with npm tiktoken's WASM build (an implementation and a rank
// parser independent of tiktoken on CPython) and prints {name: {encoding: ids}} as JSON.
// Usage: node tests/corpus/tokens/npm_tiktoken_ids.cjs [golden.json]
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { Tiktoken } = require('tiktoken/lite');

const goldenPath = process.argv[2] || path.join(__dirname, 'golden.json');
const { cases } = JSON.parse(fs.readFileSync(goldenPath, 'utf8'));
const out = {};
for (const encoding of ['cl100k_base', 'o200k_base']) {
  const data = require(`tiktoken/encoders/${encoding}.json`);
  const enc = new Tiktoken(data.bpe_ranks, data.special_tokens, data.pat_str);
  for (const { name, text } of cases) {
    (out[name] ??= {})[encoding] = Array.from(enc.encode_ordinary(text));
  }
  enc.free();
}
process.stdout.write(JSON.stringify(out));
