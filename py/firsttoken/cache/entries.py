"""What `firsttoken.cache` stores and how a stored record is verified, and which records
to evict. Pure: no I/O, no clock. See `firsttoken.cache` for the design."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import CacheCorrupt

__all__ = [
    "KEY_SCHEME",
    "RECORD_MAGIC",
    "Entry",
    "Meta",
    "cache_key",
    "text_digest",
    "encode_entry",
    "decode_entry",
    "plan_eviction",
    "canonical_json",
]

#: Part of every key: a new entry format or key rule gets a new scheme, so old
#: records simply stop matching (and age out) instead of being misread.
KEY_SCHEME = "firsttoken.cache/2"  # 2: entries carry the repeats state after them
RECORD_MAGIC = "ft1"


# ---- keys and entries ----------------------------------------------------------------


def canonical_json(value: Any) -> bytes:
    """`value` as JSON with exactly one spelling (the bytes that keys and digests hash)."""
    # ensure_ascii: one spelling per string (lone surrogates included), bytes are ASCII.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), sort_keys=True).encode("ascii")


def cache_key(text: str, encoding: str, compression: str, previous: str = "") -> str:
    """The key of a system message: SHA-256 (hex) over (scheme, text, encoding,
    compression version and level, key of the system message before it or "")."""
    return hashlib.sha256(canonical_json([KEY_SCHEME, text, encoding, compression, previous])).hexdigest()


def text_digest(text: str) -> str | None:
    """SHA-256 (hex) of `text` as UTF-8: the gateway's reference to it. None for a text
    that is not valid Unicode (lone surrogates), which is never sent by reference."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Entry:
    """One prepared system message.

    `text` is what is sent (compressed), `tokens` its exact count in `encoding`,
    `report` its compression report (`firsttoken.compress.Report.to_dict()` fields),
    `text_sha256` the SHA-256 of `text` (the gateway reference), `created_at` seconds
    since the epoch. `state` is what the repeats pass had seen after this message
    (`firsttoken.compress.RepeatState.to_json()`), so the messages after it can be
    compressed exactly as if this one had been compressed with them; None when
    compression is off.
    """

    key: str
    text: str
    tokens: int
    encoding: str
    compression: str
    report: dict[str, Any]
    text_sha256: str | None
    created_at: float
    state: str | None = None

    @property
    def ref(self) -> str | None:
        """The reference the gateway knows this text by (`sha256:<hex>`)."""
        return f"sha256:{self.text_sha256}" if self.text_sha256 else None


_FIELDS: dict[str, type | tuple[type, ...]] = {
    "key": str,
    "text": str,
    "tokens": int,
    "encoding": str,
    "compression": str,
    "report": dict,
    "text_sha256": (str, type(None)),
    "created_at": (int, float),
    "state": (str, type(None)),
}


def encode_entry(entry: Entry) -> str:
    """The record stored for `entry` (ASCII text)."""
    payload = canonical_json({name: getattr(entry, name) for name in _FIELDS}).decode("ascii")
    digest = hashlib.sha256(payload.encode("ascii")).hexdigest()
    return f"{RECORD_MAGIC} {digest}\n{payload}"


def decode_entry(record: Any, key: str) -> Entry:
    """The entry in `record`, stored under `key`; `CacheCorrupt` unless the record's
    digest, its key and the text's digest all verify."""
    if not isinstance(record, str):
        raise CacheCorrupt(f"record is a {type(record).__name__}, not text")
    head, sep, payload = record.partition("\n")
    magic, _, digest = head.partition(" ")
    if not sep or magic != RECORD_MAGIC or len(digest) != 64:
        raise CacheCorrupt("record has no valid header")
    try:
        raw = payload.encode("ascii")
    except UnicodeEncodeError:
        raise CacheCorrupt("record payload is not ASCII") from None
    if hashlib.sha256(raw).hexdigest() != digest:
        raise CacheCorrupt("record does not match its digest")
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):
        raise CacheCorrupt("record payload is not JSON") from None
    if not isinstance(data, dict):
        raise CacheCorrupt("record payload is not an object")
    for name, kind in _FIELDS.items():
        value = data.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise CacheCorrupt(f"record field {name!r} is missing or of the wrong type")
    if data["key"] != key:
        raise CacheCorrupt("record was stored under another key")
    if data["tokens"] < 0:
        raise CacheCorrupt("record has a negative token count")
    if data["text_sha256"] != text_digest(data["text"]):
        raise CacheCorrupt("record text does not match its digest")
    return Entry(**{name: data[name] for name in _FIELDS})


# ---- least recently used ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Meta:
    """What eviction needs to know of a record: its size (characters) and last use."""

    key: str
    size: int
    used_at: float
    created_at: float


def plan_eviction(index: Iterable[Meta], max_entries: int, max_bytes: int, keep: str | None = None) -> list[str]:
    """Keys to delete, least recently used first, until at most `max_entries` records of
    at most `max_bytes` in all remain. `keep` (the record just written) goes last of all."""
    metas = sorted(index, key=lambda m: (m.key == keep, m.used_at, m.created_at, m.key))
    count = len(metas)
    total = sum(m.size for m in metas)
    victims: list[str] = []
    for m in metas:
        if count <= max_entries and total <= max_bytes:
            break
        victims.append(m.key)
        count -= 1
        total -= m.size
    return victims
