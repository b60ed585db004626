"""Requests waiting for their buckets: FIFO within a key, round-robin across keys,
bounded. Pure: no clock, no I/O; the adapter (`gateway/limits/middleware.py`) asks the
buckets and sleeps.

Why round-robin: with a limit shared by everyone (the gateway's own, `--gateway-rpm`),
plain FIFO lets one client that queues 100 requests push every other client's next
request 100 places back. Serving the heads of the per-key lines in turn gives each
waiting key one admission per round, whatever its line's length.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Generic, Iterator, TypeVar

__all__ = ["FairQueue"]

T = TypeVar("T")


class FairQueue(Generic[T]):
    """Per-key FIFO lines served in turn; at most `max_len` items in all."""

    def __init__(self, max_len: int) -> None:
        if max_len < 0:
            raise ValueError("max_len must be >= 0")
        self.max_len = max_len
        # Keys in serving order: the first is next; a served key goes to the back.
        self._lines: OrderedDict[str, deque[T]] = OrderedDict()
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def __contains__(self, key: str) -> bool:
        return key in self._lines

    def depth(self, key: str) -> int:
        """Items waiting under `key`."""
        line = self._lines.get(key)
        return len(line) if line else 0

    def push(self, key: str, item: T) -> bool:
        """Queue `item` at the back of `key`'s line; False (and nothing queued) when full."""
        if self._len >= self.max_len:
            return False
        line = self._lines.get(key)
        if line is None:
            line = self._lines[key] = deque()
        line.append(item)
        self._len += 1
        return True

    def heads(self) -> Iterator[tuple[str, T]]:
        """Each key's first item, in serving order (a snapshot: safe to `pop` while
        iterating)."""
        return iter([(key, line[0]) for key, line in self._lines.items()])

    def pop(self, key: str) -> T:
        """Take `key`'s first item; `key` moves to the back of the serving order."""
        line = self._lines.pop(key)
        item = line.popleft()
        self._len -= 1
        if line:
            self._lines[key] = line  # re-inserted: now last in turn
        return item

    def remove(self, key: str, item: T) -> bool:
        """Drop a waiter that gave up (deadline passed, client gone); False if absent.
        Its key keeps its place in the serving order."""
        line = self._lines.get(key)
        if not line:
            return False
        try:
            line.remove(item)
        except ValueError:
            return False
        self._len -= 1
        if not line:
            del self._lines[key]
        return True
