"""`python -m gateway.build.encode`: brotli and gzip variants of the static runtime, made once.

What is compressed is what a first visit downloads (`gateway.static.first_visit_paths`:
every file the service worker keeps, the tokenizer vocabularies, the install-time
snapshot), fetched from the app itself in-process, as identity, exactly as the gateway
serves it, so that the ETag and length recorded beside each variant are the ones
`gateway/precompressed.py` compares at serving time.

brotli comes from Google's `brotli` (quality 11, the largest window: the wasm and the
snapshot are megabytes of repetitive bytes), gzip from the standard library (level 9).
A variant that does not save at least 5% is not kept: the standard library zip is
already deflated, and decoding costs something too.

Incremental: a path whose identity ETag and length are those already recorded, and
whose variants are on disk at their recorded lengths, is not compressed again. The
index is written last, atomically; `make` runs this whenever a served file may have
changed (the Makefile's `build/encoded/index.json`).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from ..precompressed import INDEX, SUFFIX, file_name

#: A variant is kept only if it is at most this fraction of the identity length.
KEEP_BELOW = 0.95


def brotli_compress(data: bytes) -> bytes:
    import brotli  # only the build needs it

    return brotli.compress(data, quality=11, lgwin=24)


def gzip_compress(data: bytes) -> bytes:
    # mtime=0: the same input gives the same bytes (reproducible builds).
    return gzip.compress(data, compresslevel=9, mtime=0)


COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {"br": brotli_compress, "gzip": gzip_compress}


def encode(client: Any, paths: list[str], out: Path, *, report: Callable[[str], None] = lambda _: None) -> dict:
    """Compress each URL path of `paths` as `client` (a TestClient of the app) serves
    it into `out`; write and return the index. Paths the app does not serve (no
    snapshot baked) are left out."""
    out.mkdir(parents=True, exist_ok=True)
    try:
        old = json.loads((out / INDEX).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError):
        old = {}
    files: dict[str, dict] = {}
    identity = {"accept-encoding": "identity"}
    for path in paths:
        head = client.head(path, headers=identity)
        if head.status_code != 200:
            continue
        etag, length = head.headers.get("etag", ""), int(head.headers.get("content-length", -1))
        previous = old.get(path)
        if previous and previous["etag"] == etag and previous["length"] == length and _on_disk(out, previous):
            files[path] = previous
            continue
        response = client.get(path, headers=identity)
        if response.status_code != 200 or response.headers.get("etag", "") != etag:
            continue  # changed while we looked: the next run takes it
        data = response.content
        entry: dict[str, Any] = {"etag": etag, "length": len(data), "variants": {}}
        for coding, compress in COMPRESSORS.items():
            started = time.perf_counter()
            encoded = compress(data)
            seconds = time.perf_counter() - started
            target = out / (file_name(path) + SUFFIX[coding])
            if len(encoded) > KEEP_BELOW * len(data):
                target.unlink(missing_ok=True)
                report(f"{path} {coding}: {len(encoded)} of {len(data)} bytes, not kept")
                continue
            _write_atomically(target, encoded)
            entry["variants"][coding] = {
                "file": str(target.relative_to(out)), "length": len(encoded),
                "sha256": hashlib.sha256(encoded).hexdigest(),
            }
            report(f"{path} {coding}: {len(data)} -> {len(encoded)} bytes ({seconds:.1f} s)")
        files[path] = entry
    index = {"version": 1, "files": files}
    _write_atomically(out / INDEX, (json.dumps(index, indent=1, sort_keys=True) + "\n").encode())
    return index


def _on_disk(out: Path, entry: dict) -> bool:
    for variant in entry.get("variants", {}).values():
        try:
            if (out / variant["file"]).stat().st_size != variant["length"]:
                return False
        except OSError:
            return False
    return True


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(path.name + ".part")
    staged.write_bytes(data)
    os.replace(staged, path)


def runtime_paths() -> list[str]:
    """URL paths of a first visit's files (the page under both its names; not the
    service worker, which is a few kilobytes made per request)."""
    from ..static import SERVICE_WORKER_PATH, first_visit_paths

    return ["/", *("/" + p for p in first_visit_paths() if p != SERVICE_WORKER_PATH)]


def main(argv: list[str] | None = None) -> None:
    from starlette.testclient import TestClient

    from ..app import GatewayConfig, create_app
    from ..static import ROOT

    p = argparse.ArgumentParser(prog="python -m gateway.build.encode", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "build" / "encoded")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args(argv)
    app = create_app(GatewayConfig(precompressed=None))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        index = encode(client, runtime_paths(), args.out, report=print if args.verbose else lambda _: None)
    (args.out / INDEX).touch()  # make's target: newer than its inputs even when nothing changed
    before = sum(e["length"] for e in index["files"].values())
    after = {c: sum(e["variants"].get(c, {"length": e["length"]})["length"] for e in index["files"].values())
             for c in SUFFIX}
    print(f"encoded {len(index['files'])} files: {before / 1e6:.1f} MB, "
          + ", ".join(f"{c} {n / 1e6:.1f} MB" for c, n in after.items()) + f" ({args.out})")


if __name__ == "__main__":
    main()
