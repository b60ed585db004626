"""A `firsttoken.cache.Store` in an SQLite file: a second, persistent store the cache's
tests run against besides memory and IndexedDB (it is test code, so it stays out of
the page's package and snapshot).

Calls run on the caller's thread: each is one small statement on a local file, shorter
than the hop to a thread pool would be.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from firsttoken.cache import Meta
from firsttoken.errors import CacheUnavailable

__all__ = ["SqliteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    key TEXT PRIMARY KEY, record TEXT NOT NULL,
    size INTEGER NOT NULL, used_at REAL NOT NULL, created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS state (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class SqliteStore:
    kind = "sqlite"

    def __init__(self, path: str | Path) -> None:
        import sqlite3

        self._errors = (sqlite3.Error,)
        try:
            self._db = sqlite3.connect(str(path), isolation_level=None)
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise CacheUnavailable(f"sqlite: {exc}") from None

    def _run(self, sql: str, *args: object) -> list[tuple]:
        try:
            return self._db.execute(sql, args).fetchall()
        except self._errors as exc:
            raise CacheUnavailable(f"sqlite: {exc}") from None

    async def get(self, key: str) -> str | None:
        rows = self._run("SELECT record FROM entries WHERE key = ?", key)
        return rows[0][0] if rows else None

    async def put(self, key: str, record: str, meta: Meta) -> None:
        self._run("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?)", key, record, meta.size, meta.used_at, meta.created_at)

    async def touch(self, meta: Meta) -> None:
        self._run("UPDATE entries SET used_at = ? WHERE key = ?", meta.used_at, meta.key)

    async def delete(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._run("DELETE FROM entries WHERE key = ?", key)

    async def index(self) -> list[Meta]:
        return [Meta(*row) for row in self._run("SELECT key, size, used_at, created_at FROM entries")]

    async def get_state(self, name: str) -> str | None:
        rows = self._run("SELECT value FROM state WHERE name = ?", name)
        return rows[0][0] if rows else None

    async def put_state(self, name: str, value: str) -> None:
        self._run("INSERT OR REPLACE INTO state VALUES (?, ?)", name, value)

    def close(self) -> None:
        self._db.close()
