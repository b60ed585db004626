"""Resumable streams in Redis (`--redis`): started on one gateway process, resumed,
polled and cancelled on any other.

Keys (a stream's id never appears raw: keys name `sha256(id)`, `h` below; Redis holds
no id a reader of its keys could resume with, and it needs the owner's client key too):

- `ft:st:<h>:m` a hash: owner (the `access.Client.owner`), status, last_event,
  characters, finish_reason, bytes, created_at, ended_at;
- `ft:st:<h>:e` a Redis stream: event n is entry `n-0`, field `d`, the event as sent
  (stamped), so a replay after n is `XRANGE key n+1 +` and following is `XREAD BLOCK`
  from `n-0`;
- `ft:st:c:<owner>` a sorted set of the client's streams by creation time, for the
  per-client bound (a new stream drops that client's oldest ended ones first).

Every write is one Lua script (create, put, cancel), so processes never race between
round trips. The create script reads the client's other streams by keys it builds
itself (to drop the oldest ended ones): fine on one Redis, not on a Redis Cluster. Keys live `max_s + ttl_s` while the stream is live (renewed by each put)
and `ttl_s` once it ended.

Writes: the owning process keeps the stream's log in memory while it is live
(`log.StreamLog`, `mirrored`) and one writer task per stream puts whatever was
appended since its last put in one script call, so a slow Redis batches more rather
than slowing the generation. An event becomes visible to this process's own readers
(the POST's response) only once Redis holds it: what a client has seen can be resumed
anywhere. If Redis stops answering mid-stream, the stream goes on in memory alone
(`unmirror`) and is no longer resumable elsewhere.

Cancel from any process: the script sets status "cancelled" (so every reader ends,
and the owner's next put is refused) and PUBLISHes `h` on `ft:st:cancel`, to which
every process that owns streams subscribes; the owner cancels its task, which closes
the upstream request. A refused put stops the generation too, should the message be
missed (a re-subscription also checks every owned stream).

Reads of other processes' streams wait with `XREAD BLOCK` on a pool of their own
(`max_blocking` connections), so followers never hold the connections that flow
control and cache references use; each wait is at most `block_s`, after which the
status is read again.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from typing import Any, AsyncIterator

from ..shared import SharedState, SharedStateDown
from .limits import ResumeLimits
from .log import CANCELLED, IN_PROGRESS, StreamLog, StreamStatus
from .memory import LocalStreams
from .run import STOP_CANCEL, stop

__all__ = ["CANCEL_CHANNEL", "RedisStreams", "stream_hash"]

log_ = logging.getLogger("firsttoken.gateway.streams")

PREFIX = "ft:st:"
CANCEL_CHANNEL = "ft:st:cancel"
#: Events per put, and per read: a replay of a long answer is a few round trips of
#: bounded size, not one of megabytes.
_BATCH_EVENTS = 512

_CREATE_LUA = """
local members = redis.call('ZRANGE', KEYS[2], 0, -1)
local ended, count = {}, 0
for _, h in ipairs(members) do
  local st = redis.call('HGET', ARGV[6] .. h .. ':m', 'status')
  if not st then
    redis.call('ZREM', KEYS[2], h)
  else
    count = count + 1
    if st ~= 'in_progress' then ended[#ended + 1] = h end
  end
end
local limit, i = tonumber(ARGV[4]), 1
while count >= limit and i <= #ended do
  redis.call('DEL', ARGV[6] .. ended[i] .. ':m', ARGV[6] .. ended[i] .. ':e')
  redis.call('ZREM', KEYS[2], ended[i])
  count, i = count - 1, i + 1
end
if count >= limit then return 0 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'status', 'in_progress', 'last_event', 0, 'characters', 0,
  'finish_reason', '', 'bytes', 0, 'created_at', ARGV[2], 'ended_at', '')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
"""

# ARGV: first, last_event, characters, finish_reason, bytes, status, ended_at,
# live ttl ms, ended ttl ms, then the events. Refused (the status is returned) unless
# the stream is still in progress: cancelled elsewhere, or gone ('').
_PUT_LUA = """
local st = redis.call('HGET', KEYS[1], 'status')
if st ~= 'in_progress' then return st or '' end
local first = tonumber(ARGV[1])
for i = 10, #ARGV do
  redis.call('XADD', KEYS[2], (first + i - 10) .. '-0', 'd', ARGV[i])
end
redis.call('HSET', KEYS[1], 'last_event', ARGV[2], 'characters', ARGV[3], 'finish_reason', ARGV[4],
  'bytes', ARGV[5], 'status', ARGV[6], 'ended_at', ARGV[7])
local ttl = ARGV[9]
if ARGV[6] == 'in_progress' then ttl = ARGV[8] end
redis.call('PEXPIRE', KEYS[1], ttl)
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 'in_progress'
"""

# ARGV: owner, ended_at, ttl ms, channel, hash. The meta (flat), or nil for a stream
# that is not the owner's.
_CANCEL_LUA = """
local m = redis.call('HMGET', KEYS[1], 'owner', 'status')
if not m[1] or m[1] ~= ARGV[1] then return false end
if m[2] == 'in_progress' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'ended_at', ARGV[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
  redis.call('PUBLISH', ARGV[4], ARGV[5])
end
return redis.call('HGETALL', KEYS[1])
"""

# ARGV: after, count. {meta (flat), entries after `after`}, or nil for no stream.
_READ_LUA = """
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 then return false end
local entries = {}
if tonumber(ARGV[2]) > 0 then
  entries = redis.call('XRANGE', KEYS[2], tostring(tonumber(ARGV[1]) + 1), '+', 'COUNT', ARGV[2])
end
return {meta, entries}
"""


def stream_hash(stream_id: str) -> str:
    return hashlib.sha256(b"firsttoken.stream/1\0" + stream_id.encode()).hexdigest()[:32]


class _Keys:
    __slots__ = ("hash", "meta", "events")

    def __init__(self, stream_id: str) -> None:
        self.hash = stream_hash(stream_id)
        self.meta = f"{PREFIX}{self.hash}:m"
        self.events = f"{PREFIX}{self.hash}:e"


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _meta(flat: list[Any]) -> dict[str, str]:
    return {_text(flat[i]): _text(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}


def _status(stream_id: str, meta: dict[str, str]) -> StreamStatus:
    def number(name: str) -> float:
        try:
            return float(meta.get(name) or 0)
        except ValueError:
            return 0.0

    ended = meta.get("ended_at") or ""
    return StreamStatus(
        id=stream_id,
        status=meta.get("status") or IN_PROGRESS,
        last_event=int(number("last_event")),
        characters=int(number("characters")),
        finish_reason=meta.get("finish_reason") or None,
        created_at=int(number("created_at")),
        ended_at=int(number("ended_at")) if ended else None,
    )


class RedisStreams:
    def __init__(
        self,
        shared: SharedState,
        url: str,
        limits: ResumeLimits,
        local: LocalStreams,
        *,
        block_s: float = 1.0,
        max_blocking: int = 64,
        timeout_s: float = 2.0,
    ) -> None:
        self.shared = shared
        self.url = url
        self.limits = limits
        self.local = local
        self.block_s = block_s
        self.max_blocking = max_blocking
        self.timeout_s = timeout_s
        shared.script("streams_create", _CREATE_LUA)
        shared.script("streams_put", _PUT_LUA)
        shared.script("streams_cancel", _CANCEL_LUA)
        shared.script("streams_read", _READ_LUA)
        self._blocking: Any = None  # redis.asyncio.Redis, made on first use
        #: This process's live streams by hash (for a cancel heard on the channel).
        self._owned: dict[str, StreamLog] = {}
        self._writers: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def _live_ms(self) -> int:
        return int((self.limits.max_s + self.limits.ttl_s) * 1000)

    @property
    def _ended_ms(self) -> int:
        return int(self.limits.ttl_s * 1000)

    # ---- the owner's side ------------------------------------------------------------

    async def create(self, log: StreamLog) -> bool:
        """Record a new stream; False when its client has its whole share of streams live.
        Raises `SharedStateDown`."""
        keys = _Keys(log.id)
        made = await self.shared.run(
            "streams_create", [keys.meta, f"{PREFIX}c:{log.owner[:32]}"],
            [log.owner, repr(log.created_at), self._live_ms, self.limits.streams_per_client, keys.hash, PREFIX],
        )
        return bool(made)

    def mirror(self, log: StreamLog) -> None:
        """Write `log` to Redis as it grows (one writer task), revealing what is written."""
        keys = _Keys(log.id)
        self._owned[keys.hash] = log
        task = asyncio.get_running_loop().create_task(self._write(log, keys))
        self._writers.add(task)
        task.add_done_callback(self._writers.discard)
        if self._listener is None or self._listener.done():
            self._listener = asyncio.get_running_loop().create_task(self._listen())

    async def _write(self, log: StreamLog, keys: _Keys) -> None:
        written = 0
        try:
            while True:
                # What is there now, read with no await in between: the facts `_put`
                # sends belong to exactly these events.
                upto = min(len(log.events), written + _BATCH_EVENTS)
                last = not log.live and upto == len(log.events)
                if upto == written and not last:
                    log.wake.clear()
                    await log.wake.wait()
                    continue
                answer = await self._put(log, keys, written, upto, last)
                if answer == IN_PROGRESS:
                    written = upto
                    log.reveal(upto, final=last)
                    if last:
                        return
                    continue
                if answer is None or answer == "":
                    # Redis is down, or dropped the stream (maxmemory): go on in memory.
                    log.unmirror()
                else:
                    # Cancelled on another process: nothing more is shown or written.
                    log.reveal(written, final=True)
                    stop(log, STOP_CANCEL)
                break
            while log.live:  # no longer written; kept here until it ends
                log.wake.clear()
                await log.wake.wait()
        finally:
            self._owned.pop(keys.hash, None)
            self.local.drop(log.id)

    async def _put(self, log: StreamLog, keys: _Keys, written: int, upto: int, last: bool) -> str | None:
        status = log.status if last else IN_PROGRESS
        ended_at = repr(log.ended_at) if last and log.ended_at is not None else ""
        # Facts of the whole log: when `upto` is short of its end (a batch), the next put
        # follows at once and corrects them.
        args = [written + 1, upto, log.characters, log.finish_reason or "", log.bytes, status, ended_at,
                self._live_ms, self._ended_ms, *log.events[written:upto]]
        try:
            return _text(await self.shared.run("streams_put", [keys.meta, keys.events], args))
        except SharedStateDown:
            return None

    async def _listen(self) -> None:
        """Hear cancels for streams of this process, for as long as it owns any."""
        backoff = 0.1
        while self._owned and not self._closing:
            pubsub = None
            try:
                client = self._client()
                pubsub = client.pubsub(ignore_subscribe_messages=True)
                await pubsub.subscribe(CANCEL_CHANNEL)
                backoff = 0.1
                await self._recheck()  # a cancel may have come while not subscribed
                while self._owned:
                    message = await pubsub.get_message(timeout=self.block_s)
                    if message is not None and message.get("type") == "message":
                        log = self._owned.get(_text(message.get("data")))
                        if log is not None:
                            stop(log, STOP_CANCEL)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - Redis errors of any kind: wait, then again
                log_.debug("streams: cancel channel lost (%s)", type(exc).__name__)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                if pubsub is not None:
                    try:
                        await pubsub.aclose()
                    except Exception:  # noqa: BLE001
                        pass

    async def _recheck(self) -> None:
        for stream_hash_, log in list(self._owned.items()):
            meta = await self._read_meta_by_keys(f"{PREFIX}{stream_hash_}:m", f"{PREFIX}{stream_hash_}:e")
            if meta is not None and meta.get("status") == CANCELLED:
                stop(log, STOP_CANCEL)

    # ---- anyone's side (the owner's client, on any process) ---------------------------

    async def status(self, stream_id: str, owner: str) -> StreamStatus | None:
        """The stream's status if it exists and is `owner`'s. Raises `SharedStateDown`."""
        keys = _Keys(stream_id)
        meta = await self._read_meta_by_keys(keys.meta, keys.events)
        if meta is None or not hmac.compare_digest(meta.get("owner", ""), owner):
            return None
        return _status(stream_id, meta)

    async def cancel(self, stream_id: str, owner: str) -> StreamStatus | None:
        keys = _Keys(stream_id)
        flat = await self.shared.run(
            "streams_cancel", [keys.meta, keys.events],
            [owner, repr(time.time()), self._ended_ms, CANCEL_CHANNEL, keys.hash],
        )
        if not flat:
            return None
        return _status(stream_id, _meta(flat))

    async def follow(self, stream_id: str, owner: str, after: int) -> AsyncIterator[bytes]:
        """Every event after `after`, in batches, until the stream ended and all of it was
        given, it is gone, or Redis stops answering (then the reader ends early)."""
        keys = _Keys(stream_id)
        deadline: float | None = None
        try:
            while True:
                found = await self._read(keys, after, _BATCH_EVENTS)
                if found is None:
                    return
                meta, entries = found
                if not hmac.compare_digest(meta.get("owner", ""), owner):
                    return
                if entries:
                    after = int(_text(entries[-1][0]).partition("-")[0])
                    yield b"".join(_entry_data(entry) for entry in entries)
                    continue
                status = _status(stream_id, meta)
                if status.status != IN_PROGRESS and after >= status.last_event:
                    return
                if deadline is None:
                    # A stream whose owner died mid-answer stays "in progress" until its
                    # keys expire; its readers stop waiting once it could no longer run.
                    deadline = status.created_at + self.limits.max_s + self.block_s
                if time.time() > deadline:
                    return
                await self._wait(keys, after)
        except SharedStateDown:
            return

    async def _read(self, keys: _Keys, after: int, count: int) -> tuple[dict[str, str], list[Any]] | None:
        found = await self.shared.run("streams_read", [keys.meta, keys.events], [after, count])
        if not found:
            return None
        return _meta(found[0]), list(found[1] or [])

    async def _read_meta_by_keys(self, meta_key: str, events_key: str) -> dict[str, str] | None:
        found = await self.shared.run("streams_read", [meta_key, events_key], [0, 0])
        return _meta(found[0]) if found else None

    async def _wait(self, keys: _Keys, after: int) -> None:
        """Until an event after `after` is written, or `block_s` passed."""
        try:
            await self._client().xread({keys.events: f"{after}-0"}, count=1, block=max(int(self.block_s * 1000), 1))
        except Exception as exc:  # noqa: BLE001 - redis-py's errors, OSError, timeouts: all mean down
            raise SharedStateDown(type(exc).__name__) from None

    def _client(self) -> Any:
        if self._blocking is None:
            import redis.asyncio as redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff

            pool = redis.BlockingConnectionPool.from_url(
                self.url,
                max_connections=self.max_blocking,
                timeout=self.timeout_s,
                # A blocked XREAD answers after `block_s`; the socket waits a little longer.
                socket_timeout=self.block_s + self.timeout_s,
                socket_connect_timeout=self.timeout_s,
                retry=Retry(NoBackoff(), 0),
            )
            self._blocking = redis.Redis(connection_pool=pool)
        return self._blocking

    async def aclose(self) -> None:
        self._closing = True
        if self._writers:
            await asyncio.wait(self._writers, timeout=self.timeout_s * 2)
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
        if self._blocking is not None:
            try:
                await self._blocking.aclose()
                await self._blocking.connection_pool.aclose()
            except Exception:  # noqa: BLE001
                pass


def _entry_data(entry: Any) -> bytes:
    fields = entry[1]
    # XRANGE in a script gives [id, [field, value, …]].
    for i in range(0, len(fields) - 1, 2):
        if fields[i] in (b"d", "d"):
            value = fields[i + 1]
            return value if isinstance(value, bytes) else str(value).encode()
    return b""
