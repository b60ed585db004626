"""Where a cache reference may stand in each dialect's body, and its expansion there.

Pure: a decoded body in, `Site`s out; `expand_refs` replaces the references at them by
the texts the store gave, `system_entries` hashes the texts found there in full (see
the package's docstring for the places, dialect by dialect).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from firsttoken.cache.refs import REF_FIELD, UNKNOWN_REF_CODE

from ..errors import APIError, invalid
from .store import Entry, entry_of

__all__ = [
    "BLOCK", "MESSAGE", "TEXT", "Site", "chat_sites", "expand_refs", "messages_sites", "referenced", "responses_sites",
    "system_entries",
]

_REF = re.compile(r"sha256:([0-9a-f]{64})\Z")
_ROLES = frozenset({"system", "developer"})

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
