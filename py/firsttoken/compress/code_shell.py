"""Shell (POSIX sh, bash, zsh) and Dockerfile lexers.

Shell quoting nests (`"$(echo "a # b")"`), so this is a small scanner with a stack
rather than one expression (POSIX.1-2017 XCU §2.2 Quoting, §2.3 Token Recognition,
§2.6.3 Command Substitution). What counts as a comment: a `#` at the start of a word
(after a line start, a space or a tab) at the top level; `$#`, `${#var}`, `a#b` and
anything inside quotes, `$( … )`, `${ … }` or backquotes are not touched (comments
inside a command substitution stay). Here-document bodies (§2.7.4) are data and are
kept byte for byte, as are quoted strings.

We give up on: a `case` inside `$( … )` (its `)` would unbalance our count), quotes
inside `${ … }`, an unterminated quote or here-document, and blocks that look like a
terminal session (`$ cmd` lines), where `#` may be a root prompt rather than a comment.

Dockerfile: only a line whose first non-blank character is `#` is a comment (Dockerfile
reference, "Format"); parser directives at the top (`# syntax=`, `# escape=`,
`# check=`) are kept; quoted strings are kept byte for byte, also across a line
continuation; a here-document (`<<EOF`), an `escape` directive or a quote we cannot
pair makes us give up.
"""

from __future__ import annotations

import re

from .code import DIRECTIVE, GiveUp, Span, classify_leading_license, lexed

__all__ = ["lex_shell", "lex_dockerfile"]

_TOP = re.compile(r"""[#'"`\\$\n]|<<""")
_HEREDOC = re.compile(r"""<<(-?)[ \t]*(?:'([^'\n]+)'|"([^"\n]+)"|\\?([A-Za-z_0-9][A-Za-z_0-9.-]*))""")
_SESSION = re.compile(r"^[ \t]*\$ ", re.M)
_DIRECTIVE = re.compile(r"#!|#\s*shellcheck\s")


def _squote(text: str, pos: int) -> int:
    end = text.find("'", pos + 1)
    if end < 0:
        raise GiveUp
    return end + 1


def _ansi(text: str, pos: int) -> int:
    # $'…' allows backslash escapes, including \'.
    m = re.compile(r"\$'(?:[^'\\]|\\[\s\S])*'").match(text, pos)
    if m is None:
        raise GiveUp
    return m.end()


def _backquote(text: str, pos: int) -> int:
    i = pos + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            return i + 1
        i += 1
    raise GiveUp


def _param(text: str, pos: int) -> int:
    # ${ … }: nested ${ are counted; a quote inside is beyond us.
    depth = 0
    i = pos
    n = len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            raise GiveUp
        if c == "\\":
            i += 2
            continue
        if text.startswith("${", i):
            depth += 1
            i += 2
            continue
        if c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise GiveUp


def _dquote(text: str, pos: int) -> int:
    i = pos + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == '"':
            return i + 1
        elif c == "`":
            i = _backquote(text, i)
        elif c == "$":
            i = _dollar(text, i)
        else:
            i += 1
    raise GiveUp


def _dollar(text: str, pos: int) -> int:
    nxt = text[pos + 1 : pos + 2]
    if nxt == "(":
        return _cmdsub(text, pos + 2)
    if nxt == "{":
        return _param(text, pos)
    if nxt == "'":
        return _ansi(text, pos)
    return pos + 1


def _cmdsub(text: str, pos: int) -> int:
    # After "$(": scan to the matching ")".
    depth = 1
    i = pos
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
        elif c == "'":
            i = _squote(text, i)
        elif c == '"':
            i = _dquote(text, i)
        elif c == "`":
            i = _backquote(text, i)
        elif c == "$":
            i = _dollar(text, i)
        elif c == "(":
            depth += 1
            i += 1
        elif c == ")":
            depth -= 1
            i += 1
            if depth == 0:
                return i
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n"):
            nl = text.find("\n", i)
            i = n if nl < 0 else nl
        elif c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
            raise GiveUp
        elif text.startswith("case", i) and (i == 0 or not text[i - 1].isalnum()) and not text[i + 4 : i + 5].isalnum():
            raise GiveUp
        else:
            i += 1
    raise GiveUp


def lex_shell(text: str) -> list[Span] | None:
    """String, here-document and comment spans of a shell script, or None."""
    if _SESSION.search(text):
        return None
    return lexed(_scan, text)


def _scan(text: str) -> list[Span]:
    spans: list[Span] = []
    pending: list[tuple[bool, str]] = []  # here-documents waiting for the line end
    pos = 0
    n = len(text)
    while True:
        m = _TOP.search(text, pos)
        if m is None:
            break
        i = m.start()
        c = m.group()
        if c == "\n":
            pos = i + 1
            if pending:
                pos = _bodies(text, pos, pending, spans)
                pending = []
            continue
        if pending and c in "'\"`$":
            # A quote after "<<EOF" on the same line could run past the body start.
            end = {"'": _squote, '"': _dquote, "`": _backquote, "$": _dollar}[c](text, i)
            if "\n" in text[i:end]:
                raise GiveUp
        if c == "#":
            if i == 0 or text[i - 1] in " \t\n":
                nl = text.find("\n", i)
                end = n if nl < 0 else nl
                body = text[i:end]
                cat = DIRECTIVE if (_DIRECTIVE.match(body) and (i == 0 or body.startswith("# shellcheck") or body.startswith("#shellcheck"))) else "plain"
                spans.append(Span(i, end, "c", cat))
                pos = end
            else:
                pos = i + 1
        elif c == "\\":
            pos = i + 2
        elif c == "'":
            pos = _squote(text, i)
            spans.append(Span(i, pos, "s"))
        elif c == '"':
            pos = _dquote(text, i)
            spans.append(Span(i, pos, "s"))
        elif c == "`":
            pos = _backquote(text, i)
            spans.append(Span(i, pos, "s"))
        elif c == "$":
            pos = _dollar(text, i)
            if pos > i + 1:
                spans.append(Span(i, pos, "s"))
        else:  # "<<"
            if text.startswith("<<<", i):
                pos = i + 3
                continue
            h = _HEREDOC.match(text, i)
            if h is None:
                raise GiveUp
            delim = h.group(2) or h.group(3) or h.group(4)
            pending.append((h.group(1) == "-", delim))
            pos = h.end()
    if pending:
        raise GiveUp
    return spans


def _bodies(text: str, pos: int, pending: list[tuple[bool, str]], spans: list[Span]) -> int:
    for strip_tabs, delim in pending:
        start = pos
        while True:
            if pos >= len(text):
                raise GiveUp
            nl = text.find("\n", pos)
            end = len(text) if nl < 0 else nl + 1
            line = text[pos:end].rstrip("\n").rstrip("\r")
            if (line.lstrip("\t") if strip_tabs else line) == delim:
                pos = end
                break
            pos = end
        # The span ends after the delimiter line's ending: the body keeps its bytes.
        spans.append(Span(start, pos, "s"))
    return pos


# A comment is a whole line whose first non-blank character is `#`. Quoted strings
# are shell (or exec-form JSON) strings; a backslash before a line end continues the
# instruction even inside quotes, since Docker joins lines before any shell reads them.
_DOCKER = re.compile(
    r"""(?P<c>^[ \t]*#[^\n]*)"""
    r"""|(?P<s>"(?:[^"\\\n]|\\\r?\n|\\[^\n])*"|'(?:[^'\\\n]|\\\r?\n|\\)*')"""
    r"""|(?P<bad>["'])""",
    re.M,
)
_DOCKER_DIRECTIVE = re.compile(r"#\s*(?:syntax|escape|check)\s*=", re.I)


def lex_dockerfile(text: str) -> list[Span] | None:
    """String and comment spans of a Dockerfile, or None."""
    if re.search(r"<<-?[ \t]*['\"]?[A-Za-z_]", text) or re.search(r"#\s*escape\s*=", text, re.I):
        return None
    spans: list[Span] = []
    header = True
    for m in _DOCKER.finditer(text):
        g = m.lastgroup
        if g == "bad":
            return None  # an apostrophe in an unquoted word, or an unclosed quote
        if g == "s":
            spans.append(Span(m.start(), m.end(), "s"))
            continue
        body = m.group().lstrip(" \t")
        start = m.end() - len(body)
        if header and _DOCKER_DIRECTIVE.match(body) and _only_comments_before(text, m.start()):
            spans.append(Span(start, m.end(), "c", DIRECTIVE))
            continue
        header = False
        spans.append(Span(start, m.end(), "c"))
    classify_leading_license(text, spans)
    return spans


def _only_comments_before(text: str, pos: int) -> bool:
    return all(not ln.strip() or ln.lstrip().startswith("#") for ln in text[:pos].split("\n"))
