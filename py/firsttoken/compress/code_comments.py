"""What a comment is to the person who pasted the code: intent, old code, decoration.

Code pasted into a chat is usually a question about that code, and some comments
are part of the question. So the lexers' plain comments are sorted once more,
from the comment's own text (`classify_comments`), in this order:

1. intent (`INTENT`): a work marker, ``TODO``, ``FIXME``, ``XXX``, ``HACK``, ``BUG`` or
   ``NOTE`` (upper case as a word, or any case before a colon: ``Note:``,
   ``todo(alice):``; Doxygen ``@todo``, ``\\bug``), or a question. A question is a
   ``?`` (or ``？``, or a ``¿``) right after a word, a closing quote or bracket and
   before a space, closing punctuation or the end: ``collisions? two users``,
   ``why "me.jpg"?``. What is not: ``a ? b : c`` and ``x?.y`` (code), ``colou?r`` and
   ``.*?`` (a regular expression), ``$?`` (an exit status), the query of a URL. A
   marker or a question keeps the whole sentence it is in when that sentence runs
   over several comment lines (`_paragraphs`). Only ``max`` removes intent;
2. commented-out code (`CODE`), unless it ends in a question mark. Python: the text
   parses (`ast.parse`) into something only code is: a call, an assignment, an
   import, a definition, a control statement, a subscript, a comparison with ``==``
   or ``<``, a call written ``f(x)``... (``# not sure`` and ``# TCP/IP`` parse too, as
   an operator on names, ``# YYYY-Www (8)`` as a call with a space before its
   parenthesis and ``# f() is not available`` as a comparison by ``is``: they are
   prose). Consecutive comment lines that parse only together (``# for x in
   xs:`` then ``#     print(x)``) are code together. Other languages have no parser
   here, so a line is code when its shape is one only code has (`_CODE_SHAPES`):
   C-like, a line ending in ``;`` or ``{``, starting with ``}``, a preprocessor line,
   a whole-line call ``f(x)``, an assignment ``x = 1`` or ``x := 1``, a ``for (…)``
   header, unless a line not ending in ``;``, ``{`` or ``}`` reads as a sentence (it
   ends in a full stop, or holds four words in a row); shell, an assignment ``A=b``, a keyword line (``fi``, ``done``, ``if [``)
   or a known command with shell syntax after it (``rm -rf build``, not ``cd into
   the folder``); Dockerfile, an instruction (``RUN …``); SQL, an upper-case clause
   (``SELECT …``) or a statement ending in ``;``; YAML, ``key: value`` with a short
   value; TOML, ``key = value`` or a ``[table]``; CSS, a declaration ending in ``;``;
   HTML/XML, a comment that holds tags. A block comment is code when every line of
   it is. Prose in a comment almost never has these shapes, and when it does the
   comment goes at ``balanced`` anyway, as any remark does: the shape decides only
   which count the report puts it in, and whether a ``?`` in it is a question;
3. decoration (`DECOR`): a comment with no letter or digit (``# ------``, ``/****/``),
   a banner (a title between runs of ``=``, ``-``, ``*``, ``#``...: ``# ==== Setup
   ====``), or a box of rule lines around at most eight words;
4. anything else stays `PLAIN`: a remark, removed at ``balanced``.

A licence header (the leading comment group that mentions a copyright or licence,
`code.classify_leading_license`) stays `LICENSE`, except a comment of it that
mentions no licence itself and is intent or code: a ``# TODO:`` pasted under a
copyright line is the user's, not the lawyer's.

Every decision reads only the comment and the whole-line comments next to it (a
sentence, a Python block), never the code's layout, which compression changes: the
lexers' second look in the self-check and a second compression see the same
categories (tests/unit/test_compress_comments.py checks idempotence on random mixes).
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
import warnings
from collections.abc import Callable

from .code import CODE, DECOR, INTENT, LICENSE, PLAIN, Span

__all__ = ["classify_comments", "comment_text", "is_intent", "looks_like_code"]

_LICENSE_WORDS = re.compile(r"(?i)copyright|licen[cs]|spdx|\(c\)\s*\d{4}|all rights reserved|warrant")

# ---- the text of a comment --------------------------------------------------------

_OPEN = re.compile(r"\A[ \t]*(?:<!--|/\*+!?|//+[!/]?|#+!?|--+)")
_CLOSE = re.compile(r"(?:\*+/|-->)[ \t]*\Z")
_STAR = re.compile(r"\A[ \t]*\*+(?!/)")


def comment_text(body: str) -> str:
    """A comment's words without its markers: ``//``, ``#``, ``--``, ``/* … */``,
    ``<!-- … -->`` and the ``*`` that starts each line of a block comment."""
    body = _CLOSE.sub("", _OPEN.sub("", body, count=1), count=1)
    lines = body.replace("\r", "").split("\n")
    if len(lines) > 1:
        lines = [lines[0]] + [_STAR.sub("", ln, count=1) for ln in lines[1:]]
    return "\n".join(ln.strip() for ln in lines).strip()


# ---- intent ------------------------------------------------------------------------

_MARKER = re.compile(
    r"(?<![\w@\\])(?:TODO|FIXME|XXX|HACK|BUG|NOTE)(?!\w)"
    r"|(?<![\w@\\])(?i:todo|fixme|hack|bug|note|xxx)[ \t]*(?:\([^)\n]{0,40}\)[ \t]*)?:"
    r"|[@\\](?i:todo|fixme|bug|note|hack)\b"
)
_URL = re.compile(r"\S+://\S+")
_QUESTION = re.compile(
    r"[^\W_][?？]+(?=[\s)\]\"'`’”*]|[.,](?:\s|\Z)|\Z)"  # why? / why?) / why?, — not x?.y, name?: T
    r"|[\"'`’”)\]][?？]+(?=\s|\Z)"  # "me.jpg"? / (or is it)?
    r"|\s[?？]+\s*\Z"  # is this right ?
    r"|？|¿|\A\?+\Z"
)


def has_marker(text: str) -> bool:
    """A work marker: TODO, FIXME, XXX, HACK, BUG, NOTE."""
    return _MARKER.search(text) is not None


def asks(text: str) -> bool:
    """A question in prose (see the module docstring for what is not one)."""
    if "?" not in text and "？" not in text and "¿" not in text:
        return False
    return _QUESTION.search(_URL.sub(" ", text)) is not None


def is_intent(text: str) -> bool:
    """A marker or a question: what the comment's writer still means to do or ask."""
    return has_marker(text) or asks(text)


# ---- decoration --------------------------------------------------------------------

_RULE_RUN = re.compile(r"([-=*#~_+/\\<>|])\1{2,}")
_BANNER = re.compile(r"\A(?:[-=*#~_+/\\<>|]{3,}\s*(?:\S.*?)?|(?:.*?\S)?\s*[-=*#~_+/\\<>|]{3,})\Z", re.S)
_RULE_LINE = re.compile(r"\A[ \t/*#;!<>-]*[-=*#~_+]{5,}[ \t/*#;!<>-]*\Z")
_WORD = re.compile(r"[^\W_]+")


def is_decorative(body: str, text: str) -> bool:
    """A rule, a banner or a box: what says nothing but "a section starts here"."""
    if not _WORD.search(text):
        return True
    words = len(_WORD.findall(text))
    if words > 8:
        return False
    if "\n" not in text and _BANNER.match(text) and _RULE_RUN.search(text):
        return True
    lines = body.replace("\r", "").split("\n")
    return len(lines) > 1 and any(_RULE_LINE.match(ln) for ln in lines)


# ---- commented-out code -------------------------------------------------------------

_PY_CODE_NODES: tuple[type[ast.AST], ...] = (
    ast.Assign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.FunctionDef,
    ast.AsyncFunctionDef, ast.ClassDef, ast.Return, ast.For, ast.AsyncFor, ast.While, ast.If,
    ast.With, ast.AsyncWith, ast.Try, ast.Raise, ast.Delete, ast.Global, ast.Nonlocal,
    ast.Assert, ast.Pass, ast.Break, ast.Continue, ast.Subscript, ast.Lambda, ast.Await,
    ast.Yield, ast.YieldFrom, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
    ast.JoinedStr, ast.Dict,
)
_PY_CODE_COMPARE = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _python_tree(text: str) -> ast.Module | None:
    if not text.strip() or "\x00" in text:
        return None
    with warnings.catch_warnings():
        # An invalid escape in a commented string warns (and fails under -W error):
        # either way the answer must not depend on the warning filters.
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None


_PROSE_OPS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def _python_code_tree(tree: ast.Module, source: str) -> bool:
    body = tree.body
    if len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Compare):
        cmp = body[0].value
        if all(isinstance(op, _PROSE_OPS) for op in cmp.ops) and any(isinstance(c, ast.Name) for c in cmp.comparators):
            return False  # `os.posix_spawn() is not available`: a sentence
    lines = source.split("\n")
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                return True
        elif isinstance(node, ast.Call):
            # `f(x)` is code; `YYYYWww (7) or YYYYWwwd (8)` is prose that parses.
            func = node.func
            if func.end_lineno is not None and func.end_col_offset is not None:
                line = lines[func.end_lineno - 1].encode("utf-8")
                if line[func.end_col_offset : func.end_col_offset + 1] == b"(":
                    return True
        elif isinstance(node, _PY_CODE_NODES):
            return True
        elif isinstance(node, ast.Compare) and any(isinstance(op, _PY_CODE_COMPARE) for op in node.ops):
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _python_alone(source: str) -> tuple[bool, bool]:
    """(parses, is code) for one comment line's text (each line is asked twice)."""
    tree = _python_tree(source)
    return tree is not None, tree is not None and _python_code_tree(tree, source)


def _python_line(text: str) -> bool:
    return _python_alone(text.strip())[1]


_CALL = r"(?:(?:await|return|new|yield|throw|defer|go|void)\s+)?[A-Za-z_$][\w$]*(?:(?:\.|::|->|\?\.)[A-Za-z_$][\w$]*)*(?:<[\w\s,<>]*>)?!?\(.*\)\??"
_C_LINE = re.compile(
    r"\A(?:"
    r"\#\s*(?:include|define|undef|ifn?def|if|elif|else|endif|pragma|import)\b.*"
    r"|.*[;{]"
    r"|[})\]][^A-Za-z]*.*"
    r"|" + _CALL + r"\s*[;,]?"
    r"|(?:(?:const|let|var|val|auto|final|static|int|long|char|bool|float|double|string|String|mut|[A-Z]\w*(?:<[^>]*>)?\*?)\s+)*"
    r"[A-Za-z_$*&][\w$.\[\]\"'>-]*\s*(?:[-+*/%|&^]|<<|>>|\?\?|:)?=(?!=)\s*\S.*"
    r"|(?:if|for|while|switch|catch|foreach|elif)\s*\(.*\)\s*\{?"
    r"|(?:import|export)\s.*\bfrom\s+['\"].*|import\s+[\w.*]+;?|import\s+\"[^\"]+\""
    r"|(?:func|fn)\s+\w+\s*[(<].*|function\s*\w*\s*\(.*"
    r"|return(?:\s+(?:nil|null|true|false|None|\d[\w.]*|[\w.$]*[.()\[\]&*!][\w.$()\[\]&*!-]*)"
    r"(?:\s*,\s*[\w.$()\[\]&*!-]+)*|\s+[\w.$()\[\]&*!-]+(?:\s*,\s*[\w.$()\[\]&*!-]+)+)?"
    r")\Z"
)
_CSS_LINE = re.compile(r"\A(?:[\w-]+\s*:\s*[^;]+;|.*[{}])\Z")
_SQL_LINE = re.compile(
    r"\A(?:(?:SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|WITH|FROM|WHERE|JOIN|LEFT|RIGHT|INNER|OUTER|GROUP BY"
    r"|ORDER BY|HAVING|LIMIT|OFFSET|VALUES|SET|AND|OR|UNION|RETURNING|BEGIN|COMMIT|ROLLBACK|GRANT|TRUNCATE)\b.*"
    r"|(?i:select|insert|update|delete|create|drop|alter|with)\b.*;)\Z"
)
_SH_ASSIGN = re.compile(r"\A(?:(?:export|local|readonly|declare(?:\s+-\w+)?)\s+)?[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=(?:\Z|[^\s=])")
_SH_KEYWORD = re.compile(
    r"\A(?:if\s+\[|if\s.*;\s*then|then|else|elif\s.*|fi|for\s+\w+\s+in\s.*|while\s.*|do|done\b.*|case\s.*\sin"
    r"|esac|function\s+\w+.*|[\w-]+\s*\(\)\s*\{?|[{}])\Z"
)
_SH_COMMANDS = frozenset(
    "echo printf cd ls rm cp mv mkdir rmdir touch cat sed awk grep find xargs chmod chown ln tar gzip unzip"
    " curl wget git docker kubectl helm npm npx yarn pnpm pip pip3 python python3 node go cargo make cmake"
    " sudo apt apt-get yum dnf apk brew systemctl service export source eval exec set unset trap read test"
    " kill sleep ssh scp rsync openssl sh bash zsh java mvn gradle terraform aws gcloud az exit return".split()
)
_SH_SYNTAX = re.compile(r"(?:\A|\s)-{1,2}[\w-]|[$|><;&=/\"'`\\~*]")
_DOCKER_LINE = re.compile(
    r"\A(?:FROM|RUN|CMD|LABEL|MAINTAINER|EXPOSE|ENV|ADD|COPY|ENTRYPOINT|VOLUME|USER|WORKDIR|ARG|ONBUILD"
    r"|STOPSIGNAL|HEALTHCHECK|SHELL)\s+\S.*\Z"
)
_YAML_LINE = re.compile(r"\A(?:-\s+)?[\w.$/\"'-]+:(?:\s+(?P<v>.*))?\Z|\A-\s+\S+\Z")
_TOML_LINE = re.compile(r"\A(?:[\w.\-\"]+\s*=\s*\S.*|\[\[?[\w.\-\" ]+\]\]?)\Z")
_MARKUP_LINE = re.compile(r"\A<[!?/]?[A-Za-z][\s\S]*>\Z")


def _shell_line(s: str) -> bool:
    if _SH_ASSIGN.match(s) or _SH_KEYWORD.match(s):
        return True
    first, _, rest = s.partition(" ")
    if first in _SH_COMMANDS or first.startswith(("./", "/", "~/")):
        return not rest.strip() or _SH_SYNTAX.search(rest) is not None
    return False


def _yaml_line(s: str) -> bool:
    m = _YAML_LINE.match(s)
    if m is None:
        return False
    value = (m.group("v") or "").strip()
    return len(value.split()) <= 3 and not value.endswith((".", "!"))


_PROSE_RUN = re.compile(r"[A-Za-z]{2,} [A-Za-z]{2,} [A-Za-z]{2,} [A-Za-z]{2,}")


def _c_line(s: str) -> bool:
    if _C_LINE.match(s) is None:
        return False
    if s.startswith("#") or s.endswith((";", "{", "}")):
        return True
    # `// Front = least recently used, back = most recently used.`: an assignment's
    # shape, a sentence's words.
    return not (s.endswith(".") and not s.endswith("..")) and _PROSE_RUN.search(s) is None


_CODE_SHAPES: dict[str, Callable[[str], bool]] = {
    "python": _python_line,
    "c": _c_line,
    "css": lambda s: _CSS_LINE.match(s) is not None,
    "sql": lambda s: _SQL_LINE.match(s) is not None,
    "shell": _shell_line,
    "dockerfile": lambda s: _DOCKER_LINE.match(s) is not None or _shell_line(s),
    "yaml": _yaml_line,
    "toml": lambda s: _TOML_LINE.match(s) is not None,
    "markup": lambda s: _MARKUP_LINE.match(s) is not None,
}
for _family in ("java", "go", "rust", "js"):
    _CODE_SHAPES[_family] = _CODE_SHAPES["c"]
_CODE_SHAPES["scss"] = lambda s: _CSS_LINE.match(s) is not None or _c_line(s)


def looks_like_code(text: str, family: str) -> bool:
    """Is a comment's text (`comment_text`) code of `family` rather than prose?"""
    shape = _CODE_SHAPES.get(family)
    if shape is None or not text or text.endswith(("?", "？")):
        return False
    if family == "markup":
        return shape(text)
    lines = [ln for ln in text.split("\n") if ln.strip()]
    return bool(lines) and all(shape(ln.strip()) for ln in lines)


# ---- classification ------------------------------------------------------------------


def classify_comments(text: str, spans: list[Span], family: str) -> None:
    """Sort the plain comments of `text` (and intent inside a licence header) into
    `INTENT`, `CODE`, `DECOR` and `PLAIN` (see the module docstring)."""
    said: dict[int, str] = {}  # span start -> comment_text, for `_paragraphs`
    for sp in spans:
        if sp.kind != "c" or sp.cat not in (PLAIN, LICENSE):
            continue
        body = text[sp.start : sp.end]
        words = said[sp.start] = comment_text(body)
        if sp.cat == LICENSE:
            if not _LICENSE_WORDS.search(words):
                if has_marker(words):
                    sp.cat = INTENT
                elif looks_like_code(words, family):
                    sp.cat = CODE
                elif asks(words):
                    sp.cat = INTENT
            continue
        if has_marker(words):
            sp.cat = INTENT
        elif looks_like_code(words, family):
            sp.cat = CODE
        elif asks(words):
            sp.cat = INTENT
        elif is_decorative(body, words):
            sp.cat = DECOR
    runs = _runs(text, spans)
    if family == "python":
        budget = [_WINDOW_BUDGET]
        for run in runs:
            _python_run(text, run, budget)
    for run in runs:
        _paragraphs(text, run, said)


def _runs(text: str, spans: list[Span]) -> list[list[Span]]:
    """Runs of whole-line comments on consecutive lines."""
    runs: list[list[Span]] = []
    run: list[Span] = []
    for sp in spans:
        if sp.kind == "c" and _whole_line(text, sp) and (not run or _next_line(text, run[-1], sp)):
            run.append(sp)
            continue
        if len(run) > 1:
            runs.append(run)
        run = [sp] if sp.kind == "c" and _whole_line(text, sp) else []
    if len(run) > 1:
        runs.append(run)
    return runs


def _paragraphs(text: str, run: list[Span], said: dict[int, str]) -> None:
    # A TODO or a question often goes on over the next comment lines, or starts on
    # the line before: the sentence it is in is intent, however many lines it takes.
    # Line i+1 goes on with line i's sentence when line i is a bare marker or ends
    # in a colon, or when line i does not end a sentence and line i+1 starts in lower
    # case and is not a link, or line i ends on a word that cannot end a sentence
    # ("the", "of", "and"...). Block comments are whole already, and a line of
    # another kind (code, a rule, a directive) ends the chain.
    words = [said.get(sp.start, "") for sp in run]
    chain: list[int] = []
    for i, sp in enumerate(run):
        single = sp.cat in (PLAIN, INTENT) and "\n" not in text[sp.start : sp.end]
        if chain and single and _goes_on(words[chain[-1]], words[i]):
            chain.append(i)
            continue
        _spread(run, chain)
        chain = [i] if single else []
    _spread(run, chain)


def _spread(run: list[Span], chain: list[int]) -> None:
    if len(chain) > 1 and any(run[i].cat == INTENT for i in chain):
        for i in chain:
            run[i].cat = INTENT


_BARE_MARKER = re.compile(r"\A[@\\]?(?:TODO|FIXME|XXX|HACK|BUG|NOTE)\b[^\w]*\Z|:\Z", re.I)
_GOES_ON = re.compile(r"\A(?:[a-z(\"'`‘“]|\d+\))(?![a-z]+://)")


_OPEN_WORD = re.compile(
    r"(?i)(?:^|\s)(?:a|an|the|of|to|in|on|at|for|with|and|or|but|nor|is|are|be|that|which|if|when|than|as|by|from"
    r"|into|not)\Z"
)


def _goes_on(before: str, after: str) -> bool:
    if not before or not after:
        return False
    if _BARE_MARKER.search(before) or _OPEN_WORD.search(before):
        return True
    return not before.endswith((".", "!", "?", "？", ";")) and _GOES_ON.match(after) is not None


def _whole_line(text: str, sp: Span) -> bool:
    line_start = text.rfind("\n", 0, sp.start) + 1
    return not text[line_start : sp.start].strip(" \t\f")


def _next_line(text: str, a: Span, b: Span) -> bool:
    gap = text[a.end : b.start]
    return gap.count("\n") == 1 and not gap.strip(" \t\f\r\n")


_OPENER = re.compile(r"[:(\[{,\\]\Z")


#: window parses allowed for one text (`_python_run`): a pathological paste of many
#: comment lines ending in ":" would otherwise cost 30 parses a line; past the budget
#: lines keep what they were alone (which only moves a count in the report)
_WINDOW_BUDGET = 512


def _python_run(text: str, run: list[Span], budget: list[int]) -> None:
    # A block statement commented out parses only whole (`for x in xs:` alone does
    # not), so a run that starts with a line that fails alone is tried with the lines
    # after it, longest first. A window never holds a line of another kind nor a line
    # of prose that parses alone (`# Returns`).
    lines = [text[sp.start + 1 : sp.end].rstrip("\r") for sp in run]
    blocked = []
    for sp, ln in zip(run, lines):
        parses, code = _python_alone(ln.strip()) if sp.cat in (PLAIN, DECOR, CODE) else (False, False)
        blocked.append(sp.cat not in (PLAIN, DECOR, CODE) or (parses and not code))
    i = 0
    while i < len(run) - 1:
        if run[i].cat not in (PLAIN, DECOR) or blocked[i] or not _OPENER.search(lines[i].rstrip()):
            i += 1
            continue
        end = i + 1
        while end < min(len(run), i + 30) and not blocked[end]:
            end += 1
        for j in range(end, i + 1, -1):
            if budget[0] <= 0:
                return
            budget[0] -= 1
            source = textwrap.dedent("\n".join(lines[i:j]))
            tree = _python_tree(source)
            if tree is not None and _python_code_tree(tree, source):
                for sp in run[i:j]:
                    sp.cat = CODE
                i = j - 1
                break
        i += 1

