"""A first visit's composer shows, and its Send works, once the HTML alone has arrived
(issue 45, item 2), in real Chromium: every other request of the page (its four
stylesheets, its modules, the runtime) is held by the test, and the page still paints its
first view from index.html's inline styles, takes a prompt and streams the answer
through its inline first step. When the stylesheets then apply, no box of the first view
moves and no colour changes, in light and in dark, on a phone and on a desktop (where the
conversation list is a sidebar), as the Layout Instability API counts it too. A block the
policy did not allow would fail every test here (`watched_page` fails on a CSP
violation)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from harness.chromium import ANSWER, DESKTOP, FIRST_PAINT, PIXEL_7, Console, Held, watched_page

pytestmark = pytest.mark.e2e

#: Everything the page asks for but itself and its API: scripts, modules, the runtime.
SCRIPTS = re.compile(r"\.(js|mjs|wasm|zip|json|toml|py)(\?.*)?$|/vendor/|/py/")
SHEETS = re.compile(r"\.css$")

#: The first paint's time, waited on (no `wait_for_function`: the page's CSP has no eval).
PAINTED = f"() => {FIRST_PAINT}"

#: Each element of the first view: its box and its colours.
FIRST_VIEW = ["header.bar", "#header-start", "#conversations-toggle", "#new-chat", "#conversation-title", "#boot",
              "#theme", "#open-settings", "#conversations", ".stage", "#chat", "#messages", ".empty", ".empty h2",
              ".empty p", "#composer", ".box", "#prompt", ".row", "#count", "#thinking", ".actions", "#attach",
              "#send"]
MEASURE = """(selectors) => Object.fromEntries(selectors.map((s) => {
  const e = document.querySelector(s);
  const r = e.getBoundingClientRect();
  const css = getComputedStyle(e);
  return [s, { box: [r.x, r.y, r.width, r.height].map((v) => Math.round(v * 100) / 100),
               colour: css.color, background: css.backgroundColor, border: css.borderTopColor,
               visibility: css.visibility, font: css.font }];
}))"""
#: Counts layout shifts from the moment the whole of <body> is parsed (its last script
#: has made the four stylesheet links) and two frames have painted it. What moved before
#: that is the parser's progressive paint of a half-read body, which a loaded machine
#: shows (CI saw 0.0003-0.0006) and which is not this test's claim: the claim is that the
#: stylesheets, once they apply, move nothing.
SHIFTS = """() => new Promise((done) => {
  const parsed = () => document.querySelectorAll('link[rel=stylesheet]').length === 4;
  if (parsed()) return done();
  const observer = new MutationObserver(() => { if (parsed()) { observer.disconnect(); done(); } });
  observer.observe(document, { subtree: true, childList: true });
}).then(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))))
  .then(() => {
    window.__shift = 0;
    window.__shifts = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.__shift += entry.value;
    });
    window.__shifts.observe({ type: 'layout-shift' });
    return true;
  })"""
#: Every stylesheet of the page applied, then two frames painted with them. Chromium's
#: parser waits at each stylesheet in <body> until it is in, so the four links are not all
#: there at once: wait for the fourth (a MutationObserver; the page's deferred modules,
#: held, keep DOMContentLoaded away).
STYLED = """() => new Promise((done) => {
  const links = () => [...document.querySelectorAll('link[rel=stylesheet]')];
  if (links().length === 4) return done();
  const observer = new MutationObserver(() => { if (links().length === 4) { observer.disconnect(); done(); } });
  observer.observe(document, { subtree: true, childList: true });
}).then(() => Promise.all([...document.querySelectorAll('link[rel=stylesheet]')].map((link) =>
  link.sheet ? true : new Promise((done) => link.addEventListener('load', () => done(true), { once: true })))))
  .then(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(() => done(true)))))
  .then(() => [...document.querySelectorAll('link[rel=stylesheet]')].map((link) => Boolean(link.sheet)))"""
TOTAL_SHIFT = """() => {
  for (const entry of window.__shifts.takeRecords()) window.__shift += entry.value;
  return window.__shift;
}"""


@pytest.fixture
def phone(browser: Browser, console: Console) -> Iterator[Page]:
    yield from watched_page(browser, console, fresh=True, **PIXEL_7)


def test_the_composer_shows_and_sends_with_the_html_alone(phone: Page, gateway_url: str) -> None:
    scripts, sheets = Held(phone, SCRIPTS), Held(phone, SHEETS)
    phone.goto(gateway_url + "/", wait_until="commit")
    phone.wait_for_selector("html[data-send-ready]", state="attached")
    assert phone.evaluate(PAINTED) > 0
    # Painted with the inline styles: the composer's rounded box, Send as the accent.
    expect(phone.get_by_role("button", name="Send", exact=True)).to_be_visible()
    expect(phone.locator(".box")).to_have_css("border-top-left-radius", "22.4px")
    expect(phone.locator("#send")).to_have_css("background-color", "rgb(11, 87, 208)")
    # The prompt takes typing too: no stylesheet holds its autofocus (a script-blocking
    # one would: HTML, "flush autofocus candidates").
    expect(phone.locator("#prompt")).to_be_focused()
    assert {r.request.url.rsplit("/", 1)[1] for r in sheets.held} == {
        "page.css", "render.css", "messages.css", "conversations.css"}
    assert scripts.held and phone.get_attribute("html", "data-interactive") is None
    phone.fill("#prompt", "Hello with the HTML alone")
    with phone.expect_request(lambda r: r.method == "POST" and r.url.endswith("/v1/chat/completions")) as sent:
        phone.get_by_role("button", name="Send", exact=True).click()
    assert sent.value.headers.get("x-firsttoken-prepare") == "balanced"
    expect(phone.locator(ANSWER)).to_have_attribute("data-state", "done")
    assert phone.inner_text(f"{ANSWER} .content").strip()
    # Nothing else came in meanwhile: the styles and the page's scripts are still held.
    assert phone.get_attribute("html", "data-interactive") is None
    assert not sheets.released and not scripts.released


@pytest.mark.parametrize(("device", "scheme"), [(PIXEL_7, "light"), (DESKTOP, "dark")], ids=["phone-light", "desktop-dark"])
def test_the_stylesheets_change_no_box_of_the_first_view(
        browser: Browser, console: Console, gateway_url: str, device: dict[str, Any], scheme: str) -> None:
    for page in watched_page(browser, console, fresh=True, color_scheme=scheme, **device):
        Held(page, SCRIPTS)  # the page's own modules would change the view themselves
        sheets = Held(page, SHEETS)
        page.goto(gateway_url + "/", wait_until="commit")
        page.wait_for_selector("html[data-send-ready]", state="attached")
        page.wait_for_selector("#send", state="attached")
        assert page.evaluate(PAINTED) > 0
        page.evaluate(SHIFTS)
        before = page.evaluate(MEASURE, FIRST_VIEW)
        assert len(sheets.held) == 4 and all(not link for link in page.evaluate(
            "() => [...document.querySelectorAll('link[rel=stylesheet]')].map((link) => Boolean(link.sheet))"))
        sheets.release()
        assert page.evaluate(STYLED) == [True] * 4
        after = page.evaluate(MEASURE, FIRST_VIEW)
        moved = {s: (before[s], after[s]) for s in FIRST_VIEW if before[s] != after[s]}
        assert not moved, f"the stylesheets changed the first view: {moved}"
        assert page.evaluate(TOTAL_SHIFT) == 0
        # The sidebar is there from the first paint on a desktop, the drawer shut on a phone.
        sidebar = before["#conversations"]
        assert (sidebar["visibility"] == "visible") == (device is DESKTOP)
