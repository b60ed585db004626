"""Every message type that the code sends or accepts is documented in bridge/PROTOCOL.md
(one protocol, written down once): the core's events and requests, the JavaScript
loaders' `boot.progress`, and the host bridge's own requests and events."""

from __future__ import annotations

import re
from pathlib import Path

from firsttoken.protocol import REQUEST_TYPES

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = (ROOT / "bridge" / "PROTOCOL.md").read_text(encoding="utf-8")
TYPE = r"([a-z]+(?:\.[a-z]+)*)"


def documented() -> set[str]:
    """Types with a row of their own in one of PROTOCOL.md's tables."""
    return set(re.findall(rf"^\| `{TYPE}` \|", PROTOCOL, re.M))


def emitted_by_python() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "py" / "firsttoken").rglob("*.py"):
        found |= set(re.findall(rf'(?<![.\w])encode\(\s*"{TYPE}"', path.read_text(encoding="utf-8")))
    return found


def sent_by_javascript() -> set[str]:
    found: set[str] = set()
    # Protocol messages the page's loaders build: `{ v: PROTOCOL, type: '…' }`.
    for path in [*(ROOT / "js").rglob("*.js"), *(ROOT / "js").rglob("*.mjs")]:
        found |= set(re.findall(rf"\{{\s*v:\s*(?:PROTOCOL|1),\s*type:\s*'{TYPE}'", path.read_text(encoding="utf-8")))
    # The host bridge: what it answers, and the requests it accepts.
    for path in (ROOT / "bridge" / "page").glob("*.js"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(rf"\btype:\s*'{TYPE}'", text))
        found |= set(re.findall(rf"^\s*'?{TYPE}'?:\s*\{{\s*id:", text, re.M))
    return found


def test_the_scans_find_what_they_look_for() -> None:
    # Guards the regular expressions: a scan that finds nothing would pass vacuously.
    assert {"ready", "chat.done", "tokens.counted", "error"} <= emitted_by_python()
    assert {"boot.progress", "hello", "settings.set", "settings.applied", "chat.metrics"} <= sent_by_javascript()


def test_every_message_type_is_documented() -> None:
    types = emitted_by_python() | sent_by_javascript() | set(REQUEST_TYPES)
    missing = sorted(types - documented())
    assert not missing, f"bridge/PROTOCOL.md has no table row for: {missing}"
