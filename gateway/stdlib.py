"""Pyodide's standard library, repacked with its entries stored, so brotli sees the text.

npm's `python_stdlib.zip` holds 9.6 MB of Python source deflated entry by entry into
2.5 MB. Deflate works per entry with a 32 KB window, and its output is noise to any
later compressor: brotli and gzip cannot shrink the file at all (docs/boot.md,
"Compressed transfer"). Stored (no compression inside the zip), the same entries give brotli the
whole library as one text with a 16 MB window: 1.59 MB instead of 2.48 MB on the wire.

What the browser keeps is larger (9.6 MB in Emscripten's file system, in JS memory,
not the wasm heap), and imports get cheaper: zipimport reads a stored entry without
inflating it.

The repack keeps every entry, in order, with its name, date and attributes: only the
compression changes, so what `import` finds is byte for byte what Pyodide ships. It is
deterministic (same input, same bytes), which matters twice: its ETag is stable across
gateway restarts, and a memory snapshot remembers the zip's directory (zipimport's
cache of entry offsets lives in the heap), so the install-time snapshot must be baked
against exactly these bytes (gateway/build/bake.py passes them to Node).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from .conditional import BuiltBody, cached_response, file_version

#: Where Pyodide fetches it (its indexURL + this name: pyodide.mjs, `stdLibURL`).
URL_PATH = "/vendor/pyodide/python_stdlib.zip"


def repack_stored(data: bytes) -> bytes:
    """The zip `data` with every entry stored instead of deflated; all else kept."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as target:
        for info in source.infolist():
            body = source.read(info)  # checks each entry's CRC-32
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            copy.external_attr = info.external_attr
            copy.create_system = info.create_system
            copy.compress_type = zipfile.ZIP_STORED
            target.writestr(copy, body)
    return out.getvalue()


class StoredStdlib:
    """Serves `source` (npm's zip) repacked stored, rebuilt when the file changes."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self._current = BuiltBody(lambda: file_version(source), lambda: repack_stored(source.read_bytes())).current

    def data(self) -> bytes:
        return self._current()[0]

    async def endpoint(self, request: Request) -> Response:
        try:
            data, etag = self._current()
        except (OSError, zipfile.BadZipFile):
            return Response(status_code=404, headers={"cache-control": "no-store"})
        return cached_response(request, data, media_type="application/zip", etag=etag)
