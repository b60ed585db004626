"""The page's inline blocks (issue 45, item 2): what lets a first visit's Send work once the
HTML alone has arrived, and what keeps it honest.

- The first step inline in index.html is the one made from js/boot/first-send.js
  (gateway/build/inline.mjs): a stale copy fails here.
- The Content-Security-Policy the gateway sends with the page allows exactly the page's
  inline blocks, by the hash of each as served, and no other text: a block edited by one
  character is no longer allowed.
- The first view's styles inline are a subset of the four stylesheets, rule by rule, so
  that those change nothing the inline block already decided when they apply (the boxes
  themselves are compared in real Chromium: tests/e2e/test_inline_page.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import httpx
import pytest

from gateway.headers import PagePolicy, hash_source, inline_sources

ROOT = Path(__file__).resolve().parents[2]
SHEETS = ["js/page/page.css", "js/render/render.css", "js/page/messages.css", "js/page/conversations.css"]


@pytest.fixture
def client(gateway_url: str):
    with httpx.Client(base_url=gateway_url, timeout=30) as c:
        yield c


def test_the_inline_first_step_is_made_from_its_file() -> None:
    run = subprocess.run(["node", str(ROOT / "gateway/build/inline.mjs"), "--check"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_a_stale_copy_is_told_apart() -> None:
    # The check compares with what the file gives: a changed file is a changed copy.
    script = ("import { inline } from './gateway/build/inline.mjs';"
              "import { readFileSync } from 'node:fs';"
              "const html = readFileSync('index.html', 'utf8');"
              "const source = readFileSync('js/boot/first-send.js', 'utf8');"
              "process.stdout.write(String(inline(html, source) === html) + ' '"
              " + String(inline(html, source.replace('4 << 20', '4 << 21')) === html));")
    run = subprocess.run(["node", "--input-type=module", "-e", script], cwd=ROOT, capture_output=True, text=True)
    assert run.stdout == "true false", run.stderr


def blocks(html: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}(?![^>]*\bsrc=)[^>]*>(.*?)</{tag}>", re.sub(r"<!--.*?-->", "", html, flags=re.S), re.S)


def test_the_policy_allows_the_page_s_inline_blocks_and_nothing_else(client: httpx.Client) -> None:
    r = client.get("/")
    csp = dict(part.strip().split(" ", 1) for part in r.headers["content-security-policy"].split(";"))
    styles, scripts = blocks(r.text, "style"), blocks(r.text, "script")
    assert len(styles) == 1 and len(scripts) == 2  # the first view's styles; the first step, the styles' link
    assert csp["style-src"].split() == ["'self'", *[hash_source(s) for s in styles]]
    assert csp["script-src"].split() == ["'self'", "'wasm-unsafe-eval'", *[hash_source(s) for s in scripts]]
    assert "'unsafe-inline'" not in r.headers["content-security-policy"]
    # One character more and the block is not the one allowed.
    assert hash_source(scripts[0] + " ") not in csp["script-src"]
    assert hash_source(styles[0].replace("1.4rem", "1.5rem")) not in csp["style-src"]


def test_hashes_are_of_the_text_the_browser_sees() -> None:
    # The browser's tokenizer turns CR LF into LF before hashing; a comment is no element;
    # a script with `src` is not inline.
    html = ("<!-- <script>x()</script> --><style>a{}\r\nb{}</style>"
            "<script src=\"f.js\"></script><script>go()\r\n</script>")
    found = inline_sources(html)
    assert found.styles == (hash_source("a{}\nb{}"),)
    assert found.scripts == (hash_source("go()\n"),)


def test_a_page_edited_under_a_running_gateway_gets_its_new_hashes(tmp_path: Path) -> None:
    page = tmp_path / "index.html"
    policy = PagePolicy("'self'", "'none'", page)
    assert "sha256" not in policy()  # no page: no inline block allowed
    page.write_text("<script>one()</script>", encoding="utf-8")
    assert hash_source("one()") in policy()
    page.write_text("<script>two(2)</script>", encoding="utf-8")
    assert hash_source("two(2)") in policy() and hash_source("one()") not in policy()


def rules(css: str) -> list[str]:
    """The top-level rules of `css` (an @media block whole), comments out, spaces
    normalised."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    out, depth, start = [], 0, 0
    for i, ch in enumerate(css):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                out.append(" ".join(css[start:i + 1].split()))
                start = i + 1
    assert depth == 0 and not css[start:].strip()
    return out


def test_the_first_view_s_styles_are_copies_of_the_stylesheets_rules() -> None:
    inline = rules(blocks((ROOT / "index.html").read_text(encoding="utf-8"), "style")[0])
    sheets = [rules((ROOT / name).read_text(encoding="utf-8")) for name in SHEETS]
    full = [rule for sheet in sheets for rule in sheet]
    assert len(inline) > 40
    missing = [rule for rule in inline if rule not in full]
    assert not missing, f"inline rules that no stylesheet holds as they are: {missing}"
    # In the sheets' own order, so that the inline block alone cascades as they do.
    at = [full.index(rule) for rule in inline]
    assert at == sorted(at)
