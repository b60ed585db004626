"""The page's conversations on Node (js/page/conversation-store.js, store/records.js, export.js),
over a fake store: an answer streaming into one conversation while another is open
stays in its own; what is saved and when; titles, records, file names. The page itself
is tested in Chromium (tests/e2e/test_conversations.py) and WebKitGTK."""

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
import { ConversationStore } from './js/page/conversation-store.js';
import { titleFrom, validMessages, validMeta } from './js/page/store/records.js';
import { fileName, toJson, toMarkdown } from './js/page/export.js';

let clock = 1000;
const puts = [];
const db = {
  put: async (meta, messages, openId) => { puts.push({ meta: { ...meta }, messages, openId }); },
  setOpen: async () => {}, delete: async () => {},
  readMessages: async (id) => (id === 'old' ? [{ role: 'user', content: 'kept text' }] : null),
  readAllMessages: async () => new Map([['old', [{ role: 'user', content: 'kept text' }]]]),
};
const flush = () => new Promise((r) => setTimeout(r, 0));
const out = {};

const h = new ConversationStore({ now: () => ++clock });
await h.adopt(Promise.resolve({ db, error: null, start: {
  metas: [{ id: 'old', title: 'Old one', created: 1, updated: 2 }], openId: '', messages: null } }));
out.startTitle = h.title;

// A: a question, its answer streaming; then B is opened (a new chat) and asked.
const qa = h.add('user', '  What is\\n a generator?  ');
const aa = h.insertAfter(qa, 'assistant', '');
h.save();
const a = h.active;
h.newChat();
aa.content += 'half of it';             // replies.js keeps writing into A's entry
const qb = h.add('user', 'second chat');
out.bEntries = h.entries.map((m) => m.content);
out.upToA = h.upTo(qa).map((m) => m.content);
aa.content += ', the rest';
aa.incomplete = true;
h.save();                                // replies.js finish(): A is written, not B only
await flush(); await flush();
const last = (id) => puts.filter((p) => p.meta.id === id).at(-1);
out.aSaved = last(a.id).messages;
out.aOpen = last(a.id).openId;
out.bSaved = last(h.active.id).messages.map((m) => m.content);
out.titles = h.listed().map((c) => c.title);
// A failed empty answer in A, removed while B is open, leaves A only.
const ab = h.insertAfter(aa, 'user', 'again?');
const ab2 = h.insertAfter(ab, 'assistant', '');
h.remove(ab2);
out.aAfterRemove = a.entries.map((m) => m.content);
out.bAfterRemove = h.entries.map((m) => m.content);

// Search reads what is not in memory yet; delete and undo.
out.search = (await h.search('KEPT')).map((f) => [f.conversation.id, f.snippet]);
out.searchTitle = (await h.search('generator')).map((f) => f.conversation.title);
h.delete(a.id);
out.afterDelete = h.listed().map((c) => c.title);
h.undo();
out.afterUndo = h.listed().map((c) => c.title).sort();
h.rename(a.id, '  Renamed\\n  ');
out.renamed = a.title;
await flush(); await flush();
out.pending = h.pending;

// A title made from a first prompt shows no markdown marks (issue 44); a rename is kept.
h.newChat();
h.add('user', '**注意：**请看下面的代码。\\n这是**我想做的事。**');
out.markdownTitle = h.title;
h.rename(h.active.id, '**as typed**');
out.renamedMarks = h.title;

out.titleLong = titleFrom('word '.repeat(40));
out.titleEmoji = titleFrom('😀'.repeat(70));
out.meta = [validMeta({ id: 'x', title: 't', created: 1, updated: 2, extra: 1 }), validMeta({ id: 3 }), validMeta(null),
            validMeta({ id: 'x', title: 't', created: NaN, updated: 2 })];
out.messages = [validMessages({ messages: [{ role: 'user', content: 'a', keep: 1 }, null, { role: 1 }] }), validMessages('no')];
out.files = [fileName('What is "this": a/b?', 'md'), fileName('  ', 'json'), fileName('..', 'md'), fileName('a'.repeat(80), 'md')];
const c = { id: 'i', title: 'T', created: 0, updated: 0, entries: [{ role: 'user', content: 'q' },
            { role: 'assistant', content: 'a\\n', incomplete: true }] };
out.md = toMarkdown(c);
out.json = JSON.parse(toJson(c));
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def out() -> Any:
    done = subprocess.run(["node", "--input-type=module", "-e", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_answer_streaming_into_a_conversation_left_for_another_stays_in_its_own(out: Any) -> None:
    assert out["startTitle"] == "New chat"
    assert out["bEntries"] == ["second chat"]
    assert out["upToA"] == ["  What is\n a generator?  "]
    assert out["aSaved"] == [{"role": "user", "content": "  What is\n a generator?  "},
                             {"role": "assistant", "content": "half of it, the rest", "incomplete": True}]
    assert out.get("aOpen") is None  # writing A does not make it the open one
    assert out["bSaved"] == ["second chat"]
    assert out["titles"] == ["second chat", "What is", "Old one"]
    assert out["aAfterRemove"] == ["  What is\n a generator?  ", "half of it, the rest", "again?"]
    assert out["bAfterRemove"] == ["second chat"]


def test_search_delete_undo_rename(out: Any) -> None:
    assert out["search"] == [["old", "kept text"]]
    assert out["searchTitle"] == ["What is"]
    assert "What is" not in out["afterDelete"]
    assert out["afterUndo"] == ["Old one", "What is", "second chat"]
    assert out["renamed"] == "Renamed"
    assert out["pending"] == 0


def test_titles_records_and_files(out: Any) -> None:
    assert out["markdownTitle"] == "注意：请看下面的代码。"
    assert out["renamedMarks"] == "**as typed**"
    assert out["titleLong"].endswith("…") and len(out["titleLong"]) <= 61
    assert out["titleEmoji"] == "😀" * 60 + "…"
    assert out["meta"] == [{"id": "x", "title": "t", "created": 1, "updated": 2, "extra": 1}, None, None, None]
    assert out["messages"] == [[{"role": "user", "content": "a", "keep": 1}], None]
    assert out["files"] == ["What-is-this-a-b.md", "conversation.json", "conversation.md", "a" * 60 + ".md"]
    assert out["md"] == "# T\n\n## You\n\nq\n\n## Assistant\n\na\n\n*(This answer was interrupted.)*\n"
    assert out["json"]["messages"][1] == {"role": "assistant", "content": "a\n", "incomplete": True}
    assert out["json"]["created"] == "1970-01-01T00:00:00.000Z"
