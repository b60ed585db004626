"""The page in the reader's language, in real Chromium (issue 44, items 1 and 5;
js/page/i18n.js): with `zh-CN` as the browser's language the interface is Chinese in
its main states (empty, an answer with its thinking, Settings open, the Thinking menu
open): no English word of four letters or more in what it shows or says to a screen
reader, outside the model's name, its answer, code and the user's own text; axe-core
passes in Chinese; a host's `settings.set` sets the locale, a choice in Settings wins
and is remembered; an Arabic message reads right to left, its code left to right; and
the README's Chinese screenshot is taken.
In WebKitGTK: tests/webkit/test_i18n.py. The catalogues: tests/js/i18n.test.mjs."""

from __future__ import annotations

import re
from typing import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from harness.chromium import ANSWER, PIXEL_7, Console, send, steer, wait_ready, watched_page
from tests.e2e.native_host import as_host, host_message, post
from tests.e2e.test_shell import axe

pytestmark = pytest.mark.e2e

THINK = "firsttoken-sim-think"

#: Names the page keeps as they are named, in every language: products and APIs, data
#: formats, and each language's own name in the Language list (a reader finds theirs).
NAMES = {"Python", "OpenAI", "Claude", "Chat", "Completions", "Responses", "Anthropic", "Messages",
         "codex", "JSON", "Markdown", "firsttoken", "English",
         "TODO"}  # the marker itself, as it is written in code (the compression hints)

# What the interface shows and says, as text: every visible text node and the
# aria-label, title and placeholder of every visible element, but the model's name, the
# model's words (answers and thinking), code, and the user's own text (their messages,
# and what they typed into fields).
SHOWN = """() => {
  const theirs = '#model-name, .msg .content, .thinking-body, .thinking-preview, pre, code, textarea, input';
  const visible = (el) => (el.checkVisibility ? el.checkVisibility({ visibilityProperty: true }) : el.getClientRects().length > 0);
  const shown = (el) => visible(el)
    && !(el.closest('details:not([open])') && !el.closest('summary'));
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(theirs) || el.closest('script, style') || !n.data.trim()) continue;
    if (el.closest('select') ? shown(el.closest('select')) : shown(el)) out.push(n.data.trim());
  }
  for (const el of document.querySelectorAll('[aria-label], [title], [placeholder]')) {
    if (!shown(el)) continue;
    for (const a of ['aria-label', 'title']) if (el.getAttribute(a)) out.push(el.getAttribute(a));
    if (el.getAttribute('placeholder') && !el.matches('#model, #base-url')) out.push(el.getAttribute('placeholder'));
  }
  return out;
}"""


def english_words(page: Page) -> set[str]:
    model = page.inner_text("#model-name")  # also named in Settings' API line
    texts = [re.sub(r"https?://\S+", "", text.replace(model, "")) for text in page.evaluate(SHOWN)]
    words = {w for text in texts for w in re.findall(r"[A-Za-z]{4,}", text)}
    return words - NAMES


@pytest.fixture
def chinese_page(browser: Browser, console: Console) -> Iterator[Page]:
    # axe-core goes in as the tests' own script: the page's CSP would refuse it, rightly.
    yield from watched_page(browser, console, locale="zh-CN", bypass_csp=True, **PIXEL_7)


def test_with_chinese_as_the_browsers_language_the_interface_is_chinese(chinese_page: Page, gateway_url: str) -> None:
    page = chinese_page
    steer(page, "think_tokens=20,tps=400,tokens=30", model=THINK)
    page.goto(gateway_url + "/")
    wait_ready(page)
    assert page.get_attribute("html", "lang") == "zh-CN"
    found = {}
    expect(page.locator("#boot")).to_have_text("就绪")
    assert english_words(page) == set(), "empty"
    found["empty"] = axe(page)

    # (The user's text shows in the title and the conversation list too: Chinese here.)
    page.fill("#prompt", "请用一句话介绍你自己")
    page.get_by_role("button", name="发送", exact=True).click()
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    expect(page.locator(f"{ANSWER} .thinking-label")).to_have_text(re.compile(r"^已思考( \d+ 秒)?$"))
    expect(page.get_by_role("button", name="复制").first).to_be_visible()
    assert english_words(page) == set(), "answer"
    found["answer"] = axe(page)

    page.get_by_role("button", name="思考：自动").click()
    expect(page.get_by_role("menu", name="思考")).to_be_visible()
    expect(page.get_by_role("menuitemradio", name=re.compile("^高"))).to_be_visible()
    assert english_words(page) == set(), "thinking menu"
    found["menu"] = axe(page)
    page.keyboard.press("Escape")

    page.get_by_role("button", name="设置").click()
    expect(page.get_by_role("dialog", name="设置")).to_be_visible()
    assert english_words(page) == set(), "settings"
    found["settings"] = axe(page)
    assert all(not v for v in found.values()), found


def test_a_choice_in_settings_wins_and_is_remembered(chinese_page: Page, gateway_url: str) -> None:
    page = chinese_page
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.get_by_role("button", name="设置").click()
    page.get_by_label("语言").select_option("en")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.get_by_role("dialog", name="Settings")).to_be_visible()
    page.reload()
    wait_ready(page)
    expect(page.get_by_role("button", name="Send", exact=True)).to_be_visible()
    assert page.get_attribute("html", "lang") == "en"


def test_a_host_sets_the_locale(page: Page, gateway_url: str) -> None:
    as_host(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    assert page.get_attribute("html", "lang") == "en"
    post(page, {"type": "settings.set", "id": "zh", "settings": {"locale": "zh-CN"}})
    assert host_message(page, "settings.applied", "zh")["settings"] == {"locale": "zh-CN", "api_key": False}
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page.get_by_role("button", name="发送", exact=True)).to_be_visible()
    expect(page.locator("#prompt")).to_have_attribute("placeholder", "发消息")
    post(page, {"type": "settings.set", "id": "bad", "settings": {"locale": 42}})
    assert host_message(page, "error", "bad")["error"]["code"]
    post(page, {"type": "settings.set", "id": "off", "settings": {"locale": None}})
    expect(page.locator("html")).to_have_attribute("lang", "en")


ARABIC = "مرحبا! هذا مثال قصير عن الشيفرة:\n\n```python\nprint('hello')\n```\n\nشكرا لك."


def test_an_arabic_message_reads_right_to_left_and_its_code_left_to_right(page: Page, gateway_url: str) -> None:
    steer(page, "ttft_ms=0,tps=400,echo=1", compress="off")
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, ARABIC)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    for role in ("user", "assistant"):
        content = page.locator(f'.msg[data-role="{role}"] .content').last
        assert content.get_attribute("dir") == "auto"
        assert content.evaluate("(el) => getComputedStyle(el).direction") == "rtl", role
        assert content.locator("p").first.evaluate("(el) => getComputedStyle(el).direction") == "rtl", role
        assert content.locator("pre").evaluate("(el) => getComputedStyle(el).direction") == "ltr", role
    assert page.get_attribute("#prompt", "dir") == "auto"
    assert page.get_attribute("#conversation-title", "dir") == "auto"


CONVERSATION = {
    "format": "firsttoken.conversation", "version": 1, "title": "判断回文的 Python 函数",
    "messages": [
        {"role": "user", "content": "用 Python 写一个函数，判断一个字符串是不是回文。"},
        {"role": "assistant", "content": (
            "先去掉空白和标点、统一大小写，再和反转后的结果比较：\n\n"
            "```python\ndef is_palindrome(s: str) -> bool:\n"
            "    cleaned = [c.lower() for c in s if c.isalnum()]\n"
            "    return cleaned == cleaned[::-1]\n```\n\n"
            "**要点：**\n\n"
            "1. `str.isalnum()` 对汉字也返回 `True`，所以“上海自来水来自海上”同样适用。\n"
            "2. 时间复杂度 O(n)，额外空间 O(n)。\n\n"
            "| 输入 | 结果 |\n|---|---|\n| `\"level\"` | `True` |\n| `\"上海自来水来自海上\"` | `True` |\n| `\"你好\"` | `False` |\n")},
    ],
}


def test_a_chinese_conversation_is_photographed(chinese_page: Page, gateway_url: str) -> None:
    """The README's Chinese screenshot (`make screenshots`): a conversation imported as a
    person would (its JSON file), on a Pixel 7 in Chinese; with Debian's Noto CJK fonts
    (`make fonts`) its Han characters are real glyphs."""
    import json

    from tests.e2e.test_shell import shoot

    page = chinese_page
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.set_input_files("input.conv-import-file", files=[{
        "name": "conversation.json", "mimeType": "application/json",
        "buffer": json.dumps(CONVERSATION, ensure_ascii=False).encode()}])
    expect(page.locator("#conversation-title")).to_have_text("判断回文的 Python 函数")
    expect(page.locator(f"{ANSWER} table")).to_be_visible()
    if page.locator("#conversations").is_visible():
        page.get_by_role("button", name="对话列表").click()
    expect(page.locator("#conversations")).to_be_hidden()
    page.locator("#chat").evaluate("(el) => { el.scrollTop = 0; }")
    page.evaluate("document.fonts.ready.then(() => 1)")
    shoot(page, "chinese-phone-light")
