// @ts-check
// The page's bridge to whatever embeds it: a native app's web view (iOS WKWebView,
// WebKitGTK/WPE, Android WebView, React Native) or an embedding window. Each host
// speaks the protocol as JSON text (bridge/PROTOCOL.md, "Hosts"), in version 2 or 1:
// each is answered in the version its own messages carry ("Versions"). This module
// relays between the hosts and the page's link to the Python core.
//
//   host                  page → host                                   host → page
//   WebKit                window.webkit.messageHandlers.firsttoken       window.firsttoken.post(text)
//   Android               window.firsttokenHost.postMessage (AndroidX    `message` events on that object
//                         addWebMessageListener)                         (the listener's JsReplyProxy)
//   Android (fallback)    window.FirsttokenAndroid.postMessage          window.firsttoken.post(text)
//   React Native          window.ReactNativeWebView.postMessage          window.firsttoken.post(text)
//   embedding window      parent.postMessage(text, <its origin>)        `message` events from parent,
//                                                                         or a MessagePort it handed over
//
// Who is a host (PROTOCOL.md, "Who is a host"). Only a party that web content cannot
// impersonate:
// - a native app: it reaches the page through objects its web view puts in the page
//   itself (a script message handler, an injected listener or interface) and through
//   script it evaluates in the page, none of which another window can touch: a window
//   of another origin cannot read or call anything on this one;
// - the embedding window, when its origin is on the allow-list and the message's
//   `source` is our parent. A `message` event's `source` and `origin` are set by the
//   browser, not the sender; a null `source` is no proof of anything (Chromium gives
//   one for a message from a realm whose frame is gone), so it is never accepted.
//   Android's `postWebMessage` port, which arrives with a null `source`, is therefore
//   not a host channel any more: AndroidX's `addWebMessageListener` replaces it.
// The first embedder origin accepted is the one for the page's life: once a host
// channel exists, nobody else can take it over (another listed origin navigated into
// the parent, a second port).
//
// Request ids: a host's ids live in a namespace of their own on the way to the core
// (`host:<channel>:<id>`) and are given back unchanged on the way out, so a host can
// never answer, abort or collide with the page's requests, nor one host with another.
// The page's own chats are observed as `page:<id>`.
//
// Hostile input is refused here (host-messages.js) before anything reaches the core:
// refused with an `error` event (`invalid_message`) when the sender is a host we
// answer, dropped and counted when it is not one (another origin, another frame).

import { InvalidHostMessage, parseHostEnvelope } from './host-messages.js';
import { PROTOCOL_VERSION, RENAMED_EVENTS } from '../../js/link/protocol.js';

const HOST_PREFIX = 'host:';
const PAGE_PREFIX = 'page:';

// Events about the page's own requests that hosts observe.
const OBSERVED = (type) => type.startsWith('chat.') || type === 'notice';
// The script message handler a WebKit host registers (WKUserContentController).
const HANDLER_NAME = 'firsttoken';
// The object AndroidX WebKit's addWebMessageListener injects, in frames of the origins
// the app allowed only: `postMessage(text)` reaches the app, which answers through the
// listener's JsReplyProxy as `message` events on the same object.
const ANDROID_LISTENER = 'firsttokenHost';

// A message as JSON text in `version` (PROTOCOL.md, "Versions"): the page's own
// version as it is; the version before gets its envelope, its `ready.protocol` and its
// names of renamed events (renamed, not sent twice: it refuses types it does not know).
function textFor(version, msg) {
  if (version === PROTOCOL_VERSION) return JSON.stringify({ v: PROTOCOL_VERSION, ...msg });
  const { v: _v, ...rest } = msg;
  const old = { v: version, ...rest };
  if (Object.hasOwn(RENAMED_EVENTS, msg.type)) old.type = RENAMED_EVENTS[msg.type];
  if (msg.type === 'ready') old.protocol = version;
  return JSON.stringify(old);
}

/** The embedder's allow-list: `?embed-origins=https://a.example,https://b.example`. */
export function embedOriginsFrom(search) {
  const raw = new URLSearchParams(search).get('embed-origins') || '';
  const origins = new Set();
  for (const part of raw.split(/[\s,]+/)) {
    if (!part) continue;
    try {
      const origin = new URL(part).origin;
      // An opaque origin ("null": sandboxed frames, file:) names nobody in particular.
      if (origin !== 'null') origins.add(origin);
    } catch { /* not an origin: ignored */ }
  }
  return origins;
}

/**
 * What hosts set for the page's own requests (`settings.set`: their key from the
 * Keychain, their server, their system prompt, their Thinking level) and its language,
 * for as long as the page lives: memory only, never stored, and the page's settings form
 * is left as the person set it. page.js makes one and passes it both to attachHosts
 * (which fills it) and to the page's senders (which `apply` it to each request as it
 * leaves), so nothing is patched onto the link (issue 47, item 3). A 'change' event
 * says a host set something.
 */
export class HostOverlay extends EventTarget {
  /** The settings hosts set, merged (`null` cleared a field). @type {Record<string, any>} */
  settings = {};
  /** The locale a host named, or null. @type {string | null} */
  locale = null;

  /** `msg` as it leaves with the hosts' settings overlaid: a page's request with
   * `messages` (chats, counts), not a host's own (its id is prefixed), unchanged when no
   * host set anything. */
  apply(msg) {
    const host = this.settings;
    if (!msg || !msg.messages || String(msg.id ?? '').startsWith(HOST_PREFIX) || !Object.keys(host).length) return msg;
    const messages = host.system !== undefined
      ? withSystem(msg.messages.filter((m, i) => !(i === 0 && m.role === 'system')), host.system)
      : msg.messages;
    const settings = coreSettings(msg.settings ?? {}, host);
    // The host's Thinking level is the default; the person's choice for the
    // conversation (the composer's control, sent only when not Auto) wins over it.
    if (msg.settings?.reasoning) settings.reasoning = msg.settings.reasoning;
    // "Continue with more room" asks for more than the limit it was cut at, which may
    // be the host's: the larger limit goes, or the retry would be cut the same way.
    const own = msg.settings?.max_tokens;
    if (Number.isSafeInteger(own) && own > (settings.max_tokens ?? 0)) settings.max_tokens = own;
    return { ...msg, messages, settings };
  }

  /** Where a request with the page's `settings` would go now, host settings overlaid
   * (the outbox checks a queued prompt against it before sending: js/page/outbox-sender.js);
   * `settings` itself when no host set anything. */
  effective(settings) {
    return Object.keys(this.settings).length ? coreSettings(settings, this.settings) : settings;
  }
}

/**
 * Attach the page's host adapters to `link` (the page's link to the core: `send(msg)`,
 * 'message' events whose `detail` is each protocol event, and `ready`/`lastReady`).
 * Call it before the link starts, so that `ready` is seen and can be replayed.
 *
 * options.embedOrigins: origins an embedding window may have (added to `?embed-origins=`).
 * options.warm: opens the connection to the API (js/page/warm.js); returns whether a
 * request went (false: already warm, or no API set).
 * options.attach: puts a host's image (`{data, type, name}`, checked) in the composer
 * as a picked photo (js/page/attachments.js); a promise of `{width, height, bytes}`,
 * or a rejection with the ImageError saying why not.
 * options.dictation: takes each checked `composer.dictation` (js/page/dictation.js).
 * options.share: lands a checked `composer.share` in the composer (js/page/share.js); a
 * promise of what `composer.shared` says, or a rejection with a `code`.
 * options.overlay: the HostOverlay that `settings.set` fills (page.js applies it to the
 * page's requests); a new one when not given.
 * options.capabilities: called when a host says in its hello what it can do.
 * Returns a handle with `counts()` (what was received, refused and dropped).
 */
export function attachHosts(link, options = {}) {
  const win = options.window ?? window;
  const embedOrigins = embedOriginsFrom(win.location.search);
  for (const o of options.embedOrigins ?? []) embedOrigins.add(new URL(o).origin);
  /** What every piece below shares (issue 47, item 3: one function per job). */
  const bridge = {
    win, link, options,
    counts: { received: 0, rejected: 0, dropped: { origin: 0, frame: 0 } },
    lastReady: null,
    overlay: options.overlay ?? new HostOverlay(),
    // The page's own behaviour a host set (`haptics`, `awake`): the page's, never in a request.
    pageSettings: {},
    channels: hostChannels(win),
  };
  listenToHosts(bridge, embedOrigins);
  forwardToHosts(bridge);
  const { channels, pageSettings } = bridge;
  return {
    counts: () => structuredClone(bridge.counts),
    overlay: bridge.overlay,
    // The page's own messages to its hosts (`haptic`: js/page/haptics.js): to every host
    // attached now; false when there is none.
    post(msg) {
      if (!attachedOf(channels).length) return false;
      broadcast(channels, msg);
      return true;
    },
    attached: () => attachedOf(channels).length > 0,
    // Whether an attached host said in its hello that it can do `name` ('dictation').
    can: (name) => attachedOf(channels).some((channel) => channel.capabilities?.[name] === true),
    // To the hosts that can do `name` only (`composer.dictate`: one recogniser listens).
    postTo(name, msg) {
      const to = attachedOf(channels).filter((channel) => channel.capabilities?.[name] === true);
      for (const channel of to) out(channel, msg);
      return to.length > 0;
    },
    // What a host set about the page's behaviour (`haptics`, `awake`), or undefined.
    setting: (name) => pageSettings[name],
  };
}

// ---- the channels to hosts ----------------------------------------------------------
// Each channel: `send(text)` (false when no host is there now) and whether it has
// attached (it gets broadcast events: ready, boot.progress, the page's chats).
// `version`: the protocol version of the host's last message (1 until it says).
function hostChannels(win) {
  const native = {
    name: 'native',
    version: 1,
    // Looked up on every send, by property access: a host may add its handler late,
    // and WebKit's messageHandlers enumerates no keys.
    target() {
      const handler = win.webkit?.messageHandlers?.[HANDLER_NAME];
      if (handler && typeof handler.postMessage === 'function') return handler;
      for (const name of [ANDROID_LISTENER, 'FirsttokenAndroid', 'ReactNativeWebView']) {
        const host = win[name];
        if (host && typeof host.postMessage === 'function') return host;
      }
      return null;
    },
    get attached() { return this.target() !== null; },
    send(text) {
      const target = this.target();
      if (!target) return false;
      target.postMessage(text);
      return true;
    },
  };
  const port = {
    name: 'port',
    version: 1,
    port: null,
    get attached() { return this.port !== null; },
    send(text) {
      if (!this.port) return false;
      this.port.postMessage(text);
      return true;
    },
  };
  const embed = {
    name: 'embed',
    version: 1,
    origin: null, // set by the embedding window's first accepted message, for good
    get attached() { return this.origin !== null; },
    send(text) {
      if (!this.origin) return false;
      // An explicit target origin: were the parent navigated elsewhere meanwhile, the
      // browser drops the message instead of handing it to whoever is there now.
      win.parent.postMessage(text, this.origin);
      return true;
    },
  };
  return { native, port, embed };
}

const out = (channel, msg) => channel.send(textFor(channel.version, msg));
const attachedOf = (channels) => Object.values(channels).filter((channel) => channel.attached);

// With no host attached (a page in a browser tab), the page's own stream costs nothing
// here: no copy, no JSON, per delta; with hosts, one JSON text per version spoken.
function broadcast(channels, msg) {
  const to = attachedOf(channels);
  if (!to.length) return;
  const texts = new Map();
  for (const channel of to) {
    if (!texts.has(channel.version)) texts.set(channel.version, textFor(channel.version, msg));
    channel.send(texts.get(channel.version));
  }
}

// ---- host → page --------------------------------------------------------------------
// Where hosts' messages come in: the native API, Android's listener, an embedding window.
function listenToHosts(bridge, embedOrigins) {
  const { win, counts } = bridge;
  const { native, port, embed } = bridge.channels;
  // Native hosts call this (evaluateJavaScript / evaluateJavascript / injectJavaScript).
  // Non-writable and non-configurable: a script in the page cannot put itself between
  // the host and the bridge.
  if (!Object.hasOwn(win, 'firsttoken')) {
    const api = Object.freeze({
      post: (text) => { receive(bridge, native, text); },
      counts: () => structuredClone(counts),
    });
    Object.defineProperty(win, 'firsttoken', { value: api, writable: false, configurable: false, enumerable: false });
  }

  // Android (AndroidX addWebMessageListener): the app's replies arrive on the object it
  // injected. Present from the document's start, before any of the page's scripts.
  const listener = win[ANDROID_LISTENER];
  if (listener && typeof listener.addEventListener === 'function') {
    listener.addEventListener('message', (event) => receive(bridge, native, event.data));
  }

  // An embedding window talks with `message` events, or over a MessagePort it hands
  // over with `hello`. Nothing else that arrives here is a host: a sub-frame, a popup,
  // an opener, a sibling frame of the embedder's, or a null `source` (see the header).
  win.addEventListener('message', (event) => {
    if (event.source === win) return; // the page's own messages (e.g. its libraries'): not a host's
    const fromParent = win.parent !== win && event.source !== null && event.source === win.parent;
    if (!fromParent) {
      counts.dropped.frame += 1;
      return;
    }
    if (!embedOrigins.has(event.origin) || (embed.origin !== null && event.origin !== embed.origin)) {
      counts.dropped.origin += 1;
      return;
    }
    embed.origin = event.origin;
    if (event.ports && event.ports.length === 1) {
      // A port comes with `hello`; anything else is not for us. A new port from the same
      // embedder replaces its old one (a reloaded app page attaching again).
      let request;
      let version;
      try { ({ request, version } = parseHostEnvelope(event.data)); } catch { return; }
      if (request.type !== 'hello') return;
      port.port?.close();
      port.port = event.ports[0];
      port.version = version;
      port.port.onmessage = (e) => receive(bridge, port, e.data);
      handle(bridge, port, request);
      return;
    }
    receive(bridge, embed, event.data);
  });
}

function receive(bridge, channel, data) {
  bridge.counts.received += 1;
  let request;
  try {
    ({ request, version: channel.version } = parseHostEnvelope(data));
  } catch (error) {
    if (!(error instanceof InvalidHostMessage)) throw error;
    bridge.counts.rejected += 1;
    const reply = { type: 'error', error: { code: 'invalid_message', message: error.message } };
    if (error.id !== null) reply.id = error.id;
    out(channel, reply);
    return;
  }
  handle(bridge, channel, request);
}

// A checked request: the page answers it (HOST_REQUESTS), or the core does.
function handle(bridge, channel, request) {
  const own = Object.hasOwn(HOST_REQUESTS, request.type) ? HOST_REQUESTS[request.type] : null;
  if (own) {
    own(bridge, channel, request);
    return;
  }
  const { type, id } = request;
  const { overlay, win } = bridge;
  const core = { type, id: `${HOST_PREFIX}${channel.name}:${id ?? ''}` };
  if (request.messages) {
    core.messages = withSystem(request.messages, overlay.settings.system);
    core.settings = coreSettings({ base_url: new URL('/v1', win.document.baseURI).href }, overlay.settings, request.settings);
  }
  bridge.link.send(core);
}

// What the page answers itself, by type.
const HOST_REQUESTS = {
  hello({ link, options, lastReady }, channel, { id, capabilities }) {
    // What this host can do for the page (`capabilities`: its own recogniser), for
    // as long as it is attached; a later hello says it again, whole.
    if (capabilities) {
      channel.capabilities = capabilities;
      options.capabilities?.();
    }
    // Attaching: `ready` is replayed to a host that arrives after it.
    const ready = lastReady ?? link.lastReady ?? null;
    if (ready) out(channel, { ...ready, id });
    else channel.hello = { id }; // answered when `ready` arrives
  },
  'settings.set'({ overlay, pageSettings }, channel, { id, settings: set }) {
    // The locale is the page's, not the model's: kept apart, never in a request.
    const { locale, haptics, awake, ...settings } = set;
    if (locale !== undefined) overlay.locale = locale;
    for (const [name, value] of Object.entries({ haptics, awake })) {
      if (value === null) delete pageSettings[name];
      else if (value !== undefined) pageSettings[name] = value;
    }
    overlay.settings = mergeSettings(overlay.settings, settings);
    const applied = { ...describeSettings(overlay.settings), ...pageSettings };
    if (overlay.locale) applied.locale = overlay.locale;
    out(channel, { type: 'settings.applied', id, settings: applied });
    // The page shows what a host set where it shows it (the Thinking control's default,
    // the language: js/page/page.js).
    overlay.dispatchEvent(new Event('change'));
  },
  'connection.warm'({ options }, channel, { id }) {
    // The app starts: open the connection to the API before the person types.
    const sent = options.warm ? options.warm() : false;
    out(channel, { type: 'connection.warmed', id, sent });
  },
  'composer.attach'({ options }, channel, request) {
    // A photo the app has (a share sheet, its own camera): shown in the composer,
    // shrunk and counted like one the user picked; the user sends it. An ImageError's
    // code (js/images/header.js); anything else (bytes that are not base64 after all)
    // is an invalid image.
    answerLater(channel, request.id, 'composer.attached', 'invalid_image', () => {
      if (!options.attach) throw Object.assign(new Error('this page has no composer'), { code: 'unsupported' });
      return options.attach(request.image);
    });
  },
  'composer.dictation'({ options }, _channel, request) {
    // The host's recogniser heard something (js/page/dictation.js): no answer, a stream.
    options.dictation?.(request);
  },
  'composer.share'({ options }, channel, request) {
    // Shared into the chat (js/page/share.js): lands in the composer, for the person
    // to send; refused whole (an unknown conversation) with nothing changed.
    answerLater(channel, request.id, 'composer.shared', 'invalid_share', () => {
      if (!options.share) throw Object.assign(new Error('this page has no composer'), { code: 'unsupported' });
      return options.share(request);
    });
  },
};

// Runs `work` (a value or a promise of the reply's fields) and answers with `type`, or
// with an error whose code is the failure's own, else `fallback`.
/** @param {() => any} work */
function answerLater(channel, id, type, fallback, work) {
  Promise.resolve().then(work).then(
    (fields) => out(channel, { type, id, ...fields }),
    (e) => out(channel, { type: 'error', id, error: { code: typeof e?.code === 'string' ? e.code : fallback, message: String(e?.message ?? e) } }),
  );
}

// ---- page → host --------------------------------------------------------------------
function forwardToHosts(bridge) {
  const { link, win, channels } = bridge;
  link.addEventListener('message', (event) => {
    const msg = event.detail;
    if (!msg || typeof msg.type !== 'string') return;
    if (msg.type === 'ready') {
      const ready = { ...msg };
      delete ready.id; // the page's hello
      bridge.lastReady = ready;
      // Every host present hears it; one that said hello first, with its hello's id.
      for (const channel of Object.values(channels)) {
        if (!channel.attached) continue;
        out(channel, { ...ready, id: channel.hello?.id });
        channel.hello = null;
      }
      return;
    }
    if (msg.type === 'boot.progress') {
      broadcast(channels, msg);
      return;
    }
    const id = typeof msg.id === 'string' ? msg.id : '';
    if (id.startsWith(HOST_PREFIX)) {
      const rest = id.slice(HOST_PREFIX.length);
      const colon = rest.indexOf(':');
      const channel = channels[rest.slice(0, colon)];
      const hostId = rest.slice(colon + 1);
      const reply = { ...msg };
      if (hostId) reply.id = hostId;
      else delete reply.id;
      if (channel) out(channel, reply);
      return;
    }
    if (OBSERVED(msg.type) && attachedOf(channels).length) broadcast(channels, { ...msg, id: id ? PAGE_PREFIX + id : undefined });
  });
  // The page's own replies' latency, as the page measured it (js/render/reply-metrics.js).
  win.addEventListener('firsttoken:metrics', (event) => {
    const metrics = event.detail || {};
    broadcast(channels, { type: 'chat.metrics', id: metrics.id ? PAGE_PREFIX + metrics.id : undefined, metrics });
  });
}

// `null` clears a field; headers are replaced as a whole.
function mergeSettings(current, update) {
  const next = { ...current };
  for (const [name, value] of Object.entries(update)) {
    if (value === null) delete next[name];
    else next[name] = value;
  }
  return next;
}

// What a host is told it set: never the key itself.
function describeSettings(settings) {
  const { api_key: key, ...rest } = settings;
  return { ...rest, api_key: Boolean(key) };
}

// The settings a request goes with: the page's (or defaults), then the host's, then
// the request's own. The system prompt travels as a message, not a setting.
//
// Credentials belong to the endpoint they were given for: a layer that moves the
// request to another base URL drops the key and headers of the layers under it unless
// it brings its own. So a host that sets only `base_url` never sends the user's key
// (typed for the user's endpoint) anywhere else (README, "Security": "a user's key
// never goes to an endpoint the user did not choose").
function coreSettings(base, host, own = {}) {
  let merged = { ...base };
  for (const layer of [host, own]) {
    if (typeof layer.base_url === 'string' && !sameEndpoint(layer.base_url, merged.base_url)) {
      const { api_key: _key, headers: _headers, ...rest } = merged;
      merged = rest;
    }
    for (const [name, value] of Object.entries(layer)) {
      if (name === 'system' || value === null || value === undefined) continue;
      merged[name] = name === 'headers' ? { ...(merged.headers || {}), ...value } : value;
    }
  }
  return merged;
}

// The same endpoint: the same URL once a trailing slash is set aside.
function sameEndpoint(a, b) {
  const norm = (url) => (typeof url === 'string' ? url.replace(/\/+$/, '') : url);
  return norm(a) === norm(b);
}

// The host's system prompt goes first, as the page sends its own, unless the
// conversation already starts with one.
function withSystem(messages, system) {
  const text = typeof system === 'string' ? system.trim() : '';
  if (!text || messages[0]?.role === 'system') return messages;
  return [{ role: 'system', content: text }, ...messages];
}
