"""Markdown block structure: fenced code, unfenced JSON and prose.

Fences follow CommonMark 0.31.2 §4.5: an opening run of at least three backticks or
tildes indented at most three spaces, an info string whose first word names the
language (a backtick fence's info string may not contain a backtick), and a closing
run of the same character, at least as long, followed only by spaces or tabs.

Two deliberate departures keep compression safe rather than faithful:

* an unclosed top-level fence runs to the end of the document (as in CommonMark), and
  that whole tail is kept verbatim (`OPAQUE`);
* a fence inside a container (block quote, list item, or indented four spaces or
  more) is kept verbatim up to a matching closing line: we do not strip container
  prefixes, so we never rewrite code we cannot see whole.

Lines are split on LF only; a CR before it belongs to the line ending. We never use
`str.splitlines`, which also splits on VT, FF, NEL and U+2028 and would move text
between lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .json_pass import find_regions, parse_container

__all__ = ["Block", "PROSE", "FENCE", "JSON", "OPAQUE", "split_blocks", "split_lines", "is_blank"]

PROSE = "prose"
FENCE = "fence"
JSON = "json"
OPAQUE = "opaque"


@dataclass(slots=True)
class Block:
    """One block of a document.

    For a fence, `opener`, `body` and `closer` are its three parts (each with its line
    endings; `closer` may lack one at the end of the text) and `text` is unused; for the
    other kinds `text` holds the block.
    """

    kind: str
    text: str = ""
    lang: str = ""
    opener: str = ""
    body: str = ""
    closer: str = ""
    indent: int = 0
    marker: str = ""

    def full(self) -> str:
        if self.kind == FENCE:
            return self.opener + self.body + self.closer
        return self.text


# Any line that could open a fence, top level or inside a container. Group 1 is the
# prefix (indentation, block-quote markers, a list marker), group 2 the fence run.
_FENCE_OPEN = re.compile(
    r"^([ \t>]*(?:(?:[-+*]|[0-9]{1,9}[.)])[ \t]+)?)(`{3,}|~{3,})([^\n]*)$", re.M
)
# A fence run that opens or closes at the top level (CommonMark 0.31 §4.5: indented 0–3
# spaces, no container prefix).
_TOP_RUN = re.compile(r"^ {0,3}(?:`{3,}|~{3,})", re.M)
_LANG = re.compile(r"[A-Za-z0-9_+#.-]+")
_BLANK = re.compile(r"[ \t]*\r?\n?")
_LINE = re.compile(r"[^\n]*\n|[^\n]+")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split on LF only (see the module docstring)."""
    return _LINE.findall(text)


def is_blank(line: str) -> bool:
    """A line holding only spaces and tabs (the CommonMark notion of a blank line)."""
    return _BLANK.fullmatch(line) is not None


@lru_cache(maxsize=64)
def _closer(char: str, length: int, top: bool) -> re.Pattern[str]:
    prefix = r"^ {0,3}" if top else r"^[ \t>]*"
    return re.compile(prefix + re.escape(char) + "{%d,}" % length + r"[ \t]*\r?$", re.M)


def _language(info: str) -> str:
    # The first word of the info string; also accept "{python}" and "python title=x".
    m = _LANG.search(info.strip().lstrip("{."))
    return m.group(0).lower() if m else ""


def split_blocks(text: str, *, json_regions: bool) -> list[Block]:
    """Cut `text` into prose, fence, JSON and opaque blocks whose texts concatenate
    back to `text` exactly.

    With `json_regions`, a whole text that is a JSON object or array is one JSON block,
    and so is each run of prose lines that starts with `{` or `[` in column 0 and parses
    as one (see `json_pass.find_regions`).
    """
    if json_regions:
        stripped = text.strip(" \t\r\n")
        if stripped[:1] in ("{", "[") and parse_container(stripped) is not None:
            return [Block(JSON, text)]
    blocks: list[Block] = []
    pos = 0
    search_from = 0
    n = len(text)

    def prose(end: int) -> None:
        if end > pos:
            chunk = text[pos:end]
            if json_regions:
                for is_json, part in find_regions(chunk):
                    blocks.append(Block(JSON if is_json else PROSE, part))
            else:
                blocks.append(Block(PROSE, chunk))

    while True:
        m = _FENCE_OPEN.search(text, search_from)
        if m is None:
            break
        prefix, marker, info = m.group(1), m.group(2), m.group(3)
        line_start = m.start()
        nl = text.find("\n", m.end())
        line_end = n if nl < 0 else nl + 1
        char = marker[0]
        if char == "`" and "`" in info:
            # CommonMark: not a fence (an inline code span at the start of a line).
            search_from = line_end
            continue
        top = len(prefix) <= 3 and prefix.strip(" ") == ""
        cm = _closer(char, len(marker), top).search(text, line_end)
        if cm is None:
            if top:
                prose(line_start)
                blocks.append(Block(OPAQUE, text[line_start:]))
                pos = search_from = n
                break
            search_from = line_end
            continue
        if not top and _TOP_RUN.search(text, line_end, cm.start()):
            # A top-level fence line between a container fence's lines ends the
            # container (a fence is never a lazy continuation line, §5.1): what follows
            # is not that fence's. Seen as one, it swallowed a top-level opener and left
            # that fence's body to the prose passes (found by tests/unit/
            # test_compress_state.py: a "```json" fence's body changed).
            search_from = line_end
            continue
        nl = text.find("\n", cm.end())
        close_end = n if nl < 0 else nl + 1
        prose(line_start)
        if top:
            blocks.append(
                Block(
                    FENCE,
                    lang=_language(info),
                    opener=text[line_start:line_end],
                    body=text[line_end : cm.start()],
                    closer=text[cm.start() : close_end],
                    indent=len(prefix),
                    marker=marker,
                )
            )
        else:
            blocks.append(Block(OPAQUE, text[line_start:close_end]))
        pos = search_from = close_end
    prose(n)
    return blocks
