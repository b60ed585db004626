"""The rough estimate (`rough_count_chat`, no encoder yet) knows scripts (issue 44, item
4): Chinese and Japanese within 10% of the exact count in o200k and cl100k, on the
corpus's prompts and on paragraphs it was not measured on; text with no CJK character
counted exactly as before (characters ÷ 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from firsttoken.tokens import count_chat, rough_count_chat

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "compress"
CJK_PROMPTS = sorted(CORPUS.glob("cjk-*.md"))
ENGLISH = sorted(CORPUS.glob("prose-*.md")) + sorted(CORPUS.glob("system-prompt-*.md"))
MODELS = ["gpt-4o", "gpt-4"]  # o200k_base, cl100k_base

# Not among the texts the weights were measured on.
HELD_OUT = [
    "**注意：**请看下面的代码。\n这是**我想做的事。**所以继续。\n\n第一行\n第二行",
    "这是一个用于测试的段落。我们希望估算的结果与精确计数相差不超过百分之十。移动端的开发者经常需要在弱网环境下调试应用。",
    "firsttoken 是一个为手机打造的大模型聊天客户端：逻辑用 Python 写在浏览器里，只用标准库；界面是一层很薄的 JavaScript。",
    "CommonMark存在以下问题：在中文、日语和韩语文本中，强调标记`**`不会被识别为强调标记。这个问题是因为在`**`的结束部分，"
    "内侧字符是标点符号（。）或括号，而外侧字符不是空格或标点符号。",
    "これは日本語のテスト用の文章です。見積もりの結果が正確な数と一割以上ずれないことを確認します。",
]


def _off(text: str, model: str) -> float:
    messages = [{"role": "user", "content": text}]
    return rough_count_chat(messages, model) / count_chat(messages, model) - 1


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("path", CJK_PROMPTS, ids=lambda p: p.stem)
def test_cjk_prompts_are_estimated_within_10_percent(path: Path, model: str) -> None:
    assert abs(_off(path.read_text(encoding="utf-8"), model)) <= 0.10


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("text", HELD_OUT, ids=range(len(HELD_OUT)))
def test_held_out_cjk_text_is_estimated_within_10_percent(text: str, model: str) -> None:
    assert abs(_off(text, model)) <= 0.10


def test_chinese_is_no_longer_counted_at_four_characters_a_token() -> None:
    text = HELD_OUT[1]
    rough = rough_count_chat([{"role": "user", "content": text}], "gpt-4o") - 6
    assert rough > 2.5 * (len(text) / 4)  # chars ÷ 4 was about 3 times too low


@pytest.mark.parametrize("path", ENGLISH, ids=lambda p: p.stem)
def test_text_without_cjk_is_estimated_as_before(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for model in MODELS:
        assert rough_count_chat([{"role": "user", "content": text}], model) == 3 + 3 + -(-len(text) // 4)


def test_korean_is_estimated_by_its_own_weight() -> None:
    text = ("안녕하세요, 저는 모바일 개발자입니다. 이 코드의 문제점을 찾아 주세요. 메모리 누수가 있는지 확인하고, "
            "주 스레드에서 네트워크 요청을 하지 않는지 검토해 주세요.")
    for model in MODELS:
        assert abs(_off(text, model)) <= 0.15
