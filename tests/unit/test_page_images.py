"""The page's image logic against the core's: js/images/header.js reads every file
py/firsttoken/image_header.py reads, to the same dimensions or the same refusal (the
page refuses a decompression bomb before decoding, the gateway before billing: one
rule). The JS side is plain JS under `node --test`, tests/js/cross/page-images.test.mjs
(with what is refused before a byte is read, images as content parts, exports and the
URLs ever shown); this test computes the core's side on the same run and hands it over
(harness/node.py). The page itself: tests/e2e/test_images_page.py."""


from __future__ import annotations

import base64
import shutil
from pathlib import Path

import pytest

from firsttoken.errors import ImageTooLarge, InvalidImage
from firsttoken.image_header import read_data_url_header, read_image_header
from harness.node import node_test
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


DATA_URL = "data:image/x;base64,"
# The base64 lengths at which the core reads a data URL cut short, for the page's cuts
# (js/images/header.js HEADER_CUTS: 4096 and 90112 characters) and any it may take
# later: the JS test fails on a cut the core was not asked about.
PREFIX_STEP, PREFIX_MAX = 4096, 139_264


def core_side() -> dict:
    """The files, and what the core reads of each: its bytes, its data URL, and its data
    URL cut at each multiple of PREFIX_STEP."""
    files = {name: base64.b64encode(data).decode() for name, data in FILES.items()}
    reads: dict[str, dict] = {}
    prefixes: dict[str, dict[str, dict]] = {}
    for name, data in FILES.items():
        reads[name] = python_reads(data)
        reads[f"url:{name}"] = python_reads(DATA_URL + files[name])
        prefixes[name] = {str(n): python_reads(DATA_URL + files[name][:n])
                          for n in range(PREFIX_STEP, min(len(files[name]), PREFIX_MAX), PREFIX_STEP)}
    return {"files": files, "reads": reads, "prefixReads": prefixes, "dataUrlPrefix": DATA_URL}


def test_the_core_also_asks_for_more_of_a_header_cut_short() -> None:
    # 200 KB of EXIF before the frame header: the first 64 KB end before it, for the core
    # as for the page (whose reader asks for more: the JS test).
    with pytest.raises(InvalidImage, match="ends before"):
        read_image_header(FILES["jpeg-exif"][:65536])


def test_the_page_reads_images_as_the_core_does(tmp_path: Path) -> None:
    node_test(ROOT / "tests" / "js" / "cross" / "page-images.test.mjs", core_side(), tmp_path)
