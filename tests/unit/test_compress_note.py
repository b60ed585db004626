"""The compression note says what kind of text compression took out of code, with the
counts (js/render/compression-note.js `removedSummary`), from the report the core sends
in `chat.prepared.compression` (issue 45, item 5). The note's side is plain JS,
tests/js/cross/compress-note.test.mjs; this test makes the core's reports on the same
run and hands them over (harness/node.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from firsttoken.compress import compress_text
from harness.node import node_test

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

BODY = (
    "# Copyright 2024 Acme. Licensed MIT.\n\nimport os\n# ------------\n# print(os.sep)\n"
    "# a remark\n# another, on its own\n\nx = 1  # and one more\n# TODO: why?\n"
)


def test_the_note_words_the_core_s_reports(tmp_path: Path) -> None:
    text = f"```python\n{BODY}```"
    reports = {
        # The note names each kind with its count, at both levels.
        "code": [compress_text(text, level=lv).report.to_dict() for lv in ("balanced", "max")],
        # Nothing removed, an old report (before the kinds), none: nothing said.
        "nothing": [compress_text("prose only").report.to_dict(), {"level": "balanced"}, None],
    }
    node_test(ROOT / "tests" / "js" / "cross" / "compress-note.test.mjs", reports, tmp_path)
