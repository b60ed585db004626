"""Where benchmarks import from. `make bench-NAME` runs bench/NAME.py as a script, so
Python puts bench/ first on sys.path, where its module names (gateway.py, tokens.py, …)
would shadow the packages of the same name. Importing this module puts the repository
and py/ ahead of it."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

for _path in (str(ROOT / "py"), str(ROOT)):
    while _path in sys.path:
        sys.path.remove(_path)
    sys.path.insert(0, _path)
