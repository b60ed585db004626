"""Markdown right for CJK, on Node (js/render/cjk.js with marked 18.2.1 and remend, as
js/render/markdown-stream.js drives them): emphasis and GFM strikethrough by the
CJK-friendly flanking rule (tats-u/markdown-cjk-friendly, specification.md and its
gfm-strikethrough amendment), soft line breaks between CJK
characters dropped, CommonMark unchanged elsewhere, and the open tail healed by remend
never showing asterisks once a pair is closed. In Chromium and WebKitGTK:
tests/e2e/test_cjk_markdown.py, tests/webkit/test_cjk_markdown.py.

cjk_markdown_cases.json holds the specification's own test cases (testcases/*.md, MIT)
with the HTML markdown-it-cjk-friendly gives for them (its test snapshot), and the
CommonMark 0.31.2 examples (CC BY-SA 4.0) of the inline sections."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASES = Path(__file__).with_name("cjk_markdown_cases.json")
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

# The page imports marked and remend from /vendor/ (gateway/static.py maps it onto
# node_modules); Node imports them from node_modules directly.
PRELUDE = """
import { Marked } from './node_modules/marked/lib/marked.esm.js';
import remend from './node_modules/remend/dist/index.js';
import { cjkFriendly, cjkPairingEverywhere } from './js/render/cjk.js';
const OPTIONS = { gfm: true, breaks: false, async: false };
const cjk = new Marked(OPTIONS, cjkFriendly);
const plain = new Marked(OPTIONS);
const user = new Marked({ ...OPTIONS, breaks: true }, cjkFriendly);
// What markdown-stream.js gives remend for the open tail.
const REMEND = { linkMode: 'text-only', images: false, katex: false, inlineKatex: false };
const input = JSON.parse(await new Promise((resolve) => {
  let data = '';
  process.stdin.on('data', (c) => { data += c; }).on('end', () => resolve(data));
}));
"""

ISSUE_EXAMPLE = "**注意：**请看下面的代码。\n这是**我想做的事。**所以继续。\n\n第一行\n第二行"


def run(script: str, data: Any = None) -> Any:
    done = subprocess.run(["node", "--no-warnings", "--input-type=module", "-e", PRELUDE + script], cwd=ROOT,
                          input=json.dumps(data), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def render(docs: list[str], renderer: str = "cjk") -> list[str]:
    result: list[str] = run(f"console.log(JSON.stringify(input.map((d) => {renderer}.parse(d))));", docs)
    return result


def test_the_issues_example_renders_bold_where_intended_with_no_stray_space() -> None:
    [html] = render([ISSUE_EXAMPLE])
    assert html == ("<p><strong>注意：</strong>请看下面的代码。这是<strong>我想做的事。</strong>所以继续。</p>\n"
                    "<p>第一行第二行</p>\n")
    # What marked alone gave (issue 44): literal asterisks, the wrong span bold, spaces.
    [before] = render([ISSUE_EXAMPLE], "plain")
    assert before.startswith("<p>**注意：<strong>请看下面的代码。\n这是</strong>")


def test_the_research_notes_cases_are_bold() -> None:
    # ../shared/RESEARCH-REASONING.md §4: literal in marked 18.2.1, bold with the rule.
    docs = ["**注意：**请看", "这是**我想做的事。**所以继续。", "不如人意的**《李茶的姑妈》**已经", '中文**"加粗"**中文',
            "使用**中文**测试", "**粗体**，然后"]
    assert render(docs) == [
        "<p><strong>注意：</strong>请看</p>\n",
        "<p>这是<strong>我想做的事。</strong>所以继续。</p>\n",
        "<p>不如人意的<strong>《李茶的姑妈》</strong>已经</p>\n",
        "<p>中文<strong>&quot;加粗&quot;</strong>中文</p>\n",
        "<p>使用<strong>中文</strong>测试</p>\n",
        "<p><strong>粗体</strong>，然后</p>\n",
    ]


def test_the_specifications_own_cases() -> None:
    cases = json.loads(CASES.read_text())["spec"]
    got = render([c["markdown"] for c in cases])
    # marked leaves `&ZeroWidthSpace;` as written (the browser shows the same character).
    got = [g.strip().replace("&ZeroWidthSpace;", "\u200b") for g in got]
    wrong = [(c["file"], c["markdown"], c["html"], g) for c, g in zip(cases, got) if g != c["html"]]
    assert wrong == []
    assert len(cases) == 123
    # Without the extension most of them are wrong: the cases do test the rule.
    before = [g.strip() for g in render([c["markdown"] for c in cases], "plain")]
    assert sum(b != c["html"] for c, b in zip(cases, before)) > 80


def test_commonmark_is_unchanged_without_cjk() -> None:
    examples = json.loads(CASES.read_text())["commonmark"]
    docs = [e["markdown"] for e in examples]
    assert len(docs) > 300
    assert render(docs) == render(docs, "plain")
    # Our pairing of `*` (what runs where CJK is near) is marked's own where it is not:
    # applied to every paragraph, it gives what marked gives.
    everywhere = run("const m = new Marked(OPTIONS, cjkPairingEverywhere);"
                     "console.log(JSON.stringify(input.map((d) => m.parse(d))));", docs)
    assert everywhere == render(docs, "plain")


def test_strikethrough_is_unchanged_without_cjk() -> None:
    # The specification's own GFM cases without CJK, and remark-gfm#19's edge case.
    docs = [json.loads(CASES.read_text())["gfm_non_cjk"], "a***~~b~~***c"]
    assert render(docs) == render(docs, "plain")
    assert render(docs)[1] == "<p>a<em><strong><del>b</del></strong></em>c</p>\n"


def test_our_pairing_is_markeds_on_random_text_without_cjk() -> None:
    script = """
    const ours = new Marked(OPTIONS, cjkPairingEverywhere);
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const pieces = ['*', '*', '**', '***', 'a', 'b', ' ', '_', '__', '"', '(', ')', '.', '~', '~~', '~~~', '`', '[',
                    '](u)', '\\\\*', '\\n', '\\n\\n', '<b>', '!', '«', 'é', '\\t', '1', '- ', '# ', '> '];
    const differ = [];
    for (let i = 0; i < 20000; i++) {
      let doc = '';
      for (let n = 2 + Math.floor(random() * 14); n > 0; n--) doc += pieces[Math.floor(random() * pieces.length)];
      if (ours.parse(doc) !== plain.parse(doc)) differ.push(doc);
    }
    console.log(JSON.stringify(differ));
    """
    assert run(script) == []


def test_emphasis_between_cjk_and_latin_and_across_tokens() -> None:
    docs = [
        "Go**「初心者」**を対象",  # Latin outside, CJK punctuation inside
        "**[链接](https://example.com)**也要注意",  # a link inside, CJK outside
        "패키지를 발행하려면 **`npm publish`**를 실행하십시오.",  # Korean after a code span
        "*强调：*然后 and *English* stays",  # single stars, and English beside
        "**真，** 她",  # a space outside: CommonMark's rule, unchanged
        "a**「b」**c",  # `「」` are CJK punctuation: bold, as the spec says
        "a**(b)**c",  # no CJK: CommonMark's literal asterisks stay
        "这是~~删除。~~所以",  # GFM strikethrough, amended the same way
    ]
    assert render(docs) == [
        "<p>Go<strong>「初心者」</strong>を対象</p>\n",
        '<p><strong><a href="https://example.com">链接</a></strong>也要注意</p>\n',
        "<p>패키지를 발행하려면 <strong><code>npm publish</code></strong>를 실행하십시오.</p>\n",
        "<p><em>强调：</em>然后 and <em>English</em> stays</p>\n",
        "<p><strong>真，</strong> 她</p>\n",
        "<p>a<strong>「b」</strong>c</p>\n",
        "<p>a**(b)**c</p>\n",
        "<p>这是<del>删除。</del>所以</p>\n",
    ]


def test_soft_breaks_between_cjk_characters_show_no_space() -> None:
    docs = [
        "第一行\n第二行",
        "句号。\n下一句",  # CJK punctuation counts
        "**粗体**\n第二行",  # the character before is inside the emphasis
        "[链接](u)\n第二行",
        "日本語の\n  文章です",  # the continuation line's indent goes with the break
        "中文\nEnglish",  # one side Latin: a space, as written
        "English\n中文",
        "한국어\n문장",  # Hangul: Korean puts spaces between words (CSS Text 4)
        "第一行  \n第二行",  # a hard break stays one
        "```\n第一行\n第二行\n```",  # code keeps its lines
        "- 第一项\n  续行",
    ]
    assert render(docs) == [
        "<p>第一行第二行</p>\n",
        "<p>句号。下一句</p>\n",
        "<p><strong>粗体</strong>第二行</p>\n",
        '<p><a href="u">链接</a>第二行</p>\n',
        "<p>日本語の文章です</p>\n",
        "<p>中文\nEnglish</p>\n",
        "<p>English\n中文</p>\n",
        "<p>한국어\n문장</p>\n",
        "<p>第一行<br>第二行</p>\n",
        "<pre><code>第一行\n第二行\n</code></pre>\n",
        "<ul>\n<li>第一项续行</li>\n</ul>\n",
    ]


def test_a_users_typed_line_breaks_stay_line_breaks() -> None:
    # User messages render with `breaks` (markdown-stream.js): each typed newline is a <br>,
    # CJK or not; emphasis follows the same CJK rule as answers.
    [html] = render([ISSUE_EXAMPLE], "user")
    assert html == ("<p><strong>注意：</strong>请看下面的代码。<br>这是<strong>我想做的事。</strong>所以继续。</p>\n"
                    "<p>第一行<br>第二行</p>\n")


STREAM = """
// Every prefix of each document is what some chunking shows at some frame: the open
// tail is healed by remend and rendered (markdown-stream.js paintTail). A prefix's
// visible text may end in the run of marks just opened (remend leaves a lone `**`: it
// cannot know yet what it opens), and nowhere else holds one.
const report = [];
for (const { doc, bold } of input) {
  const chars = [...doc];
  for (let i = 1; i <= chars.length; i++) {
    const prefix = chars.slice(0, i).join('');
    const html = cjk.parse(remend(prefix, REMEND));
    const text = html.replace(/<[^>]*>/g, '');
    const trailing = /[*~]+$/.exec(prefix.trimEnd())?.[0] ?? '';
    const shown = text.trimEnd();
    const stars = (shown.match(/[*~]/g) || []).length;
    if (stars && !(shown.endsWith(trailing) && stars === trailing.length)) report.push({ prefix, html });
    // Once a phrase's closing `**` is in, it is bold, and stays bold.
    for (const phrase of bold) {
      const [mark, tag, words] = phrase.startsWith('~') ? ['~~', 'del', phrase.slice(1)] : ['**', 'strong', phrase];
      const escaped = words.replaceAll('"', '&quot;');
      if (prefix.includes(`${mark}${words}${mark}`) && !html.includes(`<${tag}>${escaped}</${tag}>`)) report.push({ prefix, html, phrase });
    }
  }
}
console.log(JSON.stringify(report));
"""


def test_while_streaming_no_asterisks_show_once_closed_whatever_the_chunking() -> None:
    docs = [
        {"doc": ISSUE_EXAMPLE, "bold": ["注意：", "我想做的事。"]},
        {"doc": "不如人意的**《李茶的姑妈》**已经上映。", "bold": ["《李茶的姑妈》"]},
        {"doc": '中文**"加粗"**中文，**注意：**完', "bold": ['"加粗"', "注意："]},
        {"doc": "これは**私のやりたかったこと。**だからするの。", "bold": ["私のやりたかったこと。"]},
        # `~` before a phrase: struck through (`~~`), not bold.
        {"doc": "这是~~删除。~~所以**注意：**继续。", "bold": ["~删除。", "注意："]},
    ]
    assert run(STREAM, docs) == []
