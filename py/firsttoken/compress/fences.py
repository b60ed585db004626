"""Dispatch a fenced block to its language, with the safety checks around it.

A fence indented N spaces (N ≤ 3) has up to N spaces stripped from each content line
(CommonMark 0.31.2 §4.5); we handle it only when every non-empty line has all N, so
that putting them back restores the bytes exactly. The output of any language is
rejected if a line of it would close the fence early, if it does not lex again, or if
its string literals or its words (removable comments blanked out) differ.
"""

from __future__ import annotations

from .code import DIRECTIVE, Language, Span, words_outside, rebuild
from .code_comments import classify_comments
from .code_clike import LEXERS
from .code_markup import lex_markup
from .code_python import compress_python
from .code_shell import lex_dockerfile, lex_shell
from .code_yaml import lex_yaml, may_drop
from .markdown import _closer, split_lines

__all__ = ["LANGUAGE_ALIASES", "compress_code", "compress_fence_body"]

_ALIASES = {
    "python": "py python python3 py3 gyp bazel bzl starlark sage",
    "js": "js javascript jsx mjs cjs node nodejs es6 ecmascript ts typescript tsx mts cts",
    "c": "c h cpp c++ cc cxx hpp hh hxx cuda cu ino arduino objc objective-c glsl hlsl",
    "java": "java",
    "go": "go golang",
    "rust": "rust rs",
    "shell": "sh bash zsh shell ksh shellscript",
    "sql": "sql mysql postgres postgresql pgsql plpgsql sqlite tsql plsql mssql",
    "markup": "html htm xhtml xml svg xsl xslt rss atom vue svelte",
    "css": "css",
    "scss": "scss less",
    "yaml": "yaml yml",
    "toml": "toml",
    "dockerfile": "dockerfile docker containerfile",
}
#: info-string language (lower case) → language family
LANGUAGE_ALIASES: dict[str, str] = {a: fam for fam, names in _ALIASES.items() for a in names.split()}

# Every family but YAML (and Python, which has its own path) ignores indentation, so
# there it goes: see the package docstring.
_LANGUAGES: dict[str, Language] = {
    name: Language(name, LEXERS[name], dedent=True)
    for name in ("c", "java", "go", "rust", "css", "scss", "toml", "sql", "js")
}
_LANGUAGES["shell"] = Language("shell", lex_shell, dedent=True)
_LANGUAGES["dockerfile"] = Language("dockerfile", lex_dockerfile, dedent=True)
_LANGUAGES["markup"] = Language("markup", lex_markup, gap="", dedent=True)
_LANGUAGES["yaml"] = Language("yaml", lex_yaml, may_drop=may_drop, inner_runs=False)


def _lex(lang: Language, text: str) -> list[Span] | None:
    spans = lang.lex(text)
    if spans is not None:
        classify_comments(text, spans, lang.name)
    return spans


def compress_code(
    family: str, body: str, remove: frozenset[str], squeeze: bool, tally: dict[str, int] | None = None
) -> tuple[str | None, str]:
    """(new body or None, reason when None) for code of a known language family;
    `tally` gains what was removed (`code.rebuild`) when the new body is returned."""
    if family == "python":
        out = compress_python(body, remove, squeeze, tally)
        return (out, "") if out is not None else (None, "python: does not parse or would change")
    lang = _LANGUAGES[family]
    spans = _lex(lang, body)
    if spans is None:
        return None, f"{family}: lexer gave up"
    counted: dict[str, int] = {}
    out = rebuild(
        body,
        spans,
        remove,
        gap=lang.gap,
        squeeze=squeeze,
        may_drop=lang.may_drop,
        inner_runs=lang.inner_runs,
        dedent=lang.dedent,
        tally=counted,
    )
    if out == body:
        return body, ""
    again = _lex(lang, out)
    if again is None:
        return None, f"{family}: output does not lex"
    if words_outside(body, spans, remove, lang.gap) != words_outside(out, again, remove, lang.gap):
        return None, f"{family}: self-check failed"
    if any(sp.kind == "c" and sp.cat == DIRECTIVE for sp in spans) and sum(
        sp.kind == "c" and sp.cat == DIRECTIVE for sp in spans
    ) != sum(sp.kind == "c" and sp.cat == DIRECTIVE for sp in again):
        return None, f"{family}: self-check failed"
    _add(tally, counted)
    return out, ""


def _add(tally: dict[str, int] | None, counted: dict[str, int]) -> None:
    if tally is not None:
        for kind, n in counted.items():
            tally[kind] = tally.get(kind, 0) + n


def compress_fence_body(
    lang: str,
    body: str,
    indent: int,
    marker: str,
    remove: frozenset[str],
    squeeze: bool,
    tally: dict[str, int] | None = None,
) -> tuple[str | None, str]:
    """Compress the body of a fence whose info string names `lang`; `tally` gains what
    was removed, when anything was."""
    family = LANGUAGE_ALIASES.get(lang)
    if family is None:
        return None, ""
    if not body:
        return body, ""
    lines = split_lines(body)
    if indent:
        pad = " " * indent
        if any(ln.strip(" \t\r\n") and not ln.startswith(pad) for ln in lines) or any(
            ln not in ("\n", "\r\n") and not ln.strip(" \t\r\n") for ln in lines
        ):
            return None, f"{family}: uneven indentation"
        inner = "".join(ln[indent:] if ln.strip(" \t\r\n") else ln for ln in lines)
    else:
        inner = body
    counted: dict[str, int] = {}
    try:
        out, why = compress_code(family, inner, remove, squeeze, counted)
    except (RecursionError, MemoryError):
        return None, f"{family}: too deep"
    if out is None or out == inner:
        return (None if out is None else body), why
    if indent:
        out = "".join(pad + ln if ln.strip(" \t\r\n") else ln for ln in split_lines(out))
    if _closer(marker[0], len(marker), True).search(out):
        return None, f"{family}: output would close the fence"
    _add(tally, counted)
    return out, ""
