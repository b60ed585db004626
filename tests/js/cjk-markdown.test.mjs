// Markdown right for CJK, on Node (js/render/cjk.js with marked 18.2.1 and remend, as
// js/render/markdown-stream.js drives them): emphasis and GFM strikethrough by the
// CJK-friendly flanking rule (tats-u/markdown-cjk-friendly, specification.md and its
// gfm-strikethrough amendment), soft line breaks between CJK characters dropped,
// CommonMark unchanged elsewhere, and the open tail healed by remend never showing
// asterisks once a pair is closed. In Chromium and WebKitGTK:
// tests/e2e/test_cjk_markdown.py, tests/webkit/test_cjk_markdown.py.
//
// cjk-markdown-cases.json holds the specification's own test cases (testcases/*.md, MIT)
// with the HTML markdown-it-cjk-friendly gives for them (its test snapshot), and the
// CommonMark 0.31.2 examples (CC BY-SA 4.0) of the inline sections.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

// The page imports marked and remend from /vendor/ (gateway/static.py maps it onto
// node_modules); Node imports them from node_modules directly.
import { Marked } from '../../node_modules/marked/lib/marked.esm.js';
import remend from '../../node_modules/remend/dist/index.js';
import { cjkFriendly, cjkPairingEverywhere } from '../../js/render/cjk.js';

const CASES = JSON.parse(readFileSync(new URL('./cjk-markdown-cases.json', import.meta.url), 'utf8'));
const OPTIONS = { gfm: true, breaks: false, async: false };
const cjk = new Marked(OPTIONS, cjkFriendly);
const plain = new Marked(OPTIONS);
const user = new Marked({ ...OPTIONS, breaks: true }, cjkFriendly);
// What markdown-stream.js gives remend for the open tail.
const REMEND = { linkMode: 'text-only', images: false, katex: false, inlineKatex: false };

const ISSUE_EXAMPLE = '**注意：**请看下面的代码。\n这是**我想做的事。**所以继续。\n\n第一行\n第二行';
const render = (docs, renderer = cjk) => docs.map((d) => renderer.parse(d));

test("the issue's example renders bold where intended with no stray space", () => {
  assert.equal(cjk.parse(ISSUE_EXAMPLE),
    '<p><strong>注意：</strong>请看下面的代码。这是<strong>我想做的事。</strong>所以继续。</p>\n<p>第一行第二行</p>\n');
  // What marked alone gave (issue 44): literal asterisks, the wrong span bold, spaces.
  assert.ok(plain.parse(ISSUE_EXAMPLE).startsWith('<p>**注意：<strong>请看下面的代码。\n这是</strong>'));
});

test("the research notes' cases are bold", () => {
  // ../shared/RESEARCH-REASONING.md §4: literal in marked 18.2.1, bold with the rule.
  const docs = ['**注意：**请看', '这是**我想做的事。**所以继续。', '不如人意的**《李茶的姑妈》**已经', '中文**"加粗"**中文',
    '使用**中文**测试', '**粗体**，然后'];
  assert.deepEqual(render(docs), [
    '<p><strong>注意：</strong>请看</p>\n',
    '<p>这是<strong>我想做的事。</strong>所以继续。</p>\n',
    '<p>不如人意的<strong>《李茶的姑妈》</strong>已经</p>\n',
    '<p>中文<strong>&quot;加粗&quot;</strong>中文</p>\n',
    '<p>使用<strong>中文</strong>测试</p>\n',
    '<p><strong>粗体</strong>，然后</p>\n',
  ]);
});

test("the specification's own cases", () => {
  const cases = CASES.spec;
  assert.equal(cases.length, 123);
  // marked leaves `&ZeroWidthSpace;` as written (the browser shows the same character).
  const got = render(cases.map((c) => c.markdown)).map((g) => g.trim().replaceAll('&ZeroWidthSpace;', '\u200b'));
  const wrong = cases.flatMap((c, i) => (got[i] === c.html ? [] : [[c.file, c.markdown, c.html, got[i]]]));
  assert.deepEqual(wrong, []);
  // Without the extension most of them are wrong: the cases do test the rule.
  const before = render(cases.map((c) => c.markdown), plain).map((g) => g.trim());
  assert.ok(cases.filter((c, i) => before[i] !== c.html).length > 80);
});

test('CommonMark is unchanged without CJK', () => {
  const docs = CASES.commonmark.map((e) => e.markdown);
  assert.ok(docs.length > 300);
  assert.deepEqual(render(docs), render(docs, plain));
  // Our pairing of `*` (what runs where CJK is near) is marked's own where it is not:
  // applied to every paragraph, it gives what marked gives.
  assert.deepEqual(render(docs, new Marked(OPTIONS, cjkPairingEverywhere)), render(docs, plain));
});

test('strikethrough is unchanged without CJK', () => {
  // The specification's own GFM cases without CJK, and remark-gfm#19's edge case.
  const docs = [CASES.gfm_non_cjk, 'a***~~b~~***c'];
  assert.deepEqual(render(docs), render(docs, plain));
  assert.equal(render(docs)[1], '<p>a<em><strong><del>b</del></strong></em>c</p>\n');
});

test("our pairing is marked's on random text without CJK", () => {
  const ours = new Marked(OPTIONS, cjkPairingEverywhere);
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pieces = ['*', '*', '**', '***', 'a', 'b', ' ', '_', '__', '"', '(', ')', '.', '~', '~~', '~~~', '`', '[',
    '](u)', '\\*', '\n', '\n\n', '<b>', '!', '«', 'é', '\t', '1', '- ', '# ', '> '];
  const differ = [];
  for (let i = 0; i < 20000; i++) {
    let doc = '';
    for (let n = 2 + Math.floor(random() * 14); n > 0; n--) doc += pieces[Math.floor(random() * pieces.length)];
    if (ours.parse(doc) !== plain.parse(doc)) differ.push(doc);
  }
  assert.deepEqual(differ, []);
});

test('emphasis between CJK and Latin and across tokens', () => {
  const docs = [
    'Go**「初心者」**を対象', // Latin outside, CJK punctuation inside
    '**[链接](https://example.com)**也要注意', // a link inside, CJK outside
    '패키지를 발행하려면 **`npm publish`**를 실행하십시오.', // Korean after a code span
    '*强调：*然后 and *English* stays', // single stars, and English beside
    '**真，** 她', // a space outside: CommonMark's rule, unchanged
    'a**「b」**c', // `「」` are CJK punctuation: bold, as the spec says
    'a**(b)**c', // no CJK: CommonMark's literal asterisks stay
    '这是~~删除。~~所以', // GFM strikethrough, amended the same way
  ];
  assert.deepEqual(render(docs), [
    '<p>Go<strong>「初心者」</strong>を対象</p>\n',
    '<p><strong><a href="https://example.com">链接</a></strong>也要注意</p>\n',
    '<p>패키지를 발행하려면 <strong><code>npm publish</code></strong>를 실행하십시오.</p>\n',
    '<p><em>强调：</em>然后 and <em>English</em> stays</p>\n',
    '<p><strong>真，</strong> 她</p>\n',
    '<p>a<strong>「b」</strong>c</p>\n',
    '<p>a**(b)**c</p>\n',
    '<p>这是<del>删除。</del>所以</p>\n',
  ]);
});

test('soft breaks between CJK characters show no space', () => {
  const docs = [
    '第一行\n第二行',
    '句号。\n下一句', // CJK punctuation counts
    '**粗体**\n第二行', // the character before is inside the emphasis
    '[链接](u)\n第二行',
    '日本語の\n  文章です', // the continuation line's indent goes with the break
    '中文\nEnglish', // one side Latin: a space, as written
    'English\n中文',
    '한국어\n문장', // Hangul: Korean puts spaces between words (CSS Text 4)
    '第一行  \n第二行', // a hard break stays one
    '```\n第一行\n第二行\n```', // code keeps its lines
    '- 第一项\n  续行',
  ];
  assert.deepEqual(render(docs), [
    '<p>第一行第二行</p>\n',
    '<p>句号。下一句</p>\n',
    '<p><strong>粗体</strong>第二行</p>\n',
    '<p><a href="u">链接</a>第二行</p>\n',
    '<p>日本語の文章です</p>\n',
    '<p>中文\nEnglish</p>\n',
    '<p>English\n中文</p>\n',
    '<p>한국어\n문장</p>\n',
    '<p>第一行<br>第二行</p>\n',
    '<pre><code>第一行\n第二行\n</code></pre>\n',
    '<ul>\n<li>第一项续行</li>\n</ul>\n',
  ]);
});

test("a user's typed line breaks stay line breaks", () => {
  // User messages render with `breaks` (markdown-stream.js): each typed newline is a <br>,
  // CJK or not; emphasis follows the same CJK rule as answers.
  assert.equal(user.parse(ISSUE_EXAMPLE),
    '<p><strong>注意：</strong>请看下面的代码。<br>这是<strong>我想做的事。</strong>所以继续。</p>\n<p>第一行<br>第二行</p>\n');
});

test('while streaming no asterisks show once closed, whatever the chunking', () => {
  const docs = [
    { doc: ISSUE_EXAMPLE, bold: ['注意：', '我想做的事。'] },
    { doc: '不如人意的**《李茶的姑妈》**已经上映。', bold: ['《李茶的姑妈》'] },
    { doc: '中文**"加粗"**中文，**注意：**完', bold: ['"加粗"', '注意：'] },
    { doc: 'これは**私のやりたかったこと。**だからするの。', bold: ['私のやりたかったこと。'] },
    // `~` before a phrase: struck through (`~~`), not bold.
    { doc: '这是~~删除。~~所以**注意：**继续。', bold: ['~删除。', '注意：'] },
  ];
  // Every prefix of each document is what some chunking shows at some frame: the open
  // tail is healed by remend and rendered (markdown-stream.js paintTail). A prefix's
  // visible text may end in the run of marks just opened (remend leaves a lone `**`: it
  // cannot know yet what it opens), and nowhere else holds one.
  const report = [];
  for (const { doc, bold } of docs) {
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
  assert.deepEqual(report, []);
});
