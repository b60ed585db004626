"""Benchmark: where WebKit's warm boot loses its time, and what closes the gap.

    .venv/bin/python bench/webkit_boot.py [--runs N]

Measures changes to the page's boot loader (js/boot-*.js) without making them: each
variant is a patch applied to a copy of this tree, served by its own product gateway
(with the install-time snapshot copied from build/snapshot: the patches touch no input
of its key). Per variant: a first launch in WebKitGTK on a fresh profile and a first
visit in Chromium in a fresh context (each stores the snapshot), then `--runs` warm
boots in each engine, interleaved variant by variant. Warm: WebKit relaunched on the
same profile (an app's next start); Chromium a new page in the same context.

Variants:
- `baseline`: the tree as it is: the stored snapshot read with FileReaderSync in
  Chromium and `Response.arrayBuffer()` elsewhere (js/boot/snapshot.js).
- `read-async`: `arrayBuffer()` in every engine; `read-sync`: FileReaderSync in every
  engine, which in WebKitGTK takes 0.7–1.7 s for 18.6 MB against 20–230 ms
  (bench/boot_probe.html); Chromium is the other way round (17 ms against 30–50 ms).
- `early-compile`: js/boot/pyodide-loader.js starts `WebAssembly.compileStreaming` of
  Pyodide's wasm when it is imported, and Pyodide's instantiation takes that module:
  JSC compiles the whole 9.6 MB eagerly (0.4–1 s here, Chromium ~60 ms lazily), and
  today that starts only once the snapshot lookup is done and Pyodide has its imports.
- `both`.
- `late-start`: Python's worker started once the shell's module graph has loaded (as
  before js/boot/early.js), not by the page's first module.

Prints one line per boot, then LAST one JSON line: per variant and engine, the median
warm ready (navigation start → `firsttoken:python-ready`) and boot timeline, and
`webkit_warm_ratio` (WebKit over Chromium, same variant).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
import bench_paths  # noqa: E402,F401 - the repository ahead of bench/ on sys.path

from playwright.sync_api import sync_playwright  # noqa: E402

from bench.bridge import chromium_boot, median_boot, webkit_boot  # noqa: E402
from harness.servers import CHROMIUM, CHROMIUM_ARGS, gateway  # noqa: E402
from harness.gtk import Xvfb  # noqa: E402

# The tree reads the stored snapshot the way each engine does fastest: FileReaderSync in
# Chromium, Response.arrayBuffer() elsewhere (js/boot/snapshot.js, SYNC_READ_IS_FASTER,
# kept after this benchmark). These variants put back one read for every engine.
READ_ASYNC = ("js/boot/snapshot.js", "  if (SYNC_READ_IS_FASTER) {", "  if (false) {")
READ_SYNC = ("js/boot/snapshot.js", "  if (SYNC_READ_IS_FASTER) {", "  if (typeof FileReaderSync === 'function') {")
EARLY_COMPILE = ("js/boot/pyodide-loader.js", "const factory = import(", """\
// Pyodide's wasm, compiled from now on; its instantiation (WebAssembly.instantiateStreaming,
// called by Pyodide once the snapshot is sized and its imports are made) takes this module.
const compiled = WebAssembly.compileStreaming(fetch(new URL('pyodide.asm.wasm', PYODIDE).href));
compiled.catch(() => {});
const instantiateStreaming = WebAssembly.instantiateStreaming.bind(WebAssembly);
WebAssembly.instantiateStreaming = async (source, imports) => {
  let module;
  try { module = await compiled; } catch { return instantiateStreaming(source, imports); }
  Promise.resolve(source).then((r) => r.body?.cancel()).catch(() => {});
  return { module, instance: await WebAssembly.instantiate(module, imports) };
};
const factory = import(""")
# Python's worker started by the shell's graph, after it loaded, instead of by the
# page's first module (js/boot/early.js).
LATE_START = ("index.html", '  <script type="module" async src="js/boot/early.js"></script>\n', "")
VARIANTS: dict[str, list[tuple[str, str, str]]] = {
    "baseline": [],
    "late-start": [LATE_START],
    "read-async": [READ_ASYNC],
    "early-compile": [EARLY_COMPILE],
    "both": [READ_ASYNC, EARLY_COMPILE],
    "read-sync": [READ_SYNC],
}


@contextmanager
def patched_gateway(patches: list[tuple[str, str, str]]) -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="firsttoken-webkit-boot-") as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(
            ".git", ".venv", "node_modules", "__pycache__", ".pytest_cache", ".hypothesis"))
        (copy / "node_modules").symlink_to(ROOT / "node_modules")
        for name, old, new in patches:
            path = copy / name
            text = path.read_text(encoding="utf-8")
            assert text.count(old) == 1, f"{name}: the patch no longer applies"
            path.write_text(text.replace(old, new), encoding="utf-8")
        with gateway("--log-level", "error", root=copy) as url:
            yield url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args()
    names = args.variants.split(",")
    ready: dict[tuple[str, str], list[float]] = {}
    boots: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with ExitStack() as stack, sync_playwright() as pw:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        xvfb = stack.enter_context(Xvfb())
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        urls = {name: stack.enter_context(patched_gateway(VARIANTS[name])) for name in names}
        contexts = {}
        for name in names:  # first launches: each stores its snapshot
            host, ms, boot = webkit_boot(urls[name], xvfb.display, tmp / name)
            host.wait_for(lambda m: m.get("type") == "boot.progress" and m.get("stage") == "snapshot.stored", 120)
            host.close()
            print(f"{name}: webkit cold {ms:.0f} ms", flush=True)
            contexts[name] = browser.new_context()
            page, ms, boot = chromium_boot(contexts[name], urls[name])
            page.evaluate("navigator.serviceWorker.ready.then(() => true)")
            page.close()
            print(f"{name}: chromium cold {ms:.0f} ms", flush=True)
        for run in range(args.runs):
            for name in names:
                host, ms, boot = webkit_boot(urls[name], xvfb.display, tmp / name)
                host.close()
                ready.setdefault((name, "webkit"), []).append(ms)
                boots.setdefault((name, "webkit"), []).append(boot)
                print(f"run {run + 1} {name}: webkit warm {ms:.0f} ms {boot}", flush=True)
                page, ms, boot = chromium_boot(contexts[name], urls[name])
                page.close()
                ready.setdefault((name, "chromium"), []).append(ms)
                boots.setdefault((name, "chromium"), []).append(boot)
                print(f"run {run + 1} {name}: chromium warm {ms:.0f} ms {boot}", flush=True)
        browser.close()
    result: dict[str, Any] = {}
    for name in names:
        webkit, chromium = (round(statistics.median(ready[(name, e)])) for e in ("webkit", "chromium"))
        result[name] = {
            "webkit_ready_warm_ms": webkit, "chromium_ready_warm_ms": chromium,
            "webkit_warm_ratio": round(webkit / chromium, 2),
            "webkit_boot": median_boot(boots[(name, "webkit")]),
            "chromium_boot": median_boot(boots[(name, "chromium")]),
        }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
