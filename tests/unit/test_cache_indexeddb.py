"""The IndexedDB store's state machine (firsttoken.browser.indexeddb) on CPython, against a
fake IndexedDB that follows the parts of the W3C Indexed Database API the store relies
on: requests answer in a later task, `versionchange` goes to open connections before an
upgrade, `blocked` fires while one stays open, writes abort with QuotaExceededError past
a quota, a closed connection throws InvalidStateError. The same failures, injected in
real Chromium: tests/e2e/test_cache_page.py."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

import pytest

from firsttoken.browser.indexeddb import IndexedDBStore, translate_error
from firsttoken.cache import (
    Cache,
    Entry,
    Meta,
    cache_key,
    text_digest,
)
from firsttoken.errors import (
    CacheConnectionLost,
    CacheQuotaExceeded,
    CacheTimeout,
    CacheUnavailable,
    CacheVersionConflict,
)
from firsttoken.notices import CacheDegraded


class DOMException(Exception):
    def __init__(self, name: str, message: str = "") -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


class Event:
    def __init__(self, **fields: Any) -> None:
        self.prevented = False
        self.__dict__.update(fields)

    def preventDefault(self) -> None:
        self.prevented = True


def fire(target: Any, name: str, **fields: Any) -> None:
    handler = getattr(target, name, None)
    if handler is not None:
        handler(Event(**fields))


def later(fn: Callable[..., Any], *args: Any) -> None:
    asyncio.get_running_loop().call_soon(fn, *args)


class Request:
    def __init__(self) -> None:
        self.result: Any = None
        self.error: Any = None
        self.onsuccess = self.onerror = self.onblocked = self.onupgradeneeded = None


class Names:
    def __init__(self, stores: dict) -> None:
        self._stores = stores

    def contains(self, name: str) -> bool:
        return name in self._stores


class FakeIndexedDB:
    """An IDBFactory. `databases[name]` = {"version": int, "stores": {store: {key: value}}}."""

    def __init__(self) -> None:
        self.databases: dict[str, dict] = {}
        self.connections: list[Connection] = []
        self.waiting: list[tuple[Request, str, int]] = []
        self.opens = 0
        self.throw_on_open: DOMException | None = None  # thrown synchronously (SecurityError)
        self.fail_open: DOMException | None = None  # error event (private window)
        self.quota: int | None = None  # bytes of record text a database may hold
        self.break_transactions = 0  # the next N transaction() calls find the connection closed
        self.hang_transactions = False

    def open(self, name: str, version: int) -> Request:
        if self.throw_on_open:
            raise self.throw_on_open
        self.opens += 1
        request = Request()
        later(self._open, request, name, version)
        return request

    def _open(self, request: Request, name: str, version: int) -> None:
        if self.fail_open:
            request.error = self.fail_open
            fire(request, "onerror")
            return
        db = self.databases.setdefault(name, {"version": 0, "stores": {}})
        if version < db["version"]:
            request.error = DOMException("VersionError", "requested version is less than the existing version")
            fire(request, "onerror")
            return
        connection = Connection(self, name)
        if version > db["version"]:
            others = [c for c in self.connections if c.name == name and not c.closed]
            for other in others:
                fire(other, "onversionchange", oldVersion=db["version"], newVersion=version)
            if any(not c.closed for c in others):
                fire(request, "onblocked")
                self.waiting.append((request, name, version))
                return
            old, db["version"] = db["version"], version
            request.result = connection
            fire(request, "onupgradeneeded", oldVersion=old, newVersion=version)
        self.connections.append(connection)
        request.result = connection
        fire(request, "onsuccess")

    def closed(self) -> None:
        waiting, self.waiting = self.waiting, []
        for request, name, version in waiting:
            later(self._open, request, name, version)


class Connection:
    def __init__(self, factory: FakeIndexedDB, name: str) -> None:
        self.factory = factory
        self.name = name
        self.closed = False
        self.onversionchange = self.onclose = None

    @property
    def db(self) -> dict:
        return self.factory.databases[self.name]

    @property
    def objectStoreNames(self) -> Names:
        return Names(self.db["stores"])

    def createObjectStore(self, name: str) -> None:
        self.db["stores"][name] = {}

    def transaction(self, stores: list[str], mode: str) -> "Transaction":
        if self.factory.break_transactions:
            self.factory.break_transactions -= 1
            self.close()
        if self.closed:
            raise DOMException("InvalidStateError", "The database connection is closing.")
        return Transaction(self, list(stores), mode)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.factory.closed()


class Transaction:
    def __init__(self, connection: Connection, stores: list[str], mode: str) -> None:
        self.connection = connection
        self.mode = mode
        self.writes: list[tuple[str, str, Any]] = []
        self.error: Any = None
        self.oncomplete = self.onabort = self.onerror = None
        self.finished = False
        if not connection.factory.hang_transactions:
            later(self._commit)

    def objectStore(self, name: str) -> "ObjectStore":
        return ObjectStore(self, self.connection.db["stores"][name])

    def _commit(self) -> None:
        if self.finished:
            return
        self.finished = True
        stores = self.connection.db["stores"]
        quota = self.connection.factory.quota
        if quota is not None and self.writes:
            size = sum(len(v) for s in stores.values() for v in s.values() if isinstance(v, str))
            size += sum(len(v) for _, _, v in self.writes if isinstance(v, str))
            if size > quota:
                self.error = DOMException("QuotaExceededError", "The quota has been exceeded.")
                fire(self, "onabort")
                return
        for store, key, value in self.writes:
            target = next(s for s in stores.values() if s is store) if not isinstance(store, str) else stores[store]
            if value is _DELETE:
                target.pop(key, None)
            else:
                target[key] = value
        fire(self, "oncomplete")

    def abort(self) -> None:
        if not self.finished:
            self.finished = True
            fire(self, "onabort")


_DELETE = object()


class ObjectStore:
    def __init__(self, tx: Transaction, data: dict) -> None:
        self.tx = tx
        self.data = data

    def _request(self, result: Any) -> Request:
        request = Request()
        request.result = result
        return request

    def get(self, key: str) -> Request:
        return self._request(self.data.get(key))

    def getAll(self) -> Request:
        return self._request(list(self.data.values()))

    def getAllKeys(self) -> Request:
        return self._request(list(self.data))

    def put(self, value: Any, key: str) -> Request:
        assert self.tx.mode == "readwrite"
        self.tx.writes.append((self.data, key, value))  # type: ignore[arg-type]
        return self._request(key)

    def delete(self, key: str) -> Request:
        self.tx.writes.append((self.data, key, _DELETE))  # type: ignore[arg-type]
        return self._request(None)


def entry(text: str) -> Entry:
    return Entry(cache_key(text, "o200k_base", "c"), text, 3, "o200k_base", "c",
                 {"level": "off", "passes": [], "chars_before": 1, "chars_after": 1}, text_digest(text), 1.0)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ---- the store as a store -------------------------------------------------------------------


def test_round_trip_and_persistence_across_connections() -> None:
    async def main() -> None:
        idb = FakeIndexedDB()
        store = IndexedDBStore(idb)
        await store.put("k", "record", Meta("k", 6, 2.0, 1.0))
        await store.put_state("client_id", "abc")
        assert await store.get("k") == "record" and await store.get("nope") is None
        assert await store.index() == [Meta("k", 6, 2.0, 1.0)]
        await store.touch(Meta("k", 6, 3.0, 1.0))
        store.close()
        again = IndexedDBStore(idb)
        assert await again.index() == [Meta("k", 6, 3.0, 1.0)] and await again.get_state("client_id") == "abc"
        await again.delete(["k"])
        assert await again.get("k") is None and await again.index() == []
        assert idb.opens == 2

    run(main())


def test_the_cache_over_indexeddb() -> None:
    async def main() -> None:
        cache = Cache(IndexedDBStore(FakeIndexedDB()))
        e = entry("system prompt")
        await cache.put(e)
        assert await cache.get(e.key) == e and cache.backend == "indexeddb"
        await cache.settle()

    run(main())


# ---- failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["throw", "event"])
def test_open_failure_is_unavailable_and_the_cache_falls_back(how: str) -> None:
    async def main() -> None:
        idb = FakeIndexedDB()
        if how == "throw":
            idb.throw_on_open = DOMException("SecurityError", "access denied")
        else:
            idb.fail_open = DOMException("InvalidStateError", "A mutation operation was attempted on a database that did not allow mutations.")
        with pytest.raises(CacheUnavailable):
            await IndexedDBStore(idb).get("k")
        notices: list[CacheDegraded] = []
        cache = Cache(IndexedDBStore(idb), on_notice=notices.append)
        e = entry("prompt")
        await cache.put(e)
        assert await cache.get(e.key) == e and cache.backend == "memory"
        assert [n.reason for n in notices] == ["cache_unavailable"]

    run(main())


def test_quota_exceeded_on_write() -> None:
    async def main() -> None:
        idb = FakeIndexedDB()
        idb.quota = 10
        with pytest.raises(CacheQuotaExceeded):
            await IndexedDBStore(idb).put("k", "a record longer than ten", Meta("k", 24, 1.0, 1.0))
        notices: list[CacheDegraded] = []
        cache = Cache(IndexedDBStore(idb), on_notice=notices.append)
        await cache.put(entry("prompt"))
        assert cache.degraded == "cache_quota_exceeded" and len(notices) == 1

    run(main())


@pytest.mark.parametrize("lost", [1, 2], ids=["once-reopened", "again-after-reopening-gives-up"])
def test_a_lost_connection_is_reopened_once_and_no_more(lost: int) -> None:
    async def main() -> None:
        idb = FakeIndexedDB()
        store = IndexedDBStore(idb)
        await store.put("k", "v", Meta("k", 1, 1.0, 1.0))
        idb.break_transactions = lost  # backgrounded: the UA closed the connection
        if lost == 1:
            assert await store.get("k") == "v"
        else:
            with pytest.raises(CacheConnectionLost):
                await store.get("k")
        assert idb.opens == 2  # reopened once, no more

    run(main())


def test_a_close_event_makes_the_next_operation_reopen() -> None:
    async def main() -> None:
        idb = FakeIndexedDB()
        store = IndexedDBStore(idb)
        await store.get("k")
        [connection] = idb.connections
        connection.close()
        fire(connection, "onclose")  # closed abnormally by the UA
        assert store.closed_because == "close"
        assert await store.get("k") is None and idb.opens == 2

    run(main())


def test_versionchange_closes_our_connection_so_the_other_tab_is_not_blocked() -> None:
    async def main() -> None:
        idb = FakeIndexedDB()
        store = IndexedDBStore(idb)
        await store.put("k", "v", Meta("k", 1, 1.0, 1.0))
        other = idb.open("firsttoken-cache", 2)  # a newer page in another tab
        outcome: list[str] = []
        other.onblocked = lambda e: outcome.append("blocked")
        other.onsuccess = lambda e: outcome.append("success")
        other.onupgradeneeded = lambda e: None
        while not outcome:
            await asyncio.sleep(0)
        assert outcome == ["success"] and store.closed_because == "versionchange"
        with pytest.raises(CacheVersionConflict):  # our version is older now
            await store.get("k")
        notices: list[CacheDegraded] = []
        cache = Cache(IndexedDBStore(idb), on_notice=notices.append)
        assert await cache.get("k") is None and notices[0].reason == "cache_version_conflict"

    run(main())


def test_a_blocked_upgrade_times_out_instead_of_hanging() -> None:
    async def main() -> None:
        idb = FakeIndexedDB()
        ours = IndexedDBStore(idb)
        await ours.get("k")  # creates version 1
        ours.close()
        # An old page in another tab holds version 1 and ignores versionchange (no
        # handler): our upgrade to version 2 is blocked.
        request = idb.open("firsttoken-cache", 1)
        while request.result is None:
            await asyncio.sleep(0)
        old_tab = request.result
        newer = IndexedDBStore(idb, version=2, open_timeout_s=0.05)
        with pytest.raises(CacheVersionConflict, match="blocked"):
            await newer.get("k")
        # When the old tab finally closes, the upgrade completes, and the connection
        # nobody waits for any more is closed rather than leaked.
        old_tab.close()
        while len(idb.connections) < 3:
            await asyncio.sleep(0)
        assert idb.connections[-1].closed and idb.databases["firsttoken-cache"]["version"] == 2

    run(main())


def test_a_database_without_our_stores_is_unavailable() -> None:
    async def main() -> None:
        idb = FakeIndexedDB()
        idb.databases["firsttoken-cache"] = {"version": 1, "stores": {}}
        with pytest.raises(CacheUnavailable, match="object stores"):
            await IndexedDBStore(idb).get("k")

    run(main())


def test_a_transaction_that_never_finishes_times_out() -> None:
    async def main() -> None:
        idb = FakeIndexedDB()
        idb.hang_transactions = True
        with pytest.raises(CacheTimeout):
            await IndexedDBStore(idb, op_timeout_s=0.05).put("k", "v", Meta("k", 1, 1.0, 1.0))

    run(main())


@pytest.mark.parametrize(
    "name, opening, expected",
    [
        ("QuotaExceededError", False, CacheQuotaExceeded),
        ("VersionError", True, CacheVersionConflict),
        ("InvalidStateError", True, CacheUnavailable),
        ("InvalidStateError", False, CacheConnectionLost),
        ("UnknownError", False, CacheConnectionLost),
        ("UnknownError", True, CacheUnavailable),
        ("AbortError", False, CacheConnectionLost),
        ("SecurityError", True, CacheUnavailable),
        ("DataCloneError", False, CacheUnavailable),
    ],
)
def test_dom_exceptions_are_translated_in_one_place(name: str, opening: bool, expected: type) -> None:
    error = translate_error(DOMException(name, "why"), opening=opening)
    assert type(error) is expected and name in error.message
    # JsException's text form when it has no .name: "Name: message".
    assert type(translate_error(RuntimeError(f"{name}: why"), opening=opening)) is expected
    assert isinstance(translate_error(None), CacheConnectionLost)  # an abort without an error
