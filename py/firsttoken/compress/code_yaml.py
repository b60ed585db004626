"""YAML lexer (YAML 1.2.2).

A `#` starts a comment when a space, a tab or the line start precedes it (§6.6), and
never inside a quoted scalar or a block scalar. Quotes open a scalar only where a
scalar may start (line start, after `- `, `? `, `: `, `[`, `{` or `,`): the apostrophe
in `key: don't` is plain text. Block scalars (`|`, `>`, §8.1) are kept byte for byte:
every following line that is blank or indented deeper than the indicator's line (a
conservative stand-in for the spec's content indentation).

Blank lines matter inside a multi-line plain scalar (line folding, §6.5), so one may
only go when the next content line plainly starts a new node (a `key:`, a `- ` entry,
a document marker); see `may_drop`. Indentation is never touched.
"""

from __future__ import annotations

import re

from .code import DIRECTIVE, GiveUp, Span, lexed

__all__ = ["lex_yaml", "may_drop"]

_BLOCK = re.compile(r"[|>][1-9+-]{0,2}[ \t]*(?:#[^\n]*)?\r?(?:\n|\Z)")
_DQ = re.compile(r'"(?:[^"\\]|\\[\s\S])*"')
_SQ = re.compile(r"'(?:[^']|'')*'")
_AFTER_CLOSE = re.compile(r"[ \t]*(?:#[^\n]*|[:,\]}][^\n]*)?\r?(?:\n|\Z)")
_PLAIN = re.compile(r"[^ \t\r\n#:,\[\]{}]+")
_DIRECTIVE = re.compile(r"#\s*(?:yaml-language-server|yamllint|@schema|cloud-config)|#cloud-config|#!")
_NEW_NODE = re.compile(
    r"[ \t]*(?:-(?:[ \t]|\r?$)|\?[ \t]|(?:\"[^\"\n]*\"|'[^'\n]*'|[^ \t#'\"\[{\r\n][^#\r\n]*?)[ \t]*:(?:[ \t]|\r?$)|---|\.\.\.|#)"
)


def lex_yaml(text: str) -> list[Span] | None:
    """String, block-scalar and comment spans of a YAML document, or None."""
    return lexed(_scan, text)


def _indent(text: str, start: int) -> int:
    i = start
    while i < len(text) and text[i] == " ":
        i += 1
    return i - start


# Longer than 80 lines (issue 47, item 3), on purpose: one character loop with its
# state (line start, flow depth, whether a scalar may start) in locals, the lexer's hot
# path; a call per construct would cost a call per character on large YAML.
def _scan(text: str) -> list[Span]:
    spans: list[Span] = []
    n = len(text)
    p = 0
    line_start = 0
    start_ok = True  # a scalar may start here
    flow = 0
    while p < n:
        c = text[p]
        if c == "\n":
            p += 1
            line_start = p
            if flow == 0:
                start_ok = True
            continue
        if c in " \t\r":
            p += 1
            continue
        if c == "#" and (p == line_start or text[p - 1] in " \t"):
            nl = text.find("\n", p)
            end = n if nl < 0 else nl
            if end > p and text[end - 1] == "\r":
                end -= 1
            body = text[p:end]
            cat = DIRECTIVE if (line_start == 0 and _DIRECTIVE.match(body)) or body.startswith("# yaml-language-server") else "plain"
            spans.append(Span(p, end, "c", cat))
            p = end
            continue
        if start_ok and c in "'\"":
            m = (_DQ if c == '"' else _SQ).match(text, p)
            if m is None:
                raise GiveUp
            if "\n" in m.group() and _AFTER_CLOSE.match(text, m.end()) is None:
                raise GiveUp  # a multi-line quote that closes oddly: we may be out of step
            spans.append(Span(p, m.end(), "s"))
            p = m.end()
            start_ok = False
            continue
        if start_ok and c in "|>":
            m = _BLOCK.match(text, p)
            if m is not None:
                hash_at = text.find("#", p, m.end())
                if hash_at > 0:
                    end = m.end()
                    while end > hash_at and text[end - 1] in "\r\n":
                        end -= 1
                    spans.append(Span(hash_at, end, "c"))
                parent = _indent(text, line_start)
                body_start = m.end()
                q = body_start
                last = body_start
                while q < n:
                    nl = text.find("\n", q)
                    end = n if nl < 0 else nl + 1
                    line = text[q:end]
                    if line.strip(" \t\r\n") == "":
                        q = end
                        continue
                    if _indent(text, q) <= parent:
                        break
                    q = end
                    last = end
                if last > body_start:
                    spans.append(Span(body_start, last, "s"))
                p = last if last > body_start else body_start
                line_start = p
                start_ok = True
                continue
        nxt = text[p + 1 : p + 2]
        if c in "-?" and (nxt in ("", " ", "\t", "\n", "\r")):
            p += 1
            start_ok = True
            continue
        if c in "[{":
            flow += 1
            p += 1
            start_ok = True
            continue
        if c in "]}":
            flow = max(0, flow - 1)
            p += 1
            start_ok = False
            continue
        if c == "," and flow:
            p += 1
            start_ok = True
            continue
        if c == ":" and (nxt in ("", " ", "\t", "\n", "\r") or (flow and nxt in ",]}")):
            p += 1
            start_ok = True
            continue
        m = _PLAIN.match(text, p)
        p = m.end() if m is not None else p + 1
        start_ok = False
    return spans


def may_drop(lines: list[str], i: int) -> bool:
    """May blank (or emptied) line `i` go? Only if the next content line starts a node."""
    for j in range(i + 1, len(lines)):
        line = lines[j]
        if line.strip(" \t\r\f") == "":
            continue
        return _NEW_NODE.match(line) is not None
    return True
