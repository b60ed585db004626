"""What the service worker keeps, on a tree of its own: found by following the page's
imports, kept between requests, and found again as soon as a file it came from changes
or a path it named appears."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gateway.offline import OfflineManifest


def write(path: Path, text: str) -> None:
    """Write `text` with an mtime no earlier filesystem clock tick can share with the last
    write (an edit within the same tick, same size, would otherwise look unchanged)."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if path.stat().st_mtime_ns <= before:
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(tmp_path / "index.html", '<script type="module" src="js/main.js"></script>')
    write(tmp_path / "pyscript.toml", 'interpreter = "js/loader.js"\n')
    write(tmp_path / "py" / "boot.py", "")
    write(tmp_path / "js" / "main.js", 'import { a } from "./a.js";\nimport("./later.js");\n')
    write(tmp_path / "js" / "a.js", "export const a = 1;\n")
    write(tmp_path / "js" / "loader.js", "")
    return tmp_path


def manifest_of(root: Path) -> OfflineManifest:
    files = {name: root / name for name in ("index.html", "pyscript.toml", "py/boot.py")}
    return OfflineManifest(root, files=files, mounts={"js": root / "js", "vendor/pyodide": root / "pyodide"},
                           package=("py/firsttoken.zip", lambda: "etag-1"))


def test_the_walk_follows_imports_and_is_kept_until_a_file_it_read_changes(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = manifest_of(tree)
    walks = []
    walk = manifest._walk_files
    monkeypatch.setattr(manifest, "_walk_files", lambda: walks.append(1) or walk())

    first = manifest.assets()
    assert first == ["./", "js/a.js", "js/loader.js", "js/main.js", "py/boot.py", "pyscript.toml"]
    assert manifest.assets() == first and manifest.manifest()["assets"] == first
    assert len(walks) == 1  # asked three times, walked once

    # An edit to a module it read: a new import is followed.
    write(tree / "js" / "a.js", 'export const a = 1;\nimport "./b.js";\n')
    write(tree / "js" / "b.js", "")
    assert "js/b.js" in manifest.assets() and len(walks) == 2

    # A file named but missing (`./later.js`) that appears, with nothing else edited.
    assert "js/later.js" not in manifest.assets() and len(walks) == 2
    write(tree / "js" / "later.js", "")
    assert "js/later.js" in manifest.assets() and len(walks) == 3

    # A kept file deleted (its importer unchanged) leaves the list; the digest does not fail.
    (tree / "js" / "later.js").unlink()
    assert "js/later.js" not in manifest.manifest()["assets"] and len(walks) == 4


def test_the_build_id_follows_a_kept_files_content(tree: Path) -> None:
    manifest = manifest_of(tree)
    build = manifest.manifest()["build"]
    assert manifest.manifest()["build"] == build
    write(tree / "js" / "a.js", "export const a = 2;\n")
    assert manifest.manifest()["build"] != build
