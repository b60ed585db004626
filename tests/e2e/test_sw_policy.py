"""The service worker never serves a stale security policy, and its cache is bounded.

One browser context is one user's profile across gateway restarts on one port: the
worker it installed stays, as it would on a phone. An embedder on another loopback
origin (same site, so the frame shares the profile's worker) frames the page while the
gateway lists it in `--frame-ancestors`; the gateway then restarts with
`--frame-ancestors 'self'`, and the next load must refuse the frame, online, offline,
and when the network hangs. sw.js ("Headers", "Bounds") says how.

Nothing sleeps: tests wait on the page's readiness markers and on events.
"""

from __future__ import annotations

import json
import math
import re
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Frame, Page
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from gateway.app import GatewayConfig, create_app
from harness.chromium import BOOT_TIMEOUT_MS, Console
from harness.servers import _free_port as free_port, copy_tree, gateway, serve_app

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
SW = (ROOT / "sw.js").read_text(encoding="utf-8")
KEPT_ENTRIES = int(re.search(r"const KEPT_ENTRIES = (\d+);", SW).group(1))
KEPT_BYTES = math.prod(int(n) for n in re.findall(r"\d+", re.search(r"const KEPT_BYTES = ([\d *]+);", SW).group(1)))

# Run in the embedder: frame `src` and resolve once the frame fired `load` (it does for
# a refused frame too: Chromium commits an error page in its place).
FRAME_JS = """(src) => new Promise((resolve) => {
  const frame = document.createElement('iframe');
  frame.src = src;
  frame.addEventListener('load', () => resolve(true), { once: true });
  document.body.append(frame);
})"""
# Resolves once a service worker controls the page (at once if one does): the page
# registers it once Python is ready, and the worker claims the page on activating.
CONTROLLED_JS = """(timeout) => navigator.serviceWorker.controller !== null || new Promise((resolve, reject) => {
  navigator.serviceWorker.addEventListener('controllerchange', () => resolve(true), { once: true });
  setTimeout(() => reject(new Error(`no service worker in control after ${timeout} ms`)), timeout);
})"""
# The worker's own cache (the build's), as {url: [stored bytes, headers]}.
ASSET_CACHE_JS = """async () => {
  const name = (await caches.keys()).find((n) => n.startsWith('firsttoken-assets-'));
  const cache = await caches.open(name);
  const out = {};
  for (const request of await cache.keys()) {
    const response = await cache.match(request);
    if (!response) continue;  // deleted meanwhile (the page's own fetches are kept too)
    out[request.url] = [(await response.blob()).size, Object.fromEntries(response.headers)];
  }
  return out;
}"""


def prelude(url: str) -> dict[str, Any]:
    line = httpx.get(url + "/sw.js").text.split("\n", 1)[0]
    return json.loads(line.removeprefix("self.FIRSTTOKEN_BUILD = ").removesuffix(";"))


# ---- one profile, one port, gateways restarted under it ---------------------------
class Profile:
    """A browser context whose page lives at one origin while gateways come and go."""

    def __init__(self, browser: Browser, tree: Path, embedder: str) -> None:
        self.context = browser.new_context()
        self.tree = tree
        self.embedder = embedder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.console = Console()
        self.frame_ancestors: str | None = None
        self._running = ExitStack()
        self._revoked: dict[str, Any] | None = None

    def serve(self, frame_ancestors: str) -> None:
        """(Re)start the gateway on this profile's port with that `--frame-ancestors`."""
        self._running.close()
        self._running.enter_context(gateway(
            "--port", str(self.port), "--frame-ancestors", frame_ancestors, "--ttft-ms", "0", root=self.tree))
        # The new process's first page costs what building its bodies costs; the worker
        # waits PAGE_WAIT_MS (4 s) for the network before it answers from its copy, which
        # a loaded machine's first response can outlast (a full run saw the old page
        # framed). Paid here, the page the tests load is the policy's answer.
        assert httpx.get(self.url + "/", timeout=60).status_code == 200
        self.frame_ancestors = frame_ancestors

    def hang(self) -> None:
        """In the gateway's place, a socket that takes connections and never answers."""
        self._running.close()
        sock = self._running.enter_context(socket.socket())
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self.port))
        sock.listen(64)
        self.frame_ancestors = None

    def close(self) -> None:
        self.context.close()
        self._running.close()

    def new_page(self) -> Page:
        page = self.context.new_page()
        page.on("console", self.console.on_console)
        page.on("pageerror", self.console.on_error)
        return page

    @contextmanager
    def visit(self) -> Iterator[Page]:
        """The page at the top, Python ready, the worker in control."""
        page = self.new_page()
        try:
            page.goto(self.url + "/", wait_until="domcontentloaded")
            wait_python(page)
            assert page.evaluate(CONTROLLED_JS, BOOT_TIMEOUT_MS)
            yield page
        finally:
            page.close()

    @contextmanager
    def embedding(self) -> Iterator[tuple[Page, Frame]]:
        """The embedder with the page framed (or refused); the frame as Playwright sees it."""
        page = self.new_page()
        try:
            page.goto(self.embedder + "/")
            assert page.evaluate(FRAME_JS, self.url + "/")
            yield page, page.frames[1]
        finally:
            page.close()

    def revoke(self) -> dict[str, Any]:
        """Restart the gateway with `--frame-ancestors 'self'` and embed once: what the
        frame was. Done once per profile (later tests start from it)."""
        if self._revoked is None:
            self.serve("'self'")
            with self.embedding() as (page, frame):
                self._revoked = framed(frame)
        return self._revoked


def wait_python(page: Page) -> None:
    page.wait_for_selector('html[data-python="ready"], html[data-python="failed"]', state="attached", timeout=BOOT_TIMEOUT_MS)
    assert page.get_attribute("html", "data-python") == "ready", page.inner_text("#boot")


def framed(frame: Frame) -> dict[str, Any]:
    """What a frame holds: its URL, and for the firsttoken page its title and whether
    the service worker answered it."""
    seen: dict[str, Any] = {"url": frame.url}
    if frame.url.startswith("http"):
        seen |= frame.evaluate("({title: document.title, controlled: navigator.serviceWorker.controller !== null})")
    return seen


@pytest.fixture(scope="module")
def embedder() -> Iterator[str]:
    async def page(request: Any) -> HTMLResponse:
        return HTMLResponse("<!doctype html><title>embedder</title><body></body>")

    with serve_app(Starlette(routes=[Route("/", page)])) as url:
        yield url


@pytest.fixture(scope="module")
def profile(browser: Browser, embedder: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Profile]:
    tree = copy_tree(tmp_path_factory.mktemp("sw-policy"))
    (tree / "build").mkdir()
    if (ROOT / "build" / "snapshot").is_dir():  # the install-time snapshot: a quicker first boot
        (tree / "build" / "snapshot").symlink_to(ROOT / "build" / "snapshot")
    p = Profile(browser, tree, embedder)
    p.serve(f"'self' {embedder}")
    with p.visit():  # the first visit: the worker installs and takes over
        pass
    yield p
    p.close()
    assert not p.console.page_errors, f"uncaught errors in the page: {p.console.page_errors}"


def page_policy(headers: dict[str, str]) -> str:
    return headers["content-security-policy"].split("frame-ancestors ", 1)[1]


# ---- tests -------------------------------------------------------------------------
def test_the_build_id_and_the_workers_policy_follow_the_gateways_headers() -> None:
    def served(**config: Any) -> tuple[dict[str, Any], httpx.Headers]:
        with TestClient(create_app(GatewayConfig(**config)), base_url="http://127.0.0.1") as client:
            sw = client.get("/sw.js").text.split("\n", 1)[0]
            return json.loads(sw.removeprefix("self.FIRSTTOKEN_BUILD = ").removesuffix(";")), client.get("/").headers

    base, page = served()
    # The worker's policy is the one the gateway sends with the page, header for header.
    assert {k: v for k, v in base["headers"].items() if v is not None} == {k: page[k] for k in base["headers"] if k in page}
    builds = {base["build"]}
    for config in ({"frame_ancestors": "'none'"}, {"connect_src": "'self'"}, {"isolation": False}):
        manifest, page = served(**config)
        assert manifest["assets"] == base["assets"]
        builds.add(manifest["build"])
        if config == {"isolation": False}:
            assert manifest["headers"]["cross-origin-opener-policy"] is None
            assert "cross-origin-opener-policy" not in page
    assert len(builds) == 4  # each policy its own build, so its own worker
    assert served()[0]["build"] == base["build"]  # and the same policy the same one


def test_a_restarted_gateway_with_a_stricter_frame_ancestors_refuses_the_next_load(profile: Profile) -> None:
    if profile._revoked is None:
        with profile.embedding() as (page, frame):
            before = framed(frame)
        assert before == {"url": profile.url + "/", "title": "firsttoken", "controlled": True}, before
    profile.console.messages.clear()
    after = profile.revoke()
    assert not after["url"].startswith(profile.url), after  # an error page, not the firsttoken page
    refusals = [m for m in profile.console.messages if "frame-ancestors 'self'" in m]
    assert refusals, profile.console.messages


def test_offline_the_page_loads_from_the_worker_with_the_newest_policy(profile: Profile) -> None:
    profile.revoke()
    with profile.embedding() as (embedder, _):  # the embedder loads while the network is up
        profile.context.set_offline(True)
        try:
            profile.console.messages.clear()
            assert embedder.evaluate(FRAME_JS, profile.url + "/")
            assert not framed(embedder.frames[-1])["url"].startswith(profile.url)
            assert [m for m in profile.console.messages if "frame-ancestors 'self'" in m]

            page = profile.new_page()
            try:
                response = page.goto(profile.url + "/", wait_until="domcontentloaded")
                assert response is not None and response.from_service_worker
                assert page_policy(response.headers) == "'self'"
                assert response.headers["cross-origin-embedder-policy"] == "require-corp"
                wait_python(page)
                assert page.evaluate("crossOriginIsolated")  # PyScript's worker still has it
            finally:
                page.close()
        finally:
            profile.context.set_offline(False)
    violations = [m for m in profile.console.messages if "Content Security Policy" in m and "frame-ancestors" not in m]
    assert not violations, violations


def test_query_variants_share_one_copy_and_kept_copies_are_bounded(profile: Profile) -> None:
    if profile.frame_ancestors is None:
        profile.serve("'self'")
    build = prelude(profile.url)
    precached = {profile.url + "/" + a.removeprefix("./") for a in build["assets"]}
    fonts = sorted(f.name for f in (ROOT / "node_modules" / "katex" / "dist" / "fonts").iterdir() if f.suffix in (".woff", ".ttf"))
    encoders = sorted((f for f in (ROOT / "node_modules" / "tiktoken" / "encoders").iterdir() if f.suffix != ".ts"),
                      key=lambda f: -f.stat().st_size)
    big: list[Path] = []
    for f in encoders:  # the largest few, together past the byte bound, each under it
        if sum(b.stat().st_size for b in big) > KEPT_BYTES:
            break
        if f.stat().st_size < KEPT_BYTES:
            big.append(f)
    assert sum(f.stat().st_size for f in big) > KEPT_BYTES and len(fonts) > KEPT_ENTRIES  # the bounds are reached
    variants = [
        "js/page/main.js?v=1", "js/page/main.js?v=2",  # precached: served from the copy
        "vendor/tiktoken/cl100k_base.decoded.json?v=1", "vendor/tiktoken/cl100k_base.decoded.json?v=2",
        *(f"vendor/tiktoken/{f.name}?n={i}" for i, f in enumerate(big)),
    ]
    many = [f"vendor/katex/fonts/{name}?n={i}" for i, name in enumerate(fonts)]
    routed = build["assets"][-1]  # no query: Chromium's static route answers it (sw.js)
    with profile.visit() as page:
        first = kept_after(page, variants)
        second = kept_after(page, many)
        # Served as the worker serves them: each under the gateway's current policy, whatever
        # it was stored with (copies kept before the restart included).
        served = page.evaluate("""async (paths) => {
          const out = {};
          for (const path of paths) {
            const response = await fetch(path);
            out[path] = Object.fromEntries(response.headers);
          }
          return out;
        }""", ["js/page/main.js?v=3", variants[-1], many[-1], routed])

    for stored in (first, second):
        assert not [url for url in stored if "?" in url]  # one copy per path, whatever the query
        kept = {url: size for url, (size, _) in stored.items() if url not in precached}
        assert 0 < len(kept) <= KEPT_ENTRIES, sorted(kept)
        assert sum(kept.values()) <= KEPT_BYTES, kept
        assert not [url for url, (_, headers) in stored.items() if "content-encoding" in headers]
    # The newest stay, the oldest went.
    assert profile.url + "/" + variants[-1].split("?")[0] in first
    assert profile.url + "/" + many[-1].split("?")[0] in second
    assert profile.url + "/" + many[0].split("?")[0] not in second
    for path, headers in served.items():
        # Through the worker: under the gateway's current policy. A file of the build
        # answered by the static route is the copy as stored, under the policy of its
        # install: no header on a same-origin module, wasm or zip changes what the page
        # may do (sw.js, "Which copies the policy governs").
        policy = build["headers"] if path != routed else {
            name: second[profile.url + "/" + routed][1].get(name) for name in build["headers"]}
        for name, value in policy.items():
            assert headers.get(name) == value, (path, name)


def kept_after(page: Page, paths: list[str]) -> dict[str, Any]:
    """Fetch `paths` in the page one after another, then read the worker's cache (a
    file kept on fetch is stored before the worker answers with it)."""
    statuses = page.evaluate("""async (paths) => {
      const statuses = [];
      for (const path of paths) {
        const response = await fetch(path);
        await response.arrayBuffer();
        statuses.push(response.status);
      }
      return statuses;
    }""", paths)
    assert set(statuses) == {200}, dict(zip(paths, statuses))
    return page.evaluate(ASSET_CACHE_JS)


def test_a_hung_network_gets_the_copy_after_a_bounded_wait(profile: Profile) -> None:
    """Runs last: it leaves the port to a socket that never answers."""
    profile.revoke()
    profile.hang()
    page = profile.new_page()
    try:
        response = page.goto(profile.url + "/", wait_until="domcontentloaded", timeout=30_000)
        assert response is not None and response.from_service_worker
        assert page_policy(response.headers) == "'self'"  # the newest the worker saw
    finally:
        page.close()
