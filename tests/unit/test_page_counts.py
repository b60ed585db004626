"""The counts the page shows, on Node (js/page/live-count.js, js/render/compression-note.js):
a count the core calls an estimate (`exact: false`: Claude, whose tokenizer is not
published; a dialect whose chat format is not verified) reads as one, "≈ 1,234", and an
exact one never does. In Chromium: tests/e2e/test_dialects_page.py."""

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
import { LiveCount } from './js/page/live-count.js';
import { compressionFigures, compressionSummary } from './js/render/compression-note.js';
const el = { textContent: '', dataset: {}, classList: { toggle() {} } };
const count = new LiveCount(el, { send() {}, messages: () => [], settings: () => ({}) });
count.seq = 1;
const shown = (fields) => {
  count.show({ type: 'tokens.counted', id: 'c1', budget: 195904, uncompressed: 1300, dropped: [], ...fields });
  return [el.textContent, el.dataset.exact];
};
const prepared = (exact, unit = 'tokens') => ({
  saved: [52], saved_unit: unit, prompt_tokens: 1204, exact, dropped: [], truncated: [],
  compression: { chars_before: 5000, chars_after: 4800, tokens_after: 1204 },
});
const note = (msg) => compressionSummary(compressionFigures(msg));
console.log(JSON.stringify({
  exact: shown({ tokens: 1234, exact: true }),
  estimate: shown({ tokens: 1234, exact: false }),
  noteExact: note(prepared(true)),
  noteEstimate: note(prepared(false)),
  noteChars: note({ ...prepared(false, 'chars'), saved: [200] }),
}));
"""


def run(script: str = SCRIPT) -> Any:
    done = subprocess.run(["node", "--no-warnings", "--input-type=module", "-e", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_estimate_reads_as_one_and_an_exact_count_never_does() -> None:
    out = run()
    assert out["exact"] == ["1,234 / 195,904 tokens", "true"]
    assert out["estimate"] == ["≈ 1,234 / 195,904 tokens", "false"]
    assert out["noteExact"] == "sent 1,204 tokens instead of 1,256 (−4%)"
    assert out["noteEstimate"] == "sent ≈ 1,204 tokens instead of ≈ 1,256 (−4%)"
    # Characters are counted, not estimated.
    assert out["noteChars"] == "sent 4,800 characters instead of 5,000 (−4%)"


STALE = """
import { LiveCount } from './js/page/live-count.js';
const el = { textContent: '', dataset: {}, classList: { toggle() {} } };
const sent = [];
let asked = null; // resolved by the next count asked (the debounce ended)
const next = () => new Promise((resolve) => { asked = resolve; });
const count = new LiveCount(el, { send: (m) => { sent.push(m.id); asked?.(); }, messages: () => [{ role: 'user', content: 'x' }], settings: () => ({}) });
let wait = next();
count.request(); // an attachment's change: asked once the debounce ends
await wait;
wait = next();
count.request(); // then the user types, and its answer comes back inside the new debounce
count.show({ type: 'tokens.counted', id: sent[0], tokens: 772, budget: 1000, exact: true });
const during = { tokens: el.dataset.tokens ?? null, pending: 'pending' in el.dataset };
await wait;
count.show({ type: 'tokens.counted', id: sent[1], tokens: 778, budget: 1000, exact: true });
console.log(JSON.stringify({ sent, during, after: { tokens: el.dataset.tokens, pending: 'pending' in el.dataset } }));
"""


def test_an_answer_to_an_older_count_never_clears_pending_during_the_debounce() -> None:
    # The answer to a count asked before the latest change is stale even while the newer
    # one waits out its debounce: shown, it cleared `data-pending`, and hosts and tests
    # waiting on that read the old count (772 tokens for a photo and its text's 778).
    out = run(STALE)
    assert len(out["sent"]) == 2 and out["sent"][0] != out["sent"][1]
    assert out["during"] == {"tokens": None, "pending": True}
    assert out["after"] == {"tokens": "778", "pending": False}
