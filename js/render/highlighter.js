// Syntax highlighting by highlight.js: the languages we know, the names models put after
// a fence for them, and a block's source made into highlight.js's HTML.
//
// This runs in the highlighting worker (highlight-worker.js), off the thread that paints:
// a language's first use compiles its rules, and highlighting is ~1 MB/s for Python on a
// fast core, a quarter of that on a phone, so on the main thread each finished block
// was a task that delayed the answer's next frames. Where module workers are missing,
// code-blocks.js runs it on the main thread instead.
//
// highlight.js's core (19 KB as brotli) is imported with the first block that needs it,
// and each language's module (1–6 KB) with the first block in that language: a
// conversation without code fetches none of it. Every module is named below by a
// literal import, so the service worker keeps them all for offline use
// (gateway/offline.py follows literal imports, and the worker's `new URL`).

const LANGUAGES = {
  bash: () => import('../../vendor/highlight.js/languages/bash.js'),
  c: () => import('../../vendor/highlight.js/languages/c.js'),
  cpp: () => import('../../vendor/highlight.js/languages/cpp.js'),
  csharp: () => import('../../vendor/highlight.js/languages/csharp.js'),
  css: () => import('../../vendor/highlight.js/languages/css.js'),
  diff: () => import('../../vendor/highlight.js/languages/diff.js'),
  dockerfile: () => import('../../vendor/highlight.js/languages/dockerfile.js'),
  go: () => import('../../vendor/highlight.js/languages/go.js'),
  graphql: () => import('../../vendor/highlight.js/languages/graphql.js'),
  ini: () => import('../../vendor/highlight.js/languages/ini.js'),
  java: () => import('../../vendor/highlight.js/languages/java.js'),
  javascript: () => import('../../vendor/highlight.js/languages/javascript.js'),
  json: () => import('../../vendor/highlight.js/languages/json.js'),
  kotlin: () => import('../../vendor/highlight.js/languages/kotlin.js'),
  less: () => import('../../vendor/highlight.js/languages/less.js'),
  lua: () => import('../../vendor/highlight.js/languages/lua.js'),
  makefile: () => import('../../vendor/highlight.js/languages/makefile.js'),
  markdown: () => import('../../vendor/highlight.js/languages/markdown.js'),
  objectivec: () => import('../../vendor/highlight.js/languages/objectivec.js'),
  perl: () => import('../../vendor/highlight.js/languages/perl.js'),
  php: () => import('../../vendor/highlight.js/languages/php.js'),
  powershell: () => import('../../vendor/highlight.js/languages/powershell.js'),
  python: () => import('../../vendor/highlight.js/languages/python.js'),
  r: () => import('../../vendor/highlight.js/languages/r.js'),
  ruby: () => import('../../vendor/highlight.js/languages/ruby.js'),
  rust: () => import('../../vendor/highlight.js/languages/rust.js'),
  scss: () => import('../../vendor/highlight.js/languages/scss.js'),
  shell: () => import('../../vendor/highlight.js/languages/shell.js'),
  sql: () => import('../../vendor/highlight.js/languages/sql.js'),
  swift: () => import('../../vendor/highlight.js/languages/swift.js'),
  typescript: () => import('../../vendor/highlight.js/languages/typescript.js'),
  xml: () => import('../../vendor/highlight.js/languages/xml.js'),
  yaml: () => import('../../vendor/highlight.js/languages/yaml.js'),
};
const loadCore = () => import('../../vendor/highlight.js/core.js');

// The names models put after a fence, for the languages above.
const ALIASES = {
  sh: 'bash', zsh: 'bash', h: 'c', cc: 'cpp', 'c++': 'cpp', hpp: 'cpp', cxx: 'cpp', hh: 'cpp',
  cs: 'csharp', 'c#': 'csharp', patch: 'diff', docker: 'dockerfile', golang: 'go', gql: 'graphql',
  toml: 'ini', js: 'javascript', jsx: 'javascript', mjs: 'javascript', cjs: 'javascript', node: 'javascript',
  jsonc: 'json', json5: 'json', kt: 'kotlin', kts: 'kotlin', make: 'makefile', mk: 'makefile',
  md: 'markdown', objc: 'objectivec', 'objective-c': 'objectivec', pl: 'perl', ps1: 'powershell',
  pwsh: 'powershell', py: 'python', python3: 'python', py3: 'python', rb: 'ruby', rs: 'rust',
  console: 'shell', shellsession: 'shell', ts: 'typescript', tsx: 'typescript', mts: 'typescript',
  html: 'xml', xhtml: 'xml', svg: 'xml', plist: 'xml', yml: 'yaml', postgresql: 'sql', mysql: 'sql', sqlite: 'sql',
};

/** The language highlight.js knows a fence's `lang` by, or null. */
export function languageOf(lang) {
  const name = String(lang || '').toLowerCase();
  if (Object.hasOwn(LANGUAGES, name)) return name;
  return Object.hasOwn(ALIASES, name) ? ALIASES[name] : null;
}

let core = null; // the highlight.js instance, once imported
const loading = new Map(); // language → Promise of its registration

function registered(language) {
  let promise = loading.get(language);
  if (!promise) {
    promise = Promise.all([loadCore(), LANGUAGES[language]()]).then(([c, definition]) => {
      core ??= c.default;
      if (!core.getLanguage(language)) core.registerLanguage(language, definition.default);
    });
    promise.catch(() => loading.delete(language)); // tried again by a later block
    loading.set(language, promise);
  }
  return promise;
}

/** highlight.js's HTML for `source` in `language` (a name languageOf gave). Rejects
 * when the language cannot be loaded (offline before it was ever kept, say). */
export async function highlightHTML(language, source) {
  if (!Object.hasOwn(LANGUAGES, language)) throw new Error(`no such language: ${language}`);
  await registered(language);
  return core.highlight(source, { language, ignoreIllegals: true }).value;
}
