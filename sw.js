// firsttoken's service worker: after a first visit the page loads, and Python boots,
// with no network at all.
//
// The gateway serves this file at /sw.js with one line before it:
//   self.FIRSTTOKEN_BUILD = {"build": "<id>", "assets": ["./", "js/link/python-link.js", ...],
//                            "headers": {"content-security-policy": "...", ...}};
// naming every file the page needs (gateway/offline.py finds them), the gateway's
// security headers, and a build id hashed from both. A new release, or a gateway
// restarted with another policy, therefore changes this script's bytes, which is what
// makes the browser install a new worker.
//
// Releases are atomic:
// - install fetches every asset into a cache named after the build. addAll() stores
//   all of them or none; a failed install leaves the old worker in charge and its
//   cache untouched. https://w3c.github.io/ServiceWorker/#cache-addAll
// - the new worker waits (no skipWaiting) until no page runs the old build, so a
//   running page never mixes the files of two releases; it then activates, deletes
//   the other builds' caches and takes over.
// - every request is answered from the one cache of the worker's own build (under the
//   newest policy the worker has seen: "Headers", below), by the browser itself where
//   it can ("Static routes", below).
//
// Headers. A copy that the policy governs (below) is never served with the headers a
// response carried the day it was fetched, but under the worker's policy: the security
// headers of its build (FIRSTTOKEN_BUILD.headers: COOP/COEP, CORP, the CSP, ...; null
// where the gateway sends none, as under `--no-isolation`), or a newer one the gateway
// has sent with the page since (below). The policy is part of the build id (gateway/offline.py), so a gateway
// restarted with another policy also serves a new worker script, which installs. COOP
// and COEP therefore stay on every copy while the gateway isolates, as PyScript's worker
// needs. Two headers are also dropped: the gateway may send brotli or gzip
// (gateway/precompressed.py), and fetch() hands us the decoded body; a copy still
// saying `content-encoding: br` and the encoded length would describe bytes it does not
// hold.
//
// The page itself (the navigation) is asked of the network first, every time, because a
// new worker takes over only once no page runs the old one, and a revoked embedder must
// not wait for that: a stricter `--frame-ancestors` (read from the document's response)
// or `connect-src` (also from each worker script's) must hold from the next load that
// reaches the gateway. The answer's security headers become the worker's policy, stored
// with the page's copy; but the body stays this build's: a new release's index.html must
// not run on this build's files (see "Releases are atomic"). With no answer (offline, or
// an error status), the copy is served, under the newest policy this worker has seen.
//
// Which copies the policy governs: the page and worker scripts, whose CSP, COEP and
// frame-ancestors the browser enforces. A module, the wasm or a zip is fetched
// same-origin by a document or worker that is already under the policy, and no header of
// its own changes what it may do; those copies keep the build's policy they were
// stored with, and the static routes serve them.
//
// Bounded wait: the network gets PAGE_WAIT_MS, then the copy answers. Without it, a hung
// network (a link that accepts and never answers, a phone between cells) would hold the
// page until the browser's own timeouts, which run to minutes: the page must load with no
// working network, not only with none at all. It concedes nothing an attacker on the
// network lacks already: one who can delay the answer can drop it, and then the copy
// answers anyway. What it costs: a load whose answer takes longer than this gets the
// policy seen last; the late answer is still stored (waitUntil), so the next load has it.
//
// Bounds. Files kept on first fetch (KEEP_ON_FETCH) are stored under their path, without
// the query (the gateway's static files do not depend on it), so `?1`, `?2`, ... cannot
// each take a copy. At most KEPT_ENTRIES of them, KEPT_BYTES together; past either, the
// oldest kept go first (Cache Storage lists entries in the order they were stored:
// https://w3c.github.io/ServiceWorker/#cache-keys). The precached files are not counted:
// the manifest bounds them.

const { build: BUILD, assets: ASSETS, headers: POLICY = {} } = self.FIRSTTOKEN_BUILD;
const PREFIX = 'firsttoken-assets-';
const CACHE = PREFIX + BUILD;
const SCOPE = new URL(self.registration.scope);
const PAGE = new URL('./', SCOPE).href;
const PRECACHED = new Set(ASSETS.map((path) => new URL(path, SCOPE).href));
// Kept when first fetched rather than precached: large data the page may never ask
// for (tokenizer vocabularies, 2.4 MB for the two), under the same build cache.
const KEEP_ON_FETCH = /^(?:vendor|js)\//;
const KEPT_ENTRIES = 24;
const KEPT_BYTES = 8 * 1024 * 1024;
// index.html is 2 kB: a gateway that answers at all answers within this.
const PAGE_WAIT_MS = 4000;

// Static routes (Chromium 123+: https://w3c.github.io/ServiceWorker/#dom-installevent-addroutes):
// the build's own files are answered from its cache by the browser itself, without a
// trip through this script. A warm boot asks for about 60 files at once, and this
// worker, answering one after another on its one thread, took about 170 ms to serve
// them on a phone-class CPU, the worker's start among them. Left to the fetch handler:
// navigations and worker scripts, whose headers carry the policy (CSP, COEP) and must
// be the newest seen ("Headers", above); anything with a query ("Bounds"); the files
// kept on fetch. A file missing from the cache goes to the network, as the spec's
// cache source does. Where addRoutes is missing (WebKit), the fetch handler does it all.
function staticRoutes() {
  const files = [...PRECACHED].filter((url) => url !== PAGE).map((url) => ({
    urlPattern: { pathname: new URL(url).pathname.replace(/[\\:*?+(){}]/g, '\\$&'), search: '' },
  }));
  return [
    { condition: { requestMode: 'navigate' }, source: 'fetch-event' },
    { condition: { requestDestination: 'worker' }, source: 'fetch-event' },
    { condition: { or: files }, source: { cacheName: CACHE } },
  ];
}

self.addEventListener('install', (event) => {
  if (typeof event.addRoutes === 'function') {
    // A refusal (a pattern this engine rejects, a rule limit) only costs the speed-up.
    event.addRoutes(staticRoutes()).catch((error) => console.warn('firsttoken: no static routes:', error));
  }
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    try {
      // `no-cache`: revalidate with the gateway rather than trust the HTTP cache, so
      // the build's files are the ones the gateway serves now. All fetched before any
      // is stored, as addAll() does, but stored as `stored()` copies.
      const requests = ASSETS.map((path) => new Request(new URL(path, SCOPE), { cache: 'no-cache' }));
      const responses = await Promise.all(requests.map((request) => fetch(request)));
      responses.forEach((response, i) => {
        if (!response.ok) throw new TypeError(`${requests[i].url}: ${response.status}`);
      });
      await Promise.all(requests.map((request, i) => cache.put(request, stored(responses[i]))));
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

// ---- Reply ready (issue 46, item 4) ---------------------------------------------------
// The page shows a notification through this worker's registration when an answer is done
// while it is hidden (js/page/notify.js: title, first words, `data.conversation`, one tag
// per conversation). A tap on it brings the page back on that conversation: a window of
// ours already open is told (`conversation.open`) and focused; with none, one is opened
// at `./#conversation=<id>`, which the page reads as it starts. Only windows in our scope
// are ours to reuse. https://notifications.spec.whatwg.org/#activating-a-notification
self.addEventListener('notificationclick', (event) => {
  const id = event.notification.data?.conversation;
  event.notification.close();
  // Started before waitUntil, which only lends the worker time to finish it.
  const opening = openConversation(typeof id === 'string' ? id : null);
  event.waitUntil(opening);
});

async function openConversation(id) {
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((client) => client.url.startsWith(SCOPE.href));
  if (open) {
    if (id) open.postMessage({ type: 'conversation.open', conversation: id });
    // focus() is allowed only while the click lends its user activation; past it the
    // page has been told already, and stays where it is.
    await open.focus().catch(() => {});
    return;
  }
  const url = new URL('./', SCOPE);
  if (id) url.hash = `conversation=${encodeURIComponent(id)}`;
  await self.clients.openWindow(url.href);
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== SCOPE.origin || !url.href.startsWith(SCOPE.href)) return;
  const path = url.pathname.slice(SCOPE.pathname.length);
  if (request.mode === 'navigate') {
    // The page, whatever its query (`?warmup=1`); any other navigation is not ours.
    if (path === '' || path === 'index.html') event.respondWith(thePage(event));
    return;
  }
  // Keyed by path: the query does not change what the gateway serves ("Bounds").
  const key = url.origin + url.pathname;
  if (key !== PAGE && (PRECACHED.has(key) || KEEP_ON_FETCH.test(path))) event.respondWith(fromCache(key, event));
});

// Opened once per worker start rather than once per request: a warm boot asks for
// dozens of files within a few hundred milliseconds. Storage trouble (no Cache Storage,
// a full quota) must never cost the page its response: the network still answers, we
// just keep no copy (null).
let opened = null;

async function openCache() {
  try {
    return await (opened ??= caches.open(CACHE));
  } catch {
    opened = null;
    return null;
  }
}

// The newest policy this worker has seen: its build's, or one the gateway has sent with
// the page since. It is kept as the page copy's headers, so that a worker started again
// (offline, say) finds it; every copy is served under it.
let policy = null;

async function currentPolicy(cache) {
  if (policy) return policy;
  let copy = null;
  try {
    copy = await cache?.match(PAGE);
  } catch {
    // as no copy
  }
  // The copy carries each header the policy sends and lacks each it does not.
  return (policy ??= copy ? Object.fromEntries(Object.keys(POLICY).map((name) => [name, copy.headers.get(name)])) : POLICY);
}

async function fromCache(key, event) {
  const cache = await openCache();
  try {
    const hit = await cache?.match(key);
    if (hit) return underPolicy(hit, await currentPolicy(cache));
  } catch {
    // as no copy
  }
  const response = await fetch(event.request);
  if (cache && response.ok && !PRECACHED.has(key) && !response.headers.get('cache-control')?.includes('no-store')) {
    // Stored before it is answered: once the page has it, so has the cache.
    await keep(cache, key, response.clone());
  }
  return response;
}

// Kept-on-fetch copies are stored one at a time, so that two at once cannot both find
// room for themselves in the same free space.
let keeping = Promise.resolve();

function keep(cache, key, response) {
  keeping = keeping.then(async () => {
    const body = await response.arrayBuffer();
    if (body.byteLength > KEPT_BYTES) return;
    const kept = [];
    let total = body.byteLength;
    for (const request of await cache.keys()) {
      if (PRECACHED.has(request.url) || request.url === key) continue;
      const size = Number((await cache.match(request))?.headers.get('content-length')) || 0;
      kept.push({ request, size });
      total += size;
    }
    while (kept.length && (kept.length + 1 > KEPT_ENTRIES || total > KEPT_BYTES)) {
      const oldest = kept.shift();
      await cache.delete(oldest.request);
      total -= oldest.size;
    }
    const headers = storedHeaders(response.headers, await currentPolicy(cache));
    headers.set('content-length', String(body.byteLength)); // what the copy holds: the bound counts it
    await cache.put(key, new Response(body, { status: response.status, statusText: response.statusText, headers }));
  }).catch(() => {
    // QuotaExceededError, a body cut off: served, not kept.
  });
  return keeping;
}

async function thePage(event) {
  const cache = await openCache();
  const network = fetch(new Request(PAGE, { cache: 'no-cache' }));
  if (!cache) return network;
  const refreshed = network.then((response) => refreshPage(cache, response), () => null);
  event.waitUntil(refreshed);
  let timer;
  const waited = new Promise((resolve) => { timer = setTimeout(resolve, PAGE_WAIT_MS, null); });
  const answer = await Promise.race([refreshed, waited]);
  clearTimeout(timer);
  if (answer) return answer;
  try {
    const copy = await cache.match(PAGE);
    if (copy) return underPolicy(copy, await currentPolicy(cache));
  } catch {
    // as no copy
  }
  return network;
}

// The kept page under the policy of the gateway's `response`, which becomes the worker's
// (and is stored with the copy, so that the next load offline has it too); null when the
// response is no page to trust.
async function refreshPage(cache, response) {
  if (!response.ok || response.redirected) return null;
  // Only the headers the policy governs, and only those the answer has: an answer
  // without a CSP (a proxy's page, say) must not take the worker's away.
  const next = { ...(await currentPolicy(cache)) };
  for (const name of Object.keys(POLICY)) {
    const value = response.headers.get(name);
    if (value !== null) next[name] = value;
  }
  policy = next;
  try {
    const copy = await cache.match(PAGE);
    if (!copy) {
      await cache.put(PAGE, stored(response.clone(), next));
      return response;
    }
    response.body?.cancel();
    const body = await copy.arrayBuffer();
    const init = { status: copy.status, statusText: copy.statusText, headers: storedHeaders(copy.headers, next) };
    await cache.put(PAGE, new Response(body, init));
    return new Response(body, init);
  } catch {
    return null;
  }
}

// `response` as it is to be kept: its decoded body, under `policy` (install: the build's).
function stored(response, policy = POLICY) {
  return new Response(response.body, {
    status: response.status, statusText: response.statusText, headers: storedHeaders(response.headers, policy),
  });
}

// A copy as it is served: under the newest policy, whatever it was stored with. A copy
// already under it is answered as Cache Storage gave it, not rebuilt: the browser keys
// its code cache by the cached response (Chromium compiles the 9.6 MB interpreter's
// wasm, and the worker's scripts, once and reuses the code on later boots), which a
// new Response over the same body is not.
function underPolicy(copy, policy) {
  const ruled = Object.entries(policy).every(([name, value]) => copy.headers.get(name) === value);
  if (ruled) return copy;
  return new Response(copy.body, { status: copy.status, statusText: copy.statusText, headers: withPolicy(copy.headers, policy) });
}

// The headers of a copy: the policy's, not the ones received; without those that described
// the encoded transfer (https://fetch.spec.whatwg.org/#concept-response-body: fetch()
// decodes; the headers are left as received).
function storedHeaders(received, policy) {
  const headers = withPolicy(received, policy);
  if (headers.has('content-encoding')) {
    headers.delete('content-encoding');
    headers.delete('content-length');
  }
  return headers;
}

function withPolicy(received, policy) {
  const headers = new Headers(received);
  for (const [name, value] of Object.entries(policy)) {
    if (value === null) headers.delete(name);
    else headers.set(name, value);
  }
  return headers;
}

// ---- Share target (issue 46, item 3) -------------------------------------------------
// The installed web app's Web Share Target (manifest.webmanifest, `share_target`: Android
// Chrome): the share sheet POSTs a multipart form (title, text, url, images) to
// SHARE_ACTION as a navigation. The worker keeps the form as it came, in a cache of its
// own, and sends the page to `./?share=<key>` (303, so a reload does not post again);
// the page takes it from there once and fills the composer (js/page/share.js).
// https://w3c.github.io/web-share-target/#handling-incoming-shares
// Bounds: one share kept at a time (a share the page never took goes when the next
// comes), and SHARE_MAX_BYTES a form: the photos come at full size (a phone's is 3-15
// MB) and are shrunk by the page; past this the form is refused before it is stored,
// and the page says so (`?share=refused`). The sharing app still has what it shared.
const SHARE_ACTION = new URL('share-target', SCOPE).href;
const SHARE_CACHE = 'firsttoken-share';
const SHARE_MAX_BYTES = 32 * 1024 * 1024;

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'POST' || request.url.split(/[?#]/)[0] !== SHARE_ACTION) return;
  event.respondWith(keepShare(request));
});

async function keepShare(request) {
  const page = new URL('./', SCOPE);
  let key = 'refused';
  try {
    const type = request.headers.get('content-type') ?? '';
    const body = /^(multipart\/form-data|application\/x-www-form-urlencoded)\b/i.test(type) ? await boundedBody(request, SHARE_MAX_BYTES) : null;
    if (body) {
      const cache = await caches.open(SHARE_CACHE);
      for (const old of await cache.keys()) await cache.delete(old);
      const id = crypto.randomUUID();
      await cache.put(new URL(`share-target/${id}`, SCOPE).href, new Response(body, { headers: { 'content-type': type } }));
      key = id;
    }
  } catch {
    // unreadable, or no room to keep it: refused, said by the page
  }
  page.searchParams.set('share', key);
  return Response.redirect(page.href, 303);
}

// The body as a Blob, or null past `max` bytes (read no further than that).
async function boundedBody(request, max) {
  if (Number(request.headers.get('content-length') ?? 0) > max || !request.body) return null;
  const reader = request.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return new Blob(chunks);
    size += value.byteLength;
    if (size > max) {
      reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
}
