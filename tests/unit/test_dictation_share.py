"""The pure parts of dictation and sharing (issue 46, items 1 and 3) on Node: what a host's
`hello {capabilities}`, `composer.dictation` and `composer.share` may hold
(bridge/page/host-messages.js), where dictated words go in the box and in which
language (js/page/dictation.js), and the composer's words for a share (js/page/share.js).
The page itself is tested in Chromium and WebKitGTK (tests/e2e/test_dictation_host.py,
test_share_host.py, tests/webkit/test_host_dictation.py, test_host_share.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

# share.js imports i18n.js, which reads a DOM-less globalThis at import: fine on Node.
SCRIPT = """
import { parseHostMessage, sharedUrl } from './bridge/page/host-messages.js';
import { insertion, dictationLocale } from './js/page/dictation.js';
import { sharedText } from './js/page/share.js';
const input = JSON.parse(await new Promise((resolve) => {
  let text = ''; process.stdin.on('data', (d) => { text += d; }); process.stdin.on('end', () => resolve(text));
}));
const out = {
  parse: (input.parse ?? []).map((text) => {
    try { return { ok: parseHostMessage(text) }; } catch (e) { return { error: e.name, message: e.message }; }
  }),
  urls: (input.urls ?? []).map((u) => sharedUrl(u)),
  insert: (input.insert ?? []).map(([v, s, e, t]) => insertion(v, s, e, t)),
  locale: (input.locale ?? []).map(([ui, preferred]) => dictationLocale(ui, preferred)),
  text: (input.text ?? []).map((s) => sharedText(s)),
};
console.log(JSON.stringify(out));
"""


def run(**scenario: Any) -> dict[str, Any]:
    done = subprocess.run(["node", "--no-warnings", "--input-type=module", "-e", SCRIPT], cwd=ROOT,
                          input=json.dumps(scenario), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def parse(*msgs: dict[str, Any]) -> list[dict[str, Any]]:
    return run(parse=[json.dumps(m) for m in msgs])["parse"]


def test_capabilities_keep_known_booleans_only() -> None:
    ok, unknown, bad, not_object = parse(
        {"type": "hello", "id": "h", "capabilities": {"dictation": True}},
        {"type": "hello", "capabilities": {"dictation": False, "teleport": "yes"}},
        {"type": "hello", "capabilities": {"dictation": "yes"}},
        {"type": "hello", "capabilities": ["dictation"]},
    )
    assert ok["ok"] == {"type": "hello", "id": "h", "capabilities": {"dictation": True}}
    assert unknown["ok"]["capabilities"] == {"dictation": False}
    assert bad["error"] == not_object["error"] == "InvalidHostMessage"


def test_a_dictation_is_text_and_flags_or_a_known_error() -> None:
    partial, final, stopped, denied, *refused = parse(
        {"type": "composer.dictation", "text": "hel"},
        {"type": "composer.dictation", "text": "hello", "final": True},
        {"type": "composer.dictation", "text": "", "final": True, "listening": False},
        {"type": "composer.dictation", "error": "denied", "text": "ignored?"},
        {"type": "composer.dictation"},
        {"type": "composer.dictation", "text": 5},
        {"type": "composer.dictation", "text": "x" * 16385},
        {"type": "composer.dictation", "text": "a", "listening": "no"},
        {"type": "composer.dictation", "error": "eval"},
    )
    assert partial["ok"] == {"type": "composer.dictation", "text": "hel", "final": False, "listening": True}
    assert final["ok"]["final"] is True and final["ok"]["listening"] is True
    assert stopped["ok"]["listening"] is False
    assert denied["ok"]["error"] == "denied" and denied["ok"]["listening"] is False
    assert all(r.get("error") == "InvalidHostMessage" for r in refused), refused


def test_a_share_is_bounded_and_takes_only_http_links() -> None:
    image = {"data": "iVBORw0KGgo=", "type": "image/PNG", "name": "a.png"}
    ok, = parse({"type": "composer.share", "id": "s", "text": "<b>hi</b>", "url": "https://example.com/a b",
                 "images": [image], "conversation": "new", "extra": 1})
    assert ok["ok"] == {"type": "composer.share", "id": "s", "text": "<b>hi</b>", "url": "https://example.com/a%20b",
                        "images": [{"data": "iVBORw0KGgo=", "type": "image/png", "name": "a.png"}], "conversation": "new"}
    refused = parse(
        {"type": "composer.share"},
        {"type": "composer.share", "text": ""},
        {"type": "composer.share", "text": "a" * 1_000_001},
        {"type": "composer.share", "url": "javascript:alert(1)"},
        {"type": "composer.share", "url": " JAVASCRIPT:alert(1)"},
        {"type": "composer.share", "url": "data:text/html,x"},
        {"type": "composer.share", "url": "https://" + "a" * 8200 + ".com"},
        {"type": "composer.share", "images": [image] * 21},
        {"type": "composer.share", "images": [{"data": "!!", "type": "image/png"}]},
        {"type": "composer.share", "text": "a", "conversation": ""},
        {"type": "composer.share", "text": "a", "conversation": {"id": "x"}},
    )
    assert all(r.get("error") == "InvalidHostMessage" for r in refused), refused
    assert "http(s)" in refused[3]["message"]


def test_shared_urls_are_http_or_nothing() -> None:
    got = run(urls=["http://a.example/", "https://a.example/x?y#z", "javascript:alert(1)", "ftp://a.example/",
                    "mailto:a@b.c", "//a.example/", "", "  https://a.example/  "])["urls"]
    assert got == ["http://a.example/", "https://a.example/x?y#z", None, None, None, None, None, "https://a.example/"]


@pytest.mark.parametrize(("value", "start", "end", "text", "want"), [
    ("", 0, 0, "hello", "hello"),
    ("Dear world", 4, 4, "dear", "Dear dear world"),  # spaces where words meet
    ("Dear  world", 5, 5, "dear", "Dear dear world"),  # none where one is there
    ("say ", 4, 4, "hi", "say hi"),
    ("a\n", 2, 2, "line", "a\nline"),
    ("replace THIS now", 8, 12, "that", "replace that now"),  # a selection is replaced
    ("你好", 2, 2, "世界", "你好世界"),  # no spaces between CJK words
    ("hello", 5, 5, "世界", "hello世界"),
])
def test_dictated_words_go_in_at_the_caret(value: str, start: int, end: int, text: str, want: str) -> None:
    [got] = run(insert=[[value, start, end, text]])["insert"]
    assert value[:start] + got["text"] + value[end:] == want
    assert got["caret"] == start + len(got["text"])


def test_the_recognisers_language_is_the_interfaces() -> None:
    got = run(locale=[["en", ["en-GB", "fr"]], ["en", ["fr-FR"]], ["zh-CN", ["zh-TW", "en"]], ["zh-CN", []]])["locale"]
    assert got == ["en-GB", "en", "zh-CN", "zh-CN"]


def test_the_composers_words_for_a_share() -> None:
    got = run(text=[{"text": "Look", "url": "https://a.example/"}, {"text": "see https://a.example/", "url": "https://a.example/"},
                    {"url": "https://a.example/"}, {"text": "  padded  "}, {}])["text"]
    assert got == ["Look\nhttps://a.example/", "see https://a.example/", "https://a.example/", "padded", ""]
