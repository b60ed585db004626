"""`python -m gateway.build.bundle`: the page as one folder, for an app to ship with no server.

A native app serves the folder itself, through a custom scheme (iOS `WKURLSchemeHandler`,
WebKitGTK `register_uri_scheme`) or an intercepted origin (Android `WebViewAssetLoader`,
`shouldInterceptRequest`); only the chat API is then on the network.

What goes in is what the gateway would serve a first visit, asked of the gateway itself
(the app in-process, no socket): every file the service worker keeps
(`gateway/offline.py` finds them by following imports, so a module added next week is
bundled too), the tokenizer vocabularies the page loads on demand, and the install-time
snapshot when it matches the package. Fetching through the app rather than copying
files means the bundle holds exactly the bytes and headers a browser would get.

`manifest.json` says, per file, the response headers a host must send with it: the
content type, COOP/COEP (cross-origin isolation, where the engine grants it), the
Content-Security-Policy, and the snapshot's label (`x-firsttoken-*`, which the page
checks before use). Caching and transport headers (ETag, Date, Content-Length) are
left to the host. Format:

    {"version": 1, "build": "<id>", "index": "index.html",
     "files": {"index.html": {"content-type": "text/html; charset=utf-8", ...}, ...}}

The CSP's connect-src is the one thing a bundle cannot know: where the app's API is.
It defaults to any `https:` API plus localhost (`--connect-src` to narrow it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from ..app import GatewayConfig, create_app
from ..static import ROOT, SNAPSHOT_PATH as SNAPSHOT, VOCABULARY_PATHS as VOCABULARIES, first_visit_paths

__all__ = ["SNAPSHOT", "VOCABULARIES", "BundleError", "build_bundle"]
# Response headers that describe one transfer rather than the file. The files are asked
# for as identity, so content-encoding is never there; dropped anyway, since a host
# sending it with the decoded file would make the engine decode it again.
_TRANSFER = frozenset({"date", "etag", "last-modified", "cache-control", "content-length", "accept-ranges",
                       "server", "vary", "content-encoding", "x-firsttoken-gateway"})


class BundleError(Exception):
    """A file the page needs could not be bundled (the gateway did not serve it)."""


def build_bundle(out: Path, *, connect_src: str = GatewayConfig.connect_src) -> dict:
    """Write the bundle into `out` (emptied first) and return its manifest."""
    from starlette.testclient import TestClient

    # The snapshot is in the app with the page: no link to time, so it is labelled to be
    # fetched always (`x-firsttoken-fetch`, js/boot/snapshot-pays.js). Timed, a phone
    # busy at launch reads its own disk as a slow link and boots the long way.
    app = create_app(GatewayConfig(connect_src=connect_src, frame_ancestors="'none'", snapshot_measure_link=False))
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    files: dict[str, dict[str, str]] = {}
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for path in first_visit_paths():
            # Identity: the bundle holds the files themselves, not one transfer's encoding
            # of them (gateway/precompressed.py would otherwise send brotli).
            response = client.get("/" + path, headers={"accept-encoding": "identity"})
            if response.status_code != 200:
                if path == SNAPSHOT:
                    continue  # none baked for this package: the app boots normally, then makes one
                raise BundleError(f"{path}: the gateway answered {response.status_code}")
            target = out / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(response.content)
            files[path] = {k: v for k, v in response.headers.items() if k.lower() not in _TRANSFER}
    manifest = {"version": 1, "build": _build_of(out / "sw.js"), "index": "index.html", "files": files}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def _build_of(sw: Path) -> str:
    """The build id the bundled service worker holds (gateway/offline.py writes it in the
    worker's first line, over the files and the security policy it was served with), so
    that the manifest and the worker name the same build."""
    first = sw.read_text(encoding="utf-8").split("\n", 1)[0]
    prefix = "self.FIRSTTOKEN_BUILD = "
    if not first.startswith(prefix):
        raise BundleError("sw.js does not start with its build record")
    return json.loads(first[len(prefix):].rstrip(";"))["build"]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m gateway.build.bundle", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "build" / "bundle")
    p.add_argument("--connect-src", default=GatewayConfig.connect_src,
                   help="CSP connect-src of the bundled page: where its API is")
    args = p.parse_args(argv)
    try:
        manifest = build_bundle(args.out, connect_src=args.connect_src)
    except BundleError as exc:
        sys.exit(f"bundle: {exc}")
    size = sum((args.out / f).stat().st_size for f in manifest["files"])
    print(f"bundled {len(manifest['files'])} files ({size / 1e6:.1f} MB) into {args.out}")


if __name__ == "__main__":
    main()

