"""The image header reader: real files made by the tests, whole, byte by byte and cut
short; corrupt and hostile headers; data URLs read without decoding all of them."""

from __future__ import annotations

import base64
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firsttoken.errors import ImageTooLarge, InvalidImage, LocalProtocolError
from firsttoken.image_header import (
    MAX_IMAGE_PIXELS,
    ImageHeader,
    read_base64_header,
    read_data_url_header,
    read_image_header,
)
from tests.unit.image_files import data_url, gif, jpeg, png, webp_vp8, webp_vp8l, webp_vp8x

FILES = {
    "png": lambda w, h: png(w, h),
    "gif": gif,
    "jpeg": jpeg,
    "webp": webp_vp8l,
}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (png(3, 2), ImageHeader("png", 3, 2)),
        (gif(3, 2), ImageHeader("gif", 3, 2)),
        (jpeg(640, 480), ImageHeader("jpeg", 640, 480)),
        (jpeg(5, 7, sof=0xC2), ImageHeader("jpeg", 5, 7)),  # progressive
        (webp_vp8(300, 200), ImageHeader("webp", 300, 200)),
        (webp_vp8l(16384, 1), ImageHeader("webp", 16384, 1)),
        (webp_vp8x(301, 203), ImageHeader("webp", 301, 203)),
    ],
)
def test_each_format_gives_its_size(data: bytes, expected: ImageHeader) -> None:
    assert read_image_header(data) == expected
    assert read_image_header(data + b"trailing bytes") == expected
    assert expected.media_type == f"image/{expected.format}"


def test_files_made_by_a_real_encoder_agree_with_it() -> None:
    pil = pytest.importorskip("PIL.Image")
    for fmt, options in (("PNG", {}), ("GIF", {}), ("JPEG", {}), ("JPEG", {"progressive": True}),
                         ("JPEG", {"exif": b"Exif\x00\x00" + b"\x00" * 2000}), ("WEBP", {"lossless": True}),
                         ("WEBP", {"quality": 40})):
        out = io.BytesIO()
        pil.new("RGB", (301, 203)).save(out, fmt, **options)
        header = read_image_header(out.getvalue())
        assert (header.format, header.width, header.height) == (fmt.lower(), 301, 203)
    # And our own files are real images, not just headers that read.
    for data, size in ((png(3, 2), (3, 2)), (gif(5, 4), (5, 4)), (jpeg(64, 48), (64, 48))):
        image = pil.open(io.BytesIO(data))
        assert image.size == size


@pytest.mark.parametrize("data", [png(40, 30), gif(40, 30), jpeg(40, 30, app_bytes=70_000), webp_vp8(40, 30),
                                  webp_vp8l(40, 30), webp_vp8x(40, 30)])
def test_every_prefix_short_of_the_dimensions_is_truncated_never_wrong(data: bytes) -> None:
    expected = read_image_header(data)
    needed = next(n for n in range(len(data) + 1) if _reads(data[:n]))
    for n in range(needed):
        with pytest.raises(InvalidImage) as info:
            read_image_header(data[:n])
        assert "ends before its dimensions" in info.value.message
    assert read_image_header(data[:needed]) == expected


def _reads(data: bytes) -> bool:
    try:
        read_image_header(data)
    except InvalidImage:
        return False
    return True


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "ends before"),
        (b"GIF88a" + b"\x00" * 20, "not a PNG"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "not a PNG"),
        (b"%PDF-1.7" + b"\x00" * 40, "not a PNG"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt " + b"\x00" * 30, "not a PNG"),
        (png(3, 2).replace(b"IHDR", b"IDAT"), "IHDR"),
        (png(3, 2, pixels=False)[:8] + b"\x00\x00\x00\x0dIHDR" + b"\x80\x00\x00\x00" + b"\x00\x00\x00\x01", "2^31-1"),
        (png(0, 5), "0×5"),
        (gif(1, 1)[:6] + b"\x00\x00\x05\x00" + gif(1, 1)[10:], "0×5"),
        (b"\xff\xd8\x00\x00" + b"\x00" * 20, "no marker"),
        (b"\xff\xd8\xff\x00" + b"\x00" * 20, "stuffed"),
        (b"\xff\xd8\xff\xe0\x00\x01" + b"\x00" * 20, "length 1"),
        (b"\xff\xd8\xff\xd9", "EOI"),
        (b"\xff\xd8\xff\xda\x00\x08" + b"\x00" * 20, "scan starts"),
        (b"\xff\xd8\xff\xc0\x00\x05\x08\x00\x00\x00", "too short"),
        (jpeg(640, 0), "DNL"),
        (webp_vp8(30, 20)[:20] + b"\x11" + webp_vp8(30, 20)[21:], "key frame"),
        (webp_vp8l(30, 20)[:20] + b"\x00" + webp_vp8l(30, 20)[21:], "signature"),
        (webp_vp8l(30, 20).replace(b"VP8L", b"ALPH"), "first chunk"),
    ],
)
def test_corrupt_headers_are_refused_with_a_typed_error(data: bytes, says: str) -> None:
    with pytest.raises(InvalidImage) as info:
        read_image_header(data)
    assert says in info.value.message
    assert isinstance(info.value, LocalProtocolError) and info.value.code in ("invalid_image", "image_too_large")
    assert info.value.to_dict()["code"] == info.value.code


@pytest.mark.parametrize(
    "data",
    [png(2**31 - 1, 2**31 - 1, pixels=False), png(100_000, 100_000, pixels=False), gif(65535, 65535, pixels=False),
     jpeg(65535, 65535), webp_vp8x(2**24, 2**24), webp_vp8l(16384, 16384)],
)
def test_a_decompression_bomb_is_refused_from_its_header(data: bytes) -> None:
    with pytest.raises(ImageTooLarge) as info:
        read_image_header(data)
    error = info.value
    assert error.width * error.height > MAX_IMAGE_PIXELS == error.limit
    assert error.to_dict() | {} == {"code": "image_too_large", "message": error.message, "partial": "",
                                   "format": error.format, "width": error.width, "height": error.height,
                                   "limit": MAX_IMAGE_PIXELS}
    assert len(data) < 100  # a few bytes declare it: it was never decoded


def test_the_limit_is_by_area_and_can_be_set() -> None:
    assert read_image_header(png(8064, 6048, pixels=False)).width == 8064  # a 48 MP phone photo
    assert read_image_header(png(8000, 8000, pixels=False)).height == 8000
    with pytest.raises(ImageTooLarge):
        read_image_header(png(8000, 8001, pixels=False))
    with pytest.raises(ImageTooLarge):
        read_image_header(png(100, 100), max_pixels=9_999)


def test_data_urls_are_read_from_a_prefix_of_their_payload() -> None:
    url = data_url(png(4, 3))
    assert read_data_url_header(url) == ImageHeader("png", 4, 3)
    assert read_data_url_header("DATA:image/png;BASE64," + url.partition(",")[2]) == ImageHeader("png", 4, 3)
    assert read_data_url_header("https://example.com/cat.png") is None
    # Line breaks in the base64, as some encoders write it: skipped.
    b64 = url.partition(",")[2]
    assert read_data_url_header("data:image/png;base64," + "\n".join(b64[i : i + 4] for i in range(0, len(b64), 4)))
    # Percent-encoded, not base64 (RFC 2397).
    raw = gif(7, 9)
    assert read_data_url_header("data:image/gif," + "".join(f"%{b:02X}" for b in raw)) == ImageHeader("gif", 7, 9)
    # A JPEG whose frame header sits behind 200 KB of APPn segments is still found.
    assert read_data_url_header(data_url(jpeg(640, 480, app_bytes=200_000), "image/jpeg")).width == 640
    # The whole payload is decoded only if the prefixes fall short: garbage after the
    # header is never looked at.
    assert read_data_url_header(url + "!!!not base64!!!" * 100_000) == ImageHeader("png", 4, 3)
    assert read_base64_header(base64.b64encode(webp_vp8x(9, 8)).decode()) == ImageHeader("webp", 9, 8)


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("data:image/png;base64", "no ','"),
        ("data:image/png;base64,", "ends before"),
        ("data:image/png;base64,iVBO", "ends before"),
        ("data:image/png;base64,AAAA", "not a PNG"),
        ("data:image/png;base64,iVBORw0KG", "not valid base64"),
        ("data:text/plain,hello%20world", "not a PNG"),
    ],
)
def test_malformed_data_urls_are_refused(url: str, says: str) -> None:
    with pytest.raises(InvalidImage) as info:
        read_data_url_header(url)
    assert says in info.value.message


@given(st.binary(max_size=64))
def test_any_bytes_give_a_header_or_a_typed_error(data: bytes) -> None:
    for candidate in (data, b"\x89PNG\r\n\x1a\n" + data, b"\xff\xd8" + data, b"GIF89a" + data,
                      b"RIFF\x00\x00\x00\x00WEBP" + data):
        try:
            header = read_image_header(candidate)
        except InvalidImage:
            continue
        assert 1 <= header.width * header.height <= MAX_IMAGE_PIXELS


@given(st.sampled_from(sorted(FILES)), st.integers(1, 4000), st.integers(1, 4000))
def test_sizes_round_trip_through_every_format(fmt: str, width: int, height: int) -> None:
    if fmt in ("png", "gif"):
        width, height = min(width, 64), min(height, 64)  # whole files: keep them small
    assert read_image_header(FILES[fmt](width, height)) == ImageHeader(fmt, width, height)
