"""`firsttoken.cache` in IndexedDB, from the page's worker (Pyodide).

The one module that touches IndexedDB. It imports on CPython: `IndexedDBStore` takes the
IDBFactory as an argument (`js.indexedDB` in the page), and everything Pyodide-specific
(proxies for callbacks, conversions, `JsException`) sits behind four small helpers, so
the state machine below is tested on CPython with a fake IndexedDB
(tests/unit/test_cache_indexeddb.py) and in Chromium with real faults
(tests/e2e/test_cache_page.py).

Schema (version `DB_VERSION` of database `DB_NAME`): object stores ``entries`` (key →
record text), ``meta`` (key → [size, used_at, created_at], what eviction reads without
loading records) and ``state`` (name → text: the client id).

How it fails (W3C Indexed Database API 3.0; names of DOMExceptions in
`translate_error`, the one place they become `CacheError`s):

* Opening can fail outright (a private window: Firefox answers InvalidStateError,
  others SecurityError or UnknownError) → `CacheUnavailable`.
* A write past the origin's quota aborts its transaction with QuotaExceededError
  (§ "abort a transaction" with that error) → `CacheQuotaExceeded`.
* The connection can be closed under us: WebKit drops it when an app is backgrounded
  (pending transactions fail with UnknownError, new ones throw InvalidStateError), and
  the UA fires ``close`` at a connection it closed abnormally (§ "close a database
  connection", forced flag). We reopen once; if the operation fails again, the error
  goes up as `CacheConnectionLost`.
* Another tab opens a newer version: our connection gets ``versionchange`` and we close
  it at once, as the spec asks of well-behaved connections, so that tab's upgrade is not
  blocked by us. Reopening at our version then fails with VersionError →
  `CacheVersionConflict`. If instead *our* open is the upgrade and an old connection in
  another tab never closes, the request fires ``blocked`` and waits without end; we give
  up after `open_timeout_s` (→ `CacheVersionConflict`), and close the connection if it
  arrives later.

Transactions commit when no request is pending at the end of a task, and Python
continues an awaiting coroutine in a later task. So each operation issues all its
requests synchronously inside one transaction, and awaits only its completion.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Sequence

from .. import IN_PYODIDE
from ..cache import Meta
from ..errors import (
    CacheConnectionLost,
    CacheError,
    CacheQuotaExceeded,
    CacheTimeout,
    CacheUnavailable,
    CacheVersionConflict,
)

__all__ = ["DB_NAME", "DB_VERSION", "STORES", "IndexedDBStore", "translate_error"]

if IN_PYODIDE:  # pragma: no cover - exercised in Chromium (tests/e2e/test_cache_page.py)
    import js
    from pyodide.ffi import JsException, create_proxy, to_js

DB_NAME = "firsttoken-cache"
DB_VERSION = 1
STORES = ("entries", "meta", "state")


# ---- the Pyodide boundary (identity on CPython, where tests pass Python fakes) -----------


def _callback(fn: Callable[..., Any], keep: list[Any]) -> Any:
    """A function JavaScript can call; `keep` collects it for `_release`."""
    proxy = create_proxy(fn) if IN_PYODIDE else fn
    keep.append(proxy)
    return proxy


def _release(keep: list[Any]) -> None:
    if IN_PYODIDE:  # pragma: no cover
        for proxy in keep:
            proxy.destroy()
    keep.clear()


def _js(value: Any) -> Any:
    return to_js(value) if IN_PYODIDE else value


def _py(value: Any) -> Any:
    if value is None or type(value).__name__ in ("JsNull", "JsUndefined"):
        return None
    return value.to_py() if hasattr(value, "to_py") else value


def _error_name(error: Any) -> tuple[str, str]:
    """(name, message) of a DOMException, a `JsException` wrapping one, or a fake."""
    name = getattr(error, "name", None)
    message = getattr(error, "message", None)
    if not isinstance(name, str):
        text = str(error)
        name, _, rest = text.partition(":")
        name, message = (name.strip(), rest.strip()) if rest else ("Error", text)
    return name, str(message or "")


def translate_error(error: Any, *, opening: bool = False) -> CacheError:
    """The `CacheError` for an IndexedDB DOMException (by its name), in one place.

    During open, InvalidStateError and UnknownError mean storage is unavailable (private
    windows); afterwards they mean the connection is gone.
    """
    if isinstance(error, CacheError):
        return error
    name, message = _error_name(error) if error is not None else ("AbortError", "transaction aborted")
    text = f"IndexedDB {name}: {message}".rstrip(": ")
    if name == "QuotaExceededError":
        return CacheQuotaExceeded(text)
    if name == "VersionError":
        return CacheVersionConflict(text)
    if name in ("InvalidStateError", "UnknownError", "AbortError", "TransactionInactiveError"):
        return CacheUnavailable(text) if opening else CacheConnectionLost(text)
    return CacheUnavailable(text)


def _raised(exc: BaseException) -> bool:
    """Whether `exc` came from JavaScript (or is a DOMException-like fake in tests)."""
    if IN_PYODIDE and isinstance(exc, JsException):  # pragma: no cover
        return True
    return isinstance(getattr(exc, "name", None), str)


# ---- the store -------------------------------------------------------------------------------


class IndexedDBStore:
    """A `firsttoken.cache.Store` in IndexedDB. `factory` is an IDBFactory (`js.indexedDB`)."""

    kind = "indexeddb"

    def __init__(
        self,
        factory: Any = None,
        *,
        name: str = DB_NAME,
        version: int = DB_VERSION,
        open_timeout_s: float = 3.0,
        op_timeout_s: float = 3.0,
    ) -> None:
        self._factory = factory
        self.name = name
        self.version = version
        self.open_timeout_s = open_timeout_s
        self.op_timeout_s = op_timeout_s
        self._db: Any = None
        self._opening: asyncio.Future[Any] | None = None
        self._handlers: list[Any] = []  # the connection's own event handlers
        #: Why the last connection ended ("versionchange", "close"), for tests and notices.
        self.closed_because: str | None = None

    # -- connection --

    async def _connection(self) -> Any:
        if self._db is not None:
            return self._db
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._open())
        opening = self._opening
        try:
            return await asyncio.shield(opening)
        finally:
            if opening.done() and self._opening is opening:
                self._opening = None

    async def _open(self) -> Any:
        factory = self._factory if self._factory is not None else js.indexedDB
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Any] = loop.create_future()
        keep: list[Any] = []
        state = {"blocked": False, "abandoned": False}
        try:
            request = factory.open(self.name, self.version)
        except Exception as exc:  # noqa: BLE001 - e.g. SecurityError, thrown at once
            if _raised(exc):
                raise translate_error(exc, opening=True) from None
            raise

        def upgrade(event: Any) -> None:
            db = request.result
            names = db.objectStoreNames
            for store in STORES:
                if not names.contains(store):
                    db.createObjectStore(store)

        def success(event: Any) -> None:
            db = request.result
            if state["abandoned"] or done.done():
                db.close()  # we gave up waiting (blocked): nobody will use it
                return
            done.set_result(db)

        def error(event: Any) -> None:
            if hasattr(event, "preventDefault"):
                event.preventDefault()  # handled: not an uncaught error in the console
            if not done.done():
                done.set_exception(translate_error(request.error, opening=True))

        def blocked(event: Any) -> None:
            state["blocked"] = True

        request.onupgradeneeded = _callback(upgrade, keep)
        request.onsuccess = _callback(success, keep)
        request.onerror = _callback(error, keep)
        request.onblocked = _callback(blocked, keep)
        try:
            db = await asyncio.wait_for(asyncio.shield(done), self.open_timeout_s)
        except (TimeoutError, asyncio.TimeoutError):
            state["abandoned"] = True
            # Keep the success handler alive: it closes a connection that arrives late.
            if state["blocked"]:
                raise CacheVersionConflict(
                    f"IndexedDB open was blocked for {self.open_timeout_s:g} s by a connection in another tab"
                ) from None
            raise CacheTimeout(f"IndexedDB did not open in {self.open_timeout_s:g} s") from None
        _release(keep)
        names = db.objectStoreNames
        if not all(names.contains(store) for store in STORES):
            db.close()
            raise CacheUnavailable(f"IndexedDB {self.name!r} v{self.version} lacks our object stores")
        self._attach(db)
        return db

    def _attach(self, db: Any) -> None:
        _release(self._handlers)

        def versionchange(event: Any) -> None:
            # Another tab wants a newer version (or to delete the database): step aside.
            self.closed_because = "versionchange"
            self._drop(db)

        def closed(event: Any) -> None:
            self.closed_because = "close"
            self._drop(db)

        db.onversionchange = _callback(versionchange, self._handlers)
        db.onclose = _callback(closed, self._handlers)
        self._db = db
        self.closed_because = None

    def _drop(self, db: Any) -> None:
        try:
            db.close()
        except Exception:  # noqa: BLE001 - already closed
            pass
        if self._db is db:
            self._db = None

    # -- transactions --

    async def _transact(self, stores: Sequence[str], mode: str, issue: Callable[[Any], list[Any]]) -> list[Any]:
        """Run one transaction: `issue(tx)` makes every request synchronously; returns
        their results once the transaction completed. Reopens once if the connection
        turns out to be gone."""
        for attempt in (1, 2):
            db = await self._connection()
            try:
                return await self._once(db, stores, mode, issue)
            except CacheConnectionLost:
                self._drop(db)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _once(self, db: Any, stores: Sequence[str], mode: str, issue: Callable[[Any], list[Any]]) -> list[Any]:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        keep: list[Any] = []
        try:
            try:
                tx = db.transaction(_js(list(stores)), mode)
                requests = issue(tx)
            except Exception as exc:  # noqa: BLE001 - InvalidStateError: connection closing
                if _raised(exc):
                    raise translate_error(exc) from None
                raise

            def complete(event: Any) -> None:
                if not done.done():
                    done.set_result(None)

            def aborted(event: Any) -> None:
                if not done.done():
                    done.set_exception(translate_error(tx.error))

            def failed(event: Any) -> None:
                # A request's error event bubbles to the transaction; the abort follows
                # and carries the reason. Handled, so the console stays quiet.
                if hasattr(event, "preventDefault"):
                    event.preventDefault()

            tx.oncomplete = _callback(complete, keep)
            tx.onabort = _callback(aborted, keep)
            tx.onerror = _callback(failed, keep)
            try:
                await asyncio.wait_for(asyncio.shield(done), self.op_timeout_s)
            except (TimeoutError, asyncio.TimeoutError):
                try:
                    tx.abort()
                except Exception:  # noqa: BLE001 - it may have finished meanwhile
                    pass
                raise CacheTimeout(f"an IndexedDB transaction did not finish in {self.op_timeout_s:g} s") from None
            return [_py(r.result) for r in requests]
        finally:
            _release(keep)

    # -- the Store interface --

    async def get(self, key: str) -> str | None:
        [record] = await self._transact(["entries"], "readonly", lambda tx: [tx.objectStore("entries").get(key)])
        return record if isinstance(record, str) else None

    async def put(self, key: str, record: str, meta: Meta) -> None:
        def issue(tx: Any) -> list[Any]:
            tx.objectStore("entries").put(record, key)
            tx.objectStore("meta").put(_js([meta.size, meta.used_at, meta.created_at]), key)
            return []

        await self._transact(["entries", "meta"], "readwrite", issue)

    async def touch(self, meta: Meta) -> None:
        def issue(tx: Any) -> list[Any]:
            tx.objectStore("meta").put(_js([meta.size, meta.used_at, meta.created_at]), meta.key)
            return []

        await self._transact(["meta"], "readwrite", issue)

    async def delete(self, keys: Sequence[str]) -> None:
        def issue(tx: Any) -> list[Any]:
            for key in keys:
                tx.objectStore("entries").delete(key)
                tx.objectStore("meta").delete(key)
            return []

        await self._transact(["entries", "meta"], "readwrite", issue)

    async def index(self) -> list[Meta]:
        def issue(tx: Any) -> list[Any]:
            store = tx.objectStore("meta")
            return [store.getAllKeys(), store.getAll()]

        keys, values = await self._transact(["meta"], "readonly", issue)
        out = []
        for key, value in zip(keys or [], values or []):
            if isinstance(key, str) and isinstance(value, (list, tuple)) and len(value) == 3:
                out.append(Meta(key, int(value[0]), float(value[1]), float(value[2])))
        return out

    async def get_state(self, name: str) -> str | None:
        [value] = await self._transact(["state"], "readonly", lambda tx: [tx.objectStore("state").get(name)])
        return value if isinstance(value, str) else None

    async def put_state(self, name: str, value: str) -> None:
        def issue(tx: Any) -> list[Any]:
            tx.objectStore("state").put(value, name)
            return []

        await self._transact(["state"], "readwrite", issue)

    def close(self) -> None:
        if self._db is not None:
            self._drop(self._db)
        _release(self._handlers)
