"""The compression note says what kind of text compression took out of code, with the
counts (js/render/compression-note.js `removedSummary`, on Node), from the report the
core sends in `chat.prepared.compression` (issue 45, item 5)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from firsttoken.compress import compress_text

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")


def summaries(reports: list[object]) -> list[str]:
    script = (
        "import { removedSummary } from './js/render/compression-note.js';\n"
        f"console.log(JSON.stringify({json.dumps(reports)}.map(removedSummary)));"
    )
    done = subprocess.run(["node", "--no-warnings", "--input-type=module", "-e", script], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_note_names_each_kind_with_its_count() -> None:
    body = (
        "# Copyright 2024 Acme. Licensed MIT.\n\nimport os\n# ------------\n# print(os.sep)\n"
        "# a remark\n# another, on its own\n\nx = 1  # and one more\n# TODO: why?\n"
    )
    text = f"```python\n{body}```"
    reports = [compress_text(text, level=lv).report.to_dict() for lv in ("balanced", "max")]
    assert summaries(reports) == [
        "5 comments (2 remarks, 1 licence header, 1 block of commented-out code, 1 rule or banner) and 2 blank lines",
        "6 comments (2 remarks, 1 licence header, 1 block of commented-out code, 1 rule or banner, 1 TODO or question)"
        " and 2 blank lines",
    ]


def test_nothing_removed_or_an_old_report_says_nothing() -> None:
    assert summaries([compress_text("prose only").report.to_dict(), {"level": "balanced"}, None]) == ["", "", ""]
