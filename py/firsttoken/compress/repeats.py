"""Repeats pass: a template pasted again from an earlier message is kept once.

Units are prose paragraphs (runs of non-blank lines) and whole blocks (a fence, a JSON
region); blank lines separate them. A unit repeats when the same words (whitespace
ignored) stood *in the same context* in an earlier instruction-giving message (system,
developer, user). Assistant and tool messages neither lose repeats nor count as a
first occurrence: a user quoting the assistant quotes it on purpose.

Only earlier *messages* count, never earlier text of the same message. Pasted
templates come from another message (a system prompt pasted into a user turn); inside
one text, the same block twice is almost always deliberate: a "bad example" and a
"good example" showing the same code, a question quoted before its answer. Dropping
the second copy there is what broke meaning on real prompts (issue 17). On the corpus
the within-text rule saved 0 of 25151 tokens: it cost nothing to give up.

A unit's context is the stack of XML-ish tags open before it (`<example kind="bad">`,
attributes included, as written) and the path of markdown headings (`## Good example`)
above it. The same code under "Bad example" and under "Good example", or inside
`<bad>` and `<good>`, is two different units.

The longest part of a maximal run of repeated units, from its start, is dropped when
all of these hold, each for a reason:

* it holds at least `MIN_RUN_CHARS` visible characters, so "Thanks!" or a bare
  heading is never taken for a pasted template;
* a blank line or the text's edge bounds it on both sides, so dropping it never joins
  two neighbours into one paragraph (which would also break idempotence);
* it starts or ends the text: a template is pasted before or after the new input,
  while a copy with the user's own words on both sides is a quote those words refer
  to ("like this one: ... that is what I want");
* it starts outside every tag and its own tags balance, so it takes whole elements
  or none: never a closing tag without its opening one, never part of an example;
* likewise for markdown sections: it starts at a heading or above every heading, and
  if it holds a heading, a heading (or the end) follows it, so no heading is left
  with less under it and nothing left is moved under another heading;
* none of its paragraphs holds a line that could open or close a fence (fences we
  understand are whole units; a marker in prose belongs to one we do not), so no
  fence is ever left unbalanced, nor a code span across lines that hides a tag (a
  table row may end that span, and the tag with it is markup after all);
* something else remains in the text: an API may refuse an empty message, and a turn
  that is only the template again still says "again".

Dropping a run can change the heading path of what follows it, so the pass repeats on
its own output until nothing more goes: the result is a fixed point, which is what
makes compressing it again a no-op.

What one message adds to the seen set depends only on that message's final text and
the set before it, so the seen set is a prefix state: `RepeatState` carries it from
`compress_messages(messages[:k])` to `compress_messages(messages[k:], prior=...)`,
and the result is exactly that of compressing all of them (see `RepeatState`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..errors import LocalProtocolError
from .markdown import PROSE, Block, is_blank, split_lines
from .prose import code_spans, protect_code_spans

__all__ = ["MIN_RUN_CHARS", "MAX_STATE_KEYS", "Unit", "RepeatState", "units_of", "drop_repeats"]

MIN_RUN_CHARS = 64
#: How many unit keys a `RepeatState` holds before it turns "unknown" (about 22
#: characters of JSON each, so a state stays under 100 kB).
MAX_STATE_KEYS = 4096
_WS = re.compile(r"[ \t\r\n\f\v]+")
# ATX headings (CommonMark §4.2): up to three spaces, 1-6 `#`, then space or the end.
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+|(?=\r?\n?$))(.*?)(?:[ \t]+#+)?[ \t]*\r?\n?$")
# Any tag-looking thing: `<name ...>`, `</name>`, `<name/>`, and HTML comment edges.
# Over-matching (`a<b and c>d`) only makes the pass drop less: an unmatched opening
# tag opens a context or unbalances a run. Inline code spans are not scanned.
_TAG = re.compile(r"<!--|-->|<(/?)([A-Za-z][\w.:-]*)((?:[ \t\r\n][^<>]*)?)>")
# A line that could open or close a fence, at top level or in a container.
_FENCE_LINE = re.compile(r"[ \t>]*(?:(?:[-+*]|[0-9]{1,9}[.)])[ \t]+)?(?:`{3,}|~{3,})")
_COMMENT = "!--"


@dataclass(slots=True)
class Unit:
    """A paragraph or block (`key` its words), or a blank-line separator (`key` "")."""

    text: str
    key: str
    #: the tags the unit opens and closes, in order: (name, the opening tag's words)
    #: for an opening tag, (name, "") for a closing one
    tags: tuple[tuple[str, str], ...] = ()
    #: the ATX headings in the unit, in order: (level, words)
    headings: tuple[tuple[int, str], ...] = ()
    #: the unit's first line is a heading
    opens_section: bool = False
    #: never dropped: a prose paragraph holding a fence-like line, or one whose markup
    #: depends on how a code span across lines is read (below)
    pinned: bool = False


def _key(text: str) -> str:
    return " ".join(_WS.split(text.strip(" \t\r\n\f\v")))


def _prose_unit(text: str) -> Unit:
    tags: list[tuple[str, str]] = []
    pinned = False
    if "<" in text or "-->" in text:
        # Tags inside inline code spans are text, not markup.
        seen: list[str] = []

        def keep(span: str) -> str:
            seen.append(span)
            return span

        protect_code_spans(text, keep)
        # A code span may run across lines only inside one paragraph; a table row, a
        # list item or an HTML block ends it (GFM §4.10, CommonMark §6.1), and this unit
        # is a run of lines, not a parsed paragraph. Where such a span would hide a tag
        # the two readings disagree on what the unit opens and closes, so it is never
        # dropped: dropping `| ``` |` … `<example>` … `| ``` |` as tag-free left its
        # `</example>` closing nothing (found by tests/unit/test_compress_state.py).
        pinned = bool(seen) and any("\n" in span and _TAG.search(span) for span in code_spans(text))
        for m in _TAG.finditer(seen[0] if seen else text):
            whole = m.group(0)
            if whole == "<!--":
                tags.append((_COMMENT, _COMMENT))
            elif whole == "-->":
                tags.append((_COMMENT, ""))
            else:
                name = m.group(2).lower()
                if m.group(3).rstrip().endswith("/"):
                    continue  # self-closing
                # HTML void elements (`<br>`) are not special: prompts use `<input>` as
                # an XML tag with a closing tag, and an open `<br>` only drops less.
                tags.append((name, "" if m.group(1) else _key(whole)))
    headings: list[tuple[int, str]] = []
    opens = False
    if "#" in text:
        for k, line in enumerate(split_lines(text)):
            if line.lstrip(" ").startswith("#"):
                heading = _HEADING.match(line)
                if heading is not None:
                    headings.append((len(heading.group(1)), _key(heading.group(2))))
                    opens = opens or k == 0
    pinned = pinned or ("`" in text or "~" in text) and any(_FENCE_LINE.match(line) for line in split_lines(text))
    return Unit(text, _key(text), tuple(tags), tuple(headings), opens, pinned)


def units_of(blocks: Sequence[Block]) -> list[Unit]:
    """The units of a document, in order; their texts concatenate to the document."""
    units: list[Unit] = []
    for b in blocks:
        if b.kind != PROSE:
            text = b.full()
            if text:
                units.append(Unit(text, _key(text) or text))
            continue
        para: list[str] = []
        for line in split_lines(b.text):
            if is_blank(line):
                if para:
                    units.append(_prose_unit("".join(para)))
                    para = []
                units.append(Unit(line, ""))
            else:
                para.append(line)
        if para:
            units.append(_prose_unit("".join(para)))
    return units


def _contexts(units: Sequence[Unit]) -> tuple[list[str], list[int], list[bool]]:
    """For each unit: its context string, how many tags are open before it, and
    whether a heading stands above it."""
    tags: list[str] = []  # the open tags' words, innermost last
    names: list[str] = []
    headings: list[tuple[int, str]] = []
    out: list[str] = []
    depth: list[int] = []
    headed: list[bool] = []
    for u in units:
        headed.append(bool(headings))
        out.append("\x1f".join(tags) + "\x1e" + "\x1f".join(f"{lv}{t}" for lv, t in headings))
        depth.append(len(tags))
        for level, words in u.headings:
            while headings and headings[-1][0] >= level:
                headings.pop()
            headings.append((level, words))
        for name, opened in u.tags:
            if opened:
                tags.append(opened)
                names.append(name)
            elif name in names:
                # Close the innermost element of that name and whatever was left open
                # inside it (HTML-style implied ends); a stray closing tag opens nothing.
                cut = len(names) - 1 - names[::-1].index(name)
                del tags[cut:], names[cut:]
    return out, depth, headed


def _balanced(units: Sequence[Unit]) -> bool:
    stack: list[str] = []
    for u in units:
        if u.pinned:
            return False
        for name, opened in u.tags:
            if opened:
                stack.append(name)
            elif not stack or stack.pop() != name:
                return False
    return not stack


def _digest(context: str, key: str) -> bytes:
    return hashlib.sha256(f"{context}\x1d{key}".encode("utf-8", "surrogatepass")).digest()[:16]


class RepeatState:
    """What the repeats pass has seen after some messages: a prefix state.

    `compress_messages(messages[k:], prior=state)` with the state left by
    `compress_messages(messages[:k])` gives exactly the messages and reports that
    compressing all of them gives for `messages[k:]`. A state belongs to one
    compressor version and one set of enabled passes (`config`); it is refused under
    another.

    It holds 16-byte digests of (context, words) of every unit seen, not the text. Past
    `MAX_STATE_KEYS` digests a state is *unknown* (`known` false): exactness matters
    more than size, so such a state is refused as `prior`, and the caller compresses
    from the first message instead.
    """

    __slots__ = ("config", "_keys")

    def __init__(self, config: str, keys: Iterable[bytes] | None = ()) -> None:
        self.config = config
        if keys is None:
            self._keys: frozenset[bytes] | None = None
        else:
            ks = frozenset(keys)
            self._keys = ks if len(ks) <= MAX_STATE_KEYS else None

    @property
    def known(self) -> bool:
        """False once the state passed its bound and no longer says what was seen."""
        return self._keys is not None

    def __len__(self) -> int:
        return len(self._keys or ())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RepeatState) and (self.config, self._keys) == (other.config, other._keys)

    def __hash__(self) -> int:
        return hash((self.config, self._keys))

    def __repr__(self) -> str:
        return f"RepeatState({self.config!r}, {len(self) if self.known else 'unknown'})"

    def to_json(self) -> str:
        """A compact JSON form: config and the sorted digests as one base64 string."""
        keys = None if self._keys is None else base64.b64encode(b"".join(sorted(self._keys))).decode("ascii")
        return json.dumps({"config": self.config, "keys": keys}, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: str) -> RepeatState:
        """The state `to_json` wrote. Raises `LocalProtocolError` if `data` is not one."""
        try:
            obj = json.loads(data)
            config, keys = obj["config"], obj["keys"]
            if not isinstance(config, str) or not (keys is None or isinstance(keys, str)):
                raise TypeError("config must be a string and keys a string or null")
            if keys is None:
                return cls(config, None)
            raw = base64.b64decode(keys.encode("ascii"), validate=True)
        except (ValueError, TypeError, KeyError, binascii.Error, UnicodeError) as exc:
            raise LocalProtocolError(f"not a repeat state: {exc}") from exc
        if len(raw) % 16 or len(raw) // 16 > MAX_STATE_KEYS:
            raise LocalProtocolError("not a repeat state: wrong digest length or count")
        return cls(config, (raw[i : i + 16] for i in range(0, len(raw), 16)))

    def _seen(self, config: str) -> set[bytes]:
        if self.config != config:
            raise LocalProtocolError(
                f"repeat state made for {self.config!r}, not {config!r}: compress from the first message"
            )
        if self._keys is None:
            raise LocalProtocolError("repeat state is unknown (past its bound): compress from the first message")
        return set(self._keys)


def drop_repeats(
    docs: Sequence[tuple[list[Unit], bool, bool]],
    resplit: Callable[[str], list[Unit]],
    seen: set[bytes],
) -> list[str]:
    """New texts for `docs`, each given as (units, instruction-giving?, ends a
    message?), in order. `seen` (digests of earlier messages' units) grows as messages
    end; `resplit` gives the units of a text, for the next round of the fixed point."""
    out: list[str] = []
    pending: list[bytes] = []
    for units, instructive, ends_message in docs:
        if not instructive:
            out.append("".join(u.text for u in units))
        else:
            text = "".join(u.text for u in units)
            while True:
                contexts, depth, headed = _contexts(units)
                digests = [_digest(c, u.key) if u.key else b"" for c, u in zip(contexts, units)]
                rep = [bool(u.key) and d in seen for u, d in zip(units, digests)]
                new = _drop(units, rep, depth, headed) if any(rep) else text
                if new == text:
                    break
                text = new
                units = resplit(text)
            pending.extend(d for d in digests if d)
            out.append(text)
        if ends_message:
            seen.update(pending)
            pending.clear()
    return out


def _drop(units: list[Unit], rep: list[bool], depth: list[int], headed: list[bool]) -> str:
    n = len(units)
    drop = [False] * n
    keyed = [k for k in range(n) if units[k].key]
    first_keyed = keyed[0] if keyed else n

    def next_keyed(k: int) -> int | None:
        return next((j for j in range(k + 1, n) if units[j].key), None)

    def droppable(i: int, end: int) -> bool:
        run = units[i : end + 1]
        after = next_keyed(end)
        return (
            sum(len(u.key) for u in run) >= MIN_RUN_CHARS
            and (end == n - 1 or not units[end + 1].key)
            and (i == first_keyed or after is None)
            and depth[i] == 0
            and (units[i].opens_section or not headed[i])
            and (after is None or units[after].opens_section or not any(u.headings for u in run))
            and _balanced(run)
        )

    i = 0
    while i < n:
        if not (units[i].key and rep[i]):
            i += 1
            continue
        # The maximal run of repeated units (and the separators between them).
        j = i
        last = i
        while j < n and (not units[j].key or rep[j]):
            if units[j].key:
                last = j
            j += 1
        if i == 0 or not units[i - 1].key:
            # The longest part of it, from its start, that may go.
            end = next((e for e in range(last, i - 1, -1) if units[e].key and droppable(i, e)), None)
            if end is not None:
                for k in range(i, end + 1):
                    drop[k] = True
                k = end + 1
                if i == 0 or end + 1 < n:
                    # Take the separators after the run (or, at the very end, before it).
                    while k < n and not units[k].key:
                        drop[k] = True
                        k += 1
        i = last + 1
    if not any(drop):
        return "".join(u.text for u in units)
    if all(drop[k] or not units[k].key for k in range(n)):
        return "".join(u.text for u in units)
    kept = [k for k in range(n) if not drop[k]]
    text = "".join(units[k].text for k in kept)
    if drop[n - 1]:
        # The run ended the text: drop the separators before it too, and end the text
        # without a line ending, as the whitespace pass ends every text.
        while kept and not units[kept[-1]].key:
            kept.pop()
        text = "".join(units[k].text for k in kept)
        if text.endswith("\n"):
            text = text[:-2] if text.endswith("\r\n") else text[:-1]
    return text
