"""The page and its runtime assets, served from a checkout (offline by construction).

The checkout is `ROOT`, the tree this package was imported from, unless the gateway was
given another (`GatewayConfig.root`, `--root`: an installed gateway serving a checkout,
docs/gateway.md).

Runtime assets come from npm packages that `make` installs (pinned by package-lock.json)
and are served under /vendor/<name>/; nothing is fetched from a CDN. The Python package
`firsttoken` is served as one zip (`/py/firsttoken.zip`), which PyScript unpacks into the
worker's file system: one request instead of one per module, which matters on a phone.

Caching: every response carries an ETag and `Cache-Control: no-cache`, so browsers
revalidate with a cheap 304 and never run a stale runtime after an upgrade.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from .conditional import BuiltBody, cached_response, file_version
from .offline import OfflineManifest
from .offload import Run, in_thread
from .snapshot import ServedSnapshot
from .stdlib import URL_PATH as STDLIB_PATH, StoredStdlib
from .vocabulary import ENCODINGS, URL_PATTERN, PageVocabularies

#: The tree this package was imported from: the checkout, when it runs from one.
ROOT = Path(__file__).resolve().parents[1]

# URL name → directory inside node_modules.
VENDOR = {
    "pyodide": "pyodide",
    "pyscript": "@pyscript/core/dist",
    "tiktoken": "tiktoken/encoders",
    # The markdown renderer's libraries (js/render/ imports their ES module builds).
    "marked": "marked/lib",
    "dompurify": "dompurify/dist",
    "remend": "remend/dist",
    # The SSE parser of a prompt sent before Python is ready (js/page/early-send.js).
    "eventsource-parser": "eventsource-parser/dist",
    # Code highlighting (js/render/code-blocks.js): one ES module per language, each
    # imported on first use; the core is served as a module below.
    "highlight.js/languages": "highlight.js/es/languages",
    # Math (js/render/math.js), imported only once an answer holds a formula: the ES
    # module, its stylesheet and the fonts that stylesheet names.
    "katex": "katex/dist",
}
# highlight.js ships its core as CommonJS only (its `es/core.js` re-exports
# `lib/core.js`, which browsers cannot import); the file requires nothing, so it is served
# as an ES module whose default export is what it assigns to `module.exports`.
HIGHLIGHT_CORE = ("vendor/highlight.js/core.js", "highlight.js/lib/core.js")


class Assets(StaticFiles):
    async def get_response(self, path: str, scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers.setdefault("cache-control", "no-cache")
        return response


def build_package_zip(package_dir: Path) -> bytes:
    """Zip the package deterministically: sorted entries, fixed timestamps, no bytecode."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package_dir.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            arcname = str(path.relative_to(package_dir.parent))
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes())
    return buffer.getvalue()


class PackageZip:
    """Serves the zip of py/firsttoken, rebuilt when a source file changes (cheap stat)."""

    def __init__(self, package_dir: Path) -> None:
        self.package_dir = package_dir
        self._built = BuiltBody(
            lambda: tuple((str(p), p.stat().st_mtime_ns) for p in sorted(package_dir.rglob("*.py"))),
            lambda: build_package_zip(package_dir),
        )
        self._current = self._built.current

    def etag(self) -> str:
        return self._current()[1]

    def data(self) -> bytes:
        return self._current()[0]

    async def endpoint(self, request: Request) -> Response:
        data, etag = self._current()
        return cached_response(request, data, media_type="application/zip", etag=etag)


class CommonJSModule:
    """A dependency-free CommonJS file served as an ES module, rebuilt when it changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._current = BuiltBody(lambda: file_version(path), self._build).current

    def _build(self) -> bytes:
        return b"const module = { exports: {} };\n" + self.path.read_bytes() + b"\nexport default module.exports;\n"

    async def endpoint(self, request: Request) -> Response:
        body, etag = self._current()
        return cached_response(request, body, media_type="text/javascript; charset=utf-8", etag=etag)


def page_file(name: str, media_type: str, root: Path = ROOT):
    path = root / name

    async def endpoint(request: Request) -> Response:
        return FileResponse(path, media_type=media_type, headers={"cache-control": "no-cache"})

    return endpoint


# ---- the URL space: one table ------------------------------------------------------
# Every URL path served from the checkout, page-relative. `routes` serves it, the
# offline manifest (gateway/offline.py) keeps what the page needs of it, and the
# bundle and the precompression step (gateway/build/) take `first_visit_paths`.

#: The page's own files: URL path → media type (the file is root / path).
PAGE_FILES = {
    "index.html": "text/html; charset=utf-8",
    "pyscript.toml": "application/toml",
    "py/boot.py": "text/x-python; charset=utf-8",
    # The installed web app: its name, icon, standalone display and the share target
    # (js/page/share.js, sw.js). Linked from index.html, so kept offline with the page.
    "manifest.webmanifest": "application/manifest+json",
    "icon.svg": "image/svg+xml",
}
PACKAGE_PATH = "py/firsttoken.zip"
SERVICE_WORKER_PATH = "sw.js"
SNAPSHOT_PATH = "py/firsttoken.snapshot"
#: Fetched on demand by the page's tokenizer (js/tokenizer/data.js): not found by
#: following imports, since their names are computed.
VOCABULARY_PATHS = tuple(URL_PATTERN.format(name=name).removeprefix("/") for name in ENCODINGS)


def folders(node_modules: Path, root: Path = ROOT) -> dict[str, Path]:
    """URL path prefix → the directory served under it."""
    return {
        "js": root / "js",
        # The page's side of the host bridge (bridge/PROTOCOL.md, "Hosts").
        "bridge/page": root / "bridge" / "page",
        **{f"vendor/{name}": node_modules / sub for name, sub in VENDOR.items()},
    }


def routes(node_modules: Path | None = None, *, root: Path = ROOT, snapshot_measure_link: bool = True,
           run: Run = in_thread) -> list[BaseRoute]:
    """The routes of the URL space, served from the checkout at `root`; `run` builds
    bodies off the loop (gateway/offload.py)."""
    node_modules = node_modules or root / "node_modules"
    package = PackageZip(root / "py" / "firsttoken")
    return [
        Route("/", page_file("index.html", PAGE_FILES["index.html"], root)),
        *(Route("/" + path, page_file(path, media_type, root)) for path, media_type in PAGE_FILES.items()),
        Route("/" + PACKAGE_PATH, package.endpoint),
        # Built bodies inside mounted folders, ahead of the mounts.
        Route("/" + HIGHLIGHT_CORE[0], CommonJSModule(node_modules / HIGHLIGHT_CORE[1]).endpoint),
        # Pyodide's standard library, its entries stored: brotli then saves 0.9 MB (gateway/stdlib.py).
        Route(STDLIB_PATH, StoredStdlib(node_modules / "pyodide" / "python_stdlib.zip").endpoint),
        # The tokenizer's vocabularies as the page reads them (gateway/vocabulary.py),
        # beside tiktoken's own files.
        Route(URL_PATTERN, PageVocabularies(node_modules / VENDOR["tiktoken"], run).endpoint),
        *(Mount("/" + prefix, app=Assets(directory=directory, check_dir=False), name=prefix.replace("/", "-"))
          for prefix, directory in folders(node_modules, root).items()),
        Route("/" + SERVICE_WORKER_PATH, offline_manifest(node_modules, package, root).service_worker),
        # The install-time snapshot of the interpreter, while it matches the package (gateway/snapshot.py).
        Route("/" + SNAPSHOT_PATH, ServedSnapshot(root / "build" / "snapshot", package.data, measure_link=snapshot_measure_link).endpoint),
    ]


def offline_manifest(node_modules: Path, package: PackageZip, root: Path = ROOT) -> OfflineManifest:
    """What the service worker keeps, over the URL space of `routes`."""
    return OfflineManifest(
        root,
        files={
            **{path: root / path for path in PAGE_FILES},
            # (Its source, for the build id: what is served is made from it.)
            HIGHLIGHT_CORE[0]: node_modules / HIGHLIGHT_CORE[1],
        },
        mounts=folders(node_modules, root),
        package=(PACKAGE_PATH, package.etag),
    )


def first_visit_paths(node_modules: Path | None = None) -> list[str]:
    """Page-relative paths of everything a first visit may download, the page first:
    what the service worker keeps, the worker itself, the vocabularies, the snapshot
    (served only while it matches the package)."""
    node_modules = node_modules or ROOT / "node_modules"
    manifest = offline_manifest(node_modules, PackageZip(ROOT / "py" / "firsttoken"))
    kept = ["index.html" if a == "./" else a for a in manifest.assets()]
    return [*kept, SERVICE_WORKER_PATH, *VOCABULARY_PATHS, SNAPSHOT_PATH]
