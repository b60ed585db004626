"""firsttoken.cache: prepared system messages, kept once by content hash.

A long system prompt goes out with every request. Compressing and counting it each
time costs the phone CPU, and uploading it costs the uplink. The one preparation
pipeline (`firsttoken.prepare`, which also says why a hit gives exactly what a miss
gives) therefore keeps each prepared system message here (its compressed text, exact
token count, compression report and the repeats state after it), and, with the
firsttoken gateway, the core sends a reference instead of the text
(`firsttoken.cache.refs`, bridge/PROTOCOL.md "Cache references").

Layers
------
* Pure logic (CPython-tested): `cache_key`, the entry format (`encode_entry` /
  `decode_entry`, which verifies) and least-recently-used planning (`plan_eviction`),
  in `firsttoken.cache.entries`; and `Cache` (here), which runs them over a store.
* Stores: small adapters behind one async interface, `Store` (get, put, touch, delete,
  index, and a little state). `MemoryStore` here; `SqliteStore` on CPython
  (`tests.sqlite_store`); `IndexedDBStore` in the page
  (`firsttoken.browser.indexeddb`, the one module that touches IndexedDB).

Keys and verification
---------------------
The key is SHA-256 over a canonical encoding (JSON, ASCII-escaped, so every string,
lone surrogates included, has exactly one spelling) of the scheme name, the text, the
token encoding, the compression version and level, and the key of the system message
before it (a message's compression may depend on earlier ones). A stored record is
``ft1 <sha256 of payload>\\n<payload JSON>``; the payload also holds the key it was
stored under and a SHA-256 of the compressed text. `decode_entry` checks all three
before an entry is used: a record that does not verify is deleted and treated as a miss,
so a corrupt store can cost time but never change what is sent.

Tiers
-----
Entries never change under a key, so `Cache` also keeps the few most recently used,
verified, in memory (`hot_entries`): within a session the same system prompt goes out
with every request, and reading it back from IndexedDB each time would cost more than
the rest of preparing the request. After a reload that tier is empty and a hit comes
from the store; `last_source` says which it was.

Failure
-------
Every store error is a `CacheError` (translated by the adapter, in one place). `Cache`
never raises: on the first store failure it switches to a `MemoryStore` for the rest
of the session and reports it once through `on_notice` (the page shows it), and every
store call is bounded by a timeout, so a failing cache never blocks or breaks sending.
The kinds of failure (`CacheCorrupt`, `CacheUnavailable`, …) are drawn with the rest of
the error tree in `firsttoken.errors`, where store adapters take them from.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from typing import Any, Awaitable, Callable, Coroutine, Protocol, Sequence

from ..errors import CacheCorrupt, CacheError, CacheTimeout, CacheUnavailable
from ..notices import CacheDegraded
from .entries import KEY_SCHEME, RECORD_MAGIC, Entry, Meta, cache_key, decode_entry, encode_entry, plan_eviction, text_digest

__all__ = [
    # the cache
    "Cache",
    "Store",
    "MemoryStore",
    # what it keeps (`firsttoken.cache.entries`)
    "Entry",
    "Meta",
    "KEY_SCHEME",
    "RECORD_MAGIC",
    "cache_key",
    "text_digest",
    "encode_entry",
    "decode_entry",
    "plan_eviction",
]

# ---- stores ------------------------------------------------------------------------------


class Store(Protocol):
    """One async interface over every backend. Errors are `CacheError`s."""

    kind: str

    async def get(self, key: str) -> str | None: ...

    async def put(self, key: str, record: str, meta: Meta) -> None: ...

    async def touch(self, meta: Meta) -> None: ...

    async def delete(self, keys: Sequence[str]) -> None: ...

    async def index(self) -> list[Meta]: ...

    async def get_state(self, name: str) -> str | None: ...

    async def put_state(self, name: str, value: str) -> None: ...

    def close(self) -> None: ...


class MemoryStore:
    """A store in a dict: the fallback when storage fails, and the store of tests."""

    kind = "memory"

    def __init__(self) -> None:
        self.records: dict[str, str] = {}
        self.metas: dict[str, Meta] = {}
        self.state: dict[str, str] = {}

    async def get(self, key: str) -> str | None:
        return self.records.get(key)

    async def put(self, key: str, record: str, meta: Meta) -> None:
        self.records[key] = record
        self.metas[key] = meta

    async def touch(self, meta: Meta) -> None:
        if meta.key in self.records:
            self.metas[meta.key] = meta

    async def delete(self, keys: Sequence[str]) -> None:
        for key in keys:
            self.records.pop(key, None)
            self.metas.pop(key, None)

    async def index(self) -> list[Meta]:
        return list(self.metas.values())

    async def get_state(self, name: str) -> str | None:
        return self.state.get(name)

    async def put_state(self, name: str, value: str) -> None:
        self.state[name] = value

    def close(self) -> None:
        pass


# ---- the cache -------------------------------------------------------------------------------


#: Told once, when the cache falls back to memory (the core hands it to `firsttoken.notices`).
OnNotice = Callable[[CacheDegraded], Any]


class Cache:
    """Entries over a store, with verification, LRU bounds and fallback to memory.

    No method raises. `get` returns None on a miss, a record that does not verify (it
    is deleted), or a failure. Writes the caller does not need to wait for (`touch`
    after a hit, `put` after a miss) go through `spawn`; `settle` waits for them.
    """

    def __init__(
        self,
        store: Store | None = None,
        *,
        max_entries: int = 256,
        max_bytes: int = 16 * 1024 * 1024,
        timeout_s: float = 5.0,
        hot_entries: int = 8,
        clock: Callable[[], float] = time.time,
        on_notice: OnNotice | None = None,
    ) -> None:
        self._store: Store = store if store is not None else MemoryStore()
        self.hot_entries = hot_entries
        self._hot: OrderedDict[str, tuple[Entry, int]] = OrderedDict()  # key → (entry, record size)
        #: Where the last `get` found its entry: "memory" (this session), "store", or None.
        self.last_source: str | None = None
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.clock = clock
        self.on_notice = on_notice
        #: Why the cache fell back to memory (a `CacheError` code), or None.
        self.degraded: str | None = None
        self.stats = {"hits": 0, "misses": 0, "corrupt": 0, "writes": 0, "evicted": 0}
        self._client_id: str | None = None
        self._tasks: set[asyncio.Future[Any]] = set()

    @property
    def backend(self) -> str:
        """The store in use: "indexeddb", "sqlite", "memory", …"""
        return self._store.kind

    async def get(self, key: str) -> Entry | None:
        """The entry stored under `key`, verified, or None. A hit is marked used."""
        hot = self._hot.get(key)
        if hot is not None:
            entry, size = hot
            self._hot.move_to_end(key)
            self.last_source = "memory"
        else:
            record = await self._call("get", key)
            self.last_source = None
            if record is None:
                self.stats["misses"] += 1
                return None
            try:
                entry = decode_entry(record, key)
            except CacheCorrupt:
                self.stats["corrupt"] += 1
                self.stats["misses"] += 1
                self.spawn(self._call("delete", [key]))
                return None
            size = len(record)
            self._remember(entry, size)
            self.last_source = "store"
        self.stats["hits"] += 1
        self.spawn(self._call("touch", Meta(key, size, self.clock(), entry.created_at)))
        return entry

    def peek(self, key: str) -> Entry | None:
        """The entry under `key` if the memory tier holds it, else None: no storage I/O
        and no mark of use (for the live count, which runs on every pause in typing)."""
        hot = self._hot.get(key)
        return hot[0] if hot is not None else None

    def _remember(self, entry: Entry, size: int) -> None:
        self._hot[entry.key] = (entry, size)
        self._hot.move_to_end(entry.key)
        while len(self._hot) > self.hot_entries:
            self._hot.popitem(last=False)

    async def put(self, entry: Entry) -> None:
        """Store `entry`, then evict least recently used records past the bounds."""
        record = encode_entry(entry)
        if len(record) > self.max_bytes:
            return
        self._remember(entry, len(record))
        now = self.clock()
        await self._call("put", entry.key, record, Meta(entry.key, len(record), now, entry.created_at))
        self.stats["writes"] += 1
        # The index is read again each time: another tab may have written meanwhile.
        index = await self._call("index")
        victims = plan_eviction(index or [], self.max_entries, self.max_bytes, keep=entry.key)
        if victims:
            await self._call("delete", victims)
            self.stats["evicted"] += len(victims)

    async def client_id(self) -> str:
        """A random id for this client, made once and kept in the store (the gateway
        keeps references per client: bridge/PROTOCOL.md)."""
        if self._client_id is None:
            value = await self._call("get_state", "client_id")
            if not (isinstance(value, str) and 16 <= len(value) <= 128):
                value = secrets.token_urlsafe(24)
                await self._call("put_state", "client_id", value)
            self._client_id = value
        return self._client_id

    def spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run `work` in the background; `settle` waits for it."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def settle(self) -> None:
        """Wait for background writes (each is bounded by the timeout; none raises)."""
        while True:
            # Finished tasks are dropped here, not only by their done-callback: awaiting
            # futures that are already done need not yield to the loop (it does not in
            # Pyodide's), so a loop that waited for the callback could spin for ever.
            for task in [t for t in self._tasks if t.done()]:
                self._tasks.discard(task)
                if not task.cancelled():
                    task.exception()  # retrieved: never "exception was never retrieved"
            if not self._tasks:
                return
            await asyncio.wait(list(self._tasks))

    def close(self) -> None:
        self._store.close()

    async def _call(self, op: str, *args: Any) -> Any:
        store = self._store
        try:
            return await _bounded(getattr(store, op)(*args), self.timeout_s)
        except Exception as exc:  # noqa: BLE001 - a failing cache must never break sending
            if store is self._store:
                self._degrade(exc)
            if self._store is store:  # the fallback itself failed: give up on this call
                return None
            try:
                return await getattr(self._store, op)(*args)
            except Exception:  # noqa: BLE001
                return None

    def _degrade(self, exc: BaseException) -> None:
        if isinstance(exc, CacheError):
            error: CacheError = exc
        elif isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
            error = CacheTimeout(f"the {self._store.kind} store did not answer in {self.timeout_s:g} s")
        else:
            error = CacheUnavailable(f"{type(exc).__name__}: {exc}")
        old = self._store
        if old.kind == "memory":
            return
        try:
            old.close()
        except Exception:  # noqa: BLE001 - closing a broken store is best effort
            pass
        self._store = MemoryStore()
        self.degraded = error.code
        if self.on_notice is not None:
            self.on_notice(
                CacheDegraded(
                    reason=error.code,
                    store="memory",
                    message=f"Prompt cache: {old.kind} failed ({error.message or error.code}); "
                    "keeping prepared system messages in memory for this session.",
                )
            )

async def _bounded(work: Awaitable[Any], timeout_s: float) -> Any:
    return await asyncio.wait_for(work, timeout_s)
