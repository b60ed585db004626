// Prints what this JavaScript engine's Unicode tables add to Unicode 16.0, the version
// tiktoken's regex tables have: code points it assigns that 16.0 leaves unassigned, and
// letters, marks or numbers whose general category differs. js/tokenizer/split.js subtracts
// them (NEW_IN_17, LL_IN_16) so that its split pattern classifies like tiktoken's.
// Unicode 16.0 is read from Python 3.14's unicodedata, through Pyodide (node_modules).
//
//     node tests/corpus/tokens/unicode_after_16.mjs     # ~10 s
import { loadPyodide } from '../../../node_modules/pyodide/pyodide.mjs';

const pyodide = await loadPyodide();
const version = pyodide.runPython('import unicodedata; unicodedata.unidata_version');
const categories = pyodide.runPython(
  '"".join(unicodedata.category(chr(c)) for c in range(0x110000))',
);
const unassigned = /\p{Cn}/u;
const tested = ['Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'Mn', 'Mc', 'Me', 'Nd', 'Nl', 'No'];
const patterns = tested.map((gc) => [gc, new RegExp(`\\p{gc=${gc}}`, 'u')]);

const added = [];
const changed = [];
for (let c = 0; c < 0x110000; c++) {
  const old = categories.slice(2 * c, 2 * c + 2);
  const char = String.fromCodePoint(c);
  if (old === 'Cn') {
    if (!unassigned.test(char)) {
      const last = added[added.length - 1];
      if (last && last[1] === c - 1) last[1] = c;
      else added.push([c, c]);
    }
    continue;
  }
  const now = patterns.find(([, re]) => re.test(char))?.[0] ?? 'other';
  if ((tested.includes(old) ? old : 'other') !== now) changed.push(`U+${c.toString(16)} ${old} -> ${now}`);
}
const hex = (c) => `0x${c.toString(16)}`;
console.log(`Unicode ${version} (Python) vs this engine (${process.versions.unicode}):`);
console.log(`assigned only here: ${added.reduce((n, [a, b]) => n + b - a + 1, 0)} code points`);
console.log(added.map(([a, b]) => `[${hex(a)}, ${hex(b)}]`).join(', '));
console.log(`category changed: ${changed.join(', ') || 'none'}`);
