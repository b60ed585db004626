"""The message protocol: validation of requests, encoding of events, and the definitions
in firsttoken.protocol against bridge/PROTOCOL.md's tables, both ways."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

import firsttoken.core  # noqa: F401 - loads every module whose errors can reach the page
from firsttoken.errors import FirstTokenError, InvalidMessage
from firsttoken.protocol import (
    EVENTS,
    MAX_MESSAGE_BYTES,
    REQUESTS,
    ChatDelta,
    ChatPrepared,
    ChatSend,
    Event,
    Hello,
    TokensCount,
    encode,
    parse_request,
)
from firsttoken.settings import ChatSettings
from harness.node import node_test

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "bridge" / "PROTOCOL.md").read_text()


# ---- PROTOCOL.md, read as tables under headings ------------------------------------------


@dataclasses.dataclass
class Table:
    heading: str
    header: list[str]
    rows: list[list[str]]


def _cells(line: str) -> list[str]:
    # Split on pipes outside backticks (a cell may show `a | b`).
    cells, cell, code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            code = not code
        if ch == "|" and not code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += ch
    cells.append(cell.strip())
    return cells


def tables(doc: str) -> list[Table]:
    out: list[Table] = []
    heading = ""
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif line.startswith("|") and i + 1 < len(lines) and re.match(r"\|\s*-{3}", lines[i + 1]):
            table = Table(heading, _cells(line), [])
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                table.rows.append(_cells(lines[i]))
                i += 1
            out.append(table)
            continue
        i += 1
    return out


def sections(doc: str) -> dict[str, str]:
    """Heading → the text under it (up to the next heading of any level)."""
    out: dict[str, str] = {}
    heading, body = "", []
    for line in doc.splitlines():
        if line.startswith("#"):
            out[heading] = "\n".join(body)
            heading, body = line.lstrip("#").strip(), []
        else:
            body.append(line)
    out[heading] = "\n".join(body)
    return out


def names(cell: str) -> list[str]:
    """The backticked names in a table cell: "`a`, `b`" → ["a", "b"]."""
    return re.findall(r"`([^`]+)`", cell)


TABLES = tables(DOC)


def type_rows(first_column: str, heading: str | None = None) -> dict[str, list[str]]:
    """Type name → its row, from tables whose first column is `first_column`."""
    rows: dict[str, list[str]] = {}
    for table in TABLES:
        if table.header[0] == first_column and (heading is None or table.heading == heading):
            for row in table.rows:
                for name in names(row[0]):
                    rows[name] = row
    return rows


DOCUMENTED_REQUESTS = type_rows("type", "Requests (page → core)")
DOCUMENTED_EVENTS = {**type_rows("type", "Events (core → page)"), **type_rows("event")}
DOCUMENTED_FROM_JS = type_rows("event (from JavaScript)")


def documentation_of(kind: str) -> str:
    """Everything PROTOCOL.md says about one type: its rows, and sections named for it."""
    parts = [" | ".join(row) for table in TABLES for row in table.rows if kind in names(row[0])]
    parts += [body for heading, body in sections(DOC).items() if f"`{kind}`" in heading]
    return "\n".join(parts)


def fields_of(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name != "id"]


# ---- the definitions and the document agree ------------------------------------------


def test_the_document_has_the_tables_this_test_reads() -> None:
    assert DOCUMENTED_REQUESTS and DOCUMENTED_EVENTS and DOCUMENTED_FROM_JS


@pytest.mark.parametrize("kind", sorted(REQUESTS))
def test_every_request_type_is_documented(kind: str) -> None:
    assert kind in DOCUMENTED_REQUESTS, f"{kind} is accepted by firsttoken.protocol but not in PROTOCOL.md's Requests"


@pytest.mark.parametrize("kind", sorted(EVENTS))
def test_every_event_type_is_documented(kind: str) -> None:
    assert kind in DOCUMENTED_EVENTS, f"{kind} is sent by firsttoken.protocol but not in PROTOCOL.md's Events"


def test_every_documented_type_exists() -> None:
    assert set(DOCUMENTED_REQUESTS) <= set(REQUESTS), set(DOCUMENTED_REQUESTS) - set(REQUESTS)
    assert set(DOCUMENTED_EVENTS) <= set(EVENTS), set(DOCUMENTED_EVENTS) - set(EVENTS)


def test_every_type_documented_as_from_javascript_is_sent_by_javascript() -> None:
    js = "\n".join(p.read_text() for p in (ROOT / "js").rglob("*") if p.suffix in (".js", ".mjs"))
    for kind in DOCUMENTED_FROM_JS:
        assert re.search(rf"type: *['\"]{re.escape(kind)}['\"]", js), f"no JavaScript sends {kind}"


def host_bridge_answers() -> set[str]:
    """What the page's host bridge (bridge/page/) answers, found in its source; the
    requests it accepts are `HOST_REQUEST_TYPES`, read by the JS side (it is made from
    js/link/protocol.js)."""
    found: set[str] = set()
    for path in (ROOT / "bridge" / "page").glob("*.js"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r"\btype:\s*'([a-z]+(?:\.[a-z]+)*)'", text))
    return found


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_every_type_the_host_bridge_speaks_is_documented(tmp_path: Path) -> None:
    # The check itself is tests/js/cross/host-types-documented.test.mjs (plain JS, which
    # reads HOST_REQUEST_TYPES), given the answered types and the documented names.
    documented = {name for table in TABLES for row in table.rows for name in names(row[0])}
    node_test(ROOT / "tests" / "js" / "cross" / "host-types-documented.test.mjs",
              {"answered": sorted(host_bridge_answers()), "documented": sorted(documented)}, tmp_path)


@pytest.mark.parametrize("kind", sorted({**REQUESTS, **EVENTS}))
def test_every_field_is_documented_and_optional_ones_say_so(kind: str) -> None:
    cls = REQUESTS.get(kind) or EVENTS[kind]
    text = documentation_of(kind)
    optional = cls.OMIT_EMPTY if issubclass(cls, Event) else frozenset()
    for name in fields_of(cls):
        mark = f"`{name}?`" if name in optional else f"`{name}`"
        assert mark in text or (name not in optional and f"`{name}?`" in text), f"{kind}: {mark} is not documented"


def test_every_setting_is_documented() -> None:
    table = next(t for t in TABLES if t.heading == "`settings`")
    documented = {name for row in table.rows for name in names(row[0])}
    assert documented == {f.name for f in dataclasses.fields(ChatSettings)}


def _codes(cls: type[FirstTokenError]) -> set[str]:
    out = {cls.code} if cls.__module__.startswith("firsttoken.") else set()
    for sub in cls.__subclasses__():
        out |= _codes(sub)
    return out


def test_every_error_code_is_documented_and_every_documented_code_exists() -> None:
    table = next(t for t in TABLES if t.heading == "Error codes")
    documented = {name for row in table.rows for name in names(row[0])}
    assert documented == _codes(FirstTokenError) | {"internal"}


def test_every_link_within_the_document_has_its_heading() -> None:
    def slug(heading: str) -> str:  # GitHub's: lower case, punctuation dropped, spaces → "-"
        return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")

    anchors = {slug(h) for h in sections(DOC) if h}
    for target in re.findall(r"\]\(#([^)]+)\)", DOC):
        assert target in anchors, target


# ---- validation ----------------------------------------------------------------------

CHAT = {"type": "chat.send", "id": "a", "messages": [{"role": "user", "content": "hi"}], "settings": {"model": "gpt-4o"}}


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("{", "not valid JSON"),
        ("[]", "JSON object"),
        ({"v": 1}, "no string 'type'"),
        ({**CHAT, "v": 3}, "unsupported protocol version"),
        ({"type": "chat.sing", "id": "a"}, "unknown message type"),
        ({**CHAT, "id": 5}, "'id' must be a string"),
        ({**CHAT, "id": ""}, "needs an 'id'"),
        ({"type": "chat.abort"}, "needs an 'id'"),
        ({**CHAT, "messages": "hi"}, "'messages' of type list"),
        ({**CHAT, "messages": []}, "'messages' is empty"),
        ({**CHAT, "messages": [{"content": "hi"}]}, "messages[0] needs a string 'role'"),
        ({**CHAT, "messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        ({**CHAT, "settings": []}, "'settings' of type dict"),
        ({"type": "tokens.count", "messages": [{"role": "user"}]}, "'settings' of type dict"),
        ("x" * (MAX_MESSAGE_BYTES + 1), "larger than"),
        # Bytes of UTF-8, not characters: the page counts the same way (host-messages.js).
        ("é" * (MAX_MESSAGE_BYTES // 2 + 1), "larger than"),
        ("\ud800" * (MAX_MESSAGE_BYTES // 3 + 1), "larger than"),
    ],
)
def test_invalid_requests_say_what_is_wrong(raw: object, says: str) -> None:
    with pytest.raises(InvalidMessage, match=re.escape(says)):
        parse_request(raw if isinstance(raw, str) else json.dumps(raw))


def test_requests_parse_into_their_types() -> None:
    send = parse_request(json.dumps({**CHAT, "settings": {"model": "gpt-4o", "max_tokens": "9", "compress": "off"}}))
    assert isinstance(send, ChatSend) and send.id == "a" and send.messages == CHAT["messages"]
    assert send.settings == ChatSettings(model="gpt-4o", compress="off")  # a wrong type counts as absent
    count = parse_request({"type": "tokens.count", "messages": CHAT["messages"], "settings": {}})
    assert isinstance(count, TokensCount) and count.id is None
    for flow, on in ((True, True), ("true", False), (1, False), (None, False)):
        hello = parse_request({"type": "hello", "flow": flow})
        assert isinstance(hello, Hello) and hello.flow is on


# ---- encoding ------------------------------------------------------------------------


def test_events_encode_their_fields_and_leave_out_empty_optional_ones() -> None:
    plain = json.loads(encode(ChatDelta(id="a", seq=1, text="hi", t=5.0)))
    assert plain == {"v": 2, "type": "chat.delta", "id": "a", "seq": 1, "text": "hi", "t": 5.0}
    full = json.loads(encode(ChatDelta(id="a", seq=2, text="", t=5.0, reasoning="hm", stamps=[1.0])))
    assert full["reasoning"] == "hm" and full["stamps"] == [1.0] and full["text"] == ""
    prepared = ChatPrepared(
        id="a", compression=None, saved=[], saved_unit="chars", budget=10, window_known=True, prompt_tokens=None,
        exact=False, dropped=[], truncated=[], prepare_ms=0.5, request_bytes=99,
    )
    out = json.loads(encode(prepared))
    assert "cache" not in out and out["prompt_tokens"] is None and out["compression"] is None


def test_a_missing_or_unknown_field_is_an_error_where_the_event_is_made() -> None:
    with pytest.raises(TypeError):
        ChatDelta(id="a", seq=1, text="hi")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ChatDelta(id="a", seq=1, text="hi", t=0.0, content="hi")  # type: ignore[call-arg]


def test_messages_are_frozen_and_slotted() -> None:
    delta = ChatDelta(id="a", seq=1, text="hi", t=0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delta.text = "x"  # type: ignore[misc]
    for cls in {**REQUESTS, **EVENTS}.values():
        assert "__slots__" in vars(cls) and not hasattr(cls(**_minimal(cls)), "__dict__"), cls


def _minimal(cls: type) -> dict:
    values = {}
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            values[f.name] = ChatSettings() if f.name == "settings" else "x" if f.name == "id" else None
    return values


def test_everything_the_core_posts_is_a_defined_event_with_its_defined_fields() -> None:
    import asyncio

    from firsttoken.core import Core
    from tests.unit.fakes import OK_STREAM, SSE, Canned, CannedTransport, FakeTime

    t = FakeTime()
    transport = CannedTransport(Canned(503, {"retry-after": "1"}, b"{}"), Canned(200, SSE, OK_STREAM))
    posted: list[str] = []
    core = Core(post=posted.append, transport=transport, clock=t.clock, sleep=t.sleep)

    async def main() -> None:
        for msg in ({"type": "hello", "id": "h", "flow": True}, {"type": "ping", "id": "p"}, {"type": "delta.ack"},
                    {"type": "tokens.count", "id": "c", "messages": CHAT["messages"], "settings": {}},
                    {**CHAT, "settings": {"base_url": "http://api.test/v1", "model": "gpt-4o"}},
                    {"type": "chat.abort", "id": "gone"}, {"type": "nonsense"}):
            await core.handle(json.dumps(msg))

    asyncio.run(main())
    seen = set()
    for text in posted:
        event = json.loads(text)
        cls = EVENTS[event["type"]]
        assert set(event) - {"v", "type", "id"} <= set(fields_of(cls)), event
        seen.add(event["type"])
    assert seen == {"ready", "pong", "tokens.counted", "chat.prepared", "chat.retry", "chat.delta", "chat.done", "error"}
