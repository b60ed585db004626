"""Cache references: system messages a client sends once and then names by hash.

The extension (bridge/PROTOCOL.md, "Cache references"):

* Every response under /v1/ carries ``x-firsttoken-gateway: cache-refs=1``
  (`AdvertiseRefs`), which is how a client tells this gateway from any other
  OpenAI-compatible server.
* A client identifies itself with ``x-firsttoken-client: <random id>``. From such a
  client, every system text that arrives in full is stored (`RefStore`), keyed by
  SHA-256 of its UTF-8 text.
* Such a client may then send ``{"role": "system", "x_firsttoken_ref": "sha256:<hex>"}``
  (no content) instead of the text. `expand_refs` replaces it with the stored text
  before the request is validated or forwarded (gateway/chat_body.py runs it, once per
  request), so neither the validation nor an upstream ever sees the extension. A
  reference the store does not hold is answered 409 with code ``cache_ref_unknown``;
  the client then sends the text again, in full.

Where a system text, and so a reference, may stand depends on the dialect (a `Site`
each, listed by `chat_sites`, `responses_sites`, `messages_sites`):

* Chat Completions: a system or developer message (the form above).
* Responses: `instructions` (``{"x_firsttoken_ref": …}`` in place of the string), and
  a system or developer input item (the message form).
* Anthropic Messages: `system` as a string (``{"x_firsttoken_ref": …}`` in place of
  it) or each of its text blocks (``{"type": "text", "x_firsttoken_ref": …}``, other
  fields such as ``cache_control`` kept). Its messages are user and assistant turns
  only, so a reference there is a 400.

Each system text at those places that arrives in full is stored: a string content,
instructions or system, or one text block.

Isolation: entries are kept per client, its `owner` (gateway/access.py: SHA-256 over
the Authorization header and the client id), so a reference resolves only for the client that sent the text. Knowing
or guessing a hash gives nothing to anyone else. The store is bounded per client
(entries, bytes) and in all (bytes), least recently used first out.
"""

from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from firsttoken.cache.refs import ADVERTISED, CLIENT_HEADER, GATEWAY_HEADER, REF_FIELD, UNKNOWN_REF_CODE

from .errors import APIError, invalid
from .shared import SharedState, SharedStateDown

__all__ = [
    "CLIENT_HEADER",
    "GATEWAY_HEADER",
    "ADVERTISED",
    "REF_FIELD",
    "UNKNOWN_REF_CODE",
    "RefLimits",
    "RefStore",
    "AdvertiseRefs",
    "Entry",
    "entry_of",
    "RefStores",
    "SharedRefStore",
    "Site",
    "chat_sites",
    "expand_refs",
    "messages_sites",
    "referenced",
    "responses_sites",
    "system_entries",
]

_REF = re.compile(r"sha256:([0-9a-f]{64})\Z")
_ROLES = frozenset({"system", "developer"})


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


# ---- where references stand -----------------------------------------------------------------

#: A message object: its system text is its string `content` (system and developer
#: roles only); a reference is the message with `x_firsttoken_ref` and no content.
MESSAGE = "message"
#: A string field: a reference is an object holding `x_firsttoken_ref` alone.
TEXT = "text"
#: A text block (`{"type": "text", "text": …}`): a reference is the block with
#: `x_firsttoken_ref` and no text (its other fields, such as `cache_control`, stay).
BLOCK = "block"


@dataclass(frozen=True, slots=True)
class Site:
    """One place in a decoded body where a system text may stand: `holder[key]`, in
    `form` (above); `param` names it in errors (`messages[0]`, `instructions`,
    `system[1]`)."""

    param: str
    holder: Any
    key: Any
    form: str


def chat_sites(data: Any) -> list[Site]:
    """Chat Completions: every message (only system and developer ones may be references)."""
    return _items(data, "messages")


def responses_sites(data: Any) -> list[Site]:
    """Responses: `instructions`, and every input item (system and developer messages)."""
    sites = [Site("instructions", data, "instructions", TEXT)] if isinstance(data, dict) and "instructions" in data else []
    return sites + _items(data, "input")


def messages_sites(data: Any) -> list[Site]:
    """Anthropic Messages: `system`, as a string or each of its text blocks. Its messages
    are sites too, so that a reference there is refused as one (Messages has no
    system turns) rather than read as a message without content."""
    system = data.get("system") if isinstance(data, dict) else None
    if isinstance(system, list):
        sites = [Site(f"system[{i}]", system, i, BLOCK) for i in range(len(system))]
    else:
        sites = [Site("system", data, "system", TEXT)] if system is not None else []
    return sites + _items(data, "messages")


def _items(data: Any, name: str) -> list[Site]:
    items = data.get(name) if isinstance(data, dict) else None
    return [Site(f"{name}[{i}]", items, i, MESSAGE) for i in range(len(items))] if isinstance(items, list) else []


def _reference(site: Site) -> dict[str, Any] | None:
    value = site.holder[site.key]
    return value if isinstance(value, dict) and REF_FIELD in value else None


def referenced(sites: list[Site]) -> list[str]:
    """The digests the references at `sites` name (well-formed ones only; `expand_refs`
    judges the rest)."""
    found = []
    for site in sites:
        ref = _reference(site)
        match = _REF.match(ref[REF_FIELD]) if ref is not None and isinstance(ref[REF_FIELD], str) else None
        if match:
            found.append(match.group(1))
    return found


def expand_refs(sites: list[Site], texts: Mapping[str, str]) -> bool:
    """Replace every reference at `sites` by its text from `texts` (what the client's
    store holds, by digest); True if any was. Raises `APIError`: 400 for a malformed
    reference, 409 `cache_ref_unknown` for one `texts` lacks."""
    changed = False
    for site in sites:
        ref = _reference(site)
        if ref is None:
            continue
        where = site.param
        value = ref[REF_FIELD]
        match = _REF.match(value) if isinstance(value, str) else None
        if match is None:
            raise invalid(f"'{where}.{REF_FIELD}' must be 'sha256:' and 64 lowercase hex digits.",
                          param=f"{where}.{REF_FIELD}", code="invalid_value")
        _check_shape(site, ref)
        text = texts.get(match.group(1))
        if text is None:
            raise APIError(409, f"{where} refers to a system text this gateway does not hold for this client; send its text.",
                           param=where, code=UNKNOWN_REF_CODE)
        if site.form == TEXT:
            site.holder[site.key] = text
        else:
            del ref[REF_FIELD]
            ref["content" if site.form == MESSAGE else "text"] = text
            if site.form == BLOCK:
                ref.setdefault("type", "text")
        changed = True
    return changed


def _check_shape(site: Site, ref: dict[str, Any]) -> None:
    where = site.param
    if site.form == TEXT:
        if len(ref) != 1:
            raise invalid(f"'{where}' as a reference holds '{REF_FIELD}' and nothing else.", param=where, code="invalid_value")
    elif site.form == MESSAGE:
        if not isinstance(ref.get("role"), str) or ref["role"] not in _ROLES:  # ["user"] is unhashable
            raise invalid(f"'{where}': only system and developer messages may be references.",
                          param=f"{where}.role", code="invalid_value")
        if ref.get("content") not in (None, ""):
            raise invalid(f"'{where}' has both content and a reference.", param=f"{where}.content", code="invalid_value")
    else:
        if ref.get("type", "text") != "text":
            raise invalid(f"'{where}': only text blocks may be references.", param=f"{where}.type", code="invalid_value")
        if ref.get("text") not in (None, ""):
            raise invalid(f"'{where}' has both text and a reference.", param=f"{where}.text", code="invalid_value")


def system_entries(sites: list[Site]) -> list[Entry]:
    """The system texts at `sites` of a valid request, hashed (CPU work: off the loop)."""
    entries = []
    for site in sites:
        value = site.holder[site.key]
        if site.form == TEXT:
            text = value
        elif site.form == MESSAGE:
            role = value.get("role") if isinstance(value, dict) else None
            text = value.get("content") if isinstance(role, str) and role in _ROLES else None
        else:
            text = value.get("text") if isinstance(value, dict) and value.get("type") == "text" else None
        if isinstance(text, str) and text:
            entry = entry_of(text)
            if entry is not None:
                entries.append(entry)
    return entries


class RefStores(Protocol):
    """What the request path asks of a store, in memory or in Redis."""

    async def get_many(self, client: str, digests: list[str]) -> dict[str, str]: ...

    async def remember(self, client: str, entries: list[Entry]) -> None: ...


class AdvertiseRefs:
    """ASGI middleware: ``x-firsttoken-gateway: cache-refs=1`` on every /v1/ response."""

    def __init__(self, app: ASGIApp, prefix: str = "/v1/") -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return

        async def advertise(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[GATEWAY_HEADER] = ADVERTISED
            await send(message)

        await self.app(scope, receive, advertise)


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
