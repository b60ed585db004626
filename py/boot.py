# The PyScript worker's entry point: import the core and attach it to the page.
# PyScript dispatches worker messages to the global `xworker.onmessage`, so the
# name `xworker` must live in this module's globals.
import time

_t0 = time.perf_counter()
from polyscript import xworker  # noqa: E402

from firsttoken.browser import start  # noqa: E402

start(xworker, boot={"import_ms": round((time.perf_counter() - _t0) * 1000, 2)})
