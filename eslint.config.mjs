// The JavaScript half of the gate (`make lint`; issue 47): ESLint's recommended rules,
// which are the ones that find bugs (undefined and unused names, unreachable code,
// duplicate keys, …), over the page (js/, bridge/page/, sw.js), the benchmarks' pages
// and the tests' JavaScript. Types: tsconfig.json (`tsc --checkJs` over the files that
// say `// @ts-check`). A suppression names its reason on its line.
import js from '@eslint/js';
import globals from 'globals';

export default [
  { ignores: ['node_modules/**', 'build/**', 'vendor/**', 'tests/corpus/**'] },
  js.configs.recommended,
  {
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      // The page's modules run on the main thread, in workers and in the service worker.
      globals: { ...globals.browser, ...globals.worker, ...globals.serviceworker },
    },
    rules: {
      // `_name` says "unused on purpose" (a destructured field left out, a callback's
      // argument kept for its position).
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // No function over about 80 lines without a reason written at its head (issue 47,
      // item 3): lines of code, not of blank lines or comments, so that a reason costs
      // nothing; a function that stays longer says why at its head and disables this on
      // the line before it, naming that reason.
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  {
    // The page's first step is one IIFE by design: a classic script with no imports,
    // copied inline into index.html's head by gateway/build/inline.mjs without its
    // comments, and hashed by the page's CSP (its head says why). A disable comment in
    // it would be stripped from the copy along with the rest; the exception lives here.
    files: ['js/boot/first-send.js'],
    rules: { 'max-lines-per-function': 'off' },
  },
  {
    // Scripts Node runs (the install-time snapshot's baking, the benchmarks' Node parts).
    files: ['js/boot/bake-snapshot.js', '**/*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
];
