// The page's host bridge (bridge/page/host-messages.js, hosts.js) on Node, with a fake
// window and a fake link to the core: what it accepts, what it refuses, how request ids
// are namespaced and given back, how a host's settings reach the page's requests, which
// windows it trusts, and which version it speaks to each host. Hostile input, whose
// cases the browser tests share, is tests/js/cross/host-bridge-hostile.test.mjs. The real
// thing is tested in Chromium (tests/e2e/test_bridge.py) and WebKitGTK
// (tests/webkit/test_bridge.py). Moved from Python strings run with `node -e`
// (tests/unit/test_host_bridge.py; issue 47, item 6).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { attachHosts } from '../../bridge/page/hosts.js';
import { parseHostMessage } from '../../bridge/page/host-messages.js';

/** Each text through the host parser: what it kept, or the error's name and the id it answers. */
const parse = (texts) => texts.map((text) => {
  try { return { ok: plain(parseHostMessage(text)) }; } catch (e) { return { error: e.name, id: e.id }; }
});
// As JSON would carry it (a field left undefined is no field).
const plain = (value) => JSON.parse(JSON.stringify(value));
const json = JSON.stringify;

/** A page with a React Native host and a fake link; each step is a host's message, the
 * core's event, or the page's own request (which leaves through the hosts' overlay, as
 * page.js sends it). What the host and the core got, and the bridge's counts. */
async function run(steps, { settle = false } = {}) {
  const win = new EventTarget();
  win.location = { search: '' };
  win.document = { baseURI: 'http://page.test/' };
  win.parent = win;
  const toHost = [];
  win.ReactNativeWebView = { postMessage: (t) => toHost.push(JSON.parse(t)) };
  const link = new EventTarget();
  const toCore = [];
  link.send = (msg) => toCore.push(plain(msg));
  const hosts = attachHosts(link, { window: win });
  const fromCore = (msg) => link.dispatchEvent(new CustomEvent('message', { detail: msg }));
  for (const step of steps) {
    if (step.host) win.firsttoken.post(json(step.host));
    if (step.core) fromCore(step.core);
    if (step.page) link.send(hosts.overlay.apply(step.page));
  }
  // An answer that comes from a promise: wait until the queued tasks ran.
  if (settle) await new Promise((r) => setTimeout(r, 0));
  return { toHost, toCore, counts: win.firsttoken.counts() };
}

test('only known fields are kept', () => {
  const [result] = parse([json({
    v: 1, type: 'chat.send', id: 'a', extra: 'dropped',
    messages: [{ role: 'user', content: 'hi', evil: 1 }],
    settings: { model: 'm', unknown: true, headers: { 'x-a': '1' } },
  })]);
  assert.deepEqual(result.ok, {
    type: 'chat.send', id: 'a', messages: [{ role: 'user', content: 'hi' }],
    settings: { model: 'm', headers: { 'x-a': '1' } },
  });
});

test('an invalid request is answered with its id', () => {
  assert.deepEqual(parse([json({ type: 'chat.send', id: 'x1', messages: [] })]), [{ error: 'InvalidHostMessage', id: 'x1' }]);
});

test('host ids are namespaced and given back', async () => {
  const out = await run([
    { host: { type: 'ping', id: 'r1' } },
    { core: { v: 1, type: 'pong', id: 'host:native:r1', t: 1 } },
    { host: { type: 'ping' } },
    { core: { v: 1, type: 'pong', id: 'host:native:', t: 2 } },
    { host: { type: 'chat.abort', id: 'r1' } },
  ]);
  assert.deepEqual(out.toCore, [
    { type: 'ping', id: 'host:native:r1' }, { type: 'ping', id: 'host:native:' },
    { type: 'chat.abort', id: 'host:native:r1' },
  ]);
  assert.deepEqual(out.toHost, [{ v: 1, type: 'pong', id: 'r1', t: 1 }, { v: 1, type: 'pong', t: 2 }]);
});

test("the page's chats are observed and its other answers are not", async () => {
  const out = await run([
    { core: { v: 1, type: 'chat.delta', id: 'r1', seq: 1, text: 'a' } },
    { core: { v: 1, type: 'notice', id: 'r1', code: 'cache_degraded' } },
    { core: { v: 1, type: 'tokens.counted', id: 'c1', tokens: 3 } },
    { core: { v: 1, type: 'pong', id: 'p', t: 1 } },
  ]);
  assert.deepEqual(out.toHost.map((m) => [m.type, m.id]), [['chat.delta', 'page:r1'], ['notice', 'page:r1']]);
});

test('ready is pushed, and replayed to a late hello', async () => {
  const ready = { v: 1, type: 'ready', id: 'hello', protocol: 1, boot: { ready_ms: 5 } };
  const out = await run([{ host: { type: 'hello', id: 'early' } }, { core: ready }, { host: { type: 'hello', id: 'late' } }]);
  assert.deepEqual(out.toHost.map((m) => [m.type, m.id]), [['ready', 'early'], ['ready', 'late']]);
  assert.ok(out.toHost.every((m) => json(m.boot) === json({ ready_ms: 5 })));
});

test("host settings apply to the host's and the page's requests, and never echo the key", async () => {
  const pageChat = { type: 'chat.send', id: 'r1', settings: { base_url: 'http://page.test/v1', headers: { a: '1' } },
    messages: [{ role: 'system', content: "page's" }, { role: 'user', content: 'hi' }] };
  const out = await run([
    { host: { type: 'settings.set', id: 's', settings: { system: "host's", api_key: 'k', headers: { b: '2' }, model: 'm' } } },
    { page: pageChat },
    { host: { type: 'chat.send', id: 'h1', messages: [{ role: 'user', content: 'yo' }] } },
  ]);
  assert.deepEqual(out.toHost, [{ v: 1, type: 'settings.applied', id: 's',
    settings: { system: "host's", headers: { b: '2' }, model: 'm', api_key: true } }]);
  const [page, host] = out.toCore;
  assert.deepEqual(page.messages, [{ role: 'system', content: "host's" }, { role: 'user', content: 'hi' }]);
  assert.deepEqual(page.settings, { base_url: 'http://page.test/v1', headers: { a: '1', b: '2' }, api_key: 'k', model: 'm' });
  assert.equal(host.id, 'host:native:h1');
  assert.deepEqual(host.messages, [{ role: 'system', content: "host's" }, { role: 'user', content: 'yo' }]);
  assert.deepEqual(host.settings, { base_url: 'http://page.test/v1', headers: { b: '2' }, api_key: 'k', model: 'm' });
});

test('messages from other windows are dropped and counted', () => {
  const parent = new EventTarget();
  const win = new EventTarget();
  Object.assign(win, { location: { search: '?embed-origins=https://app.test' }, document: { baseURI: 'http://page.test/' },
    parent });
  const sent = [];
  parent.postMessage = (text, origin) => sent.push([JSON.parse(text).type, origin]);
  attachHosts({ addEventListener() {}, send() {} }, { window: win });
  const event = (source, origin, data) => Object.assign(new Event('message'), { source, origin, data, ports: [] });
  win.dispatchEvent(event(parent, 'https://evil.test', '{"type":"ping"}'));
  win.dispatchEvent(event({}, 'https://app.test', '{"type":"ping"}'));
  win.dispatchEvent(event(parent, 'https://app.test', '{"type":"nope"}'));
  assert.deepEqual(plain(win.firsttoken.counts()), { received: 1, rejected: 1, dropped: { origin: 1, frame: 1 } });
  assert.deepEqual(sent, [['error', 'https://app.test']]);
});

test('stall settings are positive seconds, or refused', () => {
  const [ok, cleared, ...refused] = parse([
    { stall_notice_s: 0.5, stall_timeout_s: 4 },
    { stall_notice_s: null },
    { stall_notice_s: 0 }, { stall_timeout_s: '60' }, { stall_timeout_s: -1 }, { stall_notice_s: true },
  ].map((settings) => json({ type: 'settings.set', settings })));
  assert.deepEqual(ok.ok.settings, { stall_notice_s: 0.5, stall_timeout_s: 4 });
  assert.deepEqual(cleared.ok.settings, { stall_notice_s: null });
  assert.ok(refused.every((r) => r.error === 'InvalidHostMessage'), json(refused));
});

test('the API setting is one of the dialects, and reaches every request', async () => {
  const parsed = parse([
    { api: 'chat_completions' }, { api: 'responses' }, { api: 'anthropic_messages' }, { api: null },
    { api: 'messages' }, { api: '' }, { api: 1 }, { api: ['responses'] },
  ].map((settings) => json({ type: 'settings.set', settings })));
  assert.deepEqual(parsed.slice(0, 4).map((p) => p.ok?.settings), [
    { api: 'chat_completions' }, { api: 'responses' }, { api: 'anthropic_messages' }, { api: null }]);
  assert.ok(parsed.slice(4).every((r) => r.error === 'InvalidHostMessage'), json(parsed.slice(4)));
  const hi = [{ role: 'user', content: 'hi' }];
  const out = await run([
    { host: { type: 'settings.set', id: 's', settings: { api: 'anthropic_messages', model: 'claude-x' } } },
    { page: { type: 'chat.send', id: 'r1', settings: { base_url: 'http://page.test/v1', api: 'responses' }, messages: hi } },
    { host: { type: 'tokens.count', id: 'c', messages: hi } },
    { host: { type: 'chat.send', id: 'h', messages: hi, settings: { api: 'chat_completions' } } },
    { host: { type: 'settings.set', id: 's2', settings: { api: null } } },
    { page: { type: 'chat.send', id: 'r2', settings: { base_url: 'http://page.test/v1', api: 'responses' }, messages: hi } },
  ]);
  assert.deepEqual(out.toHost[0].settings, { api: 'anthropic_messages', model: 'claude-x', api_key: false });
  assert.deepEqual(out.toCore.map((m) => m.settings.api), [
    'anthropic_messages', 'anthropic_messages', 'chat_completions', 'responses']);
  assert.deepEqual(out.toHost[1].settings, { model: 'claude-x', api_key: false });
});

/** A fake window with a parent embedder at https://app.test; each step dispatches one
 * `message` event (its source: "parent", "null", "self" or "other"; a port with it or not). */
function trust(...steps) {
  const parent = new EventTarget();
  const win = new EventTarget();
  Object.assign(win, { location: { search: '?embed-origins=https://app.test,https://other-app.test' },
    document: { baseURI: 'http://page.test/' }, parent });
  const toParent = [];
  parent.postMessage = (text) => toParent.push(JSON.parse(text).type);
  const toPorts = [];
  const toCore = [];
  attachHosts({ addEventListener() {}, send: (m) => toCore.push(m.type) }, { window: win });
  const sources = { parent, null: null, self: win, other: {} };
  for (const [source, origin, data, withPort] of steps) {
    const ports = withPort ? [{ postMessage: (t) => toPorts.push(JSON.parse(t).type), close() {} }] : [];
    win.dispatchEvent(Object.assign(new Event('message'), { source: sources[source], origin, data: json(data), ports }));
  }
  return { counts: plain(win.firsttoken.counts()), toParent, toPorts, toCore };
}
const PING = { type: 'ping', id: 'p' };
const HELLO = { type: 'hello', id: 'h' };

test('a port with a null source is never a host, whatever its origin', () => {
  // What a detached realm's message looks like, and what Android's postWebMessage did.
  const out = trust(['null', '', HELLO, true], ['null', 'https://app.test', HELLO, true], ['null', 'https://app.test', PING, false],
    ['self', 'http://page.test', HELLO, true], ['other', 'https://app.test', HELLO, true]);
  assert.deepEqual(out.counts, { received: 0, rejected: 0, dropped: { origin: 0, frame: 4 } });
  assert.ok(out.toPorts.length === 0 && out.toCore.length === 0);
});

test('the first embedder keeps the channel, and a listed port works', () => {
  const out = trust(['parent', 'https://app.test', HELLO, true], ['parent', 'https://app.test', PING, true],
    ['parent', 'https://other-app.test', PING, false], ['parent', 'https://other-app.test', HELLO, true],
    ['parent', 'https://app.test', PING, false]);
  // The port's hello is handled (answered once `ready` comes); its non-hello port message
  // is ignored; the second listed origin is dropped once app.test holds the channel.
  assert.deepEqual(out.counts.dropped, { origin: 2, frame: 0 });
  assert.deepEqual(out.toCore, ['ping']);
});

test('a user key never follows a host to another endpoint', async () => {
  const user = { base_url: 'http://page.test/v1', api_key: 'sk-user', headers: { 'x-user': '1' }, model: 'm' };
  const chat = { type: 'chat.send', id: 'r1', settings: user, messages: [{ role: 'user', content: 'hi' }] };
  const moved = await run([{ host: { type: 'settings.set', id: 's', settings: { base_url: 'https://elsewhere.test/v1' } } },
    { page: chat }]);
  assert.deepEqual(moved.toCore[0].settings, { base_url: 'https://elsewhere.test/v1', model: 'm' });
  const withKey = await run([{ host: { type: 'settings.set', id: 's', settings: {
    base_url: 'https://elsewhere.test/v1', api_key: 'sk-host' } } }, { page: chat }]);
  assert.deepEqual(withKey.toCore[0].settings, { base_url: 'https://elsewhere.test/v1', model: 'm', api_key: 'sk-host' });
  const same = await run([{ host: { type: 'settings.set', id: 's', settings: { base_url: 'http://page.test/v1/', model: 'n' } } },
    { page: chat }]);
  assert.deepEqual(same.toCore[0].settings, { ...user, model: 'n' }); // the parser drops the slash
});

test("an image from a host is base64 of an image type, or refused", () => {
  const ok = { data: '/9j/4AAQSkZJRg==', type: 'IMAGE/JPEG', name: 'shared.jpg', exif: 'dropped' };
  const bad = [
    { data: '', type: 'image/jpeg' }, // nothing
    { data: 'abcde', type: 'image/jpeg' }, // no base64 is 4n+1 long
    { data: 'ab=c', type: 'image/jpeg' }, // padding inside
    { data: 'aGk=\n', type: 'image/jpeg' }, // not the RFC 4648 alphabet
    { data: 'aGk=', type: 'text/plain' },
    { data: 'aGk=', type: 'image/jpeg; charset=x' },
    { data: 'aGk=', type: 'image/jpeg', name: 'x'.repeat(257) },
    { data: ['aGk='], type: 'image/jpeg' },
    'aGk=',
    null,
  ];
  const results = parse([ok, ...bad].map((image, i) => json({ type: 'composer.attach', id: `a${i}`, image })));
  assert.deepEqual(results[0].ok, { type: 'composer.attach', id: 'a0',
    image: { data: '/9j/4AAQSkZJRg==', type: 'image/jpeg', name: 'shared.jpg' } });
  assert.deepEqual(results.slice(1), bad.map((_, i) => ({ error: 'InvalidHostMessage', id: `a${i + 1}` })));
  assert.deepEqual(plain(parse([json({ type: 'composer.attach' })])), [{ error: 'InvalidHostMessage', id: null }]);
});

test("a page without a composer refuses a host's image", async () => {
  const out = await run([{ host: { type: 'composer.attach', id: 'c', image: { data: 'aGk=', type: 'image/png' } } }],
    { settle: true });
  assert.deepEqual(out.toCore, []);
  assert.deepEqual(out.toHost, [{ v: 1, type: 'error', id: 'c',
    error: { code: 'unsupported', message: 'this page has no composer' } }]);
});

// ---- versions (bridge/PROTOCOL.md, "Versions") ----

const CLEARED = { v: 2, type: 'chat.stall.cleared', id: 'r1', stalled_s: 12.5 };
const READY_V2 = { v: 2, type: 'ready', id: 'hello', protocol: 2, boot: { ready_ms: 5 } };

test('a host that says no version, or 1, is spoken to in version 1 with its names', async () => {
  for (const hello of [{ type: 'hello', id: 'h' }, { v: 1, type: 'hello', id: 'h' }]) {
    const out = await run([{ host: hello }, { core: READY_V2 }, { core: CLEARED },
      { host: { type: 'ping', id: 'p' } }, { core: { v: 2, type: 'pong', id: 'host:native:p', t: 1 } }]);
    assert.deepEqual(out.toHost, [
      { v: 1, type: 'ready', id: 'h', protocol: 1, boot: { ready_ms: 5 } },
      { v: 1, type: 'chat.resume', id: 'page:r1', stalled_s: 12.5 },
      { v: 1, type: 'pong', id: 'p', t: 1 },
    ], json(hello));
  }
});

test('a host that says 2 gets version 2 and the new name', async () => {
  const out = await run([{ host: { v: 2, type: 'hello', id: 'h' } }, { core: READY_V2 }, { core: CLEARED },
    { host: { v: 2, type: 'settings.set', id: 's', settings: { model: 'm' } } }]);
  assert.deepEqual(out.toHost, [
    { v: 2, type: 'ready', id: 'h', protocol: 2, boot: { ready_ms: 5 } },
    { v: 2, type: 'chat.stall.cleared', id: 'page:r1', stalled_s: 12.5 },
    { v: 2, type: 'settings.applied', id: 's', settings: { model: 'm', api_key: false } },
  ]);
});

test('a host follows the version of its last message, and 3 is refused', async () => {
  const out = await run([{ host: { v: 2, type: 'ping', id: 'a' } }, { core: CLEARED },
    { host: { v: 1, type: 'ping', id: 'b' } }, { core: CLEARED },
    { host: { v: 3, type: 'ping', id: 'c' } }]);
  assert.deepEqual(out.toHost.map((m) => [m.v, m.type]), [[2, 'chat.stall.cleared'], [1, 'chat.resume'], [1, 'error']]);
  assert.ok(out.toHost.at(-1).error.code === 'invalid_message' && out.toHost.at(-1).id === 'c');
  assert.deepEqual(out.toCore.map((m) => m.id), ['host:native:a', 'host:native:b']);
});
