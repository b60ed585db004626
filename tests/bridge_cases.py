"""Hostile input at the host bridge, shared by the Chromium and the WebKitGTK tests:
each case is text a host (or an attacker speaking as one) hands the page, and each
must come back as an `error` event with code `invalid_message`, having done nothing.
(bridge/PROTOCOL.md, "Hosts"; bridge/page/host-messages.js)"""

from __future__ import annotations

import json

#: Every case sets `window.__pwned` if any part of it were ever evaluated.
PWN = "window.__pwned = 1"

OVERSIZE = json.dumps({"type": "ping", "id": "big", "pad": "x" * (8 * 1024 * 1024)})

HOSTILE: dict[str, str] = {
    "over 8 MiB": OVERSIZE,
    "not JSON": "{type: 'ping'",
    "a script, not JSON": PWN,
    "a script breaking out of the host's string literal": f'"); {PWN}; ("',
    "a JSON string holding a script": json.dumps(PWN),
    "not an object": "[1, 2, 3]",
    "the wrong version": json.dumps({"v": 3, "type": "ping", "id": "v3"}),
    "a __proto__ key": '{"type": "ping", "id": "proto", "__proto__": {"polluted": 1}}',
    "a nested constructor key": json.dumps(
        {"type": "settings.set", "id": "ctor", "settings": {"headers": {"constructor": {"prototype": {"polluted": 1}}}}}
    ),
    "an unknown type": json.dumps({"type": "eval", "id": "eval", "code": PWN}),
    "a type the core takes but hosts may not send": json.dumps({"type": "delta.ack"}),
    "a javascript: base URL": json.dumps({"type": "settings.set", "id": "url", "settings": {"base_url": f"javascript:{PWN}"}}),
    "a chat without an id": json.dumps({"type": "chat.send", "messages": [{"role": "user", "content": "hi"}]}),
    "a header with a line break": json.dumps(
        {"type": "settings.set", "id": "crlf", "settings": {"headers": {"x-a": "1\r\nx-b: 2"}}}
    ),
}

#: What the page must look like after all of it.
UNTOUCHED_JS = (
    "({pwned: typeof window.__pwned, polluted: typeof ({}).polluted,"
    " post: typeof window.firsttoken.post, title: document.title})"
)
UNTOUCHED = {"pwned": "undefined", "polluted": "undefined", "post": "function", "title": "firsttoken"}

#: Run in the page: frames `/?embed-origins=<allowed>` and sends it `text` from this
#: window (its parent). Resolves once the frame has handled it (a listener the test adds
#: to the frame after the page's own runs after it) and, when our origin is on its
#: list, once it has answered; with the frame's bridge counts, its answers, and this
#: window's counts (the answer came from a sub-frame: dropped here).
EMBED_JS = """async ([allowed, text]) => {
  const frame = document.createElement('iframe');
  frame.src = '/?embed-origins=' + encodeURIComponent(allowed);
  const loaded = new Promise((resolve) => frame.addEventListener('load', resolve, { once: true }));
  document.body.append(frame);
  await loaded;
  const child = frame.contentWindow;
  const answers = [];
  const answered = new Promise((resolve) => addEventListener('message', (e) => {
    if (e.source === child) { answers.push(e.data); resolve(); }
  }));
  const handled = new Promise((resolve) => child.addEventListener('message', resolve, { once: true }));
  child.postMessage(text, '*');
  await handled;
  if (allowed === location.origin) await answered;
  const counts = child.firsttoken.counts();
  // The frame stays: in WebKitGTK 2.50, removing a frame whose page is still starting
  // Python left the next same-origin frame never firing `load`.
  frame.hidden = true;
  return { counts, answers, top: window.firsttoken.counts() };
}"""
