"""Python's boot in real Chromium: memory snapshot made, restored, thrown away when bad;
the page offline after a first visit; a new release replacing the offline copy.

One browser context plays one returning visitor for the whole module: its first visit
(a normal boot, then a snapshot made in the background and the service worker
installed) is done once, by the `visitor` fixture, and every test leaves the context as
it found it: a valid snapshot stored, the service worker active. The gateway serves a
copy of the working tree, so that a test can ship a "new release" by editing the copy,
and so that edits elsewhere in the checkout cannot change the package mid-module.

Nothing sleeps: tests wait on the page's User Timing marks (`firsttoken:python-ready`,
`firsttoken:boot:<stage>`) through PerformanceObserver, and on DOM markers.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, Response, expect

from harness.chromium import ANSWER, BOOT_TIMEOUT_MS
from harness.stored import stored_messages
from tests.e2e.visitor import Visitor
from harness.servers import ROOT, copy_tree, gateway

pytestmark = [pytest.mark.e2e, pytest.mark.runs_long(190)]

SNAPSHOT_KEYS = """async () => {
  const cache = await caches.open('firsttoken-snapshot');
  return (await cache.keys()).map((r) => r.url);
}"""
# Damage the stored snapshot the way a disk, a quota eviction or another build would.
DAMAGE = """async (mode) => {
  const cache = await caches.open('firsttoken-snapshot');
  const [request] = await cache.keys();
  const stored = await cache.match(request);
  const headers = new Headers(stored.headers);
  let bytes = new Uint8Array(await stored.arrayBuffer());
  if (mode === 'corrupt') bytes[bytes.length >> 1] ^= 0x5a;
  if (mode === 'other-build') {
    // Pyodide writes its BUILD_ID in words 4..11 of the image, whose first page comes
    // first in the stored body (after a 16-byte header and the N page numbers). Change
    // it, and relabel the entry so that it passes our own length and digest checks:
    // only Pyodide objects.
    const pages = new DataView(bytes.buffer).getUint32(8, true);
    new Uint32Array(bytes.buffer, 16 + 4 * pages + 16, 8)[0] ^= 1;
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    headers.set('x-firsttoken-sha256', Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join(''));
  }
  await cache.put(request, new Response(bytes, { headers }));
}"""


# ---- a gateway over a copy of the tree ---------------------------------------------
@contextmanager
def gateway_over(tree: Path) -> Iterator[str]:
    with gateway("--ttft-ms", "0", "--tps", "500", root=tree) as url:
        yield url


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_tree(tmp_path_factory.mktemp("boot"))


@pytest.fixture(scope="module")
def boot_url(tree: Path) -> Iterator[str]:
    with gateway_over(tree) as url:
        yield url


# ---- the returning visitor -----------------------------------------------------------
@pytest.fixture(scope="module")
def visitor(browser: Browser, boot_url: str) -> Iterator[Visitor]:
    context = browser.new_context()
    v = Visitor(context, boot_url)
    with v.visit() as page:
        v.first_boot = v.boot(page)
        v.wait_snapshot_stored(page)
        v.wait_service_worker(page)
    yield v
    context.close()


def chat(page: Page, prompt: str) -> str:
    """Send `prompt`; the whole answer as the page stored it (markdown source)."""
    page.fill("#prompt", prompt)
    page.press("#prompt", "Enter")
    page.wait_for_selector(f'{ANSWER}:last-of-type[data-state="done"]', timeout=60_000)
    return stored_messages(page)[-1]["content"]


def expected_answer(url: str, prompt: str) -> str:
    r = httpx.post(url + "/v1/chat/completions", headers={"x-firsttoken-sim": "ttft_ms=0"}, timeout=30,
                   json={"model": "firsttoken-sim", "messages": [{"role": "user", "content": prompt}]})
    return r.json()["choices"][0]["message"]["content"]


# ---- tests ---------------------------------------------------------------------------
def test_first_visit_boots_normally_and_the_next_restores_the_snapshot(visitor: Visitor) -> None:
    # The first visit had nothing to restore: a plain boot, a snapshot made afterwards.
    assert visitor.first_boot["snapshot"] == "none"
    assert visitor.first_boot["import_ms"] > 0

    with visitor.visit() as page:
        boot = visitor.boot(page)
        assert boot["snapshot"] == "restored"
        assert boot["snapshot_bytes"] > 10_000_000
        # The heap already has firsttoken imported: py/boot.py's import is a lookup.
        assert boot["import_ms"] < visitor.first_boot["import_ms"]
        # Stages arrive in order, on one timeline (ms since the page began starting Python).
        assert 0 <= boot["worker_ms"] <= boot["wasm_ms"] <= boot["interpreter_ms"] <= boot["ready_ms"]
        assert boot["snapshot_ms"] <= boot["interpreter_ms"]
        stages = page.evaluate("""() => performance.getEntriesByType('mark')
            .filter((m) => m.name.startsWith('firsttoken:boot:')).map((m) => m.name.slice(16))""")
        assert [s for s in stages if s in ("runtime", "snapshot", "interpreter")] == ["runtime", "snapshot", "interpreter"]
        metrics = page.inner_text("#metrics")
        assert re.search(r"Python ready in \d+ ms \(snapshot restored from cache · .*interpreter \d+", metrics), metrics
        # The restored interpreter is a working one: a whole reply goes through it.
        assert chat(page, "restored?") == expected_answer(visitor.url, "restored?")


# Our check (the stored length and SHA-256: a corrupt entry here, and a truncated,
# unlabelled or unreadable one in tests/js/boot-snapshot.test.mjs, where each reason
# costs no cold boot), and Pyodide's (another build's heap, labelled as ours): each
# refused on real Cache Storage, then Python booted and a new snapshot made.
@pytest.mark.parametrize(("damage", "reason"), [
    ("corrupt", "corrupt"),
    ("other-build", "restore"),
])
def test_a_bad_snapshot_is_thrown_away_and_python_boots_normally(visitor: Visitor, damage: str, reason: str) -> None:
    with visitor.visit() as page:
        page.evaluate(DAMAGE, damage)

    with visitor.visit() as page:
        boot = visitor.boot(page)
        assert boot["snapshot"] == f"rejected:{reason}"
        assert f"snapshot rejected:{reason}" in page.inner_text("#metrics")
        # Thrown away, and a good one made in its place, for the next visit.
        visitor.wait_snapshot_stored(page)
        assert len(page.evaluate(SNAPSHOT_KEYS)) == 1

    with visitor.visit() as page:
        assert visitor.boot(page)["snapshot"] == "restored"


def test_second_visit_loads_and_boots_with_the_network_cut(visitor: Visitor) -> None:
    responses: list[Response] = []

    def seen(response: Response) -> None:
        responses.append(response)

    visitor.context.set_offline(True)
    visitor.context.on("response", seen)
    try:
        with visitor.visit() as page:
            assert visitor.boot(page)["snapshot"] == "restored"
            assert page.evaluate("crossOriginIsolated")  # cached responses kept COOP/COEP
            assert page.evaluate("document.activeElement.id") == "prompt"
            page.keyboard.type("offline")
            assert page.input_value("#prompt") == "offline"
    finally:
        visitor.context.remove_listener("response", seen)
        visitor.context.set_offline(False)
    same_origin = [r for r in responses if r.url.startswith(visitor.url)]
    assert same_origin, "the page loaded nothing?"
    assert all(r.from_service_worker for r in same_origin), [r.url for r in same_origin if not r.from_service_worker]


# How each of the page's files reached it (Resource Timing's service-worker fields,
# Chromium): {path: [the static route's source that answered ('' when no route
# matched: the worker's fetch handler had it), the delivery type ('cache-storage':
# the cached response itself, which the engine's code cache is keyed to)]}.
SOURCES = """(paths) => Object.fromEntries(paths.map((path) => {
  const entry = performance.getEntriesByName(new URL(path, location.href).href).at(-1);
  return [path, entry ? [entry.workerFinalSourceType, entry.deliveryType] : null];
}))"""
# The build's cache, as the page can reach it: drop (or put back) one of its files.
CACHED_FILE = """async ([path, drop]) => {
  const name = (await caches.keys()).find((n) => n.startsWith('firsttoken-assets-'));
  const cache = await caches.open(name);
  const url = new URL(path, location.href).href;
  if (drop) return cache.delete(url);
  await cache.put(url, await fetch(url, { cache: 'no-store' }));
  return Boolean(await cache.match(url));
}"""


def test_the_builds_files_come_from_its_cache_past_the_worker_and_a_missing_one_from_the_network(visitor: Visitor) -> None:
    """sw.js "Static routes": once installed, the build's files are answered from its
    cache by the browser, without the worker; a query still goes to the worker, and a
    file gone from the cache comes from the network, the page booting as ever."""
    modules = ["js/page/page.js", "js/boot/boot.js", "js/render/math.js"]
    with visitor.visit() as page:
        assert page.evaluate(SOURCES, modules) == {m: ["cache", "cache-storage"] for m in modules}
        page.evaluate("(path) => fetch(path).then((r) => r.text())", "js/page/main.js?routed=no")
        assert page.evaluate(SOURCES, ["js/page/main.js?routed=no"])["js/page/main.js?routed=no"] == ["", "cache-storage"]
        assert page.evaluate(CACHED_FILE, ["js/render/math.js", True])
    try:
        with visitor.visit() as page:
            assert visitor.boot(page)["snapshot"] == "restored"
            assert page.evaluate(SOURCES, ["js/render/math.js"])["js/render/math.js"][0] == "network"
    finally:
        with visitor.visit() as page:  # the offline copy whole again, for the tests after this one
            assert page.evaluate(CACHED_FILE, ["js/render/math.js", False])


# Put `bytes` (a list of byte values) in the build's cache as Pyodide's wasm.
DAMAGE_WASM = """async (bytes) => {
  const name = (await caches.keys()).find((n) => n.startsWith('firsttoken-assets-'));
  const url = new URL('vendor/pyodide/pyodide.asm.wasm', location.href).href;
  await (await caches.open(name)).put(url, new Response(new Uint8Array(bytes), {
    headers: { 'content-type': 'application/wasm', 'cross-origin-resource-policy': 'same-origin' },
  }));
}"""
WASM = "vendor/pyodide/pyodide.asm.wasm"


@pytest.mark.parametrize("damage", [
    [0x00, 0x61, 0x73, 0x6D, 0x01, 0x00, 0x00, 0x00, 0x01, 0xFF],  # a wasm header, then cut short
    list(b"<!doctype html> not wasm"),  # not wasm at all (a captive portal's page, say)
])
def test_a_damaged_cached_wasm_is_dropped_and_python_boots_from_the_network(visitor: Visitor, damage: list[int]) -> None:
    """pyodide-loader.js "a wasm that does not compile": Pyodide itself would wait
    forever on it; the loader drops the copy and boots from the network's, once."""
    with visitor.visit() as page:
        page.evaluate(DAMAGE_WASM, damage)
    try:
        with visitor.visit() as page:
            boot = visitor.boot(page)
            assert boot["wasm_refetched"] is True
            assert any("did not compile" in m for m in visitor.console.messages)
    finally:
        with visitor.visit() as page:  # the offline copy whole again, for the tests after this one
            assert page.evaluate(CACHED_FILE, [WASM, False])
    with visitor.visit() as page:
        assert visitor.boot(page)["wasm_refetched"] is False


def test_offline_a_damaged_cached_wasm_fails_the_start_and_says_why(visitor: Visitor) -> None:
    with visitor.visit() as page:
        page.evaluate(DAMAGE_WASM, list(b"not wasm"))
    visitor.context.set_offline(True)
    page = visitor.context.new_page()
    try:
        page.goto(visitor.url + "/", wait_until="domcontentloaded")
        page.wait_for_selector('html[data-python="failed"]', state="attached", timeout=BOOT_TIMEOUT_MS)
        expect(page.locator("#boot")).to_contain_text("did not compile")
        page.keyboard.type("still typing")  # the page itself stays usable
        assert page.input_value("#prompt") == "still typing"
    finally:
        page.close()
        visitor.context.set_offline(False)
        with visitor.visit() as page:
            assert page.evaluate(CACHED_FILE, [WASM, False])


def test_service_worker_script_names_the_build_and_every_file_it_keeps(boot_url: str) -> None:
    sw = httpx.get(boot_url + "/sw.js")
    assert sw.status_code == 200
    assert sw.headers["content-type"].startswith("text/javascript")
    assert sw.headers["cache-control"] == "no-cache"
    prelude = sw.text.split("\n", 1)[0]
    build = json.loads(prelude.removeprefix("self.FIRSTTOKEN_BUILD = ").removesuffix(";"))
    assert re.fullmatch(r"[0-9a-f]{20}", build["build"])
    assets = build["assets"]
    for must in ("./", "pyscript.toml", "py/boot.py", "py/firsttoken.zip", "js/page/main.js", "js/boot/pyodide-loader.js",
                 "js/boot/snapshot-worker.js", "js/boot/make-snapshot.js",
                 "vendor/pyscript/core.js", "vendor/pyodide/pyodide.asm.wasm", "vendor/pyodide/python_stdlib.zip"):
        assert must in assets
    with httpx.Client(base_url=boot_url) as client:
        for asset in assets:
            assert not asset.endswith(".snapshot")  # 18 MB kept by the page itself, not precached
            r = client.get("/" + asset.removeprefix("./"))
            assert r.status_code == 200, asset
            assert r.headers["cross-origin-embedder-policy"] == "require-corp", asset


def test_a_new_release_replaces_the_offline_copy_and_its_snapshot(visitor: Visitor, tree: Path) -> None:
    """Runs last: it leaves the module's tree changed (consistently)."""
    old_build = httpx.get(visitor.url + "/sw.js").text.split("\n", 1)[0]
    old_keys = None
    init = tree / "py" / "firsttoken" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8") + "\n# release 2\n", encoding="utf-8")
    assert httpx.get(visitor.url + "/sw.js").text.split("\n", 1)[0] != old_build

    with visitor.visit() as page:
        # Still the old release, whole: its files, and the snapshot made for them.
        assert visitor.boot(page)["snapshot"] == "restored"
        old_keys = page.evaluate(SNAPSHOT_KEYS)
        # The new worker installs (all of the new files, or none) and waits for this page.
        assert page.evaluate("""async () => {
          const registration = await navigator.serviceWorker.getRegistration();
          await registration.update();
          const worker = registration.installing || registration.waiting;
          if (worker.state !== 'installed') {
            await new Promise((resolve, reject) => worker.addEventListener('statechange', () => {
              if (worker.state === 'installed') resolve();
              if (worker.state === 'redundant') reject(new Error('install failed'));
            }));
          }
          return Boolean(registration.waiting) && navigator.serviceWorker.controller !== registration.waiting;
        }""")

    # No page runs the old release any more: the next one gets the new release whole.
    with visitor.visit() as page:
        boot = visitor.boot(page)
        assert boot["snapshot"] == "rejected:stale"  # made for the old package: not used, thrown away
        caches = page.evaluate("() => caches.keys()")
        assert len([c for c in caches if c.startswith("firsttoken-assets-")]) == 1  # the old build's copy is gone
        visitor.wait_snapshot_stored(page)
        new_keys = page.evaluate(SNAPSHOT_KEYS)
        assert len(new_keys) == 1 and new_keys != old_keys

    with visitor.visit() as page:
        assert visitor.boot(page)["snapshot"] == "restored"


# ---- the install-time snapshot ---------------------------------------------------------
@pytest.fixture(scope="module")
def baked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A tree with its install-time snapshot, and its gateway. The snapshot is the one
    `make` baked for this checkout (`gateway/build/bake.py`), copied: the copy's sources
    are the same, so it is the snapshot a bake of the copy would make (the gateway checks
    that it matches the package it serves), without booting Pyodide in Node again."""
    copy = copy_tree(tmp_path_factory.mktemp("baked"))
    shutil.copytree(ROOT / "build" / "snapshot", copy / "build" / "snapshot")
    with gateway_over(copy) as url:
        if httpx.get(url + "/py/firsttoken.snapshot").status_code != 200:
            pytest.fail("the baked snapshot does not match the sources: run `make deps`")
        yield copy, url


def test_a_first_visit_restores_the_gateways_install_time_snapshot(browser: Browser, baked: tuple[Path, str]) -> None:
    tree, url = baked
    visitor = Visitor(browser.new_context(), url)
    try:
        with visitor.visit() as page:
            boot = visitor.boot(page)
            assert (boot["snapshot"], boot["snapshot_from"]) == ("restored", "server")
            assert chat(page, "first visit") == expected_answer(url, "first visit")
            visitor.wait_snapshot_stored(page)  # kept in the page's own Cache Storage
        with visitor.visit() as page:
            boot = visitor.boot(page)
            assert (boot["snapshot"], boot["snapshot_from"]) == ("restored", "cache")
    finally:
        visitor.context.close()
    # Once the sources change, the baked snapshot no longer matches: not served.
    assert httpx.get(url + "/py/firsttoken.snapshot").status_code == 200
    init = tree / "py" / "firsttoken" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8") + "\n# edited after make\n", encoding="utf-8")
    assert httpx.get(url + "/py/firsttoken.snapshot").status_code == 404

