// js/page/notify.js in Node, on a fake window and clock: when the one offer to notify
// shows (only after an answer the person waited for, only where it can work, once), that
// nothing ever asks for the permission but a tap, what a notification carries, and which
// conversation ids from the URL or the service worker are opened. The real browser path
// (the service worker's notification, its tap) is tests/e2e/test_reply_notification.py.
// Moved from a Python string run with `node -e` (tests/unit/test_notify_js.py; issue 47,
// item 6).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ReplyNotifier, WAITED_MS, TITLE_CHARS } from '../../js/page/notify.js';
// A node of the fake DOM: enough for the offer (notify.js builds it with these calls).
const el = () => {
  const listeners = {};
  const node = { children: [], attrs: {}, dataset: {}, textContent: '', hidden: false, checked: false, removed: false,
    append: (...c) => node.children.push(...c), setAttribute: (k, v) => { node.attrs[k] = v; },
    addEventListener: (type, f) => { listeners[type] = f; }, fire: (type) => listeners[type]?.(),
    remove: () => { node.removed = true; }, after: (o) => { node.next = o; } };
  return node;
};

function world({ permission = 'default', notification = true, sw = true, secure = true, host = false,
                 notify = null, offered = false, hash = '', grant = 'granted', active = true, failShow = false } = {}) {
  let t = 0;
  const docListeners = {};
  const winListeners = {};
  const swListeners = {};
  const log = { asked: 0, shown: [], opened: [], replaced: 0, kept: {}, closed: [] };
  const stored = { notify, notify_offered: offered };
  const settings = {
    get notify() { return typeof stored.notify === 'boolean' ? stored.notify : null; },
    get notifyOffered() { return stored.notify_offered === true; },
    keep(name, value) { stored[name] = value; log.kept[name] = value; },
  };
  const registration = {
    active: active ? {} : null,
    showNotification: async (title, options) => { if (failShow) throw new TypeError('revoked'); log.shown.push({ title, ...options }); },
    getNotifications: async ({ tag }) => [{ close: () => log.closed.push(tag) }],
  };
  const doc = {
    visibilityState: 'visible',
    documentElement: { lang: 'en', dataset: {} },
    addEventListener: (type, f) => { docListeners[type] = f; },
    createElement: () => el(),
  };
  const win = {
    document: doc, isSecureContext: secure,
    location: { hash, pathname: '/', search: '', protocol: 'http:' },
    history: { state: null, replaceState: () => { log.replaced += 1; } },
    addEventListener: (type, f) => { winListeners[type] = f; },
    navigator: sw ? { serviceWorker: {
      getRegistration: async () => registration,
      ready: Promise.resolve({ ...registration, active: {} }),
      addEventListener: (type, f) => { swListeners[type] = f; },
    } } : {},
  };
  if (notification) {
    win.Notification = function Notification() { throw new TypeError('Illegal constructor'); };
    win.Notification.permission = permission;
    win.Notification.requestPermission = async () => { log.asked += 1; win.Notification.permission = grant; return grant; };
  }
  const after = el();
  const sheet = { field: el(), input: el(), note: el() };
  const n = new ReplyNotifier({ settings, hostAttached: () => host, open: (id) => log.opened.push(id),
    current: () => 'c1', after, sheet, win, now: () => t });
  return {
    n, log, after, sheet, doc, win,
    tick: (ms) => { t += ms; },
    hide: (hidden) => { doc.visibilityState = hidden ? 'hidden' : 'visible'; docListeners.visibilitychange?.(); },
    message: (data) => swListeners.message?.({ data }),
  };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));
// When the offer shows: one answer, `ms` long, ended as `state`.
function offered(opts = {}, { ms = WAITED_MS, state = 'done', hiddenFor = false } = {}) {
  const w = world(opts);
  w.n.busy(true);
  if (hiddenFor) { w.hide(true); w.hide(false); }
  w.tick(ms);
  w.n.busy(false);
  w.n.settled(state);
  return { shown: Boolean(w.after.next), asked: w.log.asked, kept: w.log.kept };
}
const offers = () => ({
  waited: offered(),
  quick: offered({}, { ms: WAITED_MS - 1 }),
  quickButHidden: offered({}, { ms: 10, hiddenFor: true }),
  failed: offered({}, { state: 'error' }),
  stopped: offered({}, { state: 'stopped' }),
  denied: offered({ permission: 'denied' }),
  granted: offered({ permission: 'granted' }),
  host: offered({ host: true }),
  declined: offered({ notify: false }),
  allowed: offered({ notify: true }),
  offeredBefore: offered({ offered: true }),
  noNotification: offered({ notification: false }),
  noServiceWorker: offered({ sw: false }),
  insecure: offered({ secure: false }),
});

test('the offer follows only an answer waited for, where notifications can work', () => {
  const offer = offers();
  assert.deepEqual(Object.fromEntries(Object.entries(offer).map(([k, r]) => [k, r.shown])), {
    waited: true, quick: false, quickButHidden: true, failed: false, stopped: false,
    denied: false, granted: false, host: false, declined: false, allowed: false,
    offeredBefore: false, noNotification: false, noServiceWorker: false, insecure: false,
  });
  assert.deepEqual(offer.waited.kept, { notify_offered: true }); // shown once, remembered
  // Once: the second waited answer of the same page gets none.
  const w = world();
  let count = 0;
  for (let i = 0; i < 2; i++) {
    w.n.busy(true); w.tick(WAITED_MS); w.n.busy(false); w.n.settled('done');
    if (w.after.next) { count += 1; w.after.next = undefined; w.n.offer = null; }
  }
  assert.equal(count, 1);
});

// The offer's buttons: "Notify me" asks once (the tap), "No thanks" is kept.
async function tap(button, grant) {
  const w = world({ grant });
  w.n.busy(true); w.tick(WAITED_MS); w.n.settled('done');
  const offer = w.after.next;
  const [, yes, no] = offer.children;
  (button === 'yes' ? yes : no).fire('click');
  await flush();
  return { asked: w.log.asked, notify: w.log.kept.notify ?? null, removed: offer.removed };
}

test('nothing asks for the permission but a tap', async () => {
  assert.ok(Object.values(offers()).every((r) => r.asked === 0));
  assert.deepEqual(await tap('yes', 'granted'), { asked: 1, notify: true, removed: true });
  assert.deepEqual(await tap('yes', 'denied'), { asked: 1, notify: null, removed: true }); // the browser keeps "denied"
  assert.deepEqual(await tap('no', 'granted'), { asked: 0, notify: false, removed: true });
});

// The Settings switch: asks from its own tap; refused is said, and the switch goes back.
async function switchTo(checked, { permission = 'default', grant = 'granted' } = {}) {
  const w = world({ permission, grant });
  w.sheet.input.checked = checked;
  w.sheet.input.fire('change');
  await flush();
  return { asked: w.log.asked, notify: w.log.kept.notify ?? null, checked: w.sheet.input.checked,
    note: w.sheet.note.textContent };
}

test('the Settings switch asks from its own tap', async () => {
  assert.deepEqual(await switchTo(true), { asked: 1, notify: true, checked: true, note: '' });
  const refused = await switchTo(true, { grant: 'denied' });
  assert.ok(refused.asked === 1 && refused.checked === false && refused.note);
  const blocked = await switchTo(true, { permission: 'denied' });
  assert.ok(blocked.asked === 0 && blocked.checked === false && blocked.note.includes('blocked'));
  assert.deepEqual(await switchTo(true, { permission: 'granted' }), { asked: 0, notify: true, checked: true, note: '' });
  assert.deepEqual(await switchTo(false, { permission: 'granted' }), { asked: 0, notify: false, checked: false, note: '' });
  const host = world({ permission: 'granted', host: true });
  host.n.refresh();
  const bare = world({ notification: false });
  bare.n.refresh();
  const ready = world({ permission: 'granted' });
  ready.n.refresh();
  assert.deepEqual({ host: host.sheet.field.hidden, bare: bare.sheet.field.hidden,
    ready: [ready.sheet.field.hidden, ready.sheet.input.checked] }, { host: true, bare: true, ready: [false, true] });
});

// What a notification carries, and when there is none.
async function notify(opts, reply = { conversation: { id: 'c1', title: 'Trip  to\nKyoto' }, text: 'Here is a plan' }) {
  const w = world(opts);
  const result = await w.n.notify(reply);
  return { result, shown: w.log.shown, marker: w.doc.documentElement.dataset.notified ?? null };
}

test('a notification carries the conversation and comes only when allowed', async () => {
  const granted = await notify({ permission: 'granted' });
  assert.ok(granted.result === true && granted.marker === '1');
  assert.equal(granted.shown.length, 1);
  const [shown] = granted.shown;
  assert.equal(shown.title, 'Trip to Kyoto'); // one line
  assert.equal(shown.body, 'Here is a plan');
  assert.ok(shown.tag === 'firsttoken-reply:c1');
  assert.deepEqual(shown.data, { conversation: 'c1' });
  assert.equal(shown.renotify, true);
  const long = await notify({ permission: 'granted' }, { conversation: { id: 'c2', title: 'x'.repeat(200) }, text: 't' });
  assert.equal(long.shown[0].title.length, TITLE_CHARS);
  const noId = await notify({ permission: 'granted' }, { conversation: { id: null, title: 'New chat' }, text: 't' });
  assert.deepEqual(noId.shown[0].data, { conversation: null });
  const none = {
    default: await notify({}),
    declined: await notify({ permission: 'granted', notify: false }),
    host: await notify({ permission: 'granted', host: true }),
    bare: await notify({ notification: false }),
    revoked: await notify({ permission: 'granted', failShow: true }),
  };
  for (const [name, n] of Object.entries(none)) assert.ok(n.result === false && n.marker === null, name);
  assert.equal((await notify({ permission: 'granted', active: false })).result, true); // waited for the worker to be active
  // Seen: the open conversation's notification goes when the page shows again.
  const w = world({ permission: 'granted' });
  w.hide(true);
  w.hide(false);
  await flush();
  const quiet = world({});
  quiet.hide(false);
  await flush();
  assert.deepEqual({ closed: w.log.closed, withoutPermission: quiet.log.closed },
    { closed: ['firsttoken-reply:c1'], withoutPermission: [] });
});

// Conversations named by the URL and by the service worker.
function fromUrl(hash) {
  const w = world({ hash });
  w.n.start();
  return { opened: w.log.opened, replaced: w.log.replaced };
}

test('only a conversation id is opened, from the URL or the worker', () => {
  assert.deepEqual(fromUrl('#conversation=c-123'), { opened: ['c-123'], replaced: 1 });
  assert.deepEqual(fromUrl('#conversation=a%20b'), { opened: ['a b'], replaced: 1 });
  assert.deepEqual(fromUrl('#conversation=%E0%A4%A'), { opened: [], replaced: 1 });
  assert.deepEqual(fromUrl('#conversation=' + 'x'.repeat(201)), { opened: [], replaced: 1 });
  assert.deepEqual(fromUrl('#conversation='), { opened: [], replaced: 1 });
  assert.deepEqual(fromUrl('#section-2'), { opened: [], replaced: 0 }); // not ours: left alone
  assert.deepEqual(fromUrl(''), { opened: [], replaced: 0 });
  const w = world();
  for (const data of [{ type: 'conversation.open', conversation: 'c9' }, { type: 'conversation.open', conversation: 5 },
    { type: 'share', conversation: 'c8' }, null, 'conversation.open', { type: 'conversation.open' }]) w.message(data);
  assert.deepEqual(w.log.opened, ['c9']);
  assert.ok(WAITED_MS > 0);
});
