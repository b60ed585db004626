"""`make bundle`: one folder holding every file the page loads, with the headers each needs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gateway.build.bundle import SNAPSHOT, VOCABULARIES, build_bundle

# Relative module specifiers and worker URLs, as gateway/offline.py follows them.
_SPECIFIER = re.compile(r"""(?:\bfrom|\bimport)\s*\(?\s*(["'])(\.{1,2}/[^"'\s]+?)\1""")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bundle") / "app"
    return out, build_bundle(out)


def test_every_file_is_written_with_its_headers(bundle: tuple[Path, dict]) -> None:
    out, manifest = bundle
    assert manifest["index"] == "index.html" and manifest["version"] == 1
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} - {"manifest.json"}
    assert on_disk == set(manifest["files"])
    for path, headers in manifest["files"].items():
        assert headers["content-type"], path
        # The page is cross-origin isolated wherever the engine grants it, and keeps its CSP.
        assert headers["cross-origin-embedder-policy"] == "require-corp", path
        assert headers["cross-origin-opener-policy"] == "same-origin", path
        assert "script-src 'self'" in headers["content-security-policy"], path
        assert not {"etag", "date", "content-length"} & set(headers), path


def test_what_the_page_boots_from_is_there(bundle: tuple[Path, dict]) -> None:
    out, manifest = bundle
    files = manifest["files"]
    for needed in ("index.html", "pyscript.toml", "py/boot.py", "py/firsttoken.zip", "sw.js",
                   "vendor/pyodide/pyodide.asm.wasm", "vendor/pyodide/python_stdlib.zip", *VOCABULARIES):
        assert needed in files, needed
    assert files["vendor/pyodide/pyodide.asm.wasm"]["content-type"] == "application/wasm"
    assert files["index.html"]["content-type"].startswith("text/html")
    # Every relative import of every bundled module resolves inside the bundle.
    for path in files:
        if path.endswith((".js", ".mjs")):
            text = (out / path).read_text(encoding="utf-8", errors="replace")
            # (Comments are not imports: JSDoc types say `import("./x")` too.)
            code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("//", "*", "/*")))
            for _, spec in _SPECIFIER.findall(code):
                target = (out / path).parent / spec.split("?")[0]
                assert target.resolve().is_file(), f"{path} imports {spec}, which is not bundled"
    interpreter = re.search(r'^interpreter\s*=\s*"([^"]+)"', (out / "pyscript.toml").read_text(), re.M)
    assert interpreter and interpreter.group(1) in files


def test_the_snapshot_travels_with_its_label(bundle: tuple[Path, dict]) -> None:
    out, manifest = bundle
    if SNAPSHOT not in manifest["files"]:
        pytest.skip("no install-time snapshot baked for this package (make bakes one)")
    headers = manifest["files"][SNAPSHOT]
    label = json.loads((Path(__file__).resolve().parents[2] / "build/snapshot/firsttoken.snapshot.json").read_text())
    assert headers["x-firsttoken-sha256"] == label["sha256"]
    assert (out / SNAPSHOT).stat().st_size == label["stored"]
    # In the app's own files: fetched without timing a link there is none of.
    assert headers["x-firsttoken-fetch"] == "always"


def test_the_manifest_names_the_build_its_service_worker_holds(bundle: tuple[Path, dict]) -> None:
    out, manifest = bundle
    first = (out / "sw.js").read_text(encoding="utf-8").split("\n", 1)[0]
    held = json.loads(first.removeprefix("self.FIRSTTOKEN_BUILD = ").rstrip(";"))
    assert re.fullmatch(r"[0-9a-f]{20}", manifest["build"]) and manifest["build"] == held["build"]
    # The bundle's policy is in it: frames refused, as the bundle's headers say.
    assert held["headers"]["content-security-policy"] == manifest["files"]["index.html"]["content-security-policy"]
