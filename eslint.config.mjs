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
    },
  },
  {
    // Scripts Node runs (the install-time snapshot's baking, the benchmarks' Node parts).
    files: ['js/boot/bake-snapshot.js', '**/*.mjs'],
    languageOptions: { globals: { ...globals.node } },
  },
];
