"""The service worker (`/sw.js`) and the list of files it keeps: the page offline.

After a first visit, the page must load with no network at all. The service worker
(`sw.js` in the repository root, served at the root so that its scope is the whole
page) precaches every file the page needs to boot Python and chat, under a cache
named after a build id, and serves them from there.

What it keeps is found, not listed by hand, so that a module added to the page next
week is kept too: starting from index.html, pyscript.toml (its `interpreter` module
and its `[files]`) and py/boot.py, every relative module specifier in `import`/`export`
statements and `import()` calls, and every `new URL('./…', import.meta.url)` (a
worker's script, a stylesheet) and the woff2 fonts a kept stylesheet names, is followed, in our JavaScript and in the vendored packages alike;
Pyodide's runtime files, which Pyodide fetches by computed URLs, are named explicitly. Data fetched on demand (tokenizer vocabularies) is not precached:
the service worker keeps it when it is first fetched.

The build id is a SHA-256 over every kept file's path and content and over the security
headers the gateway sends (gateway/headers.py), which the worker needs too: it serves its
copies with them, never with the headers a copy was stored with. It is written into the
service worker script itself, so a new release or a new policy changes the script's
bytes, which is what makes browsers install the new worker (a byte-identical script is
never reinstalled): https://w3c.github.io/ServiceWorker/#update-algorithm
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import tomllib
from pathlib import Path
from typing import Callable, Mapping

from starlette.requests import Request
from starlette.responses import Response

from .conditional import cached_response
from .headers import POLICY_SCOPE_KEY

# Fetched by Pyodide itself (pyodide.mjs computes these URLs), so no import names them.
PYODIDE_RUNTIME = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")

# Relative module specifiers: `from "./x.js"`, `import "./x.js"`, `import("./x.js")`,
# minified or not. Bare specifiers (`import("micropip")`) are not files and are skipped.
_SPECIFIER = re.compile(r"""(?:\bfrom|\bimport)\s*\(?\s*(["'])(\.{1,2}/[^"'\s]+?)\1""")
# Workers and other files named relative to a module: `new URL('./x.js', import.meta.url)`.
_MODULE_URL = re.compile(r"""new\s+URL\(\s*(["'])(\.{1,2}/[^"'\s]+?)\1\s*,\s*import\.meta\.url\s*\)""")
# Fonts a kept stylesheet names (KaTeX's). Each @font-face lists woff2, woff and ttf, in
# that order, and a browser takes the first format it supports: woff2, in every engine
# this page runs in. Only those are kept; the others stay reachable online.
_CSS_FONT = re.compile(r"""url\(\s*["']?([^"')\s:]+\.woff2)["']?\s*\)""")
_HTML_REF = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"':]+)["']""")


class OfflineManifest:
    """Finds the files to keep and the build id; serves `/sw.js` with both inside.

    It knows the gateway's URL space as the gateway's routes define it: `files` maps a
    page-relative URL path to a file (`pyscript.toml`), `mounts` a path prefix to a
    directory (`vendor/pyodide` → node_modules/pyodide), and `package` is the
    firsttoken zip, which is built rather than read (its URL path and a function
    giving its current ETag).
    """

    def __init__(
        self,
        root: Path,
        *,
        files: dict[str, Path],
        mounts: dict[str, Path],
        package: tuple[str, Callable[[], str]],
    ) -> None:
        self.root = root
        self.files = files
        self.mounts = mounts
        self.package_path, self.package = package
        self._key: tuple | None = None
        self._files_digest = b""
        self._walk: tuple[list[str], dict[Path, tuple], frozenset[str]] | None = None

    def resolve(self, path: str) -> Path | None:
        """The file served at page-relative `path`, or None."""
        if path in self.files:
            return self.files[path]
        prefix, _, rest = path.rpartition("/")
        while prefix:
            if prefix in self.mounts:
                directory = self.mounts[prefix].resolve()
                file = (directory / rest).resolve()
                return file if file.is_file() and file.is_relative_to(directory) else None
            prefix, _, head = prefix.rpartition("/")
            rest = f"{head}/{rest}"
        return None

    # ---- what to keep ----------------------------------------------------------
    def assets(self) -> list[str]:
        """Page-relative URL paths to precache, the page itself first (as `./`).

        The walk reads index.html, pyscript.toml and every module it reaches (Pyodide's
        1.2 MB `pyodide.asm.mjs` among them), and a browser asks for /sw.js on every
        navigation. So the result is kept with what it was found from: the size and
        mtime of each file read or kept (a kept file deleted must leave the list, not
        fail the digest), and each path it named that was not there. It is
        walked again only when one of those changed (a release, an edit).
        """
        if self._walk is not None and self._walk_holds(self._walk[1], self._walk[2]):
            return list(self._walk[0])
        found, read, missing = self._walk_files()
        self._walk = (found, read, missing)
        return list(found)

    def _walk_holds(self, read: dict[Path, tuple], missing: frozenset[str]) -> bool:
        return all(_stat(file) == st for file, st in read.items()) and all(self.resolve(m) is None for m in missing)

    def _walk_files(self) -> tuple[list[str], dict[Path, tuple], frozenset[str]]:
        found: set[str] = set()
        pending: list[str] = []
        read: dict[Path, tuple] = {}
        missing: set[str] = set()

        def text_of(file: Path) -> str:
            read[file] = _stat(file)
            return file.read_text(encoding="utf-8", errors="replace")

        def add(path: str) -> None:
            path = posixpath.normpath(path).lstrip("/")
            if path in found or path.startswith(".."):
                return
            file = None if path == self.package_path else self.resolve(path)
            if path != self.package_path and file is None:
                missing.add(path)
                return  # not something this gateway serves; the page would fail online too
            if file is not None:
                read[file] = _stat(file)
            found.add(path)
            if path.endswith((".js", ".mjs", ".css")):
                pending.append(path)

        html = text_of(self.files["index.html"])
        for ref in _HTML_REF.findall(html):
            if not ref.startswith(("data", "#")):
                add(ref)
        config = tomllib.loads(text_of(self.files["pyscript.toml"]))
        add("pyscript.toml")
        add("py/boot.py")
        if isinstance(config.get("interpreter"), str):
            add(config["interpreter"])
        for source in (config.get("files") or {}):
            if not source.startswith("{"):
                add(source)
        for name in PYODIDE_RUNTIME:
            add(f"vendor/pyodide/{name}")
        while pending:
            path = pending.pop()
            file = self.resolve(path)
            if file is None:
                continue
            text = text_of(file)
            if path.endswith(".css"):
                for ref in _CSS_FONT.findall(text):
                    add(posixpath.join(posixpath.dirname(path), ref))
                continue
            for _, spec in [*_SPECIFIER.findall(text), *_MODULE_URL.findall(text)]:
                add(posixpath.join(posixpath.dirname(path), spec.split("?")[0].split("#")[0]))
        return ["./", *sorted(found - {"index.html"})], read, frozenset(missing)

    def manifest(self, policy: Mapping[str, str | None] | None = None) -> dict:
        """{"build": id, "assets": [...], "headers": policy}; the file part is recomputed
        only when a kept file changed.

        `policy` is every security header the gateway governs, None where it sends none
        (gateway/headers.py `SecurityHeaders.policy`). The service worker serves its
        copies with it, and it is part of the build id: a gateway restarted with another
        policy (a stricter `--frame-ancestors`, `--no-isolation`) changes the worker's
        bytes, so browsers install a worker that holds the new one.
        """
        assets = self.assets()
        files = {a: self.resolve("index.html" if a == "./" else a) for a in assets}
        key = tuple(
            (a, self.package() if a == self.package_path else _stat(files[a])) for a in assets
        )
        if key != self._key:
            digest = hashlib.sha256()
            for a in assets:
                digest.update(a.encode() + b"\0")
                if a == self.package_path:
                    digest.update(self.package().encode())
                else:
                    digest.update(_file_digest(files[a]))  # type: ignore[arg-type]
            self._files_digest = digest.digest()
            self._key = key
        headers = dict(sorted((policy or {}).items()))
        build = hashlib.sha256(self._files_digest + json.dumps(headers).encode()).hexdigest()[:20]
        return {"build": build, "assets": assets, "headers": headers}

    # ---- the worker script -----------------------------------------------------
    async def service_worker(self, request: Request) -> Response:
        # The policy of the SecurityHeaders middleware that wraps this very response.
        policy = request.scope.get(POLICY_SCOPE_KEY)
        prelude = "self.FIRSTTOKEN_BUILD = " + json.dumps(self.manifest(policy), separators=(",", ":")) + ";\n"
        body = prelude + (self.root / "sw.js").read_text(encoding="utf-8")
        return cached_response(request, body.encode(), media_type="text/javascript; charset=utf-8")


def _stat(path: Path | None) -> tuple:
    """(size, mtime) of a file; () where there is none (deleted since it was found)."""
    try:
        st = path.stat() if path is not None else None
    except FileNotFoundError:
        st = None
    return (st.st_size, st.st_mtime_ns) if st is not None else ()


_digests: dict[tuple, bytes] = {}


def _file_digest(path: Path) -> bytes:
    """SHA-256 of a file, remembered per (path, size, mtime): the runtime is 15 MB."""
    key = (str(path), *_stat(path))
    if key not in _digests:
        _digests[key] = hashlib.sha256(path.read_bytes()).digest()
    return _digests[key]
