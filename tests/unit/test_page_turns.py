"""The page's turns on Node (js/page/conversation.js, conversation-store.js): what goes to the
model, by turn, so that no two user turns in a row are ever sent, whatever failed; the
conversation made well formed after a reload; and what a Retry sends and where its
answer goes. The buttons themselves are tested in Chromium (tests/e2e/test_actions.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

SCRIPT = """
import { conversation, promptOf, wellFormed } from './js/page/conversation.js';
import { ConversationStore } from './js/page/conversation-store.js';
const store = new Map();
const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v) };
// The store takes its options as one object: given `storage` alone (as this test once
// did), it destructured nothing from it and silently fell back to the real localStorage.
const h = new ConversationStore({ storage });
const u1 = h.add('user', 'one');
const a1 = h.add('assistant', 'first answer'); a1.state = 'done';
const u2 = h.add('user', 'two');
const a2 = h.add('assistant', ''); a2.state = 'error'; a2.error = { code: 'http_status', status: 500 };
const u3 = h.add('user', 'three');
const a3 = h.add('assistant', 'third, cut'); a3.state = 'interrupted';
const u4 = h.add('user', 'four');
const a4 = h.add('assistant', 'fourth answer'); a4.state = 'done';
const out = {
  all: conversation('sys', h.entries),
  draft: conversation('', h.entries.slice(0, 4), [{ role: 'user', content: 'draft' }]),
  retryTwo: conversation('sys', h.upTo(u2)),
  retryOne: conversation('', h.upTo(u1)),
  promptOfA2: promptOf(h.entries, a2).content,
};
h.remove(a1);
h.insertAfter(u1, 'assistant', 'retried');
out.afterRetry = h.entries.map((m) => m.content);

// As older versions left it after a failure and a reload: orphan prompts in a row, an
// answer marked incomplete, and one that was streaming when the page went away.
const old = [
  { role: 'user', content: 'a' },
  { role: 'user', content: 'b' },
  { role: 'assistant', content: 'partial b', incomplete: true },
  { role: 'user', content: 'c' },
  { role: 'assistant', content: 'c so far', state: 'streaming' },
  { role: 'user', content: 'd' },
];
out.changed = wellFormed(old);
out.fixed = old;
out.again = wellFormed(old);
out.fixedSent = conversation('', old);
out.seeded = conversation('', [{ role: 'system', content: 'seeded' }, { role: 'user', content: 'q' }]);
out.ownStorage = h.storage === storage;
console.log(JSON.stringify(out));
"""


def run() -> Any:
    done = subprocess.run(["node", "--input-type=module", "-e", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def roles_alternate(messages: list[dict]) -> bool:
    roles = [m["role"] for m in messages if m["role"] != "system"]
    return all(a != b for a, b in zip(roles, roles[1:]))


def test_the_store_keeps_what_it_keeps_where_it_was_told() -> None:
    assert run()["ownStorage"] is True


def test_a_turn_whose_answer_has_no_text_is_left_out_whole() -> None:
    out = run()
    assert [m["content"] for m in out["all"]] == [
        "sys", "one", "first answer", "three", "third, cut", "four", "fourth answer"]
    assert [m["content"] for m in out["draft"]] == ["one", "first answer", "draft"]
    for name in ("all", "draft", "retryTwo", "retryOne", "fixedSent"):
        assert roles_alternate(out[name]), (name, out[name])
    assert out["seeded"] == [{"role": "system", "content": "seeded"}, {"role": "user", "content": "q"}]
    # Only what the model may see: roles and text, never the page's own fields.
    assert all(set(m) == {"role", "content"} for m in out["all"])


def test_a_retry_sends_the_conversation_up_to_its_turn_and_answers_in_its_place() -> None:
    out = run()
    assert [m["content"] for m in out["retryTwo"]] == ["sys", "one", "first answer", "two"]
    assert [m["content"] for m in out["retryOne"]] == ["one"]
    assert out["promptOfA2"] == "two"
    assert out["afterRetry"] == ["one", "retried", "two", "", "three", "third, cut", "four", "fourth answer"]


def test_an_old_conversation_is_made_well_formed_once() -> None:
    out = run()
    assert out["changed"] is True and out["again"] is False
    fixed = out["fixed"]
    assert [(m["role"], m["content"], m.get("state")) for m in fixed] == [
        ("user", "a", None), ("assistant", "", "interrupted"),
        ("user", "b", None), ("assistant", "partial b", "interrupted"),
        ("user", "c", None), ("assistant", "c so far", "interrupted"),
        ("user", "d", None), ("assistant", "", "interrupted"),
    ]
    assert all("incomplete" not in m for m in fixed)
    # The next request after it: every prompt with text in its answer, no two in a row.
    assert [m["content"] for m in out["fixedSent"]] == ["b", "partial b", "c", "c so far"]
