# The PyScript worker's entry point: import the core and attach it to the page.
# PyScript dispatches worker messages to the global `xworker.onmessage`, so the
# name `xworker` must live in this module's globals.
import json
import time

from js import performance  # type: ignore[import-not-found]

# When PyScript started running this file (epoch ms, the page's timeline is shifted to it).
_entry_start = performance.timeOrigin + performance.now()
_t0 = time.perf_counter()
from polyscript import xworker  # noqa: E402

from firsttoken.browser import start  # noqa: E402

_import_ms = (time.perf_counter() - _t0) * 1000
# What js/boot/pyodide-loader.js measured (snapshot state, stage times) when PyScript loaded
# Pyodide through it; with a plain Pyodide only this module's import time is known.
try:
    from _firsttoken_boot import record as _record  # type: ignore[import-not-found]

    _boot = json.loads(_record)
except ImportError:
    _boot = {"snapshot": "none"}
# On a restored snapshot the modules are already imported and this is near zero; on
# a boot that made one, the import was done (and timed) before the snapshot.
_boot["import_ms"] = round(_boot.get("import_ms", 0) + _import_ms, 2)
_boot["entry_start"] = _entry_start

start(xworker, boot=_boot)
