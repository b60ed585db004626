"""Prose whitespace pass, and the code-span guard shared with the table pass.

Outside code, runs of spaces, trailing spaces and extra blank lines carry no meaning
for a model. What we keep, and why:

* inline code spans (CommonMark 0.31.2 §6.1) are byte-identical: a run of N backticks
  opens a span that the next run of exactly N backticks closes, within a paragraph;
  a backtick escaped with a backslash opens nothing;
* leading indentation: it nests lists and, at four columns or a tab, makes an
  indented code block (§4.4), whose inner spacing we also keep;
* tabs inside a line: they separate pasted TSV columns, and a tab run is not padding;
* line endings: CRLF stays CRLF, so a text's bytes change only where we mean them to.

Chinese, Japanese and Korean (issue 44). Chinese and Japanese put no spaces between
words, so a space next to a CJK character is never padding, and we:

* never put a space where there was none: only runs of two or more ASCII spaces are
  squeezed, and always to one (LLMLingua-style compressors that split and re-join on
  spaces put spaces into Chinese, microsoft/LLMLingua#131);
* never join lines: a line break between two Han or Kana characters would read as a
  space in mid-sentence (CSS Text 4 joins such lines with nothing; commonmark-spec#744),
  and across the board lines carry lists, verse and addresses;
* never take the last space between CJK and Latin text (`使用 Python`): a run keeps one;
* keep full-width spaces (U+3000) wherever they are. At the start of a paragraph one or
  two are its indent (字下げ), inside a line they align forms (`姓名：　张三`) or
  separate names, and at a line end they cost nothing: in o200k a trailing U+3000
  merges with the line break (`中文\u3000\n下一行` is 4 tokens, as without it);
  squeezing a run of them would save one token a run and lose the alignment;
* keep full-width punctuation (`，。：（）《》`) as written: it is the text's own
  spelling, not formatting, and the ASCII forms cost the same (`你好，世界。` and
  `你好,世界.` are 4 tokens each in o200k, 7 in cl100k).

`tests/unit/compress_invariants.py` (`cjk_spacing_problems`) checks all of this apart
from the compressor, on the corpus's Chinese and Japanese prompts and with Hypothesis.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["code_spans", "protect_code_spans", "compress_prose", "strip_final_newlines"]

# Opening run not preceded by a backslash or backtick; content without a blank line;
# closing run of exactly the same length (the back-reference plus the lookarounds).
_CODE_SPAN = re.compile(
    r"(?<![\\`])(`+)(?!`)((?:(?!\n[ \t]*\r?\n)[\s\S])+?)(?<!`)\1(?!`)"
)
_SENTINELS = ("\ue000", "\ue001", "\ue002", "\ue003", "\uf8fe")

_TRAILING = re.compile(r"[ \t]+(?=\r?$)", re.M)
# Either a whole indented line (kept) or an inner run of spaces between two visible
# characters (collapsed to one space).
_RUNS = re.compile(r"(?P<ind>^(?: {0,3}\t| {4})[^\n]*)|(?<=[^ \t\r\n]) {2,}(?=[^ \t\r\n])", re.M)
_LEADING_BLANKS = re.compile(r"\A(\r?\n)(?:\r?\n)*")
_BLANK_RUNS = re.compile(r"(\r?\n)(\r?\n)(?:\r?\n)+")
_FINAL_NEWLINES = re.compile(r"(?:\r?\n)+\Z")


def code_spans(text: str) -> list[str]:
    """The inline code spans `protect_code_spans` hides, backticks included."""
    return [m.group(0) for m in _CODE_SPAN.finditer(text)] if "`" in text else []


def protect_code_spans(text: str, fn: Callable[[str], str]) -> str:
    """Apply `fn` to `text` with every inline code span hidden behind a placeholder.

    The placeholder is a private-use character, the span's index and the character
    again: no whitespace, no pipe, no backtick, so `fn` sees one opaque word. If every
    candidate character already occurs in the text, `fn` is not applied at all.
    """
    if "`" not in text:
        return fn(text)
    for s in _SENTINELS:
        if s not in text:
            break
    else:
        return text
    spans: list[str] = []

    def hide(m: re.Match[str]) -> str:
        spans.append(m.group(0))
        return f"{s}{len(spans) - 1}{s}"

    hidden = _CODE_SPAN.sub(hide, text)
    if not spans:
        return fn(text)
    out = fn(hidden)
    return re.sub(f"{s}([0-9]+){s}", lambda m: spans[int(m.group(1))], out)


def _runs(m: re.Match[str]) -> str:
    return m.group("ind") or " "


def _squeeze(text: str) -> str:
    text = _TRAILING.sub("", text)
    if "  " in text or "\t" in text:
        text = _RUNS.sub(_runs, text)
    return text


def compress_prose(text: str, *, first: bool, last: bool) -> str:
    """One prose block with whitespace squeezed.

    `first`/`last` say whether the block starts/ends the document: leading blank lines
    go entirely at the start, trailing ones (and the final line ending) at the end;
    between blocks at most one blank line remains.
    """
    text = protect_code_spans(text, _squeeze)
    text = _LEADING_BLANKS.sub("" if first else r"\1", text)
    text = _BLANK_RUNS.sub(r"\1\2", text)
    if last:
        text = _FINAL_NEWLINES.sub("", text)
    return text


def strip_final_newlines(text: str) -> str:
    """Drop line endings at the very end of a document."""
    return _FINAL_NEWLINES.sub("", text)
