"""The page around the conversation, as a person on a phone or a desktop uses it (issue
14, items 5-9): the view that stays at the end, the header, the Settings sheet, phone
ergonomics, themes and accessibility, with axe-core run in the page and screenshots of
each state saved to build/screenshots/ (artifacts for people, never compared)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from harness.chromium import ANSWER, DESKTOP, PIXEL_7, Console, scroll_at_rest, send, steer, wait_ready, watched_page

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = ROOT / "build" / "screenshots"

DEVICES = {"phone": PIXEL_7, "desktop": DESKTOP}
ALL = [(d, t) for d in DEVICES for t in ("light", "dark")]


def open_page(browser: Browser, console: Console, device: str, theme: str, **extra: object) -> Iterator[Page]:
    yield from watched_page(browser, console, color_scheme=theme, **DEVICES[device], **extra)


@pytest.fixture
def shell(request: pytest.FixtureRequest, browser: Browser, console: Console) -> Iterator[Page]:
    device, theme = request.param
    yield from open_page(browser, console, device, theme)


def frames(page: Page, n: int = 3) -> None:
    """Let `n` animation frames pass (layout, observers and scroll events settle)."""
    page.evaluate("""(n) => new Promise((resolve) => {
      const step = () => (n-- <= 0 ? resolve() : requestAnimationFrame(step));
      step();
    })""", n)


def distance_to_end(page: Page) -> float:
    return page.locator("#chat").evaluate("(el) => el.scrollHeight - el.scrollTop - el.clientHeight")


def axe(page: Page) -> list[dict]:
    """axe-core's serious and critical violations of the page as it is now."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate("""async () => {
      const r = await axe.run(document, { resultTypes: ['violations'] });
      return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ') + ': ' + n.failureSummary) }));
    }""")
    return result


def shoot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


# ---- axe-core and the screenshots: four states, two sizes, two themes -------------------


@pytest.mark.parametrize(("device", "theme"), ALL)
def test_every_state_passes_axe_and_is_photographed(browser: Browser, console: Console, gateway_url: str,
                                                    device: str, theme: str) -> None:
    # The tests' own script goes in (axe-core): the page's CSP would refuse it, rightly.
    for page in open_page(browser, console, device, theme, bypass_csp=True):
        steer(page, "ttft_ms=0,tps=2000,tokens=400", keep_changes=True)
        page.goto(gateway_url + "/")
        wait_ready(page)
        assert page.get_attribute("html", "data-theme") == theme
        found = {}
        found["empty"] = axe(page)
        shoot(page, f"empty-{device}-{theme}")

        send(page, "show me code and a table")
        page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
        expect(page.locator(f"{ANSWER} pre code")).not_to_have_count(0)
        expect(page.locator(f"{ANSWER} table")).not_to_have_count(0)
        frames(page)
        found["answer"] = axe(page)
        shoot(page, f"answer-{device}-{theme}")

        page.get_by_role("button", name="Settings").click()
        expect(page.get_by_role("dialog", name="Settings")).to_be_visible()
        expect(page.locator("#models option")).not_to_have_count(0)
        found["settings"] = axe(page)
        shoot(page, f"settings-{device}-{theme}")
        page.keyboard.press("Escape")
        expect(page.get_by_role("dialog", name="Settings")).to_be_hidden()

        page.evaluate("""() => {
          const s = JSON.parse(localStorage.getItem('firsttoken.settings.v1'));
          s.headers['x-firsttoken-sim'] = 'status=401';
          localStorage.setItem('firsttoken.settings.v1', JSON.stringify(s));
        }""")
        page.reload()
        wait_ready(page)
        send(page, "and now a failure")
        page.wait_for_selector(f'{ANSWER}[data-state="error"]', timeout=60_000)
        frames(page)
        found["error"] = axe(page)
        shoot(page, f"error-{device}-{theme}")
        assert all(not v for v in found.values()), json.dumps(found, indent=1)


# ---- scrolling ---------------------------------------------------------------------------


@pytest.mark.parametrize("shell", [("phone", "light"), ("desktop", "dark")], indirect=True)
def test_the_view_stays_at_the_end_when_an_answer_finishes_and_after_a_reload(shell: Page, gateway_url: str) -> None:
    page = shell
    steer(page, "ttft_ms=0,tps=400,tokens=600", keep_changes=True)
    page.goto(gateway_url + "/")
    wait_ready(page)
    for i in range(2):
        send(page, f"a long answer {i}")
        expect(page.locator(ANSWER).nth(i)).to_have_attribute("data-state", "done", timeout=60_000)
        # Its last change: the Details toggle, once its metrics are in.
        expect(page.locator(ANSWER).nth(i)).to_have_attribute("data-metrics", re.compile("."), timeout=30_000)
        frames(page)
        assert page.locator("#chat").evaluate("(el) => el.scrollHeight > 2 * el.clientHeight")
        assert distance_to_end(page) <= 1
        expect(page.get_by_role("button", name="Jump to latest")).to_be_hidden()
    page.reload()
    expect(page.locator(ANSWER)).to_have_count(2)
    frames(page, 4)
    assert distance_to_end(page) <= 1
    wait_ready(page)
    frames(page)
    assert distance_to_end(page) <= 1


@pytest.mark.parametrize("shell", [("phone", "dark"), ("desktop", "light")], indirect=True)
def test_jump_to_latest_shows_when_the_user_scrolled_up_while_text_arrives(shell: Page, gateway_url: str) -> None:
    page = shell
    steer(page, "ttft_ms=0,tps=60,tokens=1500", keep_changes=True)
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "follow me")
    jump = page.get_by_role("button", name="Jump to latest")
    expect(page.locator(ANSWER)).to_have_attribute("data-paints", re.compile(r"^\d{3,}$"), timeout=60_000)
    # Long enough to scroll up by a wheel's turn (a wide desktop column fills slowly).
    page.wait_for_function("() => { const c = document.getElementById('chat'); return c.scrollHeight > c.clientHeight + 700; }",
                           timeout=60_000)
    expect(jump).to_be_hidden()
    # The user scrolls up (a wheel, over the conversation): the view stays where they put it.
    box = page.locator("#chat").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -600)
    expect(jump).to_be_visible()
    top = scroll_at_rest(page)
    paints = int(page.get_attribute(ANSWER, "data-paints"))
    expect(page.locator(ANSWER)).not_to_have_attribute("data-paints", str(paints))
    frames(page)
    assert abs(page.locator("#chat").evaluate("(el) => el.scrollTop") - top) < 2
    jump.click()
    frames(page)
    assert distance_to_end(page) < 48
    expect(jump).to_be_hidden()
    page.get_by_role("button", name="Stop").click()
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "stopped", timeout=30_000)


# ---- header, status, details ---------------------------------------------------------------


@pytest.mark.parametrize("shell", [("phone", "light"), ("desktop", "dark")], indirect=True)
def test_the_header_shows_model_and_connection_and_telemetry_moves_to_details(shell: Page, gateway_url: str) -> None:
    page = shell
    steer(page, "ttft_ms=0,tps=2000", keep_changes=True)
    page.goto(gateway_url + "/")
    wait_ready(page)
    header = page.locator("header.bar")
    expect(header.locator("#model-name")).to_have_text("firsttoken-sim")
    expect(header.locator("#boot")).to_have_text("Ready")
    # No telemetry in the user's face: boot timings and quota are in Diagnostics.
    assert "ms" not in header.inner_text() and "requests" not in header.inner_text()
    expect(page.get_by_role("status").filter(has_text="")).to_have_count(1)
    # The answer's height from its end on: its figures come a frame or two after it.
    page.evaluate(
        """() => {
          window.heightsFromDone = [];
          new MutationObserver(() => {
            const li = document.querySelector('.msg[data-role="assistant"]');
            if (li?.dataset.state === 'done') {
              window.heightsFromDone.push([Boolean(li.dataset.metrics), li.getBoundingClientRect().height]);
            }
          }).observe(document.getElementById('messages'), { subtree: true, childList: true, attributes: true, characterData: true });
        }"""
    )
    send(page, "hello")
    page.wait_for_selector(f'{ANSWER}[data-state="done"]', timeout=60_000)
    expect(page.locator("#status")).to_have_text("Answer finished")
    expect(header.locator("#boot")).to_have_text("Connected")
    # The reply's latency, behind Details among its actions; data-metrics stays for hosts.
    details = page.locator(ANSWER).get_by_role("button", name="Details")
    expect(details).to_have_attribute("aria-expanded", "false")
    expect(page.locator(ANSWER)).to_have_attribute("data-metrics", re.compile(r"^\{"))
    # Nothing under the answer moved when they came: a followed view stays put, and a
    # tap aimed at Copy or Regenerate lands there. (Within a pixel: the settled answer's
    # containment, page.css, rounds its height; a line is 20 px and more.)
    heights = page.evaluate("window.heightsFromDone")
    assert {measured for measured, _ in heights} == {False, True}, heights
    assert max(h for _, h in heights) - min(h for _, h in heights) < 1, heights
    assert [b.text_content() for b in page.locator(f"{ANSWER} .msg-actions button").all()] == ["Copy", "Regenerate", "Details"]
    expect(page.locator(f"{ANSWER} .reply-metrics")).to_be_hidden()
    details.click()
    expect(page.locator(f"{ANSWER} .reply-metrics")).to_be_visible()
    expect(page.locator(f"{ANSWER} .reply-metrics")).to_contain_text("first byte")
    assert json.loads(page.get_attribute(ANSWER, "data-metrics"))["chunks"] > 0
    # Diagnostics: boot timings, the last reply, the quota.
    page.get_by_role("button", name="Settings").click()
    page.get_by_text("Diagnostics").click()
    expect(page.locator("#boot-timings")).to_contain_text("Python ready in")
    expect(page.locator("#quota")).to_contain_text("requests")
    # The list is not live (the stream would be read aloud); messages say who said them.
    assert page.get_attribute("#messages", "aria-live") is None
    assert page.locator('.msg[data-role="user"] .who').text_content() == "You said:"
    assert page.locator(f"{ANSWER} .who").text_content() == "Answer:"


# ---- Settings --------------------------------------------------------------------------------


@pytest.mark.parametrize("shell", [("phone", "dark"), ("desktop", "light")], indirect=True)
def test_settings_sheet_lists_models_validates_the_base_url_and_tests_the_connection(shell: Page, gateway_url: str) -> None:
    page = shell
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.get_by_role("button", name="Settings").click()
    dialog = page.get_by_role("dialog", name="Settings")
    expect(dialog).to_be_visible()
    # A bottom sheet on a phone: it sits on the bottom edge.
    box = dialog.bounding_box()
    viewport = page.viewport_size
    if viewport["width"] < 600:
        assert abs(box["y"] + box["height"] - viewport["height"]) <= 2 and box["width"] >= viewport["width"] - 1
    # The model is picked from /v1/models, and free text stays allowed.
    expect(page.locator("#models option")).not_to_have_count(0)
    assert "firsttoken-sim" in page.eval_on_selector_all("#models option", "(os) => os.map((o) => o.value)")
    page.fill("#model", "my-own-model")
    page.dispatch_event("#model", "change")
    expect(page.locator("#model-name")).to_have_text("my-own-model")
    page.fill("#model", "")
    page.dispatch_event("#model", "change")
    # A base URL without a scheme is refused, with what to do.
    page.fill("#base-url", "api.example.com/v1")
    page.dispatch_event("#base-url", "change")
    expect(page.locator("#base-url-error")).to_contain_text("Include the scheme")
    expect(page.locator("#base-url")).to_have_attribute("aria-invalid", "true")
    # Test connection: this server works…
    page.fill("#base-url", "")
    page.dispatch_event("#base-url", "change")
    page.get_by_role("button", name="Test connection").click()
    expect(page.locator("#connection-result")).to_contain_text("Connected")
    # …a server that is not there is named.
    page.fill("#base-url", "http://127.0.0.1:9/v1")
    page.dispatch_event("#base-url", "change")
    page.get_by_role("button", name="Test connection").click()
    expect(page.locator("#connection-result")).to_contain_text("Could not reach http://127.0.0.1:9/v1")
    # Compression: a level, explained in one line, kept.
    page.select_option("#compress", "safe")
    expect(page.locator("#compress-hint")).to_contain_text("JSON")
    page.keyboard.press("Escape")
    stored = json.loads(page.evaluate("localStorage.getItem('firsttoken.settings.v1')"))
    assert stored["compress"] == "safe" and stored["base_url"] == "http://127.0.0.1:9/v1"
    # And a chat to it fails saying where it went and what to check.
    send(page, "anyone there?")
    page.wait_for_selector(f'{ANSWER}[data-state="error"]', timeout=60_000)
    expect(page.locator(f"{ANSWER} .error")).to_contain_text("http://127.0.0.1:9/v1")
    expect(page.locator("#status")).to_contain_text("Could not reach")
    # Focus goes back where it was when the sheet closes.


@pytest.mark.parametrize("shell", [("phone", "light")], indirect=True)
def test_a_401_points_to_the_api_key(shell: Page, gateway_url: str) -> None:
    page = shell
    steer(page, "status=401", keep_changes=True)
    page.goto(gateway_url + "/")
    wait_ready(page)
    send(page, "who am i")
    page.wait_for_selector(f'{ANSWER}[data-state="error"]', timeout=60_000)
    expect(page.locator(f"{ANSWER} .error")).to_contain_text("Check the API key in Settings")


# ---- phone ergonomics, themes, keyboard --------------------------------------------------------


@pytest.mark.parametrize("shell", ALL, indirect=True)
def test_touch_targets_growing_input_enter_and_theme(shell: Page, gateway_url: str) -> None:
    page = shell
    phone = page.viewport_size["width"] < 600
    page.goto(gateway_url + "/")
    wait_ready(page)
    # Every visible control is at least 44×44 CSS px.
    small = page.evaluate("""() => [...document.querySelectorAll('button, summary, select, input')]
      .filter((el) => el.getClientRects().length)
      .map((el) => [el.id || el.className || el.textContent, el.getBoundingClientRect()])
      .filter(([, r]) => r.width < 44 || r.height < 44).map(([n, r]) => `${n} ${r.width}x${r.height}`)""")
    assert not small, small
    # The count never squeezes the input: the box's width is the input's.
    page.fill("#prompt", "count me")
    expect(page.locator("#count")).to_contain_text("tokens", timeout=30_000)
    widths = page.evaluate("() => [document.getElementById('prompt').clientWidth, document.querySelector('.box').clientWidth]")
    assert widths[0] >= widths[1] - 40, widths
    # The box grows with its text, up to a limit.
    before = page.locator("#prompt").bounding_box()["height"]
    page.fill("#prompt", "\n".join(f"line {i}" for i in range(4)))
    four = page.locator("#prompt").bounding_box()["height"]
    page.fill("#prompt", "\n".join(f"line {i}" for i in range(40)))
    forty = page.locator("#prompt").bounding_box()["height"]
    assert before < four < forty <= page.viewport_size["height"] * 0.4, (before, four, forty)
    # Enter: a new line on a touch screen, Send on a desktop (Shift+Enter a new line).
    page.fill("#prompt", "first")
    page.press("#prompt", "Shift+Enter")
    page.press("#prompt", "Enter")
    if phone:
        assert page.input_value("#prompt") == "first\n\n"
        expect(page.locator(".msg")).to_have_count(0)
    else:
        expect(page.locator('.msg[data-role="user"]')).to_have_count(1)
        assert page.input_value("#prompt") == ""
    # The theme follows the system, and the toggle picks one that is kept.
    system = page.get_attribute("html", "data-theme")
    toggle = page.locator("#theme")
    expect(toggle).to_have_attribute("aria-label", "Theme: system")
    toggle.click()
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    toggle.click()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    page.reload()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(toggle).to_have_attribute("aria-label", "Theme: dark")
    toggle.click()
    expect(page.locator("html")).to_have_attribute("data-theme", system)


@pytest.mark.parametrize("shell", [("desktop", "light")], indirect=True)
def test_keyboard_shortcuts_are_listed_and_work(shell: Page, gateway_url: str) -> None:
    page = shell
    steer(page, "ttft_ms=0,tps=40,tokens=2000", keep_changes=True)
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.keyboard.press("Control+/")
    helpdialog = page.get_by_role("dialog", name="Keyboard shortcuts")
    expect(helpdialog).to_be_visible()
    expect(helpdialog).to_contain_text("Shift + Enter")
    page.keyboard.press("Escape")
    expect(helpdialog).to_be_hidden()
    page.keyboard.press("Control+,")
    expect(page.get_by_role("dialog", name="Settings")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog", name="Settings")).to_be_hidden()
    # Focus returns to the message box, and Escape stops an answer.
    page.keyboard.press("Shift+Escape")
    expect(page.locator("#prompt")).to_be_focused()
    page.keyboard.type("stop me")
    page.keyboard.press("Enter")
    expect(page.locator(ANSWER)).to_have_attribute("data-paints", re.compile(r"^[2-9]\d*$"), timeout=30_000)
    page.keyboard.press("Escape")
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "stopped", timeout=30_000)
    expect(page.locator("#status")).to_have_text("Stopped")


@pytest.mark.parametrize("shell", [("phone", "light")], indirect=True)
def test_the_layout_follows_the_on_screen_keyboard(shell: Page, gateway_url: str) -> None:
    page = shell
    page.goto(gateway_url + "/")
    wait_ready(page)
    # A keyboard takes the bottom 340 px: the visual viewport shrinks, the composer stays
    # in view above it.
    page.set_viewport_size({"width": 412, "height": 499})
    expect(page.locator("html")).to_have_attribute("style", re.compile(r"--app-height: 499px"))
    box = page.locator("#composer").bounding_box()
    assert box["y"] + box["height"] <= 499 + 1
