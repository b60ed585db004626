"""A gateway process that also prints the built-in model's usage record of every answer
it starts, for benchmarks that compare what two clients are billed (bench/resume.py).

    with usage_gateway("--no-resume") as url: ...; usage_records(url)

The gateway itself keeps no ledger (its flow control meters usage to charge rate
buckets, gateway/limits/usage.py, and forgets it), so this bench-only launcher wraps
the one place where the built-in model settles an answer's cost, `Simulator.prepare`
(gateway/simulator.py), and prints what it settled: the `Outcome` that every usage
object on the wire reports (gateway/dialects/wire.py: `prompt_tokens`,
`cached_tokens`, …). It is read at the moment the model commits to the prompt, before
the first byte goes out, because that is when a provider bills it: a request whose
client goes away mid-answer is still billed for its prompt, and its usage object is
the part the client never receives. A stream resumed or polled (gateway/streams)
reads the answer's log and prepares nothing, so it bills nothing here either, as it
should: counted, not assumed.

Nothing else of the gateway changes: the same command line, the same process model.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__":  # run as a script: bench/ is on sys.path, the repository is not
    import bench_paths  # noqa: F401

__all__ = ["MARK", "usage_gateway", "usage_records"]

#: The start of each record's line in the gateway's output (one JSON object follows).
MARK = "firsttoken-usage "


def install() -> None:
    """Wrap `Simulator.prepare` so that each settled answer prints its usage record."""
    from gateway.simulator import Simulator

    prepare = Simulator.prepare
    lock = threading.Lock()  # answers are prepared in a thread pool (gateway/offload.py)

    def recorded(self: Simulator, *args: Any, **kwargs: Any) -> Any:
        answer = prepare(self, *args, **kwargs)
        record = {k: v for k, v in asdict(answer.outcome).items() if k.endswith("_tokens")}
        with lock:
            print(MARK + json.dumps(record), flush=True)
        return answer

    Simulator.prepare = recorded  # type: ignore[method-assign] - bench-only: the record, nothing else


@contextmanager
def usage_gateway(*args: str) -> Iterator[Any]:
    """A gateway as `harness.servers.gateway` runs one (the same flags, awaited on the
    URL it prints), through this launcher; yields its URL, whose `.log` holds the usage
    records among what it printed."""
    from harness.servers import READY, Gateway, _process

    argv = [sys.executable, str(Path(__file__).resolve()), "--port", "0", "--snapshot-always", *args]
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'py'}{os.pathsep}{ROOT}"}
    with _process(argv, READY.search, "gateway", cwd=ROOT, env=env) as (match, seen, proc):
        url = Gateway(match.group(1))
        url.log = seen
        url.proc = proc
        yield url


def usage_records(url: Any, at_least: int = 0, timeout_s: float = 10.0) -> list[dict[str, int]]:
    """Every usage record the gateway at `url` printed so far, in order; with
    `at_least`, once that many are there (a record is printed before the answer's first
    byte, but its line reaches `.log` through the thread that drains the output), else
    a RuntimeError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        records = [json.loads(line[len(MARK):]) for line in list(url.log) if line.startswith(MARK)]
        if len(records) >= at_least:
            return records
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(records)} usage records after {timeout_s} s, not {at_least}")
        time.sleep(0.01)  # the drain thread has no event to wait on: its list is polled


if __name__ == "__main__":
    install()
    from gateway.__main__ import main

    main(sys.argv[1:])
