"""The page's JavaScript tests under Node's own test runner (`node --test`), with what
the Python side computed handed over as a JSON fixture.

A cross-check (the page's image reader against the core's, the compression note against
the core's report, the generated protocol module, both tokenizers, the host bridge's
shared cases) is plain JS in tests/js/cross/*.test.mjs that reads its cases and Python's
expected outputs from the file named by `FIXTURE_ENV`; the Python test computes them on
the same run and passes them in (tests/unit/test_js.py says why a fixture written per
run, not one checked in).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from harness.servers import ROOT

FIXTURE_ENV = "FIRSTTOKEN_JS_FIXTURE"


def node_test(path: Path, fixture: object | None = None, tmp: Path | None = None, timeout: float = 120) -> str:
    """Runs one tests/js file under `node --test` and returns its report; a failing test
    fails the caller with each test's name, assertion and stack (the spec reporter).
    With `fixture`, it is written as JSON under `tmp` and named to the file in
    `FIXTURE_ENV`."""
    env = dict(os.environ)
    if fixture is not None:
        if tmp is None:
            raise ValueError("a fixture needs a directory to be written to")
        where = tmp / f"{path.stem}.json"
        where.write_text(json.dumps(fixture), encoding="utf-8")
        env[FIXTURE_ENV] = str(where)
    done = subprocess.run(["node", "--no-warnings", "--test", "--test-reporter=spec", str(path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
