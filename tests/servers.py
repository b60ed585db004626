"""Real gateway processes for tests: a real socket, real HTTP, started and awaited on
their readiness line (the URL they print), never on a sleep."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"listening on (http://\S+?)/?$")


class Gateway(str):
    """The base URL (no trailing slash), with everything the process printed in `log`."""

    log: list[str]


@contextmanager
def gateway(*args: str, env: dict[str, str] | None = None, root: Path = ROOT) -> Iterator[Gateway]:
    """Run `python -m gateway --port 0 …`; yield its base URL (no trailing slash).

    `root` is the tree it serves (a copy of this one, for boot tests). Its output is drained on a thread for as long as it runs (a full pipe would block
    it) and kept in `.log`, so tests can check what it logged.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "gateway", "--port", "0", *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": f"{root / 'py'}{os.pathsep}{root}", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:  # blocks until the gateway prints its URL, or exits
            seen.append(line)
            match = READY.search(line.strip())
            if match:
                break
        else:
            raise RuntimeError("gateway exited before it was ready:\n" + "".join(seen))
        url = Gateway(match.group(1))
        url.log = seen
        drain = threading.Thread(target=lambda: seen.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
        drain.start()
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            if "drain" in locals():
                drain.join(timeout=10)
            proc.stdout.close()
