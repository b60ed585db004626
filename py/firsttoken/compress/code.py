"""Code pass: comments, trailing whitespace and blank lines inside fenced code.

Every language goes through the same three steps:

1. a lexer (a real tokenizer where the standard library has one, `tokenize` for
   Python; small hand-written lexers elsewhere) returns the string literals and the
   comments of a block as `Span`s, or None when it meets something it is not sure
   about, and then the block stays untouched;
2. `rebuild` cuts the comments a pass may remove and drops trailing whitespace and
   blank lines (and, where the language ignores it, indentation), never inside a
   string span (a multi-line string, a heredoc body, a YAML block scalar, a `<pre>`
   element);
3. a self-check: the output is lexed again and must yield the same string literals,
   byte for byte, and the same words once removable comments are blanked out
   (Python: `ast.dump` equal). Any difference, or any exception, leaves the block
   untouched.

Comment categories decide which pass removes what (`CODE_PASS`, `DOCS_PASS`). The
lexers find `plain`, `doc` (Python docstrings and Rust doc comments, which the
language turns into program data: `__doc__`, `#[doc]` attributes), `license` (a
leading comment group that mentions a copyright or licence) and `directive`
(shebangs, encoding cookies, pragmas, `//go:build`, `/// <reference>`, `@ts-ignore`,
lint switches, HTML conditional comments, Dockerfile parser directives: never
removed, because tools or the language act on it); `code_comments` then sorts the
plain ones into `intent` (a TODO or a question), `code` (commented out),
`decorative` (rules and banners) and what stays `plain` (a remark). The `code` pass
(``balanced``) removes remarks, licence headers, commented-out code and decoration;
the `docs` pass (``max``) removes doc comments, docstrings and intent.

`rebuild` counts what it removed into a `tally` (comments by kind, as a person sees
them: a run of whole-line comments of one kind on consecutive lines is one; and
blank lines), which the report shows (`report.Report.removed`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "Span", "Language", "GiveUp", "rebuild", "classify_leading_license", "lexed", "words_outside", "CODE_PASS",
    "DOCS_PASS",
]

PLAIN = "plain"
DOC = "doc"
LICENSE = "license"
DIRECTIVE = "directive"
INTENT = "intent"
CODE = "code"
DECOR = "decorative"

#: What the `code` pass (``balanced``) removes.
CODE_PASS = frozenset({PLAIN, LICENSE, CODE, DECOR})
#: What the `docs` pass (``max``) removes on top of it.
DOCS_PASS = frozenset({DOC, INTENT})
#: The report's key for blank lines dropped from code (comment kinds use their
#: category names).
BLANK_LINE = "blank_line"

_LICENSE = re.compile(r"(?i)copyright|licen[cs]e|spdx-license-identifier|\(c\)\s*\d{4}|all rights reserved")


@dataclass(slots=True)
class Span:
    """A string literal (`kind == "s"`) or a comment (`kind == "c"`, with `cat`)."""

    start: int
    end: int
    kind: str
    cat: str = PLAIN


@dataclass(frozen=True, slots=True)
class Language:
    """How to lex one language family and how to glue text around a cut comment."""

    name: str
    lex: Callable[[str], list[Span] | None]
    #: what replaces a comment between two visible characters (C: a space, since a
    #: comment separates tokens; HTML: nothing, since a comment renders as nothing)
    gap: str = " "
    #: extra rule: may blank or emptied line `i` of `lines` go? (YAML needs one)
    may_drop: Callable[[list[str], int], bool] | None = None
    #: may a run of spaces between two tokens become one space? (not in YAML, where
    #: an unquoted scalar's inner spaces are its content)
    inner_runs: bool = True
    #: may leading indentation go? (only where the grammar ignores it; see `rebuild`)
    dedent: bool = False


class GiveUp(Exception):
    """Raised inside a hand-written lexer that meets what it cannot follow (`lexed`)."""


def lexed(scan: Callable[[str], list[Span]], text: str) -> list[Span] | None:
    """The spans `scan` finds in `text`, with the leading license marked; None when it
    gave up (`GiveUp`): the block is then left as written (`fences`)."""
    try:
        spans = scan(text)
    except GiveUp:
        return None
    classify_leading_license(text, spans)
    return spans


def classify_leading_license(text: str, spans: list[Span]) -> None:
    """Mark the leading comment group `license` if one of its comments looks like one.

    The group is the comments before any code, not separated by a blank line; a
    directive (a shebang) may precede it.
    """
    group: list[Span] = []
    pos = 0
    for sp in spans:
        gap = text[pos : sp.start]
        if gap.strip():
            break
        if sp.kind != "c":
            break
        if group and gap.count("\n") > 1:
            break
        if sp.cat == DIRECTIVE and not group:
            pos = sp.end
            continue
        group.append(sp)
        pos = sp.end
    if any(_LICENSE.search(text, sp.start, sp.end) for sp in group):
        for sp in group:
            if sp.cat in (PLAIN, DOC):
                sp.cat = LICENSE


def _tail_state(piece: str, blank: bool, first: str) -> tuple[bool, str]:
    if not piece:
        return blank, first
    nl = piece.find("\n")
    if nl >= 0:
        blank = piece[:nl].strip(" \t\r\f") == ""
    else:
        blank = blank and piece.strip(" \t\r\f") == ""
    return blank, piece[0]


def _head(pieces: list[tuple[str, str]]) -> tuple[bool, str]:
    # The tail state recomputed after an edit, reading from the head of the tail (the
    # end of the reversed list) up to the first line ending.
    first = ""
    for _, piece in reversed(pieces):
        if piece:
            first = piece[0]
            break
    blank = True
    for _, piece in reversed(pieces):
        nl = piece.find("\n")
        if (piece if nl < 0 else piece[:nl]).strip(" \t\r\f"):
            blank = False
            break
        if nl >= 0:
            break
    return blank, first


def rebuild(
    text: str,
    spans: Sequence[Span],
    remove: frozenset[str],
    *,
    gap: str,
    squeeze: bool,
    may_drop: Callable[[list[str], int], bool] | None = None,
    inner_runs: bool = False,
    dedent: bool = False,
    tally: dict[str, int] | None = None,
) -> str:
    """`text` without the comments whose category is in `remove`.

    With `squeeze`, also without trailing whitespace and blank lines; otherwise only the
    lines a cut touched lose their trailing whitespace, or go if nothing else is left.

    With `squeeze` and `dedent`, a line also loses its leading whitespace when that
    whitespace is code: not when the line starts inside a string literal or a kept
    comment (a multi-line string keeps its inner line starts), nor before a directive
    comment (an indented `//go:noinline` is a remark, one in column 0 an instruction).
    A line continued from the one before (which ends in an odd number of backslashes:
    C, shell and Dockerfile join the two) keeps one space, since the joined text would
    otherwise glue two words together.

    `tally`, when given, gains the number of comments removed per category (a run of
    whole-line comments of one category on consecutive lines counts once) and of
    blank lines dropped (`BLANK_LINE`; not lines a cut emptied).
    """
    # Decide from the last comment back, so each decision sees the text after it as it
    # will be: "is the rest of this line blank once later comments are gone" is what
    # makes the result idempotent.
    pieces: list[tuple[str, str]] = []  # (kind, text), reversed
    cursor = len(text)
    blank, first = True, ""
    cut: list[Span] = []  # removed comments, last first
    prev_end = [0] * len(spans)
    for i in range(1, len(spans)):
        prev_end[i] = spans[i - 1].end
    for i in range(len(spans) - 1, -1, -1):
        sp = spans[i]
        code = text[sp.end : cursor]
        pieces.append(("code", code))
        blank, first = _tail_state(code, blank, first)
        body = text[sp.start : sp.end]
        if sp.kind == "s" or sp.cat not in remove:
            pieces.append(("s" if sp.kind == "s" else "dir" if sp.cat == DIRECTIVE else "keep", body))
            blank, first = _tail_state(body, blank, first)
            cursor = sp.start
            continue
        lo = prev_end[i]
        if blank:
            s = sp.start
            while s > lo and text[s - 1] in " \t":
                s -= 1
            if s > lo and text[s - 1] == "\\" and s < sp.start:
                s += 1  # keep one space: "\ " is an escaped space, "\" would join lines
            pieces.append(("cut", ""))
            cut.append(sp)
            cursor = s
            continue
        if "\n" in body:
            # A multi-line comment with code after it on its last line: cutting it
            # would join lines (a newline inside a comment counts in Go and JS), so
            # it stays.
            pieces.append(("keep", body))
            blank, first = _tail_state(body, blank, first)
            cursor = sp.start
            continue
        before = text[sp.start - 1] if sp.start > lo else "\n"
        if before in " \t\n":
            # Drop the comment and the spaces that followed it.
            j = len(pieces) - 1
            while j >= 0 and pieces[j][0] in ("code", "cut"):
                kind, piece = pieces[j]
                if kind == "code":
                    stripped = piece.lstrip(" \t")
                    pieces[j] = ("code", stripped)
                    if stripped:
                        break
                elif piece:
                    break
                j -= 1
            blank, first = _head(pieces)
            pieces.append(("cut", ""))
        elif first in (" ", "\t"):
            pieces.append(("cut", ""))
        else:
            pieces.append(("cut", gap))
            blank, first = _tail_state(gap, blank, first)
        cut.append(sp)
        cursor = sp.start
    pieces.append(("code", text[:cursor]))
    pieces.reverse()
    if squeeze and inner_runs:
        _squeeze_runs(pieces)
    blanks = [0]
    out = _lines(pieces, squeeze, may_drop, squeeze and dedent, blanks)
    if tally is not None:
        cut.reverse()
        _count_cuts(text, cut, tally)
        if blanks[0]:
            tally[BLANK_LINE] = tally.get(BLANK_LINE, 0) + blanks[0]
    return out


def _count_cuts(text: str, cut: Sequence[Span], tally: dict[str, int]) -> None:
    prev: Span | None = None
    for sp in cut:
        if not (prev is not None and prev.cat == sp.cat and _adjacent_lines(text, prev, sp)):
            tally[sp.cat] = tally.get(sp.cat, 0) + 1
        prev = sp


def _adjacent_lines(text: str, a: Span, b: Span) -> bool:
    # Both whole-line comments, b on the line right after a.
    gap = text[a.end : b.start]
    if gap.count("\n") != 1 or gap.strip(" \t\f\r\n"):
        return False
    start = text.rfind("\n", 0, a.start) + 1
    return not text[start : a.start].strip(" \t\f")


# A run of spaces after a visible character (not a backslash: "\ " escapes a space in
# shells) and before another one or the end of the code piece (a literal or a comment
# follows). Indentation, which follows a line ending, never matches.
_INNER_RUN = re.compile(r"(?<=[^ \t\r\n\\]) {2,}(?=[^ \t\r\n]|\Z)")


def _squeeze_runs(pieces: list[tuple[str, str]]) -> None:
    prev = "\n"
    for i, (kind, piece) in enumerate(pieces):
        if kind == "code" and piece:
            if "  " in piece:
                piece = _INNER_RUN.sub(" ", piece)
                if piece.startswith("  ") and prev not in " \t\r\n\\":
                    piece = " " + piece.lstrip(" ")
                pieces[i] = (kind, piece)
        if piece:
            prev = piece[-1]


# Longer than 80 lines (issue 47, item 3), on purpose: the hot path of code compression,
# a pass over the pieces that keeps each line's state (inside a string, touched by a cut,
# its code indent) in locals and parallel lists, then the rules over those lines; in
# parts, that state would be packed and unpacked for every piece.
def _lines(
    pieces: list[tuple[str, str]],
    squeeze: bool,
    may_drop: Callable[[list[str], int], bool] | None,
    dedent: bool,
    blanks: list[int],
) -> str:
    # Forward: cut the output into lines, knowing for each whether its end lies inside a
    # string (then it is kept as it is), whether it holds a string, whether a cut
    # touched it, and how much of its leading whitespace is code (`lead`).
    contents: list[str] = []
    endings: list[str] = []
    protected: list[bool] = []
    has_str: list[bool] = []
    touched: list[bool] = []
    lead: list[int] = []
    cur: list[str] = []
    cur_str = False
    cur_touch = False
    cur_lead = 0
    lead_open = dedent  # still reading the line's leading whitespace
    for kind, piece in pieces:
        if kind == "cut":
            cur_touch = True
            if piece:
                cur.append(piece)
                if lead_open:
                    cur_lead, lead_open = _leading(kind, piece, cur_lead)
            continue
        if kind == "s":
            cur_str = True
        start = 0
        while True:
            nl = piece.find("\n", start)
            if nl < 0:
                seg = piece[start:]
                cur.append(seg)
                if lead_open and seg:
                    cur_lead, lead_open = _leading(kind, seg, cur_lead)
                break
            seg = piece[start:nl]
            cur.append(seg)
            if lead_open and seg:
                cur_lead, lead_open = _leading(kind, seg, cur_lead)
            contents.append("".join(cur))
            endings.append("\n")
            protected.append(kind == "s")
            has_str.append(cur_str)
            touched.append(cur_touch)
            lead.append(cur_lead)
            cur = []
            # The next line starts inside this string only if the string goes on.
            cur_str = kind == "s" and nl + 1 < len(piece)
            cur_touch = False
            cur_lead = 0
            lead_open = dedent
            start = nl + 1
    contents.append("".join(cur))
    endings.append("")
    protected.append(False)
    has_str.append(cur_str)
    touched.append(cur_touch)
    lead.append(cur_lead)

    out: list[str] = []
    cont = False  # the previous kept line ends with a line-joining backslash
    n = len(contents)
    kept: list[str] = contents  # for may_drop: neighbours as they are now
    for i in range(n):
        line = contents[i]
        cr = line.endswith("\r") and not protected[i]
        if cr:
            line = line[:-1]
        if not protected[i] and (squeeze or touched[i]):
            s = line.rstrip(" \t")
            if not (s.endswith("\\") and len(s) < len(line)):
                line = s
        if lead[i]:
            rest = line[lead[i] :]
            line = " " + rest if cont and rest else rest
        drop = (
            not protected[i]
            and not has_str[i]
            and not cont
            and line.strip(" \t\f") == ""
            and (squeeze or touched[i])
            and (may_drop is None or may_drop(kept, i))
        )
        if i == n - 1 and not line and not cr:
            break
        if drop:
            if not touched[i]:
                blanks[0] += 1
            continue
        out.append(line + ("\r" if cr else "") + endings[i])
        if not protected[i]:
            tail = len(line) - len(line.rstrip("\\"))
            cont = tail % 2 == 1
        else:
            cont = False
    return "".join(out)


def _leading(kind: str, seg: str, lead: int) -> tuple[int, bool]:
    """(code whitespace at the line start so far, whether it may still grow) after the
    non-empty segment `seg` of a piece of `kind` joins the line."""
    if kind == "code" or kind == "cut":
        rest = seg.lstrip(" \t")
        return lead + len(seg) - len(rest), not rest
    if kind == "dir":
        return 0, False
    return lead, False


_WS = re.compile(r"[ \t\r\n\f\v]+")


def words_outside(text: str, spans: Sequence[Span], remove: frozenset[str], gap: str) -> tuple[list[str], list[str]]:
    """(words of `text` with removable comments replaced by `gap`, string literals)."""
    parts: list[str] = []
    strings: list[str] = []
    pos = 0
    for sp in spans:
        if sp.kind == "c" and sp.cat in remove:
            parts.append(text[pos : sp.start])
            parts.append(gap)
        else:
            parts.append(text[pos : sp.end])
            if sp.kind == "s":
                strings.append(text[sp.start : sp.end])
        pos = sp.end
    parts.append(text[pos:])
    return _WS.split("".join(parts).strip(" \t\r\n\f\v")), strings
