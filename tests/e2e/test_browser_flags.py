"""The harness's Chromium flags do what harness/servers.py says: Playwright's own list of
disabled features is kept whole next to ours (Chromium reads only the last
`--disable-features`), and the omnibox popup's WebUI is not loaded. And the browser the
tests drive is the headless shell of the same Chromium release as the full browser."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Browser, Error

from harness.servers import CHROMIUM, NO_OMNIBOX_POPUP, PLAYWRIGHT_DISABLED_FEATURES


def features_disabled(browser: Browser) -> tuple[list[list[str]], set[str]]:
    """Every `--disable-features` on the browser's command line, in order, and what
    Chromium took of them (its "Command-line Variations")."""
    page = browser.new_page()
    try:
        page.goto("chrome://version/?show-variations-cmd")
        command_line = page.inner_text("#command_line")
        variations = page.inner_text("#variations-cmd")
    finally:
        page.close()
    given = [m.split(",") for m in re.findall(r"--disable-features=(\S+)", command_line)]
    taken = re.search(r'--disable-features="([^"]*)"', variations)
    assert taken is not None, variations
    return given, set(taken.group(1).split(","))


def test_playwrights_disabled_features_are_kept_and_the_omnibox_popup_is_gone(full_chromium: Browser) -> None:
    browser = full_chromium  # the browser layer's pages (chrome://version) are its own
    # Playwright's own list, from a Chromium started with no flags of ours.
    plain = browser.browser_type.launch(executable_path=CHROMIUM, args=["--headless=new", "--no-sandbox"])
    try:
        given, _ = features_disabled(plain)
    finally:
        plain.close()
    # Playwright passes one list; a feature added to it in an upgrade fails here, to be added.
    assert len(given) == 1
    assert set(given[0]) <= set(PLAYWRIGHT_DISABLED_FEATURES), set(given[0]) - set(PLAYWRIGHT_DISABLED_FEATURES)

    # The harness's browser (harness/servers.py CHROMIUM_ARGS): that list and ours, taken.
    _, taken = features_disabled(browser)
    assert set(given[0]) <= taken, set(given[0]) - taken
    assert set(NO_OMNIBOX_POPUP) <= taken
    cdp = browser.new_browser_cdp_session()
    try:
        targets = cdp.send("Target.getTargets", {"filter": [{}]})["targetInfos"]
    finally:
        cdp.detach()
    assert not [t["url"] for t in targets if "omnibox" in t["url"]]


def test_the_tests_drive_the_headless_shell_of_the_same_release(browser: Browser, full_chromium: Browser) -> None:
    versions = []
    for b in (browser, full_chromium):
        cdp = b.new_browser_cdp_session()
        try:
            versions.append(cdp.send("Browser.getVersion"))
        finally:
            cdp.detach()
    shell, full = versions
    # The shell has no browser layer: no chrome:// pages, which the full browser serves.
    page = browser.new_page()
    try:
        with pytest.raises(Error, match="ERR_INVALID_URL"):
            page.goto("chrome://version")
    finally:
        page.close()
    assert browser.version == full_chromium.version, (shell, full)
    assert shell["jsVersion"] == full["jsVersion"] and shell["revision"] == full["revision"], (shell, full)
