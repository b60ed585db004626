"""Security and isolation headers on every response (a plain ASGI middleware).

- COOP `same-origin` + COEP `require-corp` make the page cross-origin isolated, which a
  PyScript worker needs for SharedArrayBuffer (its synchronous bridge to the page). The
  page needs neither (it never makes a synchronous call to the page's thread, and counts
  tokens in its own thread), so `isolation=False` (`--no-isolation`) leaves them out:
  the page as Android's WebView sees it, which is never isolated whatever it is sent.
- CORP `same-origin` lets our own assets load under COEP.
- The Content-Security-Policy allows scripts from this origin only, and the page's own
  inline blocks by their SHA-256 (CSP Level 3, "hash-source"): its first step and the
  styles of its first view, inline so that a first visit's Send works once the HTML
  alone has arrived (issue 45, item 2; docs/boot.md). The hashes are taken from
  index.html as served (`PagePolicy`: again whenever the file changes), so an edit to
  a block cannot leave the policy behind; no 'unsafe-inline', so markup in a model's answer can never bring
  script or style of its own (a hash allows only the exact text it was taken from). 'wasm-unsafe-eval'
  lets Pyodide compile WebAssembly. No 'unsafe-eval': nothing the page or its workers
  run at start-up evaluates a string. PyScript would, but only in a worker started
  with its hooks (the `Function(...)` of @pyscript/core's src/hooks.js:42 on the page,
  and its `pyscript` package's `window.Function(...)`, stdlib context.py:131), and
  js/boot/boot.js starts ours before PyScript has any (it says how). Images
  only from this origin, data: and blob:, so model output cannot leak data through an
  image URL. connect-src is configurable: the page may talk to an upstream directly.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import NamedTuple

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class InlineSources(NamedTuple):
    """The CSP hash-sources ('sha256-…') of a page's inline `<style>` and `<script>`
    elements, in document order."""

    styles: tuple[str, ...] = ()
    scripts: tuple[str, ...] = ()


class _InlineBlocks(HTMLParser):
    # The HTML parser, not a pattern: a comment that mentions <script> is no element, and
    # a script's or style's text runs to its end tag whatever it holds (raw text).
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.open: tuple[str, list[str]] | None = None
        self.blocks: dict[str, list[str]] = {"style": [], "script": []}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.blocks and not (tag == "script" and any(name == "src" for name, _ in attrs)):
            self.open = (tag, [])

    def handle_data(self, data: str) -> None:
        if self.open is not None:
            self.open[1].append(data)

    def handle_endtag(self, tag: str) -> None:
        if self.open is not None and self.open[0] == tag:
            self.blocks[tag].append("".join(self.open[1]))
            self.open = None


def hash_source(text: str) -> str:
    """`'sha256-…'` of an inline block's text, as the browser hashes it (CSP Level 3,
    "Does element match source list": the UTF-8 of the element's text content)."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def inline_sources(html: str) -> InlineSources:
    """The hash-sources of `html`'s inline styles and scripts (those without `src`)."""
    parser = _InlineBlocks()
    # The parser hands on text as it is, but the browser's tokenizer first turns CR LF
    # and CR into LF (HTML, "preprocessing the input stream"): hash what it will see.
    parser.feed(html.replace("\r\n", "\n").replace("\r", "\n"))
    parser.close()
    return InlineSources(tuple(dict.fromkeys(map(hash_source, parser.blocks["style"]))),
                         tuple(dict.fromkeys(map(hash_source, parser.blocks["script"]))))


def page_inline_sources(index_html: Path) -> InlineSources:
    """`inline_sources` of the page this gateway serves; none when it serves no page."""
    try:
        return inline_sources(index_html.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return InlineSources()


class PagePolicy:
    """The policy of the page in `index_html`, as that file is now: its hashes taken
    again whenever the file's size or mtime change (one `stat` a response), so that a
    page edited under a running gateway is never served with the old hashes, which
    would block its inline first step."""

    def __init__(self, connect_src: str, frame_ancestors: str, index_html: Path) -> None:
        self.connect_src, self.frame_ancestors, self.index_html = connect_src, frame_ancestors, index_html
        self._seen: tuple[int, int] | None = None
        self._csp = content_security_policy(connect_src, frame_ancestors)

    def __call__(self) -> str:
        try:
            st = self.index_html.stat()
            seen: tuple[int, int] | None = (st.st_size, st.st_mtime_ns)
        except OSError:
            seen = None
        if seen != self._seen:
            self._seen = seen
            self._csp = content_security_policy(self.connect_src, self.frame_ancestors,
                                                page_inline_sources(self.index_html) if seen else NO_INLINE)
        return self._csp


#: A page with no inline block (the policy's default).
NO_INLINE = InlineSources()


def content_security_policy(connect_src: str, frame_ancestors: str, inline: InlineSources = NO_INLINE) -> str:
    def sources(base: str, hashes: Sequence[str]) -> str:
        return " ".join([base, *hashes])

    return "; ".join(
        [
            "default-src 'self'",
            sources("script-src 'self' 'wasm-unsafe-eval'", inline.scripts),
            "worker-src 'self' blob:",
            f"connect-src {connect_src}",
            "img-src 'self' data: blob:",
            sources("style-src 'self'", inline.styles),
            "font-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
            f"frame-ancestors {frame_ancestors}",
        ]
    )


#: Where SecurityHeaders puts its `policy` in the ASGI scope, for the service worker
#: script (gateway/offline.py): the worker serves its offline copies with this policy,
#: and its build id changes with it.
POLICY_SCOPE_KEY = "firsttoken.security_policy"


class SecurityHeaders:
    def __init__(self, app: ASGIApp, *, csp: str | Callable[[], str], isolation: bool = True) -> None:
        self.app = app
        #: A fixed policy, or one asked for on every request (`PagePolicy`).
        self.csp = csp
        self.isolation = isolation
        self._build(csp() if callable(csp) else csp)

    def _build(self, csp: str) -> None:
        #: Every header this policy governs, None where it sends none (COOP/COEP under
        #: `--no-isolation`): a copy of a response must lose those, not keep old ones.
        self.policy: dict[str, str | None] = {
            "cross-origin-opener-policy": "same-origin" if self.isolation else None,
            "cross-origin-embedder-policy": "require-corp" if self.isolation else None,
            "cross-origin-resource-policy": "same-origin",
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
            "content-security-policy": csp,
        }
        self.headers = [(k.encode(), v.encode()) for k, v in self.policy.items() if v is not None]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if callable(self.csp) and (csp := self.csp()) != self.policy["content-security-policy"]:
            self._build(csp)
        policy, headers = self.policy, self.headers  # this request's, whatever comes next

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in headers if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app({**scope, POLICY_SCOPE_KEY: policy}, receive, send_with_headers)
