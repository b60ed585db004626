"""The page's JavaScript tests (tests/js/*.test.mjs): plain JS under Node's own test
runner (`node --test`), one pytest test per file, so that `make test-fast` and `make test`
run them with the rest. What a file's tests said is shown when it fails.

They were JS inside Python strings, run with `node -e` and their results asserted in
Python (issue 47, item 6); they move here one file at a time (tests/unit/test_*_js.py and
the other `node -e` tests are the ones still to move)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "tests" / "js").glob("*.test.mjs"))

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_node(path: Path) -> None:
    # `--test-reporter=spec`: each test's name and, on failure, its assertion and stack.
    done = subprocess.run(["node", "--test", "--test-reporter=spec", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
