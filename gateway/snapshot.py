"""The install-time snapshot: an interpreter image baked once, served to first visits.

A page with no snapshot of its own (a first visit, or the first after a release) would
boot Python normally, which takes seconds. If the gateway has a snapshot for exactly
the package it serves, the page restores that one instead (js/boot/pyodide-loader.js),
then keeps it in its own Cache Storage for later visits.

`python -m gateway.build.bake` bakes it (gateway/build/bake.py; `make` runs it) into
build/snapshot/: `firsttoken.snapshot` and its label `firsttoken.snapshot.json`
({pyodide, format, package, length, stored, sha256}).

`/py/firsttoken.snapshot` serves it while its label names the package being served;
otherwise (sources edited since, nothing baked) it answers 404 and the page boots
normally and makes its own. The page checks the label against its own Pyodide version,
snapshot format and package hash, and the body against the length and SHA-256.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response

NAME = "firsttoken.snapshot"


class ServedSnapshot:
    """Serves `directory`/firsttoken.snapshot while it matches the package's bytes."""

    def __init__(self, directory: Path, package_bytes, *, measure_link: bool = True) -> None:
        self.directory = directory
        # False: the page is told to fetch it without timing the link first
        # (`x-firsttoken-fetch: always`), for a gateway its clients reach over a link
        # known to be fast (the same device, a LAN, an app's own bundle), and for tests,
        # whose loaded machine makes any timing a coin toss (js/boot/snapshot-pays.js).
        self.measure_link = measure_link
        self.package_bytes = package_bytes  # () -> bytes of the zip being served
        self._digests: dict[int, tuple[bytes, str]] = {}

    def _package_digest(self) -> str:
        data = self.package_bytes()
        cached = self._digests.get(id(data))
        if cached is None or cached[0] is not data:
            cached = (data, hashlib.sha256(data).hexdigest())
            self._digests = {id(data): cached}
        return cached[1]

    async def endpoint(self, request: Request) -> Response:
        body, label = self.directory / NAME, self.directory / f"{NAME}.json"
        try:
            meta = json.loads(label.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return Response(status_code=404, headers={"cache-control": "no-store"})
        if meta.get("package") != self._package_digest() or not body.is_file():
            return Response(status_code=404, headers={"cache-control": "no-store"})
        headers = {
            "cache-control": "no-store",  # 18 MB: the page keeps it in Cache Storage itself
            "x-firsttoken-pyodide": str(meta["pyodide"]),
            "x-firsttoken-format": str(meta["format"]),
            "x-firsttoken-package": str(meta["package"]),
            "x-firsttoken-length": str(meta["length"]),
            "x-firsttoken-stored": str(meta["stored"]),
            "x-firsttoken-sha256": str(meta["sha256"]),
        }
        if not self.measure_link:
            headers["x-firsttoken-fetch"] = "always"
        return FileResponse(body, media_type="application/octet-stream", headers=headers)
