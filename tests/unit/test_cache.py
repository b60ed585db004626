"""firsttoken.cache: keys, the verified entry format, LRU planning, and `Cache` over
memory and SQLite stores, including its fallback to memory when a store fails."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

import firsttoken.cache as cache_module
from tests.sqlite_store import SqliteStore
from firsttoken.cache import (
    Cache,
    MemoryStore,
    Meta,
    cache_key,
    decode_entry,
    encode_entry,
    plan_eviction,
)
from firsttoken.errors import (
    CacheConnectionLost,
    CacheCorrupt,
    CacheError,
    CacheQuotaExceeded,
    CacheTimeout,
    CacheUnavailable,
    CacheVersionConflict,
)
from firsttoken.notices import CacheDegraded
from tests.unit.fakes import BrokenStore, entry

PUBLIC_API = {
    "KEY_SCHEME", "RECORD_MAGIC", "Entry", "Meta", "Store", "MemoryStore", "Cache",
    "cache_key", "text_digest", "encode_entry", "decode_entry", "plan_eviction",
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_public_api() -> None:
    assert set(cache_module.__all__) == PUBLIC_API
    for name in cache_module.__all__:
        assert getattr(cache_module, name) is not None
    for cls in (CacheCorrupt, CacheQuotaExceeded, CacheConnectionLost, CacheTimeout, CacheVersionConflict,
                CacheUnavailable):
        assert issubclass(cls, CacheError) and cls.code.startswith("cache_")


# ---- keys -------------------------------------------------------------------------------


def test_key_depends_on_every_part() -> None:
    base = cache_key("text", "o200k_base", "v/balanced", "")
    assert base == cache_key("text", "o200k_base", "v/balanced", "")
    assert len(base) == 64
    others = {
        cache_key("text ", "o200k_base", "v/balanced", ""),
        cache_key("text", "cl100k_base", "v/balanced", ""),
        cache_key("text", "o200k_base", "v/max", ""),
        cache_key("text", "o200k_base", "v/balanced", base),
    }
    assert base not in others and len(others) == 4


def test_key_encoding_is_unambiguous() -> None:
    # Joining parts with a separator would make these collide; JSON does not.
    assert cache_key("a", "b,c", "d") != cache_key("a,b", "c", "d")
    assert cache_key("\ud800", "e", "c") != cache_key("\ufffd", "e", "c")  # lone surrogates are fine


@given(st.text(), st.text(max_size=20))
def test_key_is_a_function_of_its_inputs(text: str, encoding: str) -> None:
    assert cache_key(text, encoding, "c") == cache_key(str(text), str(encoding), "c")


# ---- entries ------------------------------------------------------------------------------


@given(st.text(), st.integers(min_value=0, max_value=10**7), st.floats(min_value=0, max_value=4e9))
def test_entries_round_trip(text: str, tokens: int, created: float) -> None:
    e = entry(text, tokens=tokens, created=created)
    record = encode_entry(e)
    assert record.isascii()
    assert decode_entry(record, e.key) == e


def test_ref_is_the_sha256_of_the_utf8_text() -> None:
    e = entry("héllo")
    assert e.ref == "sha256:" + hashlib.sha256("héllo".encode()).hexdigest()
    assert entry("\ud800").ref is None  # not valid Unicode: never sent by reference


@settings(max_examples=300)
@given(st.data())
def test_any_changed_character_is_detected(data: st.DataObject) -> None:
    e = entry(data.draw(st.text(min_size=1, max_size=200)))
    record = encode_entry(e)
    i = data.draw(st.integers(0, len(record) - 1))
    replacement = data.draw(st.characters().filter(lambda c: c != record[i]))
    with pytest.raises(CacheCorrupt):
        decode_entry(record[:i] + replacement + record[i + 1 :], e.key)


def test_truncated_and_foreign_records_are_corrupt() -> None:
    e = entry("system prompt " * 20)
    record = encode_entry(e)
    for bad in (record[:-1], record[: len(record) // 2], "", "ft1", 42, None, b"ft1 x\n{}", "{}"):
        with pytest.raises(CacheCorrupt):
            decode_entry(bad, e.key)


def test_a_record_under_another_key_is_corrupt() -> None:
    e = entry("one")
    with pytest.raises(CacheCorrupt, match="another key"):
        decode_entry(encode_entry(e), cache_key("two", "o200k_base", "2+py3.11/balanced"))


def _resealed(payload: dict) -> str:
    # A payload with a valid outer digest: what a bug (not bit rot) could write.
    text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"), sort_keys=True)
    return f"ft1 {hashlib.sha256(text.encode()).hexdigest()}\n{text}"


def test_a_text_that_does_not_match_its_own_digest_is_corrupt() -> None:
    e = entry("the real text")
    payload = json.loads(encode_entry(e).partition("\n")[2])
    payload["text"] = "another text"
    with pytest.raises(CacheCorrupt, match="text does not match"):
        decode_entry(_resealed(payload), e.key)
    payload = json.loads(encode_entry(e).partition("\n")[2])
    payload["tokens"] = True
    with pytest.raises(CacheCorrupt, match="tokens"):
        decode_entry(_resealed(payload), e.key)


# ---- eviction planning -----------------------------------------------------------------------


metas = st.lists(
    st.builds(Meta, st.text(min_size=1, max_size=4), st.integers(0, 100), st.floats(0, 100), st.floats(0, 100)),
    unique_by=lambda m: m.key, max_size=30,
)


@given(metas, st.integers(0, 30), st.integers(0, 1500))
def test_eviction_plan_meets_the_bounds_oldest_first(index: list[Meta], max_entries: int, max_bytes: int) -> None:
    victims = plan_eviction(index, max_entries, max_bytes)
    left = [m for m in index if m.key not in victims]
    assert len(left) <= max_entries and sum(m.size for m in left) <= max_bytes
    # Least recently used go first, and no more than needed.
    order = sorted(index, key=lambda m: (m.used_at, m.created_at, m.key))
    assert victims == [m.key for m in order[: len(victims)]]
    if victims:
        kept = [m for m in order[len(victims) - 1 :]]
        assert len(kept) > max_entries or sum(m.size for m in kept) > max_bytes


def test_the_record_just_written_goes_last() -> None:
    index = [Meta("new", 10, 0.0, 0.0), Meta("old", 10, 5.0, 5.0)]
    assert plan_eviction(index, 1, 100, keep="new") == ["old"]


# ---- the cache over stores ---------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        self.t += 1
        return self.t


def test_put_then_get_and_lru_eviction_by_count_and_size() -> None:
    async def main() -> None:
        store = MemoryStore()
        c = Cache(store, max_entries=2, max_bytes=10_000, clock=Clock(), hot_entries=0)
        a, b, d = entry("a" * 100), entry("b" * 100), entry("d" * 100)
        await c.put(a)
        await c.put(b)
        assert await c.get(a.key) == a  # a is now the most recently used
        await c.settle()
        await c.put(d)
        assert set(store.records) == {a.key, d.key} and c.stats["evicted"] == 1
        small = Cache(MemoryStore(), max_entries=10, max_bytes=len(encode_entry(a)) * 2, clock=Clock(), hot_entries=0)
        for e in (a, b, d):
            await small.put(e)
        assert await small.get(a.key) is None and await small.get(d.key) == d

    run(main())


def test_recent_entries_are_served_from_memory_and_still_marked_used() -> None:
    async def main() -> None:
        store = MemoryStore()
        c = Cache(store, hot_entries=1, clock=Clock())
        a, b = entry("a" * 50), entry("b" * 50)
        await c.put(a)
        assert await c.get(a.key) == a and c.last_source == "memory"
        await c.settle()
        used = store.metas[a.key].used_at
        await c.get(a.key)
        await c.settle()
        assert store.metas[a.key].used_at > used  # the store's LRU still sees the use
        await c.put(b)  # the memory tier holds one: a falls out of it, not out of the store
        assert await c.get(a.key) == a and c.last_source == "store"
        # A new session (a reload) starts with an empty memory tier.
        fresh = Cache(store)
        assert await fresh.get(b.key) == b and fresh.last_source == "store"
        assert await fresh.get(b.key) == b and fresh.last_source == "memory"

    run(main())


def test_an_entry_larger_than_the_cache_is_not_stored() -> None:
    async def main() -> None:
        c = Cache(MemoryStore(), max_bytes=100)
        await c.put(entry("x" * 500))
        assert c.stats["writes"] == 0

    run(main())


def test_a_corrupt_record_is_a_miss_and_is_deleted() -> None:
    async def main() -> None:
        store = MemoryStore()
        c = Cache(store, hot_entries=0)
        e = entry("you are a pirate")
        await c.put(e)
        store.records[e.key] = store.records[e.key].replace("pirate", "parrot")
        assert await c.get(e.key) is None
        await c.settle()
        assert e.key not in store.records and c.stats["corrupt"] == 1 and c.degraded is None

    run(main())


@pytest.mark.parametrize("error", [CacheQuotaExceeded("full"), CacheConnectionLost("gone"), RuntimeError("a bug")])
def test_a_failing_store_falls_back_to_memory_once_with_a_notice(error: Exception) -> None:
    async def main() -> None:
        notices: list[CacheDegraded] = []
        store = BrokenStore(error, {"put"})
        c = Cache(store, on_notice=notices.append)
        e = entry("prompt")
        await c.put(e)  # fails on the store, lands in memory
        assert c.backend == "memory" and store.closed
        assert await c.get(e.key) == e
        await c.put(entry("another"))
        assert len(notices) == 1 and notices[0].code == "cache_degraded" and notices[0].store == "memory"
        expected = error.code if isinstance(error, CacheError) else "cache_unavailable"
        assert c.degraded == notices[0].reason == expected

    run(main())


def test_a_hanging_store_times_out_instead_of_blocking() -> None:
    class Hanging(MemoryStore):
        kind = "hanging"

        async def get(self, key: str) -> str | None:
            await asyncio.Event().wait()
            return None

    async def main() -> None:
        notices: list[CacheDegraded] = []
        c = Cache(Hanging(), timeout_s=0.05, on_notice=notices.append)
        assert await c.get("k") is None
        assert c.degraded == "cache_timeout" and notices[0].reason == "cache_timeout"

    run(main())


def test_settle_does_not_depend_on_done_callbacks() -> None:
    # Found in Chromium: a write finished, its done-callback not run yet, and awaiting a
    # finished future did not yield to Pyodide's loop, so settle() spun for ever.
    async def main() -> None:
        c = Cache()
        finished = asyncio.get_running_loop().create_future()
        finished.set_result(None)
        c._tasks.add(finished)
        c.spawn(asyncio.sleep(0.01))
        await asyncio.wait_for(c.settle(), 1)
        assert not c._tasks

    run(main())


def test_client_id_is_made_once_and_kept_in_the_store() -> None:
    async def main() -> None:
        store = MemoryStore()
        first = await Cache(store).client_id()
        assert 16 <= len(first) <= 128 and first == await Cache(store).client_id()
        assert first != await Cache(MemoryStore()).client_id()

    run(main())


def test_sqlite_store_persists_across_instances(tmp_path) -> None:
    path = tmp_path / "cache.sqlite"

    async def main() -> None:
        c = Cache(SqliteStore(path), max_entries=2)
        a, b, d = entry("a" * 300), entry("b" * 300), entry("d" * 300)
        for e in (a, b):
            await c.put(e)
        client = await c.client_id()
        c.close()
        again = Cache(SqliteStore(path), max_entries=2)
        assert again.backend == "sqlite"
        assert await again.get(a.key) == a and await again.client_id() == client
        await again.settle()
        await again.put(d)  # b is the least recently used now
        assert await again.get(b.key) is None and await again.get(d.key) == d
        again.close()

    run(main())
