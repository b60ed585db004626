""""Reply ready" without a host, in Chromium (issue 46, item 4; js/page/notify.js, sw.js
"Reply ready"): an answer done while the page is hidden is a notification shown through
the service worker's registration, one per conversation, and a tap on it opens that
conversation; the permission is asked only from the offer that follows an answer the
person waited for, never at load.

The full Chromium: the headless shell reports `Notification.permission` "denied" even
with the permission granted (its permissions API says "granted"), and shows nothing.
Notifications shown are read back with `registration.getNotifications()`. Nothing can
click one in a headless browser, so the tap is a `notificationclick` dispatched inside
the service worker (Playwright's `context.service_workers`) with the notification the
page showed: the worker's own handler runs, the page is told; the focus a real click
lends is missing, and is not asserted. A new window's path is the URL it opens,
`./#conversation=<id>`, loaded directly.

Hidden is played as in test_reply_ready_host.py (`HIDEABLE`). No sleeps."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Worker, expect

from harness.chromium import DESKTOP, Console, ask, wait_ready, watched_page
from tests.e2e.native_host import as_host, host_message
from tests.e2e.test_reply_ready_host import HIDEABLE

pytestmark = pytest.mark.e2e

#: Counts every call of Notification.requestPermission, from the first script on.
PROMPT_SPY = """(() => {
  window.__asked = 0;
  const ask = Notification.requestPermission.bind(Notification);
  Notification.requestPermission = (...args) => { window.__asked += 1; return ask(...args); };
})();"""

#: Resolves once a service worker is active for the page (it registers once Python is ready).
ACTIVE_JS = "async () => { await navigator.serviceWorker.ready; return true; }"

#: The notifications the page's registration shows now, oldest first.
SHOWN_JS = """async () => (await (await navigator.serviceWorker.ready).getNotifications())
  .map((n) => ({ title: n.title, body: n.body, tag: n.tag, data: n.data }))"""

#: Closes every notification a test before this one left in the warm context's profile.
CLOSE_ALL_JS = "async () => { for (const n of await (await navigator.serviceWorker.ready).getNotifications()) n.close(); }"

#: Resolves once the registration shows no notification (looked at after each frame),
#: or rejects after 15 s.
NONE_SHOWN_JS = """() => new Promise((resolve, reject) => {
  const end = performance.now() + 15000;
  const look = async () => {
    const shown = await (await navigator.serviceWorker.ready).getNotifications();
    if (!shown.length) resolve(true);
    else if (performance.now() > end) reject(new Error(`still shown: ${shown.map((n) => n.tag)}`));
    else requestAnimationFrame(look);
  };
  look();
})"""

#: In the service worker: a tap on the notification tagged `tag`, as the browser sends it.
CLICK_JS = """async (tag) => {
  const [notification] = await self.registration.getNotifications({ tag });
  if (!notification) throw new Error(`no notification tagged ${tag}`);
  self.dispatchEvent(new NotificationEvent('notificationclick', { notification }));
}"""


@pytest.fixture
def chromium(full_chromium: Browser, console: Console) -> Iterator[Page]:
    yield from watched_page(full_chromium, console, **DESKTOP)


def open_page(page: Page, url: str) -> None:
    page.add_init_script(HIDEABLE + PROMPT_SPY)
    page.goto(url)
    wait_ready(page)
    page.evaluate(ACTIVE_JS)


def ask_hidden(page: Page, text: str) -> None:
    page.evaluate("() => window.__hide(true)")
    ask(page, text)


def worker_of(page: Page, gateway_url: str) -> Worker:
    workers = [w for w in page.context.service_workers if w.url.startswith(gateway_url)]
    assert workers, page.context.service_workers
    return workers[0]


def settings(page: Page) -> dict[str, Any]:
    return page.evaluate("() => JSON.parse(localStorage.getItem('firsttoken.settings.v1') || '{}')")


def test_no_prompt_at_load_then_one_offer_after_an_answer_waited_for(chromium: Page, gateway_url: str) -> None:
    page = chromium
    open_page(page, gateway_url + "/")
    offer = page.locator(".notify-offer")
    assert page.evaluate("Notification.permission") == "default"

    ask(page, "a quick one, watched")
    expect(page.locator('.msg[data-role="assistant"][data-state="done"]')).to_have_count(1)
    expect(offer).to_have_count(0)  # not waited for: quick, and the page showed all along

    ask_hidden(page, "while you were away")
    page.evaluate("() => window.__hide(false)")
    expect(offer).to_be_visible()
    assert page.evaluate("window.__asked") == 0  # offered, not asked: asking takes a tap
    # Under the answer it follows.
    assert page.evaluate("() => document.getElementById('messages').nextElementSibling.className") == "notify-offer"

    page.context.grant_permissions(["notifications"], origin=gateway_url)
    offer.get_by_role("button", name="Notify me when replies are ready").click()
    expect(offer).to_have_count(0)
    assert page.evaluate("window.__asked") == 1
    expect(page.locator("html")).to_have_attribute("data-python", "ready")
    page.wait_for_function("() => JSON.parse(localStorage.getItem('firsttoken.settings.v1')).notify === true")
    assert settings(page)["notify_offered"] is True

    page.click("#open-settings")
    expect(page.locator("#notify-field")).to_be_visible()
    expect(page.locator("#notify")).to_be_checked()


def test_no_thanks_is_kept_and_the_offer_comes_once(chromium: Page, gateway_url: str) -> None:
    page = chromium
    open_page(page, gateway_url + "/")
    ask_hidden(page, "the first wait")
    page.evaluate("() => window.__hide(false)")
    offer = page.locator(".notify-offer")
    offer.get_by_role("button", name="No thanks").click()
    expect(offer).to_have_count(0)
    assert settings(page)["notify"] is False

    page.reload()
    wait_ready(page)
    ask_hidden(page, "the second wait")
    page.evaluate("() => window.__hide(false)")
    expect(offer).to_have_count(0)
    assert page.evaluate("window.__asked") == 0
    page.click("#open-settings")
    expect(page.locator("#notify")).not_to_be_checked()


def test_a_reply_done_while_hidden_is_a_notification_that_opens_its_conversation(chromium: Page, gateway_url: str) -> None:
    page = chromium
    page.context.grant_permissions(["notifications"], origin=gateway_url)
    open_page(page, gateway_url + "/")
    page.evaluate(CLOSE_ALL_JS)
    html = page.locator("html")

    ask(page, "while you watch")
    assert page.evaluate(SHOWN_JS) == []
    assert html.get_attribute("data-notified") is None

    ask_hidden(page, "while you are away")
    expect(html).to_have_attribute("data-notified", "1")
    [shown] = page.evaluate(SHOWN_JS)
    first_title = page.inner_text("#conversation-title")
    conversation = shown["data"]["conversation"]
    assert shown["title"] == first_title
    assert shown["body"].startswith("You said: while you are away") and len(shown["body"]) <= 121, shown
    assert shown["tag"] == f"firsttoken-reply:{conversation}"
    assert page.evaluate("window.__asked") == 0  # granted already: nothing to ask

    # Another answer there replaces it: one per conversation.
    ask(page, "and once more")
    expect(html).to_have_attribute("data-notified", "2")
    [again] = page.evaluate(SHOWN_JS)
    assert again["tag"] == shown["tag"] and again["body"].startswith("You said: and once more"), again

    # Another conversation opened before the page shows again: the first one's stays.
    page.get_by_role("button", name="New chat").click()
    page.evaluate("() => window.__hide(false)")
    ask(page, "a second conversation")
    expect(page.locator("#conversation-title")).not_to_have_text(first_title)
    assert [n["tag"] for n in page.evaluate(SHOWN_JS)] == [shown["tag"]]
    # The tap on it brings the first conversation back.
    worker_of(page, gateway_url).evaluate(CLICK_JS, shown["tag"])
    expect(page.locator("#conversation-title")).to_have_text(first_title)
    expect(page.locator('.msg[data-role="user"]').first).to_contain_text("while you watch")
    assert page.evaluate(SHOWN_JS) == []  # the tapped one is gone

    # Seen another way (the page shown again on that conversation): it goes too.
    ask_hidden(page, "seen on return")
    expect(html).to_have_attribute("data-notified", "3")
    assert len(page.evaluate(SHOWN_JS)) == 1
    page.evaluate("() => window.__hide(false)")
    page.evaluate(NONE_SHOWN_JS)

    # No window open: the worker opens ./#conversation=<id>, which the page opens as it starts.
    page.get_by_role("button", name="New chat").click()
    page.goto("about:blank")
    page.goto(f"{gateway_url}/#conversation={conversation}")
    wait_ready(page)
    expect(page.locator("#conversation-title")).to_have_text(first_title)
    expect(page.locator('.msg[data-role="user"]').first).to_contain_text("while you watch")
    assert page.evaluate("location.hash") == ""  # read once: a reload stays where the person goes next


def test_with_a_host_the_host_is_told_and_nothing_is_shown(chromium: Page, gateway_url: str) -> None:
    page = chromium
    page.context.grant_permissions(["notifications"], origin=gateway_url)
    as_host(page)
    open_page(page, gateway_url + "/")
    page.evaluate(CLOSE_ALL_JS)
    ask_hidden(page, "the host says it")
    assert host_message(page, "reply.ready")["text"].startswith("You said: the host says it")
    assert page.evaluate(SHOWN_JS) == []
    assert page.get_attribute("html", "data-notified") is None
    page.click("#open-settings")
    expect(page.locator("#notify-field")).to_be_hidden()  # the host notifies natively
