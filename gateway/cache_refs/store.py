"""The store of cache references' texts: per client, bounded, least recently used first
out; in this process's memory (`RefStore`) or in Redis for every gateway process
(`SharedRefStore`). What the texts are and where references stand: the package's
docstring and `sites`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from ..shared import SharedState, SharedStateDown

__all__ = ["Entry", "RefLimits", "RefStore", "RefStores", "SharedRefStore", "entry_of"]


@dataclass(frozen=True, slots=True)
class RefLimits:
    """Bounds of the store: per client (entries, bytes), clients, and in all (bytes).

    Bytes are real memory, not text length: each entry is charged its UTF-8 text plus
    `entry_overhead` (the dict slots, digest string, tuple key and bytes object that hold
    it: ~440 bytes measured with tracemalloc on CPython 3.11, rounded up), and each client
    `client_overhead` (its own ordered dict). So 96k one-byte texts cost what they weigh
    (~45 MB), not 96 KB. In Redis (`SharedRefStore`) the same limits apply per client;
    the total is Redis's `maxmemory` (every key has a TTL, so a `volatile-*` eviction
    policy reclaims whole clients)."""

    entries_per_client: int = 32
    bytes_per_client: int = 2 * 1024 * 1024
    total_bytes: int = 64 * 1024 * 1024
    max_clients: int = 20_000
    entry_overhead: int = 480
    client_overhead: int = 1_200
    #: How long a client's references live in Redis after their last use.
    ttl_s: float = 24 * 3600.0


class RefStore:
    """Texts by (client key, sha256), least recently used first out, in this process."""

    def __init__(self, limits: RefLimits = RefLimits()) -> None:
        self.limits = limits
        # Two orders of the same entries: each client's own (for its share and the
        # client bound) and the whole store's (for the total). Texts are kept as UTF-8
        # bytes: a str holding one non-Latin-1 character takes 2 or 4 bytes per
        # character, so its UTF-8 length would not bound it.
        self._clients: OrderedDict[str, OrderedDict[str, bytes]] = OrderedDict()
        self._client_bytes: dict[str, int] = {}
        self._all: OrderedDict[tuple[str, str], int] = OrderedDict()
        self.total_bytes = 0

    def __len__(self) -> int:
        return len(self._all)

    @property
    def clients(self) -> int:
        return len(self._clients)

    def get(self, client: str, digest: str) -> str | None:
        texts = self._clients.get(client)
        data = texts.get(digest) if texts else None
        if data is None:
            return None
        texts.move_to_end(digest)  # type: ignore[union-attr]
        self._clients.move_to_end(client)
        self._all.move_to_end((client, digest))
        return data.decode("utf-8")

    def put(self, client: str, text: str) -> str | None:
        """Store `text` for `client`; returns its digest, or None if it cannot be kept
        (not valid UTF-8, or larger than a client's whole share)."""
        entry = entry_of(text)
        if entry is None or not self.keep(client, *entry):
            return None
        return entry[0]

    def keep(self, client: str, digest: str, data: bytes) -> bool:
        """Store `data` (UTF-8 text whose SHA-256 is `digest`) for `client`; False when
        it is larger than a client's whole share."""
        limits = self.limits
        size = len(data) + limits.entry_overhead
        if size + limits.client_overhead > min(limits.bytes_per_client, limits.total_bytes):
            return False
        if self.get(client, digest) is not None:
            return True
        texts = self._clients.get(client)
        if texts is None:
            while len(self._clients) >= max(1, limits.max_clients):
                self._drop_client(next(iter(self._clients)))
            texts = self._clients[client] = OrderedDict()
            self._client_bytes[client] = limits.client_overhead
            self.total_bytes += limits.client_overhead
        texts[digest] = data
        self._client_bytes[client] += size
        self._all[(client, digest)] = size
        self.total_bytes += size
        while len(texts) > limits.entries_per_client or self._client_bytes[client] > limits.bytes_per_client:
            self._remove(client, next(iter(texts)))
        while self.total_bytes > limits.total_bytes and self._all:
            self._remove(*next(iter(self._all)))
        return True

    # The face the request path uses, the same as `SharedRefStore`'s. Called on the
    # event loop only (dictionary work; the hashing was done off it), so no lock.

    async def get_many(self, client: str, digests: list[str]) -> dict[str, str]:
        return {d: text for d in digests if (text := self.get(client, d)) is not None}

    async def remember(self, client: str, entries: list[Entry]) -> None:
        for digest, data in entries:
            self.keep(client, digest, data)

    def _drop_client(self, client: str) -> None:
        for digest in list(self._clients[client]):
            self._remove(client, digest)

    def _remove(self, client: str, digest: str) -> None:
        size = self._all.pop((client, digest))
        texts = self._clients[client]
        del texts[digest]
        self.total_bytes -= size
        self._client_bytes[client] -= size
        if not texts:
            del self._clients[client]
            self.total_bytes -= self._client_bytes.pop(client)


#: A system text ready to store: its SHA-256 (hex) and its UTF-8 bytes.
Entry = tuple[str, bytes]


def entry_of(text: str) -> Entry | None:
    """`text` as an `Entry`, or None when it is not valid UTF-8 (a lone surrogate)."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return hashlib.sha256(data).hexdigest(), data


class RefStores(Protocol):
    """What the request path asks of a store, in memory or in Redis."""

    async def get_many(self, client: str, digests: list[str]) -> dict[str, str]: ...

    async def remember(self, client: str, entries: list[Entry]) -> None: ...


# ---- shared through Redis ----------------------------------------------------------------

# One hash per client: field "d:<digest>" holds a text, field "m" the client's entries as
# a JSON list [[digest, bytes], ...], least recently used first. Each script reads and
# writes one key atomically, and the key's TTL is renewed on every use, so a client's
# references live `ttl_s` after their last use and Redis (with a `volatile-*`
# maxmemory-policy) can evict whole idle clients first when memory runs short.
_PUT_LUA = """
local digest, text = ARGV[1], ARGV[2]
local max_entries, max_bytes, ttl = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local overhead = tonumber(ARGV[6])
local meta = cjson.decode(redis.call('HGET', KEYS[1], 'm') or '[]')
local kept, bytes = {}, 0
for _, e in ipairs(meta) do
  if e[1] ~= digest then kept[#kept + 1] = e; bytes = bytes + e[2] end
end
kept[#kept + 1] = {digest, #text + overhead}
bytes = bytes + #text + overhead
redis.call('HSET', KEYS[1], 'd:' .. digest, text)
while #kept > max_entries or bytes > max_bytes do
  local e = table.remove(kept, 1)
  bytes = bytes - e[2]
  redis.call('HDEL', KEYS[1], 'd:' .. e[1])
end
if #kept == 0 then redis.call('DEL', KEYS[1]) return 0 end
redis.call('HSET', KEYS[1], 'm', cjson.encode(kept))
redis.call('PEXPIRE', KEYS[1], ttl)
return #kept
"""

_GET_LUA = """
local ttl = tonumber(ARGV[1])
local texts, used = {}, {}
for i = 2, #ARGV do
  local text = redis.call('HGET', KEYS[1], 'd:' .. ARGV[i])
  texts[#texts + 1] = text
  if text then used[ARGV[i]] = true end
end
if next(used) ~= nil then
  local meta = cjson.decode(redis.call('HGET', KEYS[1], 'm') or '[]')
  local order, last = {}, {}
  for _, e in ipairs(meta) do
    if used[e[1]] then last[#last + 1] = e else order[#order + 1] = e end
  end
  for _, e in ipairs(last) do order[#order + 1] = e end
  redis.call('HSET', KEYS[1], 'm', cjson.encode(order))
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return texts
"""


class SharedRefStore:
    """The references in Redis, so a client's references resolve on whichever gateway
    process answers. Redis down: a reference reads as unknown (409, and the client
    sends the text again) and nothing is stored; no request fails because of it."""

    def __init__(self, shared: SharedState, limits: RefLimits = RefLimits(), *, prefix: str = "ft:refs:") -> None:
        self.shared = shared
        self.limits = limits
        self.prefix = prefix
        shared.script("refs_put", _PUT_LUA)
        shared.script("refs_get", _GET_LUA)

    def _ttl_ms(self) -> int:
        return max(1, int(self.limits.ttl_s * 1000))

    async def get_many(self, client: str, digests: list[str]) -> dict[str, str]:
        if not digests:
            return {}
        try:
            texts = await self.shared.run("refs_get", [self.prefix + client], [self._ttl_ms(), *digests])
        except SharedStateDown:
            return {}
        found = {}
        for digest, text in zip(digests, texts):
            if text:
                try:
                    found[digest] = text.decode("utf-8")
                except UnicodeDecodeError:
                    continue
        return found

    async def remember(self, client: str, entries: list[Entry]) -> None:
        limits = self.limits
        for digest, data in entries:
            if len(data) + limits.entry_overhead > limits.bytes_per_client:
                continue
            args = [digest, data, limits.entries_per_client, limits.bytes_per_client, self._ttl_ms(), limits.entry_overhead]
            try:
                await self.shared.run("refs_put", [self.prefix + client], args)
            except SharedStateDown:
                return
