"""Sharing into the chat in Chromium (issue 46, item 3; js/page/share.js,
bridge/PROTOCOL.md "Share"): a host's `composer.share` lands its text, link and photo in
the composer of a new or of a named existing conversation, the photo shrunk and counted
as if picked, nothing sent until the person sends it; an unknown conversation is refused
to the host with nothing changed; hostile shares (50 MB, a `javascript:` link, HTML in
the text) are refused or stay text. And the installed app's Web Share Target: a
multipart form POSTed to the manifest's action from the page's origin, answered by the
service worker, fills the composer of the page it opens. No sleeps."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from harness.chromium import ANSWER, chat_bodies, wait_ready
from tests.e2e.native_host import as_host, host_message, post
from tests.unit.image_files import png

pytestmark = pytest.mark.e2e

THUMBS = "#attachments li.attachment"
PHOTO = {"data": base64.b64encode(png(1600, 1200)).decode(), "type": "image/png", "name": "shared.png"}


@pytest.fixture
def hosted(page: Page, gateway_url: str) -> tuple[Page, list[dict]]:
    bodies = chat_bodies(page)
    as_host(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    return page, bodies


def share(page: Page, request_id: str, **fields: Any) -> dict[str, Any]:
    """The host shares; the page's answer, `composer.shared`."""
    post(page, {"type": "composer.share", "id": request_id, **fields})
    return host_message(page, "composer.shared", request_id)


def refused(page: Page, request_id: str, msg: dict[str, Any] | str) -> dict[str, Any]:
    post(page, msg if isinstance(msg, str) else {"type": "composer.share", "id": request_id, **msg})
    return host_message(page, "error", request_id)["error"]


def user_messages(page: Page) -> list[str]:
    return page.locator('.msg[data-role="user"]').all_inner_texts()


def test_a_share_lands_in_a_new_conversation_then_in_an_existing_one(hosted: tuple[Page, list[dict]]) -> None:
    page, bodies = hosted
    # Into a new conversation: text, link and photo in the composer, nothing sent.
    landed = share(page, "s1", text="Look at this", url="https://example.com/a?b=1", images=[PHOTO], conversation="new")
    first = landed["conversation"]
    [size] = landed["images"]
    assert 0 < size["bytes"] and size["width"] <= 1600 and size["height"] <= 1200, size
    expect(page.locator("#prompt")).to_have_value("Look at this\nhttps://example.com/a?b=1")
    expect(page.locator(THUMBS)).to_have_count(1)
    expect(page.locator("#attachments")).to_have_attribute("data-count", "1")
    assert bodies == []
    # The person sends it: that conversation now holds it.
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(ANSWER).last).to_have_attribute("data-state", "done", timeout=60_000)
    assert len(bodies) == 1 and bodies[0]["messages"][-1]["content"][0]["text"] == "Look at this\nhttps://example.com/a?b=1"

    # While it is open, a share into a new one: another, empty conversation.
    landed = share(page, "s2", text="Something else", conversation="new")
    assert landed["conversation"] != first
    expect(page.locator('.msg[data-role="user"]')).to_have_count(0)
    expect(page.locator("#prompt")).to_have_value("Something else")

    # A share that names the first conversation opens it; the draft stays before it.
    landed = share(page, "s3", text="More on that", conversation=first)
    assert landed["conversation"] == first and landed["images"] == []
    expect(page.locator('.msg[data-role="user"]')).to_have_count(1)
    expect(page.locator("#prompt")).to_have_value("Something else\n\nMore on that")
    # No conversation named: the open one.
    landed = share(page, "s4", url="https://example.org/")
    assert landed["conversation"] == first
    expect(page.locator("#prompt")).to_have_value("Something else\n\nMore on that\n\nhttps://example.org/")
    assert len(bodies) == 1
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator(ANSWER)).to_have_count(2)
    expect(page.locator(ANSWER).last).to_have_attribute("data-state", "done", timeout=60_000)
    assert len(bodies) == 2 and bodies[-1]["messages"][-1]["content"] == "Something else\n\nMore on that\n\nhttps://example.org/"


def test_an_unknown_conversation_is_refused_and_nothing_changes(hosted: tuple[Page, list[dict]]) -> None:
    page, bodies = hosted
    page.fill("#prompt", "my draft")
    error = refused(page, "u", {"text": "lost?", "images": [PHOTO], "conversation": "no-such-conversation"})
    assert error["code"] == "unknown_conversation" and "no-such-conversation" in error["message"]
    expect(page.locator("#prompt")).to_have_value("my draft")
    expect(page.locator(THUMBS)).to_have_count(0)
    assert bodies == []


def test_hostile_shares_are_refused(hosted: tuple[Page, list[dict]]) -> None:
    page, bodies = hosted
    # 50 MB: past the protocol's bound on any host message (8 MB), refused unread.
    page.evaluate("(n) => window.firsttoken.post('{\"type\":\"composer.share\",\"id\":\"big\",\"text\":\"' + 'a'.repeat(n) + '\"}')",
                  50 * 1024 * 1024)
    # (Refused before it is read: its id is unknown, so the error carries none.)
    error = host_message(page, "error")["error"]
    assert error["code"] == "invalid_message" and "bytes" in error["message"]
    # A link that is not http(s) never lands.
    for i, url in enumerate(["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>", "file:///etc/passwd", "not a url"]):
        error = refused(page, f"url{i}", {"text": "click", "url": url})
        assert error["code"] == "invalid_message" and "http(s)" in error["message"], url
    # Empty, or of the wrong shape.
    assert refused(page, "empty", {"text": ""})["code"] == "invalid_message"
    assert refused(page, "many", {"images": [PHOTO] * 21})["code"] == "invalid_message"
    assert refused(page, "type", {"text": ["a"]})["code"] == "invalid_message"
    assert refused(page, "conv", {"text": "a", "conversation": 7})["code"] == "invalid_message"
    expect(page.locator("#prompt")).to_have_value("")

    # HTML in the text is text: in the box as written, never run, never an element.
    html = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b>'
    share(page, "html", text=html)
    expect(page.locator("#prompt")).to_have_value(html)
    assert page.locator("#composer img, #composer script, #composer b").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert bodies == []


def test_the_share_target_fills_the_composer_of_the_page_it_opens(page: Page, gateway_url: str) -> None:
    """The installed app's share sheet POSTs a multipart form (manifest.webmanifest's
    `share_target`) as a navigation; here the page posts the same form with fetch from
    its own origin (its CSP's `form-action 'none'` forbids a form), the service worker
    answers it with a redirect to the page, which the test then opens as the browser
    would have."""
    bodies = chat_bodies(page)
    page.goto(gateway_url + "/")
    wait_ready(page)
    assert page.evaluate("() => navigator.serviceWorker.ready.then((r) => Boolean(r.active))")
    photo = list(png(800, 600))
    opened = page.evaluate("""async (bytes) => {
      const form = new FormData();
      form.append('title', 'A page');
      form.append('text', 'Worth reading <b>now</b>');
      form.append('url', 'https://example.com/article');
      form.append('images', new File([new Uint8Array(bytes)], 'photo.png', { type: 'image/png' }));
      const r = await fetch('share-target', { method: 'POST', body: form });
      return r.url;
    }""", photo)
    assert "?share=" in opened and "refused" not in opened, opened
    page.goto(opened)
    wait_ready(page)
    expect(page.locator("#prompt")).to_have_value("Worth reading <b>now</b>\nhttps://example.com/article")
    expect(page.locator("#attachments")).to_have_attribute("data-count", "1")
    # Taken once: the query is gone, and a reload brings nothing back.
    assert "share=" not in page.url
    page.fill("#prompt", "")
    page.reload()
    wait_ready(page)
    expect(page.locator("#prompt")).to_have_value("")
    assert bodies == []

    # Not a URL of the web: left out, and said.
    opened = page.evaluate("""async () => {
      const form = new FormData();
      form.append('text', 'hi');
      form.append('url', 'javascript:alert(1)');
      return (await fetch('share-target', { method: 'POST', body: form })).url;
    }""")
    page.goto(opened)
    wait_ready(page)
    expect(page.locator("#prompt")).to_have_value("hi")
    expect(page.locator("#attach-note")).to_have_attribute("data-code", "share_bad_url")

    # Past the worker's bound (32 MiB): refused before it is kept, and said.
    opened = page.evaluate("""async () => {
      const form = new FormData();
      form.append('images', new File([new Uint8Array(33 * 1024 * 1024)], 'huge.png', { type: 'image/png' }));
      return (await fetch('share-target', { method: 'POST', body: form })).url;
    }""")
    assert opened.endswith("?share=refused"), opened
    page.goto(opened)
    wait_ready(page)
    expect(page.locator("#attach-note")).to_have_attribute("data-code", "share_too_large")
    expect(page.locator(THUMBS)).to_have_count(0)
    assert bodies == []
