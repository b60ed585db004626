"""The page's host bridge on Node against the hostile cases the browser tests share
(tests/bridge_cases.py): each is refused by the parser (tests/js/cross/host-bridge-hostile.test.mjs,
plain JS, given the cases by this test: harness/node.py). The bridge's other behaviour on
Node is tests/js/host-bridge.test.mjs; the real thing is tested in Chromium
(tests/e2e/test_bridge.py) and WebKitGTK (tests/webkit/test_bridge.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.node import node_test
from tests.bridge_cases import HOSTILE

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")


def test_hostile_input_is_refused_by_the_parser(tmp_path: Path) -> None:
    node_test(ROOT / "tests" / "js" / "cross" / "host-bridge-hostile.test.mjs", {"hostile": HOSTILE}, tmp_path)
