"""js/page/notify.js in Node, on a fake window and clock: when the one offer to notify
shows (only after an answer the person waited for, only where it can work, once), that
nothing ever asks for the permission but a tap, what a notification carries, and which
conversation ids from the URL or the service worker are opened. The real browser path
(the service worker's notification, its tap) is tests/e2e/test_reply_notification.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest

from harness.servers import ROOT

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

SCRIPT = r"""
import { ReplyNotifier, WAITED_MS, TITLE_CHARS } from './js/page/notify.js';

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
const out = {};

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
out.offer = {
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
};

// Once: the second waited answer of the same page gets none.
{
  const w = world();
  let count = 0;
  for (let i = 0; i < 2; i++) {
    w.n.busy(true); w.tick(WAITED_MS); w.n.busy(false); w.n.settled('done');
    if (w.after.next) { count += 1; w.after.next = undefined; w.n.offer = null; }
  }
  out.once = count;
}

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
out.tap = { yes: await tap('yes', 'granted'), refused: await tap('yes', 'denied'), no: await tap('no', 'granted') };

// The Settings switch: asks from its own tap; refused is said, and the switch goes back.
async function switchTo(checked, { permission = 'default', grant = 'granted' } = {}) {
  const w = world({ permission, grant });
  w.sheet.input.checked = checked;
  w.sheet.input.fire('change');
  await flush();
  return { asked: w.log.asked, notify: w.log.kept.notify ?? null, checked: w.sheet.input.checked, note: w.sheet.note.textContent };
}
out.switch = {
  on: await switchTo(true),
  onRefused: await switchTo(true, { grant: 'denied' }),
  onBlocked: await switchTo(true, { permission: 'denied' }),
  onGranted: await switchTo(true, { permission: 'granted' }),
  off: await switchTo(false, { permission: 'granted' }),
};
{
  const host = world({ permission: 'granted', host: true });
  host.n.refresh();
  const bare = world({ notification: false });
  bare.n.refresh();
  const ready = world({ permission: 'granted' });
  ready.n.refresh();
  out.field = { host: host.sheet.field.hidden, bare: bare.sheet.field.hidden, ready: [ready.sheet.field.hidden, ready.sheet.input.checked] };
}

// What a notification carries, and when there is none.
async function notify(opts, reply = { conversation: { id: 'c1', title: 'Trip  to\nKyoto' }, text: 'Here is a plan' }) {
  const w = world(opts);
  const result = await w.n.notify(reply);
  return { result, shown: w.log.shown, marker: w.doc.documentElement.dataset.notified ?? null };
}
out.notify = {
  granted: await notify({ permission: 'granted' }),
  longTitle: (await notify({ permission: 'granted' }, { conversation: { id: 'c2', title: 'x'.repeat(200) }, text: 't' })).shown[0].title.length,
  noId: (await notify({ permission: 'granted' }, { conversation: { id: null, title: 'New chat' }, text: 't' })).shown[0],
  default: await notify({}),
  declined: await notify({ permission: 'granted', notify: false }),
  host: await notify({ permission: 'granted', host: true }),
  bare: await notify({ notification: false }),
  revoked: await notify({ permission: 'granted', failShow: true }),
  installing: await notify({ permission: 'granted', active: false }),
};

// Seen: the open conversation's notification goes when the page shows again.
{
  const w = world({ permission: 'granted' });
  w.hide(true);
  w.hide(false);
  await flush();
  const quiet = world({});
  quiet.hide(false);
  await flush();
  out.seen = { closed: w.log.closed, withoutPermission: quiet.log.closed };
}

// Conversations named by the URL and by the service worker.
function fromUrl(hash) {
  const w = world({ hash });
  w.n.start();
  return { opened: w.log.opened, replaced: w.log.replaced };
}
out.url = {
  plain: fromUrl('#conversation=c-123'),
  encoded: fromUrl('#conversation=a%20b'),
  malformed: fromUrl('#conversation=%E0%A4%A'),
  tooLong: fromUrl('#conversation=' + 'x'.repeat(201)),
  empty: fromUrl('#conversation='),
  other: fromUrl('#section-2'),
  none: fromUrl(''),
};
{
  const w = world();
  for (const data of [{ type: 'conversation.open', conversation: 'c9' }, { type: 'conversation.open', conversation: 5 },
                      { type: 'share', conversation: 'c8' }, null, 'conversation.open', { type: 'conversation.open' }]) w.message(data);
  out.message = w.log.opened;
}
out.constants = { WAITED_MS, TITLE_CHARS };
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def out() -> dict[str, Any]:
    done = subprocess.run(["node", "--input-type=module", "-e", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_offer_follows_only_an_answer_waited_for_where_notifications_can_work(out: dict[str, Any]) -> None:
    shown = {case: r["shown"] for case, r in out["offer"].items()}
    assert shown == {
        "waited": True, "quick": False, "quickButHidden": True, "failed": False, "stopped": False,
        "denied": False, "granted": False, "host": False, "declined": False, "allowed": False,
        "offeredBefore": False, "noNotification": False, "noServiceWorker": False, "insecure": False,
    }
    assert out["offer"]["waited"]["kept"] == {"notify_offered": True}  # shown once, remembered
    assert out["once"] == 1


def test_nothing_asks_for_the_permission_but_a_tap(out: dict[str, Any]) -> None:
    assert all(r["asked"] == 0 for r in out["offer"].values())
    assert out["tap"]["yes"] == {"asked": 1, "notify": True, "removed": True}
    assert out["tap"]["refused"] == {"asked": 1, "notify": None, "removed": True}  # the browser keeps "denied"
    assert out["tap"]["no"] == {"asked": 0, "notify": False, "removed": True}


def test_the_settings_switch_asks_from_its_own_tap(out: dict[str, Any]) -> None:
    s = out["switch"]
    assert s["on"] == {"asked": 1, "notify": True, "checked": True, "note": ""}
    assert s["onRefused"]["asked"] == 1 and s["onRefused"]["checked"] is False and s["onRefused"]["note"]
    assert s["onBlocked"]["asked"] == 0 and s["onBlocked"]["checked"] is False and "blocked" in s["onBlocked"]["note"]
    assert s["onGranted"] == {"asked": 0, "notify": True, "checked": True, "note": ""}
    assert s["off"] == {"asked": 0, "notify": False, "checked": False, "note": ""}
    assert out["field"] == {"host": True, "bare": True, "ready": [False, True]}


def test_a_notification_carries_the_conversation_and_comes_only_when_allowed(out: dict[str, Any]) -> None:
    n = out["notify"]
    assert n["granted"]["result"] is True and n["granted"]["marker"] == "1"
    [shown] = n["granted"]["shown"]
    assert shown["title"] == "Trip to Kyoto"  # one line
    assert shown["body"] == "Here is a plan"
    assert shown["tag"] == "firsttoken-reply:c1" and shown["data"] == {"conversation": "c1"}
    assert shown["renotify"] is True
    assert n["longTitle"] == out["constants"]["TITLE_CHARS"]
    assert n["noId"]["data"] == {"conversation": None}
    for case in ("default", "declined", "host", "bare", "revoked"):
        assert n[case]["result"] is False and n[case]["marker"] is None, case
    assert n["installing"]["result"] is True  # waited for the worker to be active
    assert out["seen"] == {"closed": ["firsttoken-reply:c1"], "withoutPermission": []}


def test_only_a_conversation_id_is_opened_from_the_url_or_the_worker(out: dict[str, Any]) -> None:
    u = out["url"]
    assert u["plain"] == {"opened": ["c-123"], "replaced": 1}
    assert u["encoded"] == {"opened": ["a b"], "replaced": 1}
    assert u["malformed"] == {"opened": [], "replaced": 1}
    assert u["tooLong"] == {"opened": [], "replaced": 1}
    assert u["empty"] == {"opened": [], "replaced": 1}
    assert u["other"] == {"opened": [], "replaced": 0}  # not ours: left alone
    assert u["none"] == {"opened": [], "replaced": 0}
    assert out["message"] == ["c9"]
