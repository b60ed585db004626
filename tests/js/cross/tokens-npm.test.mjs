// npm tiktoken (Rust compiled to WASM, with its own parser of the same rank files) gives
// the golden ids too, so tests/corpus/tokens/golden.json is not just CPython tiktoken
// agreeing with itself; and it gives the ids our own tokenizer (firsttoken.tokens)
// gives on this run. The cases, the golden ids and ours come from
// tests/unit/test_tokens_exact.py.

import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';

import { fixture } from './fixture.mjs';

const require = createRequire(import.meta.url);
const { Tiktoken } = require('tiktoken/lite');

for (const encoding of fixture.encodings) {
  test(`npm tiktoken gives the golden ids, and ours: ${encoding}`, () => {
    const data = require(`tiktoken/encoders/${encoding}.json`);
    const enc = new Tiktoken(data.bpe_ranks, data.special_tokens, data.pat_str);
    try {
      assert.ok(fixture.cases.length > 0);
      for (const { name, text, golden, ours } of fixture.cases) {
        const npm = Array.from(enc.encode_ordinary(text));
        assert.deepEqual(npm, golden[encoding], `${name} ${encoding}: npm against golden.json`);
        assert.deepEqual(npm, ours[encoding], `${name} ${encoding}: npm against firsttoken.tokens`);
      }
    } finally {
      enc.free();
    }
  });
}
