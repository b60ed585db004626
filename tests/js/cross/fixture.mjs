// What the Python side computed for a cross-check, handed over by its pytest test
// (harness/node.py: the file named by FIRSTTOKEN_JS_FIXTURE). Run alone, without one, a
// cross-check fails at once, saying how to run it, rather than pass having checked nothing.

import { readFileSync } from 'node:fs';

const where = process.env.FIRSTTOKEN_JS_FIXTURE;
if (!where) {
  throw new Error('no fixture: cross-checks run from their pytest test (tests/unit/test_js.py names them), '
    + 'which computes the Python side and passes it in FIRSTTOKEN_JS_FIXTURE');
}
/** Python's side of the cross-check, as its test wrote it. */
export const fixture = JSON.parse(readFileSync(where, 'utf8'));
