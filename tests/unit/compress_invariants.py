"""Invariant checks for firsttoken.compress, shared by the tests and bench/compress.py.

They are written apart from the compressor on purpose: fences are found by a separate
small splitter, Python is judged by `ast`, JSON by `json.loads`, and other languages by
Pygments' lexers (a test dependency, never shipped): their string literals must stay
byte-identical and, with comments blanked out and backslash-newline splices joined,
their code must hold the same words, so that whitespace changes (indentation,
alignment, blank lines) may never glue or split a token. YAML must instead keep the
indentation of every content line. A mistake in our own lexers cannot vouch for itself.

Structure (`structure_problems`) is judged the same way, apart from the compressor's
own tag and fence reading: a text whose XML-ish tags nest must still nest after
compression, no fence may be left without its closing line, and every element that
survives must hold what it held (a repeat dropped from inside an element, leaving the
element's tags around less content, is how meaning broke on real prompts).
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import tokenize
from collections.abc import Callable, Iterator
from typing import Any

from pygments.lexers import get_lexer_by_name
from pygments.token import Comment, Operator, String
from pygments.util import ClassNotFound

from firsttoken.compress import compress_text

_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})([^\n]*)\n", re.M)
_PY = {"py", "python", "python3", "py3"}
_JSON = {"json", "jsonc", "json5", "geojson", ""}
_PYGMENTS = {
    "js": "javascript", "javascript": "javascript", "ts": "typescript", "typescript": "typescript",
    "c": "c", "cpp": "cpp", "c++": "cpp", "java": "java", "go": "go", "rust": "rust", "rs": "rust",
    "sh": "bash", "bash": "bash", "shell": "bash", "zsh": "bash", "sql": "sql", "postgresql": "postgresql",
    "html": "html", "xml": "xml", "css": "css", "scss": "scss", "yaml": "yaml", "yml": "yaml",
    "toml": "toml", "dockerfile": "docker",
}


def _split_at_fences(text: str) -> Iterator[tuple[str, Any]]:
    """`text` in order, split at its closed top-level fences: ("prose", text) and
    ("fence", (language, body)) parts; the prose parts hold everything else."""
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            break
        char, n = m.group(2)[0], len(m.group(2))
        if char == "`" and "`" in m.group(3):
            yield "prose", text[pos : m.end()]
            pos = m.end()
            continue
        close = re.compile(r"^ {0,3}" + re.escape(char) + "{%d,}[ \t]*\r?$" % n, re.M).search(text, m.end())
        if close is None:
            break
        yield "prose", text[pos : m.start()]
        words = m.group(3).strip().split()
        yield "fence", (words[0].lower() if words else "", text[m.end() : close.start()])
        pos = close.end()
    yield "prose", text[pos:]


def fences(text: str) -> tuple[list[tuple[str, str]], str]:
    """([(language, body)], prose with fences cut out) for top-level closed fences."""
    parts = list(_split_at_fences(text))
    return [v for k, v in parts if k == "fence"], "\n".join(v for k, v in parts if k == "prose")


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            v = body[0].value
            if isinstance(v, ast.Constant) and isinstance(v.value, str) and len(body) > 1:
                del body[0]
    return tree


def _py_strings(code: str) -> list[str]:
    toks = tokenize.generate_tokens(io.StringIO(code).readline)
    return [t.string for t in toks if t.type == tokenize.STRING]


def _pyg_strings(lang: str, code: str) -> str:
    lexer = get_lexer_by_name(_PYGMENTS[lang], stripnl=False, stripall=False, ensurenl=False)
    # String.Doc is how Pygments lexes Rust `///` doc comments: comments to us. A line
    # splice outside quotes (shell, Dockerfile) comes as a String.Escape token: it is
    # no literal, and `_pyg_words` checks it.
    return "".join(
        v
        for t, v in lexer.get_tokens(code)
        if t in String and t not in String.Doc and not (t in String.Escape and v in ("\\\n", "\\\r\n"))
    )


# Markup comments render as nothing, so a removed one leaves nothing; elsewhere a
# comment separates tokens like a space.
_NO_GAP = {"html", "xml"}
# A backslash before a line ending joins the two lines (C, shell, Dockerfile): only an
# odd run of backslashes does.
_SPLICE = re.compile(r"(\\*)\\\r?\n")
_PREPROC = (Comment.Preproc, Comment.PreprocFile)


# The Dockerfile reference counts a `#` line with leading whitespace as a comment too;
# Pygments' Docker lexer reads it as words.
_DOCKER_COMMENT = re.compile(r"^[ \t]*#[^\n]*", re.M)


def _pyg_words(lang: str, code: str) -> list[str]:
    lexer = get_lexer_by_name(_PYGMENTS[lang], stripnl=False, stripall=False, ensurenl=False)
    if lang == "dockerfile":
        code = _DOCKER_COMMENT.sub("", code)
    gap = "" if _PYGMENTS[lang] in _NO_GAP else " "
    parts: list[str] = []
    prev = ("", "")
    line_comment = False
    for t, v in lexer.get_tokens(code):
        if line_comment:
            # Pygments' SCSS lexer reads `// …` inside a rule as two `/` operators and
            # words; it is a comment to Sass: blank it up to the line end.
            line_comment = "\n" not in v
            parts.append(gap)
            prev = ("", "")
            continue
        if lang == "scss" and t in Operator and v == "/" and prev == (Operator, "/"):
            parts[-1] = gap
            line_comment = True
            continue
        prev = (t, v)
        # Pygments files C preprocessor lines under Comment: they are code to us.
        comment = (t in Comment and not any(t in p for p in _PREPROC)) or t in String.Doc
        parts.append(gap if comment else v)
    text = _SPLICE.sub(lambda m: m.group(0) if len(m.group(1)) % 2 else m.group(1), "".join(parts))
    return text.split()


def _content_indents(code: str) -> list[str]:
    """The indentation of every YAML line that is neither blank nor only a comment."""
    out = []
    for line in code.split("\n"):
        body = line.lstrip(" \t")
        if body.strip() and not body.startswith("#"):
            out.append(line[: len(line) - len(body)])
    return out


def _json_struct(text: str) -> Any:
    return json.loads(text, object_pairs_hook=list, parse_float=str, parse_int=str, parse_constant=str)


_DELIM_WORD = re.compile(r"[|:\-]+")


def _chars(prose: str) -> str:
    words = [re.sub(r"-+", "-", w) if _DELIM_WORD.fullmatch(w) else w for w in prose.split()]
    return "".join(words)


def _words(prose: str) -> list[str]:
    return [re.sub(r"-+", "-", w) if _DELIM_WORD.fullmatch(w) else w for w in prose.split()]


# CJK characters for the spacing check: Hangul Jamo, CJK radicals and symbols, Kana,
# Bopomofo, Han, Hangul syllables, compatibility ideographs, CJK vertical and small
# forms, full-width and half-width forms, and the supplementary ideographic planes.
# U+3000 (the ideographic space) is whitespace here, as it is to `str.split`.
_CJK = re.compile(
    "[\u1100-\u11ff\u2e80-\u2fdf\u2ff0-\u2fff\u3001-\u303f\u3040-\u31ff\u3200-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe10-\ufe1f\ufe30-\ufe6f\uff00-\uffef"
    "\U00020000-\U0003fffd]"
)
_GAPS = re.compile(r"\s+")


def _words_and_gaps(prose: str) -> tuple[list[str], list[str]]:
    """The words of `prose` (as `_words` reads them) and the whitespace between each
    word and the next."""
    parts = _GAPS.split(prose.strip())
    gaps = _GAPS.findall(prose.strip())
    words = [re.sub(r"-+", "-", w) if _DELIM_WORD.fullmatch(w) else w for w in parts if w]
    return words, gaps


def cjk_spacing_problems(before: str, after: str) -> list[str]:
    """Spacing next to CJK characters broken by compressing prose `before` into `after`.

    Chinese and Japanese put no spaces between words, so a space there is not padding:
    inserted between two CJK characters it splits a word (and costs tokens), a newline
    between two CJK lines turned into a space puts one in mid-sentence (CSS Text 4 joins
    such lines with nothing), and a space between CJK and Latin text is the one that
    keeps `使用 Python` two words. So, next to a CJK character: no space may appear or go
    (the words, split on whitespace, stay the same), a line break stays a line break,
    and full-width spaces (U+3000) stay as many as they were (compress/prose.py keeps
    them: see its docstring).
    """
    wb, gb = _words_and_gaps(before)
    wa, ga = _words_and_gaps(after)
    if wb != wa:
        changed = [w for w in set(wb).symmetric_difference(wa) if _CJK.search(w)]
        return ["a space next to CJK text appeared or went"] if changed else []
    problems: list[str] = []
    for i, (was, now) in enumerate(zip(gb, ga)):
        if not (_CJK.match(wb[i][-1]) or _CJK.match(wb[i + 1][0])):
            continue
        if "\n" in was and "\n" not in now and "CJK lines joined with a space" not in problems:
            problems.append("CJK lines joined with a space")
        if was.count("\u3000") != now.count("\u3000") and "a full-width space changed" not in problems:
            problems.append("a full-width space changed")
    return problems


def _subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(w == b for b in it) for w in small)


def _unclosed_fences(text: str) -> int:
    """1 if some top-level fence opener has no closing line, else 0."""
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            return 0
        char, n = m.group(2)[0], len(m.group(2))
        if char == "`" and "`" in m.group(3):
            pos = m.end()
            continue
        close = re.compile(r"^ {0,3}" + re.escape(char) + "{%d,}[ \t]*\r?$" % n, re.M).search(text, m.end())
        if close is None:
            return 1
        pos = close.end()


_TAG_ANY = re.compile(r"<(/?)([A-Za-z][\w.:-]*)([^<>]*)>")


def _masked(text: str) -> str:
    """`text` with each closed top-level fence replaced by one word naming its body, so
    that tags in code are not read as markup and an element's content includes its code."""
    out: list[str] = []
    for kind, value in _split_at_fences(text):
        if kind == "prose":
            out.append(value)
        else:
            body = " ".join(value[1].split())
            out.append(f"\nFENCE{hashlib.sha256(body.encode()).hexdigest()[:12]}\n")
    return "".join(out)


def elements(text: str) -> tuple[bool, list[tuple[str, str]]]:
    """(do the tags nest?, [(opening tag, inner words)] for every matched pair)."""
    masked = _masked(text)
    stack: list[tuple[str, str, int]] = []
    pairs: list[tuple[str, str]] = []
    nested = True
    for m in _TAG_ANY.finditer(masked):
        if m.group(3).rstrip().endswith("/"):
            continue
        name = m.group(2).lower()
        if not m.group(1):
            stack.append((name, " ".join(m.group(0).split()), m.end()))
        elif stack and stack[-1][0] == name:
            _, opener, start = stack.pop()
            pairs.append((opener, " ".join(masked[start : m.start()].split())))
        else:
            nested = False
    return nested and not stack, sorted(pairs)


_ATX = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+[^\n]*)?$", re.M)


def sections(text: str) -> list[tuple[str, str]]:
    """[(heading, words up to the next heading)] for every ATX heading outside code."""
    masked = _masked(text)
    heads = list(_ATX.finditer(masked))
    out = []
    for k, m in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(masked)
        out.append((" ".join(m.group(0).split()), "".join(masked[m.end() : end].split())))
    return sorted(out)


def _missing(small: list[tuple[str, str]], big: list[tuple[str, str]]) -> tuple[str, str] | None:
    remaining = list(big)
    for pair in small:
        if pair not in remaining:
            return pair
        remaining.remove(pair)
    return None


def structure_problems(before: str, after: str, flat: str) -> list[str]:
    """Tags and fences broken by compressing `before` into `after`, where `flat` is
    `before` compressed without the repeats pass (see the module docstring)."""
    problems: list[str] = []
    if _unclosed_fences(after) > _unclosed_fences(before):
        problems.append("a fence lost its closing line")
    nested_before = elements(before)[0]
    pairs_before = elements(flat)[1]
    nested_after, pairs_after = elements(after)
    if nested_before and not nested_after:
        problems.append("tags no longer balance")
    # Compression may change whitespace inside an element, not which words it holds;
    # compare words without spaces so that whitespace passes do not count.
    squash = lambda pairs: sorted((o, "".join(w.split())) for o, w in pairs)  # noqa: E731
    if nested_before:
        pair = _missing(squash(pairs_after), squash(pairs_before))
        if pair is not None:
            problems.append(f"element {pair[0]} changed its content")
    # The same for markdown sections: a heading that stays keeps what is under it.
    head = _missing(sections(after), sections(flat))
    if head is not None:
        problems.append(f"section {head[0]!r} changed its content")
    return problems


def check_text(text: str, level: str = "balanced") -> list[str]:
    """Every invariant violated by compressing `text` at `level` (empty if none)."""
    problems: list[str] = []
    out = compress_text(text, level=level).text
    if compress_text(out, level=level).text != out:
        problems.append("not idempotent")
    problems += structure_problems(text, out, compress_text(text, level=level, passes={"repeats": False}).text)
    # Structural checks without repeats, so that blocks line up one to one.
    flat = compress_text(text, level=level, passes={"repeats": False}).text
    stripped = text.strip(" \t\r\n")
    if stripped[:1] in "{[":
        try:
            whole = _json_struct(stripped)
        except ValueError:
            whole = None
        if whole is not None:
            if _json_struct(flat) != whole:
                problems.append("whole-text JSON changed")
            return problems
    before, prose_before = fences(text)
    after, prose_after = fences(flat)
    if len(before) != len(after):
        return problems + [f"fence count {len(before)} -> {len(after)}"]
    for (lang, a), (_, b) in zip(before, after):
        problems += _check_block(lang, a, b, level)
    if _chars(prose_before) != _chars(prose_after):
        problems.append("prose characters changed")
    no_json = compress_text(text, level=level, passes={"repeats": False, "json": False}).text
    if _words(fences(no_json)[1]) != _words(prose_before):
        problems.append("prose words changed")
    problems += cjk_spacing_problems(prose_before, fences(no_json)[1])
    if not _subsequence(_words(out), _words(flat)):
        problems.append("repeats pass added or reordered words")
    return problems


def _check_block(lang: str, a: str, b: str, level: str) -> list[str]:
    if lang in _PY:
        try:
            ta = ast.parse(a)
        except (SyntaxError, ValueError):
            return [] if a == b else ["unparseable python changed"]
        try:
            tb = ast.parse(b)
        except SyntaxError:
            return ["python no longer parses"]
        if level == "max":
            ta, tb = _strip_docstrings(ta), _strip_docstrings(tb)
        problems = [] if ast.dump(ta) == ast.dump(tb) else ["python ast changed"]
        sa, sb = _py_strings(a), _py_strings(b)
        if level != "max" and sa != sb:
            problems.append("python strings changed")
        return problems
    if lang in _JSON and a.strip()[:1] in "{[":
        try:
            ja = _json_struct(a)
        except ValueError:
            return [] if a == b else ["non-JSON fence changed"]
        return [] if _json_struct(b) == ja else ["json value changed"]
    if lang in _PYGMENTS and a != b:
        problems = []
        if _pyg_strings(lang, a) != _pyg_strings(lang, b):
            problems.append(f"{lang} strings changed")
        if _PYGMENTS[lang] == "yaml":
            # Pygments' YAML lexer reads a comment line after a plain scalar as more of
            # the scalar, so its words would mislead; indentation is what YAML risks.
            if _content_indents(a) != _content_indents(b):
                problems.append("yaml indentation changed")
        elif _pyg_words(lang, a) != _pyg_words(lang, b):
            problems.append(f"{lang} code words changed")
        return problems
    return []


def check_messages(messages: list[dict[str, Any]], compress: Callable[..., Any], level: str = "balanced") -> list[str]:
    """Idempotence, per-text invariants and, for each message as compressed in the
    conversation (repeats across messages included), the structure checks."""
    problems: list[str] = []
    out = compress(messages, level=level).messages
    if compress(out, level=level).messages != out:
        problems.append("messages not idempotent")
    for m, o in zip(messages, out):
        if isinstance(m.get("content"), str):
            problems += check_text(m["content"], level)
            flat = compress([m], level=level, passes={"repeats": False}).messages[0]["content"]
            problems += structure_problems(m["content"], o["content"], flat)
            if not _subsequence(_words(o["content"]), _words(flat)):
                problems.append("repeats pass added or reordered words")
    return problems


__all__ = [
    "check_text", "check_messages", "cjk_spacing_problems", "structure_problems", "elements", "fences", "ClassNotFound",
]
