"""Table pass: padding inside GitHub-flavoured Markdown tables (GFM spec §4.10).

A table is a header row, a delimiter row with as many cells (each `:?-+:?`), and the
following non-blank rows that contain a pipe. Cells are split on unescaped pipes, and
pipes inside inline code spans are hidden first (see `prose.protect_code_spans`), so
a pipe that GFM would split there is left alone: a missed saving, never a rewritten
code span.

Every whitespace run at a cell edge becomes one space (none stays none, so words never
merge), trailing whitespace goes, and delimiter cells shrink to `---`, `:--`, `--:` or
`:-:`, which keeps their alignment.
"""

from __future__ import annotations

import re

from .prose import protect_code_spans

__all__ = ["compress_tables"]

_DELIM = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*\r?\n?")
_PIPE = re.compile(r"(?<!\\)\|")
_ALIGN = {(False, False): "---", (True, False): ":--", (False, True): "--:", (True, True): ":-:"}


def _cells(line: str) -> list[str]:
    body = line.strip(" \t\r\n")
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return _PIPE.split(body)


def _is_row(line: str) -> bool:
    return _PIPE.search(line) is not None and line.strip(" \t\r\n") != "" and not line.startswith(
        ("    ", "\t", " \t", "  \t", "   \t")
    )


def _row(line: str, delimiter: bool) -> str:
    content = line.rstrip("\r\n")
    ending = line[len(content) :]
    body = content.lstrip(" ")
    indent = content[: len(content) - len(body)]
    cells = _PIPE.split(body.rstrip(" \t"))
    out = []
    for cell in cells:
        core = cell.strip(" \t")
        if not core:
            out.append(" " if cell else "")
            continue
        if delimiter:
            core = _ALIGN[(core.startswith(":"), core.endswith(":"))]
        lead = " " if cell[0] in " \t" else ""
        trail = " " if cell[-1] in " \t" else ""
        out.append(lead + core + trail)
    return indent + "|".join(out) + ending


def _tables(text: str) -> str:
    lines = re.findall(r"[^\n]*\n|[^\n]+", text)
    i = 0
    n = len(lines)
    changed = False
    while i + 1 < n:
        head, delim = lines[i], lines[i + 1]
        if (
            "|" in delim
            and _DELIM.fullmatch(delim)
            and _is_row(head)
            and len(_cells(head)) == len(_cells(delim))
        ):
            new = [_row(head, False), _row(delim, True)]
            j = i + 2
            while j < n and _is_row(lines[j]):
                new.append(_row(lines[j], False))
                j += 1
            if new != lines[i:j]:
                lines[i:j] = new
                changed = True
            i = j
        else:
            i += 1
    return "".join(lines) if changed else text


def compress_tables(text: str) -> str:
    """A prose block with the padding of its GFM tables removed."""
    if "|" not in text or "-" not in text:
        return text
    return protect_code_spans(text, _tables)
