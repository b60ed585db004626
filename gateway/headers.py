"""Security and isolation headers on every response (a plain ASGI middleware).

- COOP `same-origin` + COEP `require-corp` make the page cross-origin isolated, which a
  PyScript worker needs for SharedArrayBuffer (its synchronous bridge to the page). The
  page needs neither (it never makes a synchronous call to the page's thread, and counts
  tokens in its own thread), so `isolation=False` (`--no-isolation`) leaves them out:
  the page as Android's WebView sees it, which is never isolated whatever it is sent.
- CORP `same-origin` lets our own assets load under COEP.
- The Content-Security-Policy allows scripts from this origin only: no inline script,
  so markup in a model's answer can never bring script of its own. 'wasm-unsafe-eval'
  lets Pyodide compile WebAssembly. No 'unsafe-eval': nothing the page or its workers
  run at start-up evaluates a string. PyScript would, but only in a worker started
  with its hooks (the `Function(...)` of @pyscript/core's src/hooks.js:42 on the page,
  and its `pyscript` package's `window.Function(...)`, stdlib context.py:131), and
  js/boot/boot.js starts ours before PyScript has any (it says how). Images
  only from this origin, data: and blob:, so model output cannot leak data through an
  image URL. connect-src is configurable: the page may talk to an upstream directly.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def content_security_policy(connect_src: str, frame_ancestors: str) -> str:
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self' 'wasm-unsafe-eval'",
            "worker-src 'self' blob:",
            f"connect-src {connect_src}",
            "img-src 'self' data: blob:",
            "style-src 'self'",
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
    def __init__(self, app: ASGIApp, *, csp: str, isolation: bool = True) -> None:
        self.app = app
        #: Every header this policy governs, None where it sends none (COOP/COEP under
        #: `--no-isolation`): a copy of a response must lose those, not keep old ones.
        self.policy: dict[str, str | None] = {
            "cross-origin-opener-policy": "same-origin" if isolation else None,
            "cross-origin-embedder-policy": "require-corp" if isolation else None,
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

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in self.headers if k not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app({**scope, POLICY_SCOPE_KEY: self.policy}, receive, send_with_headers)
