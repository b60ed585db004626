#!/usr/bin/python3
"""A WebKitGTK 6.0 host for the firsttoken page: the iOS WKWebView bridge, on Linux.

WebKitGTK is the engine of WKWebView, with the same page-side API: a script message
handler registered as `firsttoken` appears to the page as
`window.webkit.messageHandlers.firsttoken`, and the host answers by evaluating
`window.firsttoken.post(<JSON string literal>)`. So a page that works here works in an
iOS app that does what `Host` does (bridge/PROTOCOL.md, "Hosts").

Run it with Debian's `/usr/bin/python3` (PyGObject lives there, not in the virtualenv),
under an X server (harness/gtk.py starts Xvfb):

    /usr/bin/python3 bridge/hosts/gtk/host.py --url http://127.0.0.1:8000/ [--profile DIR]

It is driven by JSON lines on stdin and reports JSON lines on stdout, so that a test
(or any program) can stand in for the native app:

    in:  {"cmd": "post", "text": "<protocol message>"}   host → page
         {"cmd": "eval", "id": 1, "js": "<expression>"}  awaited; answered with `eval`
         {"cmd": "load", "url": "..."}                  navigate (a reload of a warm profile)
         {"cmd": "ping-loop", "n": 1000, "type": "ping"} round trips timed here, one after another
                                                        (`hello`: answered by the page, not Python)
         {"cmd": "close"}
    out: {"event": "started", "webkit": "2.50.1"}
         {"event": "message", "text": "<protocol message>"}  page → host, as received
         {"event": "load", "url": "..."}                 a page finished loading
         {"event": "console", "level": "error", "text": "..."}  page errors and warnings
         {"event": "eval", "id": 1, "value": <JSON> | "error": "..."}
         {"event": "crashed", "reason": "..."}
         {"event": "ping-loop", "ms": [...]}            each round trip, native → page → Python → native

`--bundle DIR` serves the folder `make bundle` wrote at firsttoken://app/ (use
`--url firsttoken://app/index.html`), with the headers its manifest.json lists for each
file: what an iOS app's `WKURLSchemeHandler` does (bridge/hosts/ios/), with no server
for the page. Only the chat API is then on the network.

`--profile DIR` keeps the site's data (Cache Storage, IndexedDB, the service worker,
the HTTP cache) in DIR between runs: a second run is a warm boot, as an app's next
launch is. Without it the session is ephemeral.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("WebKit", "6.0")
gi.require_version("Soup", "3.0")
from gi.repository import Gio, GLib, Gtk, Soup, WebKit  # noqa: E402

HANDLER = "firsttoken"
CONSOLE_HANDLER = "firsttokenConsole"

# Page errors, unhandled rejections and console.error/warn, reported over a message
# handler of their own: WebKitGTK 6.0 has no console signal, and its
# write-console-messages-to-stdout mixes with our protocol lines. Injected by the host
# (a user script is not subject to the page's CSP), in the page's world, before any of
# the page's scripts run. Workers' consoles are not covered.
CONSOLE_HOOK = """
(() => {
  const handler = window.webkit && window.webkit.messageHandlers && window.webkit.messageHandlers.%s;
  if (!handler) return;
  const say = (level, parts) => {
    try { handler.postMessage(JSON.stringify({ level, text: parts.map(String).join(' ') })); } catch (e) {}
  };
  for (const level of ['error', 'warn']) {
    const original = console[level].bind(console);
    console[level] = (...parts) => { say(level, parts); original(...parts); };
  }
  addEventListener('error', (e) => say('pageerror', [e.message, e.filename + ':' + e.lineno]));
  addEventListener('unhandledrejection', (e) => say('pageerror', ['unhandled rejection:', e.reason && (e.reason.stack || e.reason)]));
})();
""" % CONSOLE_HANDLER


BUNDLE_SCHEME = "firsttoken"


class BundleScheme:
    """Serves a `make bundle` folder at firsttoken://app/: only the files its manifest
    names, each with the headers the manifest gives it (content type, COOP/COEP, CSP,
    the snapshot's label). Anything else is a 404, so the page reads no other file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
        if manifest.get("version") != 1:
            raise SystemExit(f"{root}/manifest.json: unknown version {manifest.get('version')!r}")
        self.files: dict[str, dict[str, str]] = manifest["files"]

    def install(self, context: WebKit.WebContext) -> None:
        context.register_uri_scheme(BUNDLE_SCHEME, self._serve)
        security = context.get_security_manager()
        # A secure context (workers, Cache Storage, IndexedDB) whose fetches may use CORS,
        # as WKWebView treats a scheme handler's pages.
        security.register_uri_scheme_as_secure(BUNDLE_SCHEME)
        security.register_uri_scheme_as_cors_enabled(BUNDLE_SCHEME)

    def _serve(self, request: WebKit.URISchemeRequest) -> None:
        path = (request.get_path() or "/").lstrip("/") or "index.html"
        headers = self.files.get(path)
        if headers is None:
            # A 404, as a server would answer (and as the iOS sample does): the page's
            # fetch resolves with it, and the page reports what is missing.
            self._respond(request, 404, "Not Found", b"", {"content-type": "text/plain"})
            return
        self._respond(request, 200, "OK", (self.root / path).read_bytes(), headers)

    @staticmethod
    def _respond(request: WebKit.URISchemeRequest, status: int, reason: str, body: bytes, headers: dict[str, str]) -> None:
        response = WebKit.URISchemeResponse.new(Gio.MemoryInputStream.new_from_bytes(GLib.Bytes.new(body)), len(body))
        response.set_status(status, reason)
        response.set_content_type(headers.get("content-type", "application/octet-stream"))
        fields = Soup.MessageHeaders.new(Soup.MessageHeadersType.RESPONSE)
        for name, value in headers.items():
            fields.append(name, value)
        response.set_http_headers(fields)
        request.finish_with_response(response)


class Host:
    """One web view, one page, the protocol relayed between it and stdin/stdout."""

    def __init__(self, url: str, profile: Path | None, out: Any, size: tuple[int, int], bundle: Path | None = None,
                 storage: bool = True) -> None:
        self.out = out
        self.loop = GLib.MainLoop()
        self.pings: dict[str, Any] | None = None  # a running ping-loop
        if profile is not None:
            # Data (Cache Storage, IndexedDB, service workers) and the HTTP cache both
            # persist: an app's WKWebView keeps both in its default data store.
            session = WebKit.NetworkSession.new(str(profile / "data"), str(profile / "cache"))
        else:
            session = WebKit.NetworkSession.new_ephemeral()
        manager = WebKit.UserContentManager()
        manager.register_script_message_handler(HANDLER, None)
        manager.register_script_message_handler(CONSOLE_HANDLER, None)
        manager.connect(f"script-message-received::{HANDLER}", self._on_message)
        manager.connect(f"script-message-received::{CONSOLE_HANDLER}", self._on_console)
        manager.add_script(WebKit.UserScript.new(
            CONSOLE_HOOK,
            WebKit.UserContentInjectedFrames.TOP_FRAME,
            WebKit.UserScriptInjectionTime.START,
            None, None,
        ))
        self.view = WebKit.WebView(network_session=session, user_content_manager=manager)
        if bundle is not None:
            BundleScheme(bundle).install(self.view.get_context())
        settings = self.view.get_settings()
        # Xvfb has no GPU: composite in software, as a CI machine must.
        settings.set_hardware_acceleration_policy(WebKit.HardwareAccelerationPolicy.NEVER)
        if not storage:
            # An app that turned web storage off (Android's setDomStorageEnabled(false)
            # is the same switch): no localStorage or sessionStorage, no IndexedDB.
            settings.set_enable_html5_local_storage(False)
            settings.set_enable_html5_database(False)
        self.view.connect("load-changed", self._on_load)
        self.view.connect("load-failed", self._on_load_failed)
        self.view.connect("web-process-terminated", self._on_terminated)
        self.window = Gtk.Window(title="firsttoken", default_width=size[0], default_height=size[1])
        self.window.set_child(self.view)
        self.window.present()
        self.stdin = Gio.DataInputStream.new(Gio.UnixInputStream.new(sys.stdin.fileno(), False))
        self._read_command()
        version = f"{WebKit.get_major_version()}.{WebKit.get_minor_version()}.{WebKit.get_micro_version()}"
        self.emit({"event": "started", "webkit": version})
        self.view.load_uri(url)

    # ---- out ----------------------------------------------------------------
    def emit(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event, ensure_ascii=False) + "\n")
        self.out.flush()

    def _on_message(self, _manager: WebKit.UserContentManager, value: Any) -> None:
        # The protocol is JSON text: a page that posts anything else is reported as
        # what it is (its JSON form), for the caller to refuse.
        if value.is_string():
            text = value.to_string()
            if self.pings is not None and self._pinged(text):
                return
            self.emit({"event": "message", "text": text})
        else:
            self.emit({"event": "message", "text": None, "value": value.to_json(0)})

    def _on_console(self, _manager: WebKit.UserContentManager, value: Any) -> None:
        try:
            record = json.loads(value.to_string())
        except (TypeError, ValueError):
            return
        self.emit({"event": "console", "level": record.get("level"), "text": record.get("text")})

    def _on_load(self, view: WebKit.WebView, event: WebKit.LoadEvent) -> None:
        if event == WebKit.LoadEvent.FINISHED:
            self.emit({"event": "load", "url": view.get_uri()})

    def _on_load_failed(self, _view: WebKit.WebView, _event: Any, uri: str, error: GLib.Error) -> bool:
        self.emit({"event": "load-failed", "url": uri, "error": error.message})
        return False

    def _on_terminated(self, _view: WebKit.WebView, reason: WebKit.WebProcessTerminationReason) -> None:
        self.emit({"event": "crashed", "reason": reason.value_nick})

    # ---- in -----------------------------------------------------------------
    def _read_command(self) -> None:
        self.stdin.read_line_async(GLib.PRIORITY_DEFAULT, None, self._on_line)

    def _on_line(self, stream: Gio.DataInputStream, result: Gio.AsyncResult) -> None:
        line, _length = stream.read_line_finish_utf8(result)
        if line is None:  # stdin closed: the caller is gone
            self.loop.quit()
            return
        try:
            self.command(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - a bad command must not end the host
            self.emit({"event": "host-error", "error": f"{type(exc).__name__}: {exc}"})
        self._read_command()

    def command(self, cmd: dict[str, Any]) -> None:
        kind = cmd.get("cmd")
        if kind == "post":
            self.post(cmd["text"])
        elif kind == "eval":
            self.evaluate(cmd["id"], cmd["js"])
        elif kind == "load":
            self.view.load_uri(cmd["url"])
        elif kind == "ping-loop":
            self.pings = {"n": int(cmd["n"]), "ms": [], "sent": 0.0, "type": cmd.get("type", "ping")}
            self._ping()
        elif kind == "close":
            self.loop.quit()
        else:
            raise ValueError(f"unknown command {kind!r}")

    def post(self, text: str) -> None:
        """Hand one protocol message to the page, as a WKWebView host does.

        The text goes as a JSON string literal, so whatever it holds is data to the page:
        quotes, `</script>`, U+2028 (json.dumps escapes every non-ASCII character) cannot
        end the literal and become code.
        """
        script = f"window.firsttoken.post({json.dumps(text)})"
        self.view.evaluate_javascript(script, -1, None, None, None, None, None)

    # Round trips timed where a native app would time them: from the call that posts a
    # `ping` to the handler receiving its `pong`, each sent when the last came back.
    def _ping(self) -> None:
        pings = self.pings
        assert pings is not None
        pings["sent"] = time.perf_counter()
        self.post(json.dumps({"type": pings["type"], "id": f"ping-loop-{len(pings['ms'])}"}))

    def _pinged(self, text: str) -> bool:
        pings = self.pings
        assert pings is not None
        if f'"ping-loop-{len(pings["ms"])}"' not in text:
            return False
        pings["ms"].append((time.perf_counter() - pings["sent"]) * 1000)
        if len(pings["ms"]) < pings["n"]:
            self._ping()
        else:
            self.pings = None
            self.emit({"event": "ping-loop", "ms": pings["ms"]})
        return True

    def evaluate(self, request: int, js: str) -> None:
        """Evaluate an expression for a test, awaiting a promise; answer with its JSON."""

        def done(view: WebKit.WebView, result: Gio.AsyncResult) -> None:
            try:
                value = view.call_async_javascript_function_finish(result)
                text = value.to_json(0) if not value.is_undefined() else "null"
                self.emit({"event": "eval", "id": request, "value": json.loads(text or "null")})
            except GLib.Error as exc:
                self.emit({"event": "eval", "id": request, "error": exc.message})

        body = f"return ({js});"
        self.view.call_async_javascript_function(body, -1, None, None, None, None, done)

    def run(self) -> None:
        self.loop.run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--profile", type=Path, default=None, help="persistent data directory (warm boots)")
    parser.add_argument("--size", default="1024x768")
    parser.add_argument("--bundle", type=Path, default=None, help="a `make bundle` folder, served at firsttoken://app/")
    parser.add_argument("--no-storage", action="store_true", help="web storage and IndexedDB turned off, as an app may")
    args = parser.parse_args()
    # Protocol lines get stdout to themselves: anything the C libraries print there
    # (WebKit, GTK) is sent to stderr instead.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    width, height = (int(n) for n in args.size.split("x"))
    Host(args.url, args.profile, out, (width, height), args.bundle, storage=not args.no_storage).run()


if __name__ == "__main__":
    main()
