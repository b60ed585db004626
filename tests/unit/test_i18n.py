"""The page's catalogues on Node (js/page/i18n.js, js/page/i18n/*.js): every locale has
every key English has, and no other; every `{placeholder}` of an English message is in
its translation (a translation that drops `{s}` says "Thought for  s"); plural messages
have an `other` form; and the lookup itself: English as the fallback, numbers and
plurals by `Intl`, the locale matched from BCP 47 tags (issue 44)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

SCRIPT = """
import { CATALOGUES, LOCALES, match, t, locale, chooseLocale, formatNumber } from './js/page/i18n.js';
const out = { catalogues: CATALOGUES, locales: LOCALES };
out.matched = [['zh-CN'], ['zh-Hans-CN'], ['zh'], ['zh-TW'], ['fr-FR', 'zh-SG'], ['ar'], ['not a tag', 'en-GB'], []].map(match);
chooseLocale('en');
out.en = [locale(), t('thinking.thoughtFor', { s: 12 }), t('message.images', { count: 1 }),
          t('message.images', { count: 3 }), t('composer.tokens', { count: 1234, budget: 200000 }), formatNumber(1234)];
chooseLocale('zh-CN');
out.zh = [locale(), t('thinking.thoughtFor', { s: 12 }), t('message.images', { count: 1 }),
          t('composer.tokens', { count: 1234, budget: 200000 }), t('composer.send'), t('no.such.key')];
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def out() -> Any:
    done = subprocess.run(["node", "--no-warnings", "--input-type=module", "-e", SCRIPT], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def placeholders(message: Any) -> set[str]:
    forms = message.values() if isinstance(message, dict) else [message]
    return {name for form in forms for name in re.findall(r"\{(\w+)\}", form)}


def test_every_locale_has_every_key_and_no_other(out: Any) -> None:
    english = out["catalogues"]["en"]
    assert out["locales"][0] == "en" and "zh-CN" in out["locales"]
    for tag, catalogue in out["catalogues"].items():
        assert set(catalogue) - set(english) == set(), tag
        assert set(english) - set(catalogue) == set(), tag
        for key, message in catalogue.items():
            # ('' is a message: Chinese puts no space between sentences.)
            assert isinstance(message, (str, dict)) and (message or key.endswith("Gap")), (tag, key)
            if isinstance(message, dict):
                assert "other" in message, (tag, key)


def test_every_english_placeholder_is_in_each_translation(out: Any) -> None:
    english = out["catalogues"]["en"]
    for tag, catalogue in out["catalogues"].items():
        for key, message in english.items():
            # `count` may be left implicit in a plural's `one` form ("An image"), never
            # in the message as a whole.
            assert placeholders(message) <= placeholders(catalogue[key]), (tag, key)
            assert placeholders(catalogue[key]) <= placeholders(message), (tag, key)


def test_chinese_reads_as_chinese(out: Any) -> None:
    # No English word of four letters or more, but the names the page keeps as named.
    names = {"Python", "OpenAI", "Claude", "Chat", "Completions", "Responses", "Anthropic", "Messages",
             "codex", "JSON", "Markdown", "firsttoken", "https", "http", "openai",
             "TODO", "FIXME", "NOTE"}  # markers in code, which the compression note names
    for key, message in out["catalogues"]["zh-CN"].items():
        for form in message.values() if isinstance(message, dict) else [message]:
            words = set(re.findall(r"[A-Za-z]{4,}", re.sub(r"\{\w+\}", "", form)))
            assert words <= names, (key, words - names)


def test_the_locale_is_matched_from_language_tags(out: Any) -> None:
    assert out["matched"] == ["zh-CN", "zh-CN", "zh-CN", "zh-CN", "zh-CN", None, "en", None]


def test_messages_are_filled_and_formatted_by_intl(out: Any) -> None:
    assert out["en"] == ["en", "Thought for 12 s", "An image", "3 images", "1,234 / 200,000 tokens", "1,234"]
    assert out["zh"] == ["zh-CN", "已思考 12 秒", "1 张图片", "1,234 / 200,000 词元", "发送", "no.such.key"]
