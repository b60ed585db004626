"""Lexers for the C family, JavaScript/TypeScript, CSS, TOML and SQL.

Each finds string literals and comments with one compiled "master" expression whose
alternatives are tried at the leftmost interesting character; everything between
matches is code. A quote that opens no complete literal, or an unterminated block
comment, makes the lexer give up (None), and the block stays untouched.

Where a language is ambiguous without a parser we refuse rather than guess:

* JavaScript `/` is division or a regular expression depending on the previous token
  (ECMAScript 2024 §12, "the InputElementRegExp goal"); we decide from the previous
  significant character or keyword, and if a division reading would leave behind
  something that lexes as a regex holding a quote or a comment opener, we give up.
  Template literals nest through `${ … }` (§13.2.8.6) and are tracked with a stack.
  JSX is not lexed: text between tags may hold `//` or an apostrophe;
* SQL dialects disagree on backslashes in strings (MySQL escapes, the standard does
  not), on `--` without a following space (MySQL: not a comment) and on `#`; any of
  those in a block makes us give up. Block comments nest in PostgreSQL: a nested `/*`
  makes us give up too; so it does in Rust, whose block comments nest by spec;
* C line splicing (a `\\` before the line end, C17 §5.1.1.2) can extend a `//` comment
  onto the next line; such a comment makes us give up.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .code import DIRECTIVE, DOC, LICENSE, Span, classify_leading_license

__all__ = ["LEXERS"]

_C_DOC = re.compile(r"/\*\*(?![*/])|///(?!/)|//!|/\*!")

_STR_C = r'''(?<![A-Za-z0-9_])(?:u8|[uUL])?R"(?P<d>[^()\\ \t\r\n]{0,16})\([\s\S]*?\)(?P=d)"|"(?:[^"\\\n]|\\[\s\S])*"|'(?:[^'\\\n]|\\[^\n]){1,10}\''''
_MASTERS = {
    "c": re.compile(
        r"(?P<pp>^[ \t]*\#[ \t]*(?:error|warning)\b[^\n]*)|(?P<lc>//[^\n]*)|(?P<bc>/\*[\s\S]*?\*/)"
        r"|(?P<s>" + _STR_C + r")|(?P<bad>[\"']|/\*)",
        re.M,
    ),
    "java": re.compile(
        r'(?P<lc>//[^\n]*)|(?P<bc>/\*[\s\S]*?\*/)'
        r'|(?P<s>"""[\s\S]*?(?<!\\)"""|"(?:[^"\\\n]|\\[^\n])*"|\'(?:[^\'\\\n]|\\[^\n]){1,8}\')'
        r"|(?P<bad>[\"']|/\*)"
    ),
    "go": re.compile(
        r'(?P<lc>//[^\n]*)|(?P<bc>/\*[\s\S]*?\*/)'
        r'|(?P<s>`[^`]*`|"(?:[^"\\\n]|\\[^\n])*"|\'(?:[^\'\\\n]|\\[^\n]){1,10}\')'
        r"|(?P<bad>[\"'`]|/\*)"
    ),
    "rust": re.compile(
        r'(?P<lc>//[^\n]*)|(?P<bc>/\*[\s\S]*?\*/)'
        r'|(?P<s>(?<![A-Za-z0-9_])[bc]?r(?P<h>#*)"[\s\S]*?"(?P=h)'
        r'|(?<![A-Za-z0-9_])[bc]?"(?:[^"\\]|\\[\s\S])*"'
        r"|(?<![A-Za-z0-9_])b?'(?:[^'\\\n]|\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|[^\n]))')"
        r"|(?P<skip>'[A-Za-z_][A-Za-z0-9_]*)|(?P<bad>[\"']|/\*)"
    ),
    "css": re.compile(
        r'(?P<bc>/\*[\s\S]*?\*/)|(?P<s>url\([ \t]*(?!["\'])[^)\n]*\)'
        r'|"(?:[^"\\\n]|\\[\s\S])*"|\'(?:[^\'\\\n]|\\[\s\S])*\')|(?P<bad>["\']|/\*)',
        re.I,
    ),
    "scss": re.compile(
        r'(?P<lc>//[^\n]*)|(?P<bc>/\*[\s\S]*?\*/)|(?P<s>url\([ \t]*(?!["\'])[^)\n]*\)'
        r'|"(?:[^"\\\n]|\\[\s\S])*"|\'(?:[^\'\\\n]|\\[\s\S])*\')|(?P<bad>["\']|/\*)',
        re.I,
    ),
    "toml": re.compile(
        r'(?P<lc>#[^\n]*)|(?P<s>"""(?:[^\\]|\\[\s\S])*?"""|\'\'\'[\s\S]*?\'\'\''
        r'|"(?:[^"\\\n]|\\[^\n])*"|\'[^\'\n]*\')|(?P<bad>["\'])'
    ),
}

_DIRECTIVES = {
    "c": re.compile(r"(?i)[/*\s]*(?:nolint|clang-format|fallthrough|iwyu pragma|lint)"),
    "java": re.compile(r"(?i)[/*\s]*(?:noinspection|checkstyle|nosonar|\$non-nls|@formatter)"),
    "go": re.compile(r"//(?:go:|export |line |extern |nolint|\s*\+build)"),
    "rust": re.compile(r"//\s*(?:rustfmt|clippy)"),
    "css": re.compile(r"(?i)/\*[#\s]*(?:sourcemappingurl|stylelint|autoprefixer|purgecss|rtl:|prettier-ignore|@preserve|@license)"),
    "toml": re.compile(r"#:schema|#\s*taplo"),
    "js": re.compile(
        r"///\s*<|//[#@]|/\*[#@]|(?://|/\*)\s*(?:@ts-|eslint|prettier-ignore|istanbul|webpack|jshint|global\b"
        r"|c8\b|v8\b|tslint|biome-ignore|#__PURE__|@__PURE__|__PURE__|@vite|@jsx|@flow|@license|@preserve|deno-)"
    ),
    "sql": re.compile(r"/\*[+!]"),
}
_DIRECTIVES["scss"] = _DIRECTIVES["css"]


def _cat(lang: str, body: str) -> str:
    d = _DIRECTIVES.get(lang)
    if d is not None and d.match(body):
        return DIRECTIVE
    if lang in ("css", "scss") and body.startswith("/*!"):
        return LICENSE
    # Only Rust makes doc comments part of the program (`///` is `#[doc = "…"]`,
    # The Rust Reference, "Doc comments"), as Python does with docstrings; Javadoc,
    # JSDoc and Doxygen comments are ordinary comments to their compilers.
    if lang == "rust" and _C_DOC.match(body):
        return DOC
    return "plain"


def _generic(lang: str) -> Callable[[str], list[Span] | None]:
    master = _MASTERS[lang]

    def lex(text: str) -> list[Span] | None:
        spans: list[Span] = []
        pos = 0
        search = master.search
        while True:
            m = search(text, pos)
            if m is None:
                break
            g = m.lastgroup
            if g == "bad":
                return None
            if g == "lc":
                body = m.group()
                if body.rstrip("\r").endswith("\\") and lang != "toml":
                    return None
                spans.append(Span(m.start(), m.end(), "c", _cat(lang, body)))
            elif g == "bc":
                body = m.group()
                if lang == "rust" and "/*" in body[2:]:
                    return None
                spans.append(Span(m.start(), m.end(), "c", _cat(lang, body)))
            elif g in ("s", "pp"):
                spans.append(Span(m.start(), m.end(), "s"))
            pos = m.end()
        if lang == "go":
            if re.search(r'^\s*import\s*(?:\(\s*)?"C"', text, re.M):
                return None  # cgo: the comment before `import "C"` is C code
            _go_header(text, spans)
        classify_leading_license(text, spans)
        return spans

    return lex


def _go_header(text: str, spans: list[Span]) -> None:
    # A build constraint must be followed by a blank line before `package` (go help
    # buildconstraint); when the header holds a directive, keep it byte for byte.
    m = re.search(r"^package\s", text, re.M)
    if m is None:
        return
    head = [sp for sp in spans if sp.end <= m.start()]
    if any(sp.kind == "c" and sp.cat == DIRECTIVE for sp in head):
        spans[: len(head)] = [Span(0, m.start(), "s")]


# ---- JavaScript / TypeScript -------------------------------------------------------

_JS_TOP = re.compile(
    r"(?P<hb>\A#![^\n]*)|(?P<lc>//[^\n]*)|(?P<bc>/\*[\s\S]*?\*/)"
    r"|(?P<s>'(?:[^'\\\n]|\\[\s\S])*'|\"(?:[^\"\\\n]|\\[\s\S])*\")"
    r"|(?P<tpl>`)|(?P<bad>['\"]|/\*)|(?P<slash>/)"
)
_JS_EXPR = re.compile(_JS_TOP.pattern + r"|(?P<lb>\{)|(?P<rb>\})")
_TPL_BODY = re.compile(r"(?:[^`\\$]|\\[\s\S]|\$(?!\{))*")
_REGEX = re.compile(r"/(?![*/])(?:[^/\\\[\n]|\\[^\n]|\[(?:[^\]\\\n]|\\[^\n])*\])+/[A-Za-z]*")
_RISKY = re.compile(r"['\"`]|//|/\*")
_TRAIL_WORD = re.compile(r"[A-Za-z0-9_$]+$")
_BEFORE_REGEX = frozenset(
    "return typeof instanceof in of new delete void throw case do else yield await".split()
)
_JSX = re.compile(r"(?:^|[=(,?:&|{}\[!]|\breturn|=>)[ \t\r\n]*<[A-Za-z>]", re.M)


def _prev(gap: str, prev: str) -> str:
    s = gap.rstrip(" \t\r\n")
    if not s:
        return prev
    if s.endswith(("++", "--")):
        return "a"
    c = s[-1]
    if c.isalnum() or c in "_$":
        w = _TRAIL_WORD.search(s)
        return "(" if w is not None and w.group() in _BEFORE_REGEX else "a"
    return c


def _lex_js(text: str) -> list[Span] | None:
    spans: list[Span] = []
    frames: list[list[int] | None] = []  # None: a template body; [depth]: `${ … }`
    pos = 0
    prev = ""
    outer = 0
    n = len(text)
    while True:
        if frames and frames[-1] is None:
            pos = _TPL_BODY.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                return None
            if text[pos] == "`":
                frames.pop()
                pos += 1
                prev = "lit"
                if not frames:
                    spans.append(Span(outer, pos, "s"))
            else:
                frames.append([0])
                pos += 2
                prev = "("
            continue
        m = (_JS_EXPR if frames else _JS_TOP).search(text, pos)
        if m is None:
            if frames:
                return None
            break
        gap = text[pos : m.start()]
        if "<" in gap and _JSX.search(gap):
            return None
        prev = _prev(gap, prev)
        g = m.lastgroup
        pos = m.end()
        if g == "bad":
            return None
        if g in ("lc", "bc", "hb"):
            if not frames:
                body = m.group()
                cat = DIRECTIVE if g == "hb" else _cat("js", body)
                if g == "lc" and (body.count('"') % 2 or body.count("`") % 2):
                    return None  # a quote cut in half: we may be out of step
                spans.append(Span(m.start(), pos, "c", cat))
        elif g == "s":
            if not frames:
                spans.append(Span(m.start(), pos, "s"))
            prev = "lit"
        elif g == "tpl":
            if not frames:
                outer = m.start()
            frames.append(None)
        elif g == "lb":
            frames[-1][0] += 1  # type: ignore[index]
            prev = "{"
        elif g == "rb":
            top = frames[-1]
            assert top is not None
            if top[0] == 0:
                frames.pop()
            else:
                top[0] -= 1
                prev = "}"
        else:  # slash
            start = m.start()
            if start and text[start - 1] == "<" or text[pos : pos + 1] == ">":
                return None  # JSX closing or self-closing tag
            rm = _REGEX.match(text, start)
            if prev in ("lit", "a", ")", "]", "}"):
                # Division. If a regex reading would hide a quote or a comment opener,
                # the two readings lex differently: refuse.
                if rm is not None and _RISKY.search(rm.group(), 1, len(rm.group()) - 1):
                    return None
                prev = "/"
                continue
            if rm is None:
                return None
            if not frames:
                spans.append(Span(start, rm.end(), "s"))
            pos = rm.end()
            prev = "lit"
    classify_leading_license(text, spans)
    return spans


# ---- SQL -----------------------------------------------------------------------------

_SQL = re.compile(
    r"(?P<lc>--[^\n]*)|(?P<bc>/\*[\s\S]*?\*/)"
    r"|(?P<s>'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\$(?P<tag>[A-Za-z_][A-Za-z0-9_]*|)\$[\s\S]*?\$(?P=tag)\$)"
    r"|(?P<hash>\#)|(?P<bad>['\"`]|/\*)"
)


def _lex_sql(text: str) -> list[Span] | None:
    spans: list[Span] = []
    pos = 0
    while True:
        m = _SQL.search(text, pos)
        if m is None:
            break
        g = m.lastgroup
        body = m.group()
        if g == "bad":
            return None
        if g == "hash":
            # MySQL comment or PostgreSQL operator: only an operator use is safe.
            nxt = text[m.end() : m.end() + 1]
            if nxt in ("", " ", "\t", "\r", "\n") or m.start() == 0 or text[m.start() - 1] == "\n":
                return None
        elif g == "lc":
            if len(body) > 2 and body[2] not in " \t\r-":
                return None
            spans.append(Span(m.start(), m.end(), "c", _cat("sql", body)))
        elif g == "bc":
            if "/*" in body[2:]:
                return None
            spans.append(Span(m.start(), m.end(), "c", _cat("sql", body)))
        else:
            if body[0] == "'" and "\\" in body:
                return None
            spans.append(Span(m.start(), m.end(), "s"))
        pos = m.end()
    classify_leading_license(text, spans)
    return spans


LEXERS: dict[str, Callable[[str], list[Span] | None]] = {
    name: _generic(name) for name in ("c", "java", "go", "rust", "css", "scss", "toml")
}
LEXERS["js"] = _lex_js
LEXERS["sql"] = _lex_sql
