// Markdown marks taken out of a line, on Node (js/render/plain-text.js): what a
// conversation's title should show for a first prompt like issue 44's `**注意：**请看…`,
// which the title kept raw.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { plainText } from '../../js/render/plain-text.js';

const CASES = [
  ['**注意：**请看下面的代码。', '注意：请看下面的代码。'],
  ['这是**我想做的事。**所以继续。', '这是我想做的事。所以继续。'],
  ['不如人意的**《李茶的姑妈》**已经', '不如人意的《李茶的姑妈》已经'],
  ['# 标题 ##', '标题'],
  ['> - [ ] 任务 **一**', '任务 一'],
  ['1. 第一步：`npm install`', '第一步：npm install'],
  ['[链接](https://example.com) 和 ![图](a.png)', '链接 和 图'],
  ['<https://example.com>', 'https://example.com'],
  ['~~删除~~线, ***粗斜***体, *em* and _em_', '删除线, 粗斜体, em and em'],
  // What no reader takes for markup stays.
  ['2 * 3 * 4 = 24', '2 * 3 * 4 = 24'],
  ['snake_case_name stays', 'snake_case_name stays'],
  ['`a ** b` is code', 'a ** b is code'],
  ['\\*literal\\* stars', '*literal* stars'],
  ['Plain words.', 'Plain words.'],
];

for (const [line, title] of CASES) {
  test(`markdown marks are taken out of a title: ${line}`, () => {
    assert.equal(plainText(line), title);
  });
}
