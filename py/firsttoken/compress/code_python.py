"""Python blocks: the standard library's own tokenizer and parser.

`tokenize` (Python docs, "tokenize — Tokenizer for Python source") gives COMMENT and
STRING tokens with exact positions, so a `#` inside a string is never a comment. On
3.12+ an f-string arrives as FSTRING_START … FSTRING_END with the inner tokens between
(PEP 701; 3.14 adds TSTRING_* for PEP 750 t-strings); the whole range is one string
literal to us, and a comment inside a replacement field stays.

The block must parse with `ast.parse` before we touch it, and the result must give the
same `ast.dump` (positions excluded) or we keep the original. Code that this
interpreter cannot parse, such as 3.12 syntax on 3.11, a `>>>` session or a fragment,
is left untouched; so a block's output depends on the Python grammar in use, which is
why `COMPRESSION_VERSION` names the interpreter.

Indentation is syntax, but only its structure is: the tokenizer turns it into INDENT
and DEDENT tokens, and any consistent width gives the same program. With `squeeze`
(the `code` pass) every statement line is indented one space per block level, and the
lines that continue it (inside brackets, after a backslash) move left by as much as
it did, so their alignment holds. In o200k a run of spaces is a token of its own and
only one space merges with the word after it: on the corpus's Python blocks, after
comments and blank lines went, one space per level took them from 2326 to 2263
tokens (one tab per level: 2289). Lines inside a string literal never move. A
comment that stays on a line of its own (a TODO, a question) takes the level of the
statement after it, which is where a reader looks for what it is about (at the end,
the level it was written in).

Docstrings are strings (`__doc__`), not comments: only the `docs` pass removes them,
and only where the body keeps another statement (no `pass` is ever invented) and that
statement is not itself a bare string, which would become the next docstring.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from .code import DIRECTIVE, DOC, Span, classify_leading_license, rebuild
from .code_comments import classify_comments
from .markdown import split_lines

__all__ = ["compress_python"]

_FSTART = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)}
_FEND = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)}
_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*[-\w.]+")
_DIRECTIVE = re.compile(
    r"#\s*(?:type:|noqa|pragma|pylint:|mypy:|fmt:|isort:|pyright:|ruff:|nosec|pyre-|flake8:|pytype:)"
)
_LONE_CR = re.compile(r"\r(?!\n)")


def _lex(text: str, lines: list[str]) -> list[Span]:
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def off(pos: tuple[int, int]) -> int:
        return starts[pos[0] - 1] + pos[1]

    spans: list[Span] = []
    depth = 0
    fstart = (0, 0)
    for tok in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
        t = tok.type
        if t in _FSTART:
            if depth == 0:
                fstart = tok.start
            depth += 1
        elif t in _FEND:
            depth -= 1
            if depth == 0:
                spans.append(Span(off(fstart), off(tok.end), "s"))
        elif depth:
            continue
        elif t == tokenize.STRING:
            spans.append(Span(off(tok.start), off(tok.end), "s"))
        elif t == tokenize.COMMENT:
            row = tok.start[0]
            s = tok.string
            cat = "plain"
            if (row == 1 and s.startswith("#!")) or (row <= 2 and _COOKIE.match(lines[row - 1])):
                cat = DIRECTIVE
            elif _DIRECTIVE.match(s):
                cat = DIRECTIVE
            spans.append(Span(off(tok.start), off(tok.end), "c", cat))
    classify_leading_license(text, spans)
    classify_comments(text, spans, "python")
    return spans


def _char_col(line: str, byte_col: int) -> int:
    # ast positions count UTF-8 bytes; tokenize and str slicing count characters.
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", "replace"))


def _docstrings(tree: ast.Module, lines: list[str], spans: list[Span]) -> list[Span]:
    """Turn removable docstrings from string spans into `doc` comment spans; drop the
    docstring nodes from `tree` so that it is the expected result."""
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    by_start = {sp.start: i for i, sp in enumerate(spans) if sp.kind == "s"}
    replace: dict[int, Span] = {}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if len(body) < 2 or not _is_str_expr(body[0]) or _is_str_expr(body[1]):
            continue
        doc = body[0]
        if doc.end_lineno is None or doc.end_col_offset is None:
            continue
        first = lines[doc.lineno - 1]
        last = lines[doc.end_lineno - 1]
        c0 = _char_col(first, doc.col_offset)
        c1 = _char_col(last, doc.end_col_offset)
        if first[:c0].strip(" \t\f"):
            continue
        a = starts[doc.lineno - 1] + c0
        b = starts[doc.end_lineno - 1] + c1
        i = by_start.get(a)
        if i is None:
            continue
        j = i
        while j < len(spans) and spans[j].end < b:
            j += 1
        if j >= len(spans) or spans[j].end != b or any(sp.kind != "s" for sp in spans[i : j + 1]):
            continue
        replace[i] = Span(a, b, "c", DOC)
        for k in range(i + 1, j + 1):
            replace[k] = None  # type: ignore[assignment]
        del body[0]
    if not replace:
        return spans
    out: list[Span] = []
    for i, sp in enumerate(spans):
        if i in replace:
            if replace[i] is not None:
                out.append(replace[i])
        else:
            out.append(sp)
    return out


def _reindent(code: str) -> str:
    """`code` with one space per block level (see the module docstring)."""
    lines = split_lines(code)
    depth = 0
    at_start = True
    starts: dict[int, int] = {}  # row of a statement's first token -> its block level
    owner: dict[int, int] = {}  # row of a continuation line -> row of its statement
    frozen: set[int] = set()  # rows that begin inside a string literal
    row0 = 0
    fdepth = 0
    fstart = 0
    comments: list[int] = []  # rows holding only a comment, waiting for a statement
    level: dict[int, int] = {}  # such a row -> the level of the statement after it
    for tok in tokenize.generate_tokens(io.StringIO(code, newline="").readline):
        t = tok.type
        if t == tokenize.COMMENT and at_start and not fdepth and not lines[tok.start[0] - 1][: tok.start[1]].strip():
            comments.append(tok.start[0])
            level[tok.start[0]] = depth  # kept if no statement follows
            continue
        if t == tokenize.INDENT:
            depth += 1
            continue
        if t == tokenize.DEDENT:
            depth -= 1
            continue
        if t == tokenize.NEWLINE:
            at_start = True
            continue
        if t in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
            continue
        if at_start and not fdepth:
            starts[tok.start[0]] = depth
            row0 = tok.start[0]
            at_start = False
            for row in comments:
                level[row] = depth
            comments = []
        if t in _FSTART:
            if fdepth == 0:
                fstart = tok.start[0]
            fdepth += 1
        elif t in _FEND:
            fdepth -= 1
            if fdepth == 0:
                frozen.update(range(fstart + 1, tok.end[0] + 1))
        elif t == tokenize.STRING:
            frozen.update(range(tok.start[0] + 1, tok.end[0] + 1))
        if tok.end[0] > row0:
            for r in range(row0 + 1, tok.end[0] + 1):
                owner.setdefault(r, row0)
    shift: dict[int, int] = {}
    out: list[str] = []
    for row, line in enumerate(lines, 1):
        body = line.lstrip(" \t\f")
        indent = line[: len(line) - len(body)]
        if row in starts and body.strip():
            new = " " * starts[row]
            shift[row] = len(indent) - len(new) if indent.strip(" ") == "" else 0
            out.append(new + body)
        elif row in level and indent.strip(" \t") == "":
            out.append(" " * level[row] + body)
        elif row in owner and row not in frozen and body.strip() and indent.strip(" ") == "":
            cut = min(shift.get(owner[row], 0), len(indent))
            out.append(line[cut:])
        else:
            out.append(line)
    return "".join(out)


def _is_str_expr(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def compress_python(
    body: str, remove: frozenset[str], squeeze: bool, tally: dict[str, int] | None = None
) -> str | None:
    """`body` without removable comments (and docstrings, with `doc` in `remove`), or
    None when it does not parse or the result would not be the same program. `tally`
    gains what was removed (`code.rebuild`) when the result is returned."""
    if _LONE_CR.search(body) or "\x00" in body:
        return None
    try:
        tree = ast.parse(body)
        lines = split_lines(body)
        spans = _lex(body, lines)
    except (SyntaxError, ValueError, RecursionError, MemoryError, tokenize.TokenError):
        return None
    if DOC in remove:
        spans = _docstrings(tree, lines, spans)
    counted: dict[str, int] = {}
    out = rebuild(body, spans, remove, gap=" ", squeeze=squeeze, inner_runs=True, tally=counted)
    if squeeze:
        try:
            out = _reindent(out)
        except (SyntaxError, ValueError, tokenize.TokenError, IndentationError):
            return None
    if out == body:
        return body
    try:
        same = ast.dump(ast.parse(out)) == ast.dump(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if same and tally is not None:
        for kind, n in counted.items():
            tally[kind] = tally.get(kind, 0) + n
    return out if same else None
