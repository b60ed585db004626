"""The page's image logic on Node: js/images/header.js reads every file
py/firsttoken/image_header.py reads, to the same dimensions or the same refusal (the
page refuses a decompression bomb before decoding, the gateway before billing: one
rule); what a file is refused for before a byte is read; a user message's images as
content parts (js/page/conversation.js); exports that keep them (js/page/export.js);
and which stored URLs are ever shown. The page itself: tests/e2e/test_images_page.py."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from firsttoken.errors import ImageTooLarge, InvalidImage
from firsttoken.image_header import read_data_url_header, read_image_header
from tests.unit import image_files as f

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

FILES = {
    "png": f.png(640, 480),
    "png-header": f.png(3000, 2000, pixels=False),
    "gif": f.gif(7, 5),
    "jpeg": f.jpeg(4032, 3024),
    "jpeg-exif": f.jpeg(1600, 1200, app_bytes=200_000),
    "jpeg-sof2": f.jpeg(800, 600, sof=0xC2),
    "webp-lossy": f.webp_vp8(1024, 768),
    "webp-lossless": f.webp_vp8l(16383, 1),
    "webp-extended": f.webp_vp8x(5000, 4000),
    "bomb-png": f.png(40_000, 40_000, pixels=False),
    "bomb-gif": f.gif(65535, 65535, pixels=False),
    "bomb-webp": f.webp_vp8x(16_777_216, 16_777_216),
    "zero-png": f.png(0, 10, pixels=False),
    "not-image": b"hello, this is text and not any image at all",
    "jpeg-eoi": b"\xff\xd8\xff\xd9" + b"\0" * 20,
    "jpeg-sos": b"\xff\xd8\xff\xda\x00\x08" + b"\0" * 20,
    "jpeg-dnl": f.jpeg(640, 0),
    "png-no-ihdr": f.png(4, 4)[:12] + b"IDAT" + f.png(4, 4)[16:],
    "webp-odd": b"RIFF\0\0\0\0WEBPABCD" + b"\0" * 30,
    # As long as a sent image: the header, then 100 KB of what follows it.
    "jpeg-long": f.jpeg(1024, 768) + b"\0" * 100_000,
    "png-long": f.png(640, 480) + b"\0" * 100_000,
}


def python_reads(data: bytes | str) -> dict:
    """What the core reads of an image's bytes, or of a data URL (str)."""
    try:
        h = read_data_url_header(data) if isinstance(data, str) else read_image_header(data)
    except ImageTooLarge:
        return {"code": "too_large"}
    except InvalidImage:
        return {"code": "invalid"}
    return {"format": h.format, "width": h.width, "height": h.height}


SCRIPT = """
import { headerOnly, readImageHeader, ImageError } from './js/images/header.js';
import { refuseFile, fitSide, CoreSizes, MAX_FILE_BYTES } from './js/images/shrink.js';
import { conversation, withImages } from './js/page/conversation.js';
import { toJson, toMarkdown } from './js/page/export.js';
import { isImageUrl, heldBytes } from './js/page/attachments.js';
import { preparedText } from './js/page/status-text.js';
import { readFileSync } from 'node:fs';
const input = JSON.parse(readFileSync(0, 'utf8'));
const out = { headers: {} };
for (const [name, b64] of Object.entries(input.files)) {
  try {
    const h = readImageHeader(Uint8Array.from(Buffer.from(b64, 'base64')));
    out.headers[name] = h === null ? { code: 'more' } : h;
  } catch (e) {
    if (!(e instanceof ImageError)) throw e;
    out.headers[name] = { code: e.code === 'too_large' ? 'too_large' : 'invalid', message: e.message };
  }
}
out.headerOnly = Object.fromEntries(Object.entries(input.files).map(([name, b64]) => [name, headerOnly(`data:image/x;base64,${b64}`)]));
out.cut = readImageHeader(Uint8Array.from(Buffer.from(input.files['jpeg-exif'], 'base64')).subarray(0, 65536));
out.refused = [
  { size: MAX_FILE_BYTES + 1, type: 'image/jpeg', name: 'huge.jpg' }, { size: 10, type: 'application/pdf', name: 'a.pdf' },
  { size: 10, type: 'image/svg+xml', name: 'a.svg' }, { size: 10, type: '', name: 'pasted' }, { size: MAX_FILE_BYTES, type: 'image/heic', name: 'b' },
].map((file) => refuseFile(file)?.code ?? null);
out.fit = [fitSide(4032, 3024), fitSide(100, 50), fitSide(3, 9000)];
const url = 'data:image/jpeg;base64,/9j/AAAA';
const image = { url, width: 1024, height: 768, bytes: 9, detail: 'high' };
const entries = [
  { role: 'user', content: 'What is this?', images: [image] },
  { role: 'assistant', content: 'A receipt.', state: 'done' },
  { role: 'user', content: '', images: [image, { ...image, detail: undefined }] },
];
out.messages = conversation('Be brief.', entries);
out.parts = withImages('', [image]);
const c = { id: 'c1', title: 'Receipt', created: 0, updated: 0, entries };
out.markdown = toMarkdown(c);
out.json = JSON.parse(toJson(c)).messages;
out.urls = [url, 'data:image/png;base64,iVBO', 'https://tracker.example/p.png', 'javascript:alert(1)',
  'data:image/svg+xml;base64,PHN2Zz4=', 'data:text/html;base64,PGI+', null].map(isImageUrl);
out.held = heldBytes(entries);
out.fitLine = [preparedText({ dropped: [1, 2], truncated: [{ index: 3, tokens_cut: 765 }], images_dropped: 3 }).fit,
  preparedText({ dropped: [], truncated: [], images_dropped: 1 }).fit, preparedText({ dropped: [], truncated: [] }).fit];
// The size asked of the core: not before Python is ready (the fallback, nothing queued);
// then `image.size` with the model, answered by `image.sized`; a wrong answer is not used.
const sent = [];
const link = { ready: false, send: (m) => sent.push(m) };
const sizes = new CoreSizes(link, () => 'gpt-4o');
out.before = await sizes.size(4032, 3024, 'high');
link.ready = true;
const asked = sizes.size(4032, 3024, 'high');
sizes.answer({ type: 'image.sized', id: sent[0].id, width: 1024, height: 768, tokens: 765, exact: true });
out.after = await asked;
const wrong = sizes.size(400, 300, 'high');
sizes.answer({ type: 'image.sized', id: sent[1].id, width: 800, height: 600, tokens: 1, exact: true });
out.wrong = await wrong;
out.sent = sent;
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def node() -> dict:
    files = {name: base64.b64encode(data).decode() for name, data in FILES.items()}
    done = subprocess.run(["node", "--no-warnings", "--input-type=module", "-e", SCRIPT], input=json.dumps({"files": files}),
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_page_reads_each_header_as_the_core_does(node: dict, name: str) -> None:
    js = {k: v for k, v in node["headers"][name].items() if k != "message"}
    assert js == python_reads(FILES[name])


def test_a_header_cut_short_asks_for_more(node: dict) -> None:
    # 200 KB of EXIF before the frame header: from the first 64 KB the reader asks for
    # more (the worker then reads more), as the core's does.
    assert node["cut"] is None
    with pytest.raises(InvalidImage, match="ends before"):
        read_image_header(FILES["jpeg-exif"][:65536])


def test_what_is_refused_before_reading(node: dict) -> None:
    assert node["refused"] == ["too_large", "not_image", "svg", None, None]


def test_fallback_size_fits_2048_and_never_grows(node: dict) -> None:
    assert node["fit"] == [{"width": 2048, "height": 1536}, {"width": 100, "height": 50}, {"width": 1, "height": 2048}]


def test_images_go_as_content_parts_after_the_text(node: dict) -> None:
    url = "data:image/jpeg;base64,/9j/AAAA"
    part = {"type": "image_url", "image_url": {"url": url, "detail": "high"}}
    assert node["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, part]},
        {"role": "assistant", "content": "A receipt."},
        # An image-only message is a turn of its own; no text part.
        {"role": "user", "content": [part, {"type": "image_url", "image_url": {"url": url}}]},
    ]
    assert node["parts"] == [part]


def test_exports_keep_the_images(node: dict) -> None:
    assert "![Image, 1024×768](data:image/jpeg;base64,/9j/AAAA)\n\nWhat is this?" in node["markdown"]
    assert node["json"][0]["images"][0]["url"] == "data:image/jpeg;base64,/9j/AAAA"


def test_only_the_pages_own_image_urls_are_ever_shown(node: dict) -> None:
    assert node["urls"] == [True, True, False, False, False, False, False]
    assert node["held"] == 3 * len("data:image/jpeg;base64,/9j/AAAA")


def test_the_size_is_asked_of_the_core_once_python_is_ready(node: dict) -> None:
    assert node["before"] == {"width": 2048, "height": 1536}
    assert node["after"] == {"width": 1024, "height": 768}
    assert node["wrong"] == {"width": 400, "height": 300}  # larger than the image: not used
    assert node["sent"][0] == {"type": "image.size", "id": node["sent"][0]["id"], "model": "gpt-4o",
                               "width": 4032, "height": 3024, "detail": "high"}


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_live_count_sends_a_header_the_core_reads_as_the_whole(node: dict, name: str) -> None:
    whole = "data:image/x;base64," + base64.b64encode(FILES[name]).decode()
    cut = node["headerOnly"][name]
    assert whole.startswith(cut)
    assert python_reads(cut) == python_reads(whole)


def test_the_header_of_a_large_image_is_a_few_kilobytes(node: dict) -> None:
    # A JPEG's and a PNG's headers are in their first bytes; one after 200 KB
    # of EXIF is past every cut, and goes whole (the core reads it there).
    assert len(node["headerOnly"]["jpeg-long"]) < 4200 < len(FILES["jpeg-long"])
    assert len(node["headerOnly"]["png-long"]) < 4200 < len(FILES["png-long"])
    assert node["headerOnly"]["jpeg-exif"] == "data:image/x;base64," + base64.b64encode(FILES["jpeg-exif"]).decode()


def test_the_fit_line_says_how_many_photos_were_not_sent(node: dict) -> None:
    assert node["fitLine"] == [
        "To fit the model's budget: 2 earlier messages left out, 1 shortened, 3 earlier photos not sent.",
        "To fit the model's budget: 1 earlier photo not sent.",
        None,
    ]
