"""CPU work off the event loop: a small, bounded thread pool.

Parsing a 4 MiB body, expanding cache references, counting a prompt's tokens and
building an answer each take from milliseconds to seconds; on the event loop they stall
every other connection, `/healthz` included. They run here instead. tiktoken encodes
with the GIL released, so counting proceeds in parallel with the loop; pure-Python
steps share the GIL with it, but the interpreter's switch interval (5 ms) hands it back.

Bounded twice: `workers` threads, and at most `queued` jobs admitted at once (others
wait, without holding a thread or a queue slot), so a burst of huge requests cannot
pile up work and memory without end.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

__all__ = ["Offload"]

T = TypeVar("T")


class Offload:
    def __init__(self, workers: int = 2, queued: int = 16) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="firsttoken-cpu")
        self._slots = asyncio.Semaphore(queued)

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        async with self._slots:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
