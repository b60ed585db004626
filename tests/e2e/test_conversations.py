"""Conversations in real Chromium (issue 14, item 1), at Pixel 7 and desktop sizes: new
chat, switching, rename, delete and Undo, search, export, the move from localStorage,
a reload, and records in IndexedDB that are not what they should be."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from harness.chromium import ANSWER, DESKTOP, PIXEL_7, Console, ask, wait_ready, watched_page
from harness.stored import store, stored_messages

pytestmark = pytest.mark.e2e

LEGACY_KEY = "firsttoken.history.v1"

SIZES = {"pixel7": PIXEL_7, "desktop": DESKTOP}


@pytest.fixture(params=sorted(SIZES))
def size(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def page(browser: Browser, console: Console, size: str) -> Iterator[Page]:
    # Downloads are accepted by default (Playwright's `accept_downloads`), so the export
    # tests share the warm context of their device with every other test.
    yield from watched_page(browser, console, **SIZES[size])


def counted(page: Page) -> int:
    """The live count once no newer one is on its way (js/page/live-count.js)."""
    count = page.locator("#count")
    expect(count).not_to_have_attribute("data-pending", re.compile(".*"), timeout=30_000)
    return int(count.get_attribute("data-tokens") or "-1")


def show_list(page: Page, size: str) -> None:
    """The list, in view: the drawer on a phone (opened from the header), the sidebar on
    a desktop (always there)."""
    toggle = page.get_by_role("button", name="Conversations")
    if size == "pixel7":
        expect(page.locator("#conversations")).to_be_hidden()
        if toggle.get_attribute("aria-expanded") != "true":
            toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator("#conversations")).to_be_visible()


def items(page: Page) -> Any:
    return page.locator("#conversations .conv")


def titles(page: Page) -> list[str]:
    return page.locator("#conversations .conv-title").all_inner_texts()


def act(page: Page, title: str, action: str) -> None:
    """Open the actions of the conversation called `title`, and click `action`."""
    page.get_by_role("button", name=f"Actions for {title}").click()
    page.get_by_role("button", name=action, exact=True).click()


def header_title(page: Page) -> Any:
    return page.locator("#conversation-title")


# ---- tests ---------------------------------------------------------------------------
def test_new_chat_switch_and_a_reload_restores_the_list_and_the_open_one(page: Page, gateway_url: str, size: str) -> None:
    page.goto(gateway_url + "/")
    wait_ready(page)
    expect(header_title(page)).to_have_text("New chat")
    ask(page, "  Tell me about\n  gardens in   spring  ")
    # The title comes from the first prompt, squeezed.
    expect(header_title(page)).to_have_text("Tell me about")
    page.get_by_role("button", name="New chat", exact=True).click()
    expect(page.locator(".msg")).to_have_count(0)
    expect(header_title(page)).to_have_text("New chat")
    ask(page, "second conversation here")
    expect(header_title(page)).to_have_text("second conversation here")

    show_list(page, size)
    expect(items(page)).to_have_count(2)
    assert titles(page) == ["second conversation here", "Tell me about"]  # the newest first
    expect(page.locator('.conv-open[aria-current="true"] .conv-title')).to_have_text("second conversation here")
    # Switch: the first one is painted, the live count follows it. (Each count read once
    # the latest is in: the one asked for when the answer ended comes a moment later.)
    count_before = counted(page)
    assert count_before > 0
    page.locator(".conv-open", has_text="Tell me about").click()
    if size == "pixel7":  # the drawer gives the screen back
        expect(page.locator("#conversations")).to_be_hidden()
    expect(header_title(page)).to_have_text("Tell me about")
    # (shown as markdown, the line break kept: js/render/markdown-stream.js)
    expect(page.locator('.msg[data-role="user"] .content')).to_have_text([re.compile(r"Tell me about\s*gardens in\s+spring")])
    assert counted(page) != count_before
    # A prompt now goes into the open one, and only there.
    ask(page, "and roses?")
    kept = store(page)
    by_title = {m["title"]: m["id"] for m in kept["metas"]}
    assert set(by_title) == {"Tell me about", "second conversation here"}
    assert kept["open"] == by_title["Tell me about"]
    first = stored_messages(page, by_title["Tell me about"])
    assert [(m["role"], m["content"][:10]) for m in first][::2] == [("user", "Tell me ab"), ("user", "and roses?")]
    assert [m["role"] for m in stored_messages(page, by_title["second conversation here"])] == ["user", "assistant"]

    page.reload(wait_until="domcontentloaded")
    # The open conversation is painted from IndexedDB, before Python is ready.
    expect(page.locator(".msg")).to_have_count(4)
    expect(header_title(page)).to_have_text("Tell me about")
    assert page.evaluate("document.documentElement.dataset.interactive") is not None
    show_list(page, size)
    expect(items(page)).to_have_count(2)
    assert titles(page) == ["Tell me about", "second conversation here"]
    wait_ready(page)


def test_rename_delete_with_undo_and_search(page: Page, gateway_url: str, size: str) -> None:
    page.goto(gateway_url + "/")
    wait_ready(page)
    ask(page, "apples and pears")
    page.get_by_role("button", name="New chat", exact=True).click()
    ask(page, "bicycles")
    show_list(page, size)
    expect(items(page)).to_have_count(2)

    # Rename (Enter keeps it; it stays through a save).
    act(page, "apples and pears", "Rename")
    field = page.get_by_role("textbox", name="Conversation title")
    field.fill("Fruit")
    field.press("Enter")
    expect(page.locator(".conv-title", has_text="Fruit")).to_have_count(1)
    assert {m["title"] for m in store(page)["metas"]} == {"Fruit", "bicycles"}

    # Search over titles and the text of messages (the answers repeat the prompt).
    search = page.get_by_role("searchbox", name="Search conversations")
    search.fill("fruit")
    expect(items(page)).to_have_count(1)
    expect(page.locator(".conv-title")).to_have_text(["Fruit"])
    search.fill("BICYC")
    expect(items(page)).to_have_count(1)
    expect(page.locator(".conv-title")).to_have_text(["bicycles"])
    expect(page.locator(".conv-snippet")).to_contain_text("bicycles")
    search.fill("no such words anywhere")
    expect(items(page)).to_have_count(0)
    expect(page.locator(".conv-empty")).to_have_text("No conversations found.")
    search.fill("")
    expect(items(page)).to_have_count(2)

    # Delete the open one, then Undo: it is back, open again, in the store again.
    expect(header_title(page)).to_have_text("bicycles")
    act(page, "bicycles", "Delete conversation")
    expect(items(page)).to_have_count(1)
    expect(header_title(page)).to_have_text("New chat")
    expect(page.locator(".msg")).to_have_count(0)
    assert {m["title"] for m in store(page)["metas"]} == {"Fruit"}
    page.get_by_role("button", name="Undo", exact=True).click()
    expect(items(page)).to_have_count(2)
    expect(header_title(page)).to_have_text("bicycles")
    expect(page.locator(".msg")).to_have_count(2)
    assert {m["title"] for m in store(page)["metas"]} == {"Fruit", "bicycles"}

    # Delete again, and act on something else: no more Undo, and it stays gone.
    act(page, "Fruit", "Delete conversation")
    expect(page.get_by_role("button", name="Undo", exact=True)).to_be_visible()
    page.get_by_role("button", name="New chat", exact=True).click()
    expect(page.get_by_role("button", name="Undo", exact=True)).to_have_count(0)
    assert {m["title"] for m in store(page)["metas"]} == {"bicycles"}
    page.reload()
    show_list(page, size)
    expect(items(page)).to_have_count(1)


def test_export_as_markdown_and_json(page: Page, gateway_url: str, size: str, tmp_path: Path) -> None:
    page.goto(gateway_url + "/")
    wait_ready(page)
    ask(page, 'What is "this": a/b?')
    answer = stored_messages(page, store(page)["open"])[1]["content"]
    show_list(page, size)
    page.get_by_role("button", name='Actions for What is "this": a/b?').click()
    with page.expect_download() as got:
        page.get_by_role("button", name="Export as Markdown").click()
    md = got.value
    assert md.suggested_filename == "What-is-this-a-b.md"
    text = Path(md.path()).read_text(encoding="utf-8")
    assert text.startswith('# What is "this": a/b?\n\n## You\n\nWhat is "this": a/b?\n\n## Assistant\n\n')
    assert answer.strip() in text
    page.get_by_role("button", name='Actions for What is "this": a/b?').click()
    page.get_by_role("button", name='Actions for What is "this": a/b?').click()
    with page.expect_download() as got:
        page.get_by_role("button", name="Export as JSON").click()
    exported = json.loads(Path(got.value.path()).read_text(encoding="utf-8"))
    assert got.value.suggested_filename == "What-is-this-a-b.json"
    assert exported["title"] == 'What is "this": a/b?'
    said = [(m["role"], m["content"]) for m in exported["messages"]]
    assert said == [("user", 'What is "this": a/b?'), ("assistant", answer)]


LEGACY = [
    {"role": "user", "content": "an old question"},
    {"role": "assistant", "content": "an old **answer**", "incomplete": True, "x_kept": {"any": 1}},
    {"role": "user", "content": "a second old question"},
    {"role": "assistant", "content": "and its answer"},
]


def test_the_old_localstorage_conversation_is_moved_and_nothing_lost(page: Page, gateway_url: str, size: str) -> None:
    # The page before this change kept one conversation under this key.
    page.goto(gateway_url + "/favicon-none-404")
    page.evaluate("([k, v]) => localStorage.setItem(k, v)", [LEGACY_KEY, json.dumps(LEGACY)])
    page.goto(gateway_url + "/")
    expect(page.locator(".msg")).to_have_count(4)
    expect(page.locator(".msg .error")).to_have_text(["This answer was interrupted."])
    expect(header_title(page)).to_have_text("an old question")
    kept = store(page)
    [meta] = kept["metas"]
    assert meta["title"] == "an old question" and kept["open"] == meta["id"]
    # Every field, unknown ones too; the old `incomplete` flag is read as the answer's
    # state (js/page/conversation.js makes old conversations well formed once).
    moved = stored_messages(page, meta["id"])
    assert [(m["role"], m["content"]) for m in moved] == [(m["role"], m["content"]) for m in LEGACY]
    assert moved[1]["x_kept"] == {"any": 1} and moved[1]["state"] == "interrupted"
    assert page.evaluate(f"localStorage.getItem('{LEGACY_KEY}')") is None
    # And once only: a reload shows the same one conversation.
    page.reload()
    show_list(page, size)
    expect(items(page)).to_have_count(1)
    expect(page.locator(".msg")).to_have_count(4)
    wait_ready(page)


SEED_CORRUPT = """(good) => new Promise((ok, no) => {
  const r = indexedDB.open('firsttoken-conversations', 1);
  r.onupgradeneeded = () => {
    const db = r.result;
    db.createObjectStore('conversations', { keyPath: 'id' });
    db.createObjectStore('messages', { keyPath: 'id' });
    db.createObjectStore('state');
  };
  r.onerror = () => no(r.error);
  r.onsuccess = () => {
    const db = r.result, tx = db.transaction(['conversations', 'messages', 'state'], 'readwrite');
    const c = tx.objectStore('conversations'), m = tx.objectStore('messages');
    c.put({ id: 'good', title: 'Good one', created: 1, updated: 3 });
    m.put({ id: 'good', messages: [{ role: 'user', content: good }, null, { role: 7 }, 'text',
                                   { role: 'assistant', content: 'kept answer' }] });
    c.put({ id: 'no-title', created: 1, updated: 2 });
    c.put({ id: 'bad-time', title: 'Bad time', created: 'yesterday', updated: 2 });
    c.put({ id: 'no-messages', title: 'Lost messages', created: 1, updated: 1 });
    m.put({ id: 'no-messages', messages: 'not a list' });
    c.put({ id: 'unopenable', title: 'Unopenable', created: 1, updated: 0 });
    tx.objectStore('state').put('good', 'open');
    tx.oncomplete = () => { db.close(); ok(true); };
  };
})"""


def test_corrupt_records_are_skipped(page: Page, gateway_url: str, size: str) -> None:
    page.goto(gateway_url + "/favicon-none-404")
    page.evaluate(SEED_CORRUPT, "a good question")
    page.goto(gateway_url + "/")
    expect(page.locator('.msg[data-role="user"] .content')).to_have_text(["a good question"])
    expect(page.locator(".msg")).to_have_count(2)
    expect(header_title(page)).to_have_text("Good one")
    show_list(page, size)
    assert titles(page) == ["Good one", "Lost messages", "Unopenable"]
    # One whose messages cannot be read leaves the list when opened; the page goes on.
    page.locator(".conv-open", has_text="Lost messages").click()
    expect(page.locator(".conv-title", has_text="Lost messages")).to_have_count(0)
    expect(page.locator(".conv-store")).to_have_text("“Lost messages” could not be read, and was left out.")
    expect(header_title(page)).to_have_text("Good one")
    if size == "pixel7":
        page.get_by_role("button", name="Conversations").click()
        expect(page.locator("#conversations")).to_be_hidden()
    wait_ready(page)
    ask(page, "still works")
    assert [m["content"] for m in stored_messages(page, "good")][:3] == ["a good question", "kept answer", "still works"]


#: IndexedDB refused to the conversation store (a private window in some browsers):
#: opening it throws. (Only that database: the boot's snapshot store has its own test.)
NO_INDEXEDDB = """(() => {
  const open = IDBFactory.prototype.open;
  IDBFactory.prototype.open = function (name, ...rest) {
    if (name === 'firsttoken-conversations') throw new DOMException('The user denied permission.', 'UnknownError');
    return open.call(this, name, ...rest);
  };
})();"""


def test_without_indexeddb_the_page_works_in_memory_and_says_so(page: Page, gateway_url: str, size: str) -> None:
    page.goto(gateway_url + "/favicon-none-404")
    page.evaluate("([k, v]) => localStorage.setItem(k, v)", [LEGACY_KEY, json.dumps(LEGACY)])
    page.add_init_script(NO_INDEXEDDB)
    page.goto(gateway_url + "/")
    # The old conversation is shown all the same, and its key kept for a better day.
    expect(page.locator(".msg")).to_have_count(4)
    expect(page.locator("#conversations")).to_have_attribute("data-store", "memory")
    wait_ready(page)
    ask(page, "one more")
    page.get_by_role("button", name="New chat", exact=True).click()
    ask(page, "in memory")
    show_list(page, size)
    expect(page.locator(".conv-store")).to_contain_text("Not saved on this device")
    assert titles(page) == ["in memory", "an old question"]
    assert json.loads(page.evaluate(f"localStorage.getItem('{LEGACY_KEY}')")) == LEGACY
    page.locator(".conv-open", has_text="an old question").click()
    expect(page.locator(".msg")).to_have_count(6)


def test_an_answer_keeps_streaming_into_its_own_conversation(page: Page, gateway_url: str, size: str) -> None:
    settings = json.dumps({"headers": {"x-firsttoken-sim": "ttft_ms=0,tps=40,tokens=120"}})
    page.add_init_script(f"localStorage.setItem('firsttoken.settings.v1', {json.dumps(settings)})")
    page.goto(gateway_url + "/")
    wait_ready(page)
    page.fill("#prompt", "slow one")
    page.click("#send")
    expect(page.locator(ANSWER)).to_have_attribute("data-paints", re.compile(r"^[2-9]$|^\d\d+$"), timeout=30_000)
    # Away while it streams: the new chat shows nothing of it.
    page.get_by_role("button", name="New chat", exact=True).click()
    expect(page.locator(".msg")).to_have_count(0)
    expect(header_title(page)).to_have_text("New chat")
    # Back: it goes on painting where it is, and ends there.
    show_list(page, size)
    page.locator(".conv-open", has_text="slow one").click()
    expect(page.locator(ANSWER)).to_have_count(1)
    expect(page.locator(ANSWER)).to_have_attribute("data-state", "done", timeout=60_000)
    [user, answer] = stored_messages(page)
    assert (user["role"], user["content"]) == ("user", "slow one")
    assert answer["role"] == "assistant" and answer["content"].startswith("You said: slow one")
    assert page.inner_text(f"{ANSWER} .content").startswith("You said: slow one")
    assert len(store(page)["metas"]) == 1  # the empty new chat was never kept


#: The conversation store's open answered late (a busy phone; WebKit's storage process
#: starting under load): held until the test calls `__answerStore()`, on loads whose
#: URL asks for it. The database itself is real; only its answer is late.
LATE_OPEN = """(() => {
  if (!location.search.includes('late-store')) return;
  const open = IDBFactory.prototype.open;
  let answer;
  const gate = new Promise((ok) => { answer = ok; });
  window.__answerStore = () => answer();
  IDBFactory.prototype.open = function (name, ...rest) {
    const req = open.call(this, name, ...rest);
    if (name !== 'firsttoken-conversations') return req;
    const late = { get result() { return req.result; }, get error() { return req.error; } };
    req.onupgradeneeded = (e) => late.onupgradeneeded?.(e); // inside its transaction: not held
    req.onsuccess = (e) => gate.then(() => late.onsuccess?.(e));
    req.onerror = (e) => gate.then(() => late.onerror?.(e));
    req.onblocked = (e) => late.onblocked?.(e);
    return late;
  };
})();"""


def test_a_store_that_answers_late_is_taken_up_and_nothing_typed_meanwhile_is_lost(
    browser: Browser, console: Console, gateway_url: str
) -> None:
    for page in watched_page(browser, console, **PIXEL_7):
        page.add_init_script(LATE_OPEN)
        page.goto(gateway_url + "/")
        wait_ready(page)
        ask(page, "kept before")
        kept = store(page)["open"]

        # Late, with nothing typed: the page works in memory, says so in the list only
        # (a slow store is not a refusal), and shows the kept conversation once it answers.
        page.goto(gateway_url + "/?late-store")
        expect(page.locator("#conversations")).to_have_attribute("data-store", "memory", timeout=30_000)
        expect(page.locator(".msg")).to_have_count(0)
        page.evaluate("() => window.__answerStore()")
        expect(page.locator("#conversations")).to_have_attribute("data-store", "indexeddb")
        expect(page.locator(".msg")).to_have_count(2)
        expect(header_title(page)).to_have_text("kept before")
        expect(page.locator(".storage-notice")).to_be_empty()

        # Late, with a question asked meanwhile: it stays open, and is written once the
        # store answers, beside the kept one.
        page.goto(gateway_url + "/?late-store")
        expect(page.locator("#conversations")).to_have_attribute("data-store", "memory", timeout=30_000)
        wait_ready(page)
        ask(page, "typed meanwhile")
        page.evaluate("() => window.__answerStore()")
        expect(page.locator("#conversations")).to_have_attribute("data-store", "indexeddb")
        expect(header_title(page)).to_have_text("typed meanwhile")
        kept_now = store(page)
        assert kept in [m["id"] for m in kept_now["metas"]]
        assert [m["content"] for m in stored_messages(page)][0] == "typed meanwhile"
        page.goto(gateway_url + "/")
        wait_ready(page)
        show_list(page, "pixel7")
        expect(items(page)).to_have_count(2)  # listed once IndexedDB has answered
        assert sorted(titles(page)) == ["kept before", "typed meanwhile"]
