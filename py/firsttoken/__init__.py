"""firsttoken: the browser-side Python core of a chat client for OpenAI-compatible APIs.

Standard library only. Modules that touch the browser (`firsttoken.browser`) import
`js`/`pyodide` only when running inside Pyodide; every other module is pure and runs,
and is tested, on CPython.
"""

from __future__ import annotations

import sys

__version__ = "0.1.0"

#: True inside Pyodide (the page's worker); False on CPython.
IN_PYODIDE = "_pyodide_core" in sys.modules or sys.platform == "emscripten"

__all__ = ["__version__", "IN_PYODIDE"]
