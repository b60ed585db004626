"""The page's turns on Node (js/page/conversation.js, history.js): what a Retry sends and
where its answer goes, and that no two user turns in a row are ever sent. The Retry
button itself is tested in Chromium (tests/e2e/test_stall.py)."""

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
import { conversation } from './js/page/conversation.js';
import { History } from './js/page/history.js';
const store = new Map();
const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v) };
const h = new History(storage);
const u1 = h.add('user', 'one');
const a1 = h.add('assistant', 'first answer');
const u2 = h.add('user', 'two');          // its answer failed before any text
const u3 = h.add('user', 'three');
const a3 = h.add('assistant', 'third answer');
const out = {
  all: conversation('sys', h.entries),
  draft: conversation('', h.entries.slice(0, 3), [{ role: 'user', content: 'draft' }]),
  retryTwo: conversation('sys', h.upTo(u2)),
  retryOne: conversation('', h.upTo(u1)),
};
h.remove(a1);
h.insertAfter(u1, 'assistant', 'retried');
out.afterRetry = h.entries.map((m) => m.content);
console.log(JSON.stringify(out));
"""


def run() -> Any:
    done = subprocess.run(["node", "--input-type=module", "-e", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_unanswered_user_turn_followed_by_another_is_not_sent() -> None:
    out = run()
    assert [m["content"] for m in out["all"]] == ["sys", "one", "first answer", "three", "third answer"]
    assert [m["content"] for m in out["draft"]] == ["one", "first answer", "draft"]
    for messages in out.values():
        if messages and isinstance(messages[0], dict):
            roles = [m["role"] for m in messages]
            assert all(not (a == b == "user") for a, b in zip(roles, roles[1:])), roles


def test_a_retry_sends_the_conversation_up_to_its_turn_and_answers_in_its_place() -> None:
    out = run()
    assert [m["content"] for m in out["retryTwo"]] == ["sys", "one", "first answer", "two"]
    assert [m["content"] for m in out["retryOne"]] == ["one"]
    assert out["afterRetry"] == ["one", "retried", "two", "three", "third answer"]
