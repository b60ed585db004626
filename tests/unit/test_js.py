"""The page's JavaScript tests (tests/js/*.test.mjs): plain JS under Node's own test
runner (`node --test`), one pytest test per file, so that `make test-fast` and `make test`
run them with the rest. What a file's tests said is shown when it fails.

They were JS inside Python strings, run with `node -e` and their results asserted in
Python (issue 47, item 6). What still runs `node -e` from Python does so for a reason:
it checks the JavaScript against the Python core on the same input (test_page_images:
both image readers; test_compress_note: the core's compression report; test_protocol*:
the generated protocol module; test_tokens_exact: both tokenizers), or shares its cases
with the browser tests in Python (test_host_bridge: tests/bridge_cases.py); the rest
(test_early_send, test_notify_js) were being changed by others
when these moved, and can follow the same way."""

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
