"""The page boots under its own CSP, which has no 'unsafe-eval' (gateway/headers.py;
tests/gateway/test_http.py checks the header).

PyScript 0.7.31 evaluates strings only for a worker it starts with its hooks: its
PyWorker takes them from a map that is filled once all six of its plugin chunks have
been imported, and building them calls `Function(...)` on the page (src/hooks.js:42).
That happened whenever pyscript.toml arrived after those chunks, and failed the boot.
The link now imports PyScript only once the config is in (js/boot/boot.js), so
here the config is held back for as long as the old order needed to load every chunk,
and Python must come up all the same, with no violation of the policy in the page:
a `securitypolicyviolation` is fired for every eval the CSP blocks, even one that a
`try` catches (context.py's `window.Function`, say), while the console shows only
the uncaught ones (conftest.py checks those, for every test).
"""

from __future__ import annotations

import re
from typing import Iterator

import pytest
from playwright.sync_api import Browser, Page, Route
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from harness.chromium import Console, wait_ready, watched_page

pytestmark = pytest.mark.e2e

RECORD_VIOLATIONS = """window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => window.__cspViolations.push(
  `${e.effectiveDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}:${e.columnNumber}`));"""
PLUGINS = r"/vendor/pyscript/(?:deprecations-manager|donkey|error|py-editor|py-game|py-terminal)-[^/]+\.js$"
PLUGINS_LOADED = """(pattern) => performance.getEntriesByType('resource')
  .filter((e) => new RegExp(pattern).test(e.name)).length >= 6"""
#: How long the old order took, at most, to load the plugin chunks while the config was
#: held (tens of ms here): with the link as it is now they never load in that time.
PLUGINS_WAIT_MS = 3_000


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    # Its own context: the test holds the config on its way, which an installed service
    # worker would answer from its cache, past the route.
    yield from watched_page(browser, console, fresh=True)


def test_boots_without_eval_when_the_config_comes_last(page: Page, gateway_url: str) -> None:
    page.add_init_script(RECORD_VIOLATIONS)
    held: list[Route] = []
    page.route(re.compile(r"/pyscript\.toml$"), lambda route: held.append(route))
    with page.expect_request(re.compile(r"/pyscript\.toml$")):
        page.goto(gateway_url + "/")
    try:
        page.wait_for_function(PLUGINS_LOADED, arg=PLUGINS, timeout=PLUGINS_WAIT_MS)
    except PlaywrightTimeout:
        pass  # PyScript not imported yet: what the link does now
    assert len(held) == 1
    held[0].continue_()
    wait_ready(page)
    assert page.evaluate("window.__cspViolations") == []
    # PyScript ran after the config came (its plugin chunks were asked for only then).
    order = page.evaluate("""(pattern) => {
      const entries = performance.getEntriesByType('resource');
      const config = entries.find((e) => /\\/pyscript\\.toml$/.test(e.name));
      const plugins = entries.filter((e) => new RegExp(pattern).test(e.name));
      return { config: config && config.responseEnd, plugins: plugins.map((e) => e.startTime) };
    }""", PLUGINS)
    assert order["config"] is not None and len(order["plugins"]) == 6
    assert min(order["plugins"]) >= order["config"]
