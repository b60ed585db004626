"""The page and its runtime assets, served from this checkout (offline by construction).

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

from .conditional import cached_response, etag_of
from .offline import OfflineManifest
from .snapshot import ServedSnapshot
from .stdlib import URL_PATH as STDLIB_PATH, StoredStdlib
from .vocabulary import URL_PATTERN, PageVocabularies

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
    async def get_response(self, path: str, scope) -> Response:  # type: ignore[override]
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
        self._key: tuple | None = None
        self._zip = b""
        self._etag = ""

    def _current(self) -> tuple[bytes, str]:
        key = tuple((str(p), p.stat().st_mtime_ns) for p in sorted(self.package_dir.rglob("*.py")))
        if key != self._key:
            self._zip = build_package_zip(self.package_dir)
            self._etag = etag_of(self._zip)
            self._key = key
        return self._zip, self._etag

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
        self._key: tuple | None = None
        self._body = b""
        self._etag = ""

    def _current(self) -> tuple[bytes, str]:
        st = self.path.stat()
        key = (st.st_size, st.st_mtime_ns)
        if key != self._key:
            source = self.path.read_bytes()
            self._body = (
                b"const module = { exports: {} };\n"
                + source
                + b"\nexport default module.exports;\n"
            )
            self._etag = etag_of(self._body)
            self._key = key
        return self._body, self._etag

    async def endpoint(self, request: Request) -> Response:
        body, etag = self._current()
        return cached_response(request, body, media_type="text/javascript; charset=utf-8", etag=etag)


def page_file(name: str, media_type: str):
    path = ROOT / name

    async def endpoint(request: Request) -> Response:
        return FileResponse(path, media_type=media_type, headers={"cache-control": "no-cache"})

    return endpoint


def routes(node_modules: Path | None = None, *, snapshot_measure_link: bool = True) -> list[BaseRoute]:
    node_modules = node_modules or ROOT / "node_modules"
    package = PackageZip(ROOT / "py" / "firsttoken")
    result: list[BaseRoute] = [
        Route("/", page_file("index.html", "text/html; charset=utf-8")),
        Route("/index.html", page_file("index.html", "text/html; charset=utf-8")),
        Route("/pyscript.toml", page_file("pyscript.toml", "application/toml")),
        Route("/py/boot.py", page_file("py/boot.py", "text/x-python; charset=utf-8")),
        Route("/py/firsttoken.zip", package.endpoint),
        Mount("/js", app=Assets(directory=ROOT / "js"), name="js"),
        # The page's side of the host bridge (bridge/PROTOCOL.md, "Hosts").
        Mount("/bridge/page", app=Assets(directory=ROOT / "bridge" / "page"), name="bridge"),
        Route("/" + HIGHLIGHT_CORE[0], CommonJSModule(node_modules / HIGHLIGHT_CORE[1]).endpoint),
    ]
    # Pyodide's standard library, its entries stored: brotli then saves 0.9 MB (gateway/stdlib.py).
    result.append(Route(STDLIB_PATH, StoredStdlib(node_modules / "pyodide" / "python_stdlib.zip").endpoint))
    # The tokenizer's vocabularies as the page reads them (gateway/vocabulary.py), ahead
    # of the mount that serves tiktoken's own files beside them.
    result.append(Route(URL_PATTERN, PageVocabularies(node_modules / VENDOR["tiktoken"]).endpoint))
    for name, sub in VENDOR.items():
        result.append(Mount(f"/vendor/{name}", app=Assets(directory=node_modules / sub, check_dir=False), name=f"vendor-{name}"))
    result.append(Route("/sw.js", offline_manifest(node_modules, package).service_worker))
    # The install-time snapshot of the interpreter, while it matches the package (gateway/snapshot.py).
    result.append(Route("/py/firsttoken.snapshot", ServedSnapshot(ROOT / "build" / "snapshot", package.data, measure_link=snapshot_measure_link).endpoint))
    return result


def offline_manifest(node_modules: Path, package: PackageZip) -> OfflineManifest:
    """What the service worker keeps, over the same URL space as the routes above."""
    return OfflineManifest(
        ROOT,
        files={
            **{name: ROOT / name for name in ("index.html", "pyscript.toml", "py/boot.py")},
            # (Its source, for the build id: what is served is made from it.)
            HIGHLIGHT_CORE[0]: node_modules / HIGHLIGHT_CORE[1],
        },
        mounts={"js": ROOT / "js", "bridge/page": ROOT / "bridge" / "page", **{f"vendor/{name}": node_modules / sub for name, sub in VENDOR.items()}},
        package=("py/firsttoken.zip", package.etag),
    )
