"""The compression corpus's output, pinned to `COMPRESSION_VERSION`.

Caches (the IndexedDB system-message cache, a provider's prompt cache) key on
`COMPRESSION_VERSION`, so output must never change under an unchanged version: a stale
entry would be served as if it were fresh. `compress_golden.json` holds the sha256 of
the output of every corpus document at every level, for one version; this test fails
when any of them changes while the version does not.

To change compression on purpose: bump `COMPRESSION_VERSION` in
py/firsttoken/compress/__init__.py, then regenerate with

    PYTHONPATH=py:. .venv/bin/python tests/unit/test_compress_golden.py --write

which refuses to rewrite an existing document's hash without a version bump (new
corpus documents are added freely). The version's `+pyX.Y` suffix is left out: the
corpus holds no code whose compression depends on the interpreter.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path[:0] = [str(ROOT / "py")]

from firsttoken.compress import COMPRESSION_VERSION, LEVELS, compress_messages, compress_text  # noqa: E402

CORPUS = ROOT / "tests" / "corpus" / "compress"
GOLDEN = Path(__file__).with_name("compress_golden.json")
REGENERATE = "PYTHONPATH=py:. .venv/bin/python tests/unit/test_compress_golden.py --write"


def base_version() -> str:
    return COMPRESSION_VERSION.split("+")[0]


def outputs() -> dict[str, dict[str, str]]:
    """{document: {level: sha256 of its output}} over the whole corpus."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted(p for p in CORPUS.iterdir() if p.suffix in (".md", ".json")):
        raw = path.read_text(encoding="utf-8")
        row: dict[str, str] = {}
        for level in sorted(LEVELS):
            if path.name.endswith(".chat.json"):
                messages = compress_messages(json.loads(raw)["messages"], level=level).messages
                text = json.dumps(messages, sort_keys=True, ensure_ascii=False)
            else:
                text = compress_text(raw, level=level).text
            row[level] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        out[path.name] = row
    return out


def _changed(old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]) -> list[str]:
    return [f"{doc} at {level}" for doc in sorted(old.keys() & new.keys()) for level in sorted(new[doc])
            if old[doc].get(level) != new[doc][level]]


def test_corpus_output_changes_only_with_the_version() -> None:
    golden = json.loads(GOLDEN.read_text())
    now = outputs()
    version = base_version()
    assert golden["version"] == version, (
        f"COMPRESSION_VERSION is {version!r} but {GOLDEN.name} is for {golden['version']!r}: regenerate with {REGENERATE}"
    )
    changed = _changed(golden["outputs"], now)
    assert not changed, (
        f"compression output changed under COMPRESSION_VERSION {version!r} for {len(changed)} (document, level) "
        f"pairs, e.g. {changed[:5]}: bump COMPRESSION_VERSION in py/firsttoken/compress/__init__.py and "
        f"regenerate with {REGENERATE}"
    )
    missing, extra = sorted(now.keys() - golden["outputs"].keys()), sorted(golden["outputs"].keys() - now.keys())
    assert not missing and not extra, f"corpus documents added {missing} or removed {extra}: regenerate with {REGENERATE}"


def write() -> None:
    now = outputs()
    version = base_version()
    if GOLDEN.exists():
        golden = json.loads(GOLDEN.read_text())
        changed = _changed(golden["outputs"], now) if golden["version"] == version else []
        if changed:
            sys.exit(f"output changed for {changed[:5]} ({len(changed)} in all) under the same "
                     f"COMPRESSION_VERSION {version!r}: bump it first")
    GOLDEN.write_text(json.dumps({"version": version, "outputs": now}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} for version {version}: {len(now)} documents")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {REGENERATE}")
    write()
