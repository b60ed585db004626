"""Compression right for Chinese and Japanese (issue 44, item 3): no space put between
two CJK characters or taken from between CJK and Latin text, no CJK lines joined with a
space, full-width spaces (U+3000) and full-width punctuation kept as written
(py/firsttoken/compress/prose.py says why). The invariant itself,
`cjk_spacing_problems`, runs on every corpus document in test_compress_properties.py;
here it meets the Chinese and Japanese prompts, hand-picked cases and Hypothesis."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.compress_invariants import check_text, cjk_spacing_problems, fences
from tests.unit.markdownish import CORPUS

from firsttoken.compress import LEVELS, compress_text
from firsttoken.tokens import count

SETTINGS = settings(
    max_examples=int(os.environ.get("FIRSTTOKEN_COMPRESS_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

CJK_PROMPTS = sorted(CORPUS.glob("cjk-*.md"))


def test_the_corpus_has_chinese_and_japanese_prompts() -> None:
    names = [p.stem for p in CJK_PROMPTS]
    assert sum(n.startswith("cjk-zh-") for n in names) >= 5
    assert sum(n.startswith("cjk-ja-") for n in names) >= 3


@pytest.mark.parametrize("path", CJK_PROMPTS, ids=lambda p: p.stem)
def test_cjk_prompts_compress_with_no_violation_and_save_tokens(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for level in sorted(LEVELS):
        assert check_text(text, level) == [], level
    out = compress_text(text).text
    assert count(out, "o200k_base") < count(text, "o200k_base")
    # Full-width punctuation and spaces are kept as written, every one of them.
    for mark in "，。：；！？、（）《》「」\u3000":
        assert out.count(mark) == text.count(mark), mark


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("第一行\n第二行", "第一行\n第二行"),  # never joined, with a space or without
        ("第一行  \n第二行", "第一行\n第二行"),  # trailing spaces go, the line break stays
        ("中文  中文", "中文 中文"),  # a run of spaces is one space, never none
        ("使用   Python   开发", "使用 Python 开发"),  # CJK and Latin stay two words
        ("中文\u3000\u3000中文", "中文\u3000\u3000中文"),  # full-width spaces are kept...
        ("中文\u3000\n下一行", "中文\u3000\n下一行"),  # ...at a line end too
        ("\u3000\u3000段落开头的缩进", "\u3000\u3000段落开头的缩进"),  # the paragraph indent
        ("你好，世界！（测试）", "你好，世界！（测试）"),  # full-width punctuation as written
        ("| 名称   | 说明     |\n|------|------|\n| 甲   | 乙     |", "| 名称 | 说明 |\n|---|---|\n| 甲 | 乙 |"),
    ],
)
def test_cjk_whitespace_cases(text: str, expected: str) -> None:
    assert compress_text(text, level="max").text == expected


def test_the_check_finds_what_it_is_for() -> None:
    assert cjk_spacing_problems("中文中文", "中文 中文") == ["a space next to CJK text appeared or went"]
    assert cjk_spacing_problems("使用 Python", "使用Python") == ["a space next to CJK text appeared or went"]
    assert cjk_spacing_problems("第一行\n第二行", "第一行 第二行") == ["CJK lines joined with a space"]
    assert cjk_spacing_problems("中文\u3000\u3000中文", "中文\u3000中文") == ["a full-width space changed"]
    assert cjk_spacing_problems("line one\nline two", "line one line two") == []  # not CJK: other checks' business
    assert cjk_spacing_problems("中文  中文\n\n\n下一段", "中文 中文\n\n下一段") == []


_PIECES = st.sampled_from(["中", "文", "。", "，", "「", "」", "日本語", "한국어", "a", "Python", "1", " ", "  ", "\t",
                           "\n", "\n\n", "\r\n", "\u3000", "**", "`x`", "- ", "# ", "| ", " |", "---", "    "])


@SETTINGS
@given(st.lists(_PIECES, max_size=40).map("".join), st.sampled_from(sorted(LEVELS)))
def test_no_cjk_spacing_is_ever_broken(text: str, level: str) -> None:
    out = compress_text(text, level=level).text
    assert cjk_spacing_problems(fences(text)[1], fences(out)[1]) == []
