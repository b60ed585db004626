// firsttoken's service worker: after a first visit the page loads, and Python boots,
// with no network at all.
//
// The gateway serves this file at /sw.js with one line before it:
//   self.FIRSTTOKEN_BUILD = {"build": "<id>", "assets": ["./", "js/link/python-link.js", ...]};
// naming every file the page needs (gateway/offline.py finds them) and a build id
// hashed from their contents. A new release therefore changes this script's bytes,
// which is what makes the browser install a new worker.
//
// Releases are atomic:
// - install fetches every asset into a cache named after the build. addAll() stores
//   all of them or none; a failed install leaves the old worker in charge and its
//   cache untouched. https://w3c.github.io/ServiceWorker/#cache-addAll
// - the new worker waits (no skipWaiting) until no page runs the old build, so a
//   running page never mixes the files of two releases; it then activates, deletes
//   the other builds' caches and takes over.
// - every request is answered from the one cache of the worker's own build.
//
// Cached responses keep the headers the gateway sent, including
// Cross-Origin-Opener-Policy / -Embedder-Policy and the CSP, so a page served from
// the cache is cross-origin isolated exactly like one from the network (PyScript's
// worker needs that). All but two: the gateway may send brotli or gzip
// (gateway/precompressed.py), and fetch() hands us the decoded body; a copy still saying
// `content-encoding: br` and the encoded length would describe bytes it does not hold.

const { build: BUILD, assets: ASSETS } = self.FIRSTTOKEN_BUILD;
const PREFIX = 'firsttoken-assets-';
const CACHE = PREFIX + BUILD;
const SCOPE = new URL(self.registration.scope);
const PAGE = new URL('./', SCOPE).href;
// Kept when first fetched rather than precached: large data the page may never ask
// for (tokenizer vocabularies), under the same build cache.
const KEEP_ON_FETCH = /^(?:vendor|js)\//;

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    try {
      // `no-cache`: revalidate with the gateway rather than trust the HTTP cache, so
      // the build's files are the ones the gateway serves now. All fetched before any
      // is stored, as addAll() does, but stored as `decoded()` copies.
      const requests = ASSETS.map((path) => new Request(new URL(path, SCOPE), { cache: 'no-cache' }));
      const responses = await Promise.all(requests.map((request) => fetch(request)));
      responses.forEach((response, i) => {
        if (!response.ok) throw new TypeError(`${requests[i].url}: ${response.status}`);
      });
      await Promise.all(requests.map((request, i) => cache.put(request, decoded(responses[i]))));
    } catch (error) {
      await caches.delete(CACHE);
      throw error;
    }
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== SCOPE.origin || !url.href.startsWith(SCOPE.href)) return;
  const path = url.pathname.slice(SCOPE.pathname.length);
  if (request.mode === 'navigate') {
    // The page, whatever its query (`?warmup=1`); any other navigation is not ours.
    if (path === '' || path === 'index.html') event.respondWith(fromCache(PAGE, request));
    return;
  }
  if (ASSETS.includes(path) || KEEP_ON_FETCH.test(path)) event.respondWith(fromCache(request, request));
});

// Opened once per worker start rather than once per request: a warm boot asks for
// dozens of files within a few hundred milliseconds.
let opened = null;

async function fromCache(key, request) {
  // Storage trouble (no Cache Storage, a full quota) must never cost the page its
  // response: the network still answers, we just keep no copy.
  let cache = null;
  try {
    cache = await (opened ??= caches.open(CACHE));
    const hit = await cache.match(key);
    if (hit) return hit;
  } catch {
    opened = null;
  }
  const response = await fetch(request);
  const path = new URL(request.url).pathname.slice(SCOPE.pathname.length);
  if (cache && response.ok && KEEP_ON_FETCH.test(path) && !response.headers.get('cache-control')?.includes('no-store')) {
    try {
      await cache.put(request, decoded(response.clone()));
    } catch {
      // QuotaExceededError: served, not kept.
    }
  }
  return response;
}

// `response` as it is to be kept: its decoded body, without the headers that described
// the encoded transfer (https://fetch.spec.whatwg.org/#concept-response-body: fetch()
// decodes; the headers are left as received).
function decoded(response) {
  if (!response.headers.has('content-encoding')) return response;
  const headers = new Headers(response.headers);
  headers.delete('content-encoding');
  headers.delete('content-length');
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}
