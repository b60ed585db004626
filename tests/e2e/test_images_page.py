"""Photos in the page, in real Chromium, with real image files made here: attached from
the picker (a paste and a drop too), shrunk in a worker to the size the model keeps,
counted, sent; the built-in model's `usage.prompt_tokens` equals the page's count; no
EXIF (GPS included) in what was sent; hostile files refused with a clear line and
nothing else lost; the images still there after a reload."""

from __future__ import annotations

import base64
import gzip
import io
import json
import re
from typing import Any

import pytest
from PIL import Image
from playwright.sync_api import Browser, Page, expect

from firsttoken.tokens import image_target_size
from harness.chromium import ANSWER, Console, steer, wait_ready
from tests.e2e.native_host import as_host, host_message, post
from harness.protocol_spy import PROTOCOL_SPY
from tests.e2e.test_shell import axe, frames, shoot
from tests.e2e.test_shell import open_page as open_shell
from tests.unit.image_files import png

pytestmark = pytest.mark.e2e

MODEL = "firsttoken-sim"
THUMBS = "#attachments li.attachment"
NOTE = "#attach-note"


def photo(width: int = 4032, height: int = 3024, *, gps: bool = True) -> bytes:
    """A phone-sized JPEG with detail (a gradient and stripes), whose EXIF holds a camera
    model and a GPS position, as a phone writes them."""
    image = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    pixels = image.load()
    for x in range(0, width, 64):
        for y in range(height):
            pixels[x, y] = (200, 30, 30)
    exif = Image.Exif()
    exif[0x0110] = "Pixel 7"  # Model
    if gps:
        # GPSInfo IFD: latitude 48°51'24" N, longitude 2°21'3" E (Paris).
        exif[0x8825] = {1: "N", 2: (48.0, 51.0, 24.0), 3: "E", 4: (2.0, 21.0, 3.0)}
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90, exif=exif)
    return out.getvalue()


def file(name: str, data: bytes, mime: str = "image/jpeg") -> dict[str, Any]:
    return {"name": name, "mimeType": mime, "buffer": data}


def open_page(page: Page, url: str) -> None:
    page.add_init_script(PROTOCOL_SPY)
    steer(page, "ttft_ms=0")
    page.goto(url + "/")
    wait_ready(page)


def attach(page: Page, *files: dict[str, Any]) -> None:
    page.set_input_files("#attach-input", files=list(files))


def settled_count(page: Page) -> int:
    count = page.locator("#count")
    expect(count).to_have_attribute("data-tokens", re.compile(r"^\d+$"))
    expect(count).not_to_have_attribute("data-pending", re.compile(".*"))
    return int(count.get_attribute("data-tokens") or "0")


def sent_bodies(page: Page) -> list[dict]:
    """The chat request bodies the page sends, read as the gateway reads them (the core
    gzips bodies of 1 KiB or more to its own gateway)."""
    bodies: list[dict] = []

    def read(r: Any) -> None:
        if r.url.endswith("/v1/chat/completions"):
            data = r.post_data_buffer or b""
            bodies.append(json.loads(gzip.decompress(data) if r.headers.get("content-encoding") == "gzip" else data))

    page.on("request", read)
    return bodies


def events_of(page: Page, request_id: str) -> dict[str, dict]:
    return {e["type"]: e for e in page.evaluate("() => window.__ft.events") if e.get("id") == request_id}


def image_of(url: str) -> Image.Image:
    head, _, data = url.partition(",")
    assert head == "data:image/jpeg;base64"
    return Image.open(io.BytesIO(base64.b64decode(data)))


def test_a_photo_is_shrunk_counted_sent_without_exif_and_kept(page: Page, gateway_url: str) -> None:
    bodies = sent_bodies(page)
    open_page(page, gateway_url)
    original = photo()
    assert Image.open(io.BytesIO(original)).getexif().get(0x8825)  # the test's photo has GPS
    attach(page, file("IMG_0001.jpg", original))
    expect(page.locator(THUMBS)).to_have_count(1)
    expect(page.locator("#attachments")).not_to_have_attribute("data-pending", re.compile(".*"))
    # Shrunk to exactly what the model keeps, as the core says (`image.size`): the
    # built-in model bills by gpt-4o's tiles, at high detail.
    want = image_target_size(MODEL, 4032, 3024, "high")
    assert want == (1024, 768)
    thumb = page.locator(THUMBS).first
    assert (int(thumb.get_attribute("data-width") or 0), int(thumb.get_attribute("data-height") or 0)) == want
    page.fill("#prompt", "What is in this photo?")
    counted = settled_count(page)
    # The live count sends the image's header only (js/images/header.js, headerOnly):
    # a few KB however large the image, and counted the same (below).
    counts = [m for m in page.evaluate("() => window.__ft.sent") if m["type"] == "tokens.count"]
    assert counts and max(m["length"] for m in counts) < 8_000, counts
    page.get_by_role("button", name="Send", exact=True).click()
    answer = page.locator(ANSWER).last
    expect(answer).to_have_attribute("data-state", "done", timeout=60_000)
    events = events_of(page, answer.get_attribute("data-id") or "")
    # The page's count is what the built-in model billed, which bills by the same rules.
    assert events["chat.prepared"]["prompt_tokens"] == counted
    assert events["chat.done"]["usage"]["prompt_tokens"] == counted
    # What went up: the shrunk JPEG, with no EXIF at all (GPS, camera model), and a
    # fraction of the original's bytes.
    [body] = bodies
    # Sent whole, though: the chat request carries the image.
    [send] = [m for m in page.evaluate("() => window.__ft.sent") if m["type"] == "chat.send"]
    assert send["length"] > len(json.dumps(body["messages"][-1]["content"][1])) - 100
    text, image = body["messages"][-1]["content"]
    assert text == {"type": "text", "text": "What is in this photo?"}
    assert image["image_url"]["detail"] == "high"
    sent = image_of(image["image_url"]["url"])
    assert sent.size == want and sent.format == "JPEG"
    assert not sent.getexif() and "exif" not in sent.info
    assert len(image["image_url"]["url"]) < len(original) / 3
    # The composer is empty again; the message shows its image, and so after a reload.
    expect(page.locator(THUMBS)).to_have_count(0)
    shown = page.locator('.msg[data-role="user"] .msg-images img')
    expect(shown).to_have_count(1)
    page.reload()
    wait_ready(page)
    expect(shown).to_have_count(1)
    assert shown.first.get_attribute("src") == image["image_url"]["url"]
    assert shown.first.evaluate("(img) => img.decode().then(() => [img.naturalWidth, img.naturalHeight])") == list(want)



def test_a_host_hands_over_a_photo_it_is_shrunk_into_the_composer_and_refusals_say_why(page: Page, gateway_url: str) -> None:
    """`composer.attach` (bridge/PROTOCOL.md, "Hosts"): an app's photo (a share sheet,
    its own camera) goes into the composer as if picked, shrunk and counted; the user
    sends it. What the page cannot take is refused to the host, with the reason, and
    the composer keeps what it had."""
    bodies = sent_bodies(page)
    as_host(page, "webkit")
    open_page(page, gateway_url)
    original = photo()
    post(page, {"type": "composer.attach", "id": "p1",
                "image": {"data": base64.b64encode(original).decode(), "type": "image/jpeg", "name": "IMG_0001.jpg"}})
    attached = host_message(page, "composer.attached", "p1")
    want = image_target_size(MODEL, 4032, 3024, "high")
    assert (attached["width"], attached["height"]) == want and 0 < attached["bytes"] < len(original) / 3
    expect(page.locator(THUMBS)).to_have_count(1)
    expect(page.locator(f"{THUMBS} img")).to_have_attribute("alt", f"IMG_0001.jpg, {want[0]}×{want[1]}")

    # Refused, each with its reason, to the host: a HEIC (the iOS host converts to JPEG
    # before handing a photo over: bridge/hosts/ios), bytes that are no image, a type
    # that is not an image's, and data that is not base64.
    heic = base64.b64encode(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic" + b"\0" * 200).decode()
    post(page, {"type": "composer.attach", "id": "p2", "image": {"data": heic, "type": "image/heic"}})
    assert host_message(page, "error", "p2")["error"]["code"] == "heic"
    expect(page.locator(NOTE)).to_have_attribute("data-code", "heic")
    post(page, {"type": "composer.attach", "id": "p3", "image": {"data": base64.b64encode(b"just some text, not an image at all, but long enough to read").decode(), "type": "image/png"}})
    assert host_message(page, "error", "p3")["error"]["code"] == "not_image"
    post(page, {"type": "composer.attach", "id": "p4", "image": {"data": "aGk=", "type": "text/plain"}})
    assert host_message(page, "error", "p4")["error"]["code"] == "invalid_message"
    post(page, {"type": "composer.attach", "id": "p5", "image": {"data": "not base64!", "type": "image/jpeg"}})
    assert host_message(page, "error", "p5")["error"]["code"] == "invalid_message"
    expect(page.locator(THUMBS)).to_have_count(1)

    # The user sends it: it goes up shrunk, billed as counted.
    page.fill("#prompt", "What does the app show?")
    counted = settled_count(page)
    page.get_by_role("button", name="Send", exact=True).click()
    answer = page.locator(ANSWER).last
    expect(answer).to_have_attribute("data-state", "done", timeout=60_000)
    assert events_of(page, answer.get_attribute("data-id") or "")["chat.done"]["usage"]["prompt_tokens"] == counted
    [body] = bodies
    sent = image_of(body["messages"][-1]["content"][1]["image_url"]["url"])
    assert sent.size == want and not sent.getexif()


HOSTILE = [
    ("notes.txt", b"just some text, not an image", "text/plain", "not_image"),
    ("fake.png", b"this is not really a PNG at all, only its name says so", "image/png", "not_image"),
    ("bomb.png", png(40_000, 40_000, pixels=False) + b"\0" * 64, "image/png", "too_large"),
    ("drawing.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "image/svg+xml", "svg"),
    ("sneaky.png", b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>' + b" " * 64, "", "svg"),
    ("IMG_0002.heic", b"\0\0\0\x18ftypheic\0\0\0\0mif1heic" + b"\0" * 200, "image/heic", "heic"),
    ("cut.png", png(64, 64)[:60], "image/png", "undecodable"),
]


@pytest.mark.parametrize("name, data, mime, code", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_file_is_refused_and_nothing_else_is_lost(page: Page, gateway_url: str, name: str, data: bytes,
                                                            mime: str, code: str) -> None:
    open_page(page, gateway_url)
    attach(page, file("ok.png", png(40, 30), "image/png"))
    expect(page.locator(THUMBS)).to_have_count(1)
    expect(page.locator("#attachments")).not_to_have_attribute("data-pending", re.compile(".*"))
    page.fill("#prompt", "draft kept")
    attach(page, file(name, data, mime))
    expect(page.locator(NOTE)).to_have_attribute("data-code", code)
    expect(page.locator(NOTE)).to_be_visible()
    expect(page.locator(THUMBS)).to_have_count(1)  # the good one stays
    expect(page.locator("#prompt")).to_have_value("draft kept")


def test_more_than_twenty_images_at_once_are_refused(page: Page, gateway_url: str) -> None:
    open_page(page, gateway_url)
    attach(page, *[file(f"{i}.png", png(8, 8), "image/png") for i in range(21)])
    expect(page.locator(NOTE)).to_contain_text("At most 20 images")
    expect(page.locator(THUMBS)).to_have_count(0)


def test_pasted_and_dropped_images_are_attached_and_removable(page: Page, gateway_url: str) -> None:
    open_page(page, gateway_url)
    data = base64.b64encode(png(30, 20)).decode()
    # A paste and a drop carry a DataTransfer of files, made here as the browser makes one.
    page.evaluate("""(b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const transfer = () => { const t = new DataTransfer(); t.items.add(new File([bytes], 'shot.png', { type: 'image/png' })); return t; };
      const prompt = document.getElementById('prompt');
      prompt.dispatchEvent(new ClipboardEvent('paste', { clipboardData: transfer(), bubbles: true, cancelable: true }));
      document.getElementById('composer').dispatchEvent(new DragEvent('drop', { dataTransfer: transfer(), bubbles: true, cancelable: true }));
    }""", data)
    expect(page.locator(f"{THUMBS}:not([data-pending])")).to_have_count(2)
    with_two = settled_count(page)
    page.get_by_role("button", name="Remove shot.png").first.click()
    expect(page.locator(THUMBS)).to_have_count(1)
    expect(page.locator("#count")).not_to_have_attribute("data-tokens", str(with_two))


def test_a_conversation_holds_a_bounded_weight_of_images(page: Page, gateway_url: str) -> None:
    open_page(page, gateway_url)
    # A conversation already holding 3.2 MB of images (twice a small JPEG with 1.2 MB
    # after its end, which decoders ignore), written where the page keeps conversations.
    small = io.BytesIO()
    Image.new("RGB", (8, 8), (0, 128, 255)).save(small, "JPEG")
    heavy = "data:image/jpeg;base64," + base64.b64encode(small.getvalue() + bytes(1_200_000)).decode()
    page.evaluate("""(url) => new Promise((ok, no) => {
      const r = indexedDB.open('firsttoken-conversations');
      r.onerror = () => no(r.error);
      r.onsuccess = () => {
        const db = r.result, tx = db.transaction(['conversations', 'messages', 'state'], 'readwrite');
        tx.objectStore('conversations').put({ id: 'heavy', title: 'Heavy', created: 1, updated: 2 });
        tx.objectStore('messages').put({ id: 'heavy', messages: [
          { role: 'user', content: 'look', images: [1, 2].map(() => ({ url, width: 8, height: 8, bytes: url.length, detail: 'high' })) },
          { role: 'assistant', content: 'A blue square.', state: 'done' }] });
        tx.objectStore('state').put('heavy', 'open');
        tx.oncomplete = () => { db.close(); ok(true); };
        tx.onerror = () => no(tx.error);
      };
    })""", heavy)
    page.reload()
    wait_ready(page)
    expect(page.locator('.msg[data-role="user"] .msg-images img')).to_have_count(2)
    page.fill("#prompt", "and this one?")
    attach(page, file("more.png", png(40, 30), "image/png"))
    expect(page.locator(NOTE)).to_have_attribute("data-code", "storage")
    expect(page.locator(NOTE)).to_contain_text("start a new chat")
    expect(page.locator(THUMBS)).to_have_count(0)
    expect(page.locator("#prompt")).to_have_value("and this one?")
    # In a new chat the same image is taken.
    page.locator("#new-chat").click()
    attach(page, file("more.png", png(40, 30), "image/png"))
    expect(page.locator(f"{THUMBS}:not([data-pending])")).to_have_count(1)


def receipt() -> bytes:
    """A photographed receipt, drawn: what a person most often sends a chat app."""
    from PIL import ImageDraw

    image = Image.new("RGB", (1200, 1600), (236, 232, 222))
    draw = ImageDraw.Draw(image)
    draw.rectangle((200, 120, 1000, 1480), fill=(252, 252, 248))
    lines = ["CAFE DU MARCHE", "12 rue Cler, Paris", "", "2 x Cafe creme      9.00", "1 x Croissant       2.40",
             "1 x Tartine         6.50", "", "TOTAL EUR          17.90", "", "Merci !"]
    for i, line in enumerate(lines):
        draw.text((260, 200 + i * 110), line, fill=(30, 30, 30), font_size=52)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=90)
    return out.getvalue()


@pytest.mark.parametrize(("device", "theme"), [("phone", "light"), ("desktop", "dark")])
def test_a_photo_in_the_conversation_passes_axe_and_is_photographed(browser: Browser, console: Console, gateway_url: str,
                                                                    device: str, theme: str) -> None:
    # The tests' own script goes in (axe-core): the page's CSP would refuse it, rightly.
    for page in open_shell(browser, console, device, theme, bypass_csp=True):
        steer(page, "ttft_ms=0,tps=2000,tokens=40")  # a short answer: the photo stays in view
        page.goto(gateway_url + "/")
        wait_ready(page)
        attach(page, file("receipt.jpg", receipt()))
        expect(page.locator(f"{THUMBS}:not([data-pending])")).to_have_count(1)
        page.fill("#prompt", "What does this receipt say?")
        settled_count(page)
        frames(page)
        found = {"attached": axe(page)}
        shoot(page, f"photo-attached-{device}-{theme}")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(page.locator(ANSWER).last).to_have_attribute("data-state", "done", timeout=60_000)
        expect(page.locator('.msg[data-role="user"] .msg-images img')).to_have_count(1)
        page.locator('.msg[data-role="user"] .msg-images img').evaluate("(img) => img.decode()")
        frames(page)
        found["sent"] = axe(page)
        shoot(page, f"photo-{device}-{theme}")
        assert all(not v for v in found.values()), json.dumps(found, indent=1)


def test_a_photo_sent_before_python_is_ready_goes_through_the_gateway(browser: Browser, console: Console,
                                                                       gateway_url: str) -> None:
    from harness.chromium import watched_page
    from harness.chromium import WASM, Held

    # A first visit (no service worker, which would answer the runtime past the route),
    # with Python's runtime held back: the photo is shrunk to the fallback size, and the
    # prompt goes early, through the gateway (js/page/early-send.js), which prepares it.
    for page in watched_page(browser, console, fresh=True):
        steer(page, "ttft_ms=0,tps=200")
        runtime = Held(page, WASM)
        bodies = sent_bodies(page)
        page.goto(gateway_url + "/")
        attach(page, file("IMG_0001.jpg", photo(3000, 2000)))
        thumb = page.locator(f"{THUMBS}:not([data-pending])")
        expect(thumb).to_have_count(1)
        assert (thumb.get_attribute("data-width"), thumb.get_attribute("data-height")) == ("2048", "1365")
        page.fill("#prompt", "What is in this photo?")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(page.locator(ANSWER)).to_have_attribute("data-state", "done", timeout=60_000)
        assert page.get_attribute("html", "data-python") == "loading" and runtime.held
        [body] = bodies
        sent = image_of(body["messages"][-1]["content"][1]["image_url"]["url"])
        assert sent.size == (2048, 1365) and not sent.getexif()
        runtime.release()
        wait_ready(page)
        expect(page.locator('.msg[data-role="user"] .msg-images img')).to_have_count(1)
