"""CPU work off the event loop: a small, bounded thread pool.

Parsing a 4 MiB body, expanding cache references, counting a prompt's tokens and
building an answer each take from milliseconds to seconds; on the event loop they stall
every other connection, `/healthz` included. They run here instead. tiktoken encodes
with the GIL released, so counting proceeds in parallel with the loop; pure-Python
steps share the GIL with it, but the interpreter's switch interval (5 ms) hands it back.

Bounded twice: `workers` threads, and at most `queued` jobs admitted at once (others
wait, without holding a thread or a queue slot), so a burst of huge requests cannot
pile up work and memory without end.

tiktoken holds the GIL for part of its work (up to 100 ms at a time on a 4 MiB text,
measured), which a thread cannot hide; `in_process` runs such a call in one worker
process instead (spawned on first use, so nothing is forked from a threaded server).
The worker must not outlive the gateway, nor keep its output pipe open (whoever reads
the gateway's log would wait on it): it asks the kernel to end it when its parent ends
(Linux `PR_SET_PDEATHSIG`) and writes to /dev/null.
"""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, Awaitable, Callable, TypeVar

__all__ = ["Offload", "Run", "in_thread"]

T = TypeVar("T")

#: How a piece runs CPU or file work off the loop: `await run(fn, *args)`. The gateway
#: passes every piece its one `Offload.run`.
Run = Callable[..., Awaitable[Any]]


async def in_thread(fn: Callable[..., T], *args: object) -> T:
    """The default `Run` of a piece used on its own, outside a gateway (a test, a
    benchmark): the event loop's default thread pool."""
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


class Offload:
    def __init__(self, workers: int = 2, queued: int = 16) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="firsttoken-cpu")
        self._slots = asyncio.Semaphore(queued)
        self._process: ProcessPoolExecutor | None = None
        self._process_lock = threading.Lock()

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        async with self._slots:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def in_process(self, fn: Callable[..., T], *args: object) -> T:
        """Run `fn(*args)` in the worker process and wait (call it from a pool thread;
        `fn` and its arguments must pickle)."""
        with self._process_lock:
            if self._process is None:
                self._process = ProcessPoolExecutor(
                    max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_start
                )
        return self._process.submit(fn, *args).result()

    def close(self) -> None:
        # The worker process first: it ends with the thread that started it.
        if self._process is not None:
            self._process.shutdown(wait=True, cancel_futures=True)
        self._executor.shutdown(wait=False, cancel_futures=True)


def _worker_start() -> None:
    """In the worker process: end with the parent, write nowhere."""
    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == 1:  # the parent already ended before the call
            os._exit(0)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
