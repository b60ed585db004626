"""An image's format and pixel size, read from its first bytes: never decoded.

What an image costs a model depends on its pixel dimensions (`firsttoken.tokens.images`),
and what a model may be sent depends on them too (a decompression bomb: a few KB that
declare gigapixels). Both are read here from the header alone, sans-IO: the caller hands
bytes (the start of a file, or of a data URL's payload) and gets an `ImageHeader`, or
`InvalidImage` / `ImageTooLarge`. The page reads the header before it decodes anything
in its worker; the gateway reads it to bill and to refuse. One reader, so that both
agree on every image.

The formats are the four the providers take (OpenAI's vision guide, "Image input
requirements": PNG, JPEG, WEBP, non-animated GIF; Anthropic's vision guide: image/jpeg,
image/png, image/gif, image/webp):

* PNG (W3C PNG Specification, Third Edition): the 8-byte signature (§5.2), then the
  first chunk, which must be IHDR (§5.6), its width and height 4-byte big-endian
  integers, zero invalid, at most 2^31-1 (§11.2.1).
* JPEG (ITU-T T.81 Annex B): SOI (FFD8), then marker segments, each FF + a code and,
  but for the standalone markers (TEM, RST0-7, SOI, EOI: B.1.1.3), a 2-byte length that
  counts itself; any number of FF fill bytes may come before a marker (B.1.1.2). The
  frame header SOFn (C0-CF but C4 DHT, C8 JPG, CC DAC) holds P, then Y (lines), then X
  (samples per line) (B.2.2). Y = 0 defers the height to a DNL segment after the first
  scan (B.2.5): refused here, as no browser or provider path we know makes one.
  APPn segments (EXIF, ICC profiles) may come first and be large, so the reader walks
  segment by segment and asks for more bytes when the frame header lies beyond them.
* GIF (GIF89a specification, §18 Logical Screen Descriptor): "GIF87a" or "GIF89a",
  then the logical screen width and height, 2-byte little-endian.
* WebP (RFC 9649): a RIFF header ("RIFF", size, "WEBP", §2.4), then the first chunk:
  "VP8 " (lossy, §2.5: the VP8 key frame header of RFC 6386 §9.1, start code 9D 01 2A,
  then 14-bit width and height, little-endian, the top 2 bits a scale), "VP8L"
  (lossless, §2.6 and §3.2: signature 0x2F, then 14-bit width-1 and height-1) or "VP8X"
  (extended, §2.7: 24-bit canvas width-1 and height-1, little-endian, at offsets 4 and 7
  of the chunk).

EXIF orientation is not applied: the dimensions are the stored ones. Every provider rule
we count by is symmetric in width and height, so a rotation changes no count.
"""

from __future__ import annotations

import binascii
import re
import struct
import urllib.parse
from dataclasses import dataclass

from .errors import ImageTooLarge, InvalidImage

__all__ = ["MAX_IMAGE_PIXELS", "ImageHeader", "read_base64_header", "read_data_url_header", "read_image_header"]

#: The most pixels an image may declare: 8000 × 8000, the largest image Anthropic takes
#: (vision guide, "General limits": "The maximal dimensions per image are 8000x8000
#: px"); OpenAI documents bytes (20 MB an image) but no pixel limit. Decoded as RGBA
#: that is 256 MB, more than a phone's WebView can spare, so anything larger is refused
#: from its header rather than decoded. Counted by area: a 48 MP phone photo
#: (8064 × 6048) passes.
MAX_IMAGE_PIXELS = 8000 * 8000

# Data URL payload read before the whole: most headers sit in the first few KB; a JPEG
# behind large APPn segments (EXIF thumbnails, ICC profiles) needs more. Each step
# decodes only a prefix; the whole payload is decoded only if all of them fall short.
_PREFIX_STEPS = (4096, 65536, 1 << 20)

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# T.81 Table B.1: SOF0-SOF15 but DHT (C4), JPG (C8) and DAC (CC).
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# T.81 B.1.1.3: markers without a length: TEM, RST0-RST7, SOI, EOI.
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xDA)})
_JPEG_SOS = 0xDA
# PNG §11.2.1: "The maximum for each is 2^31-1".
_PNG_MAX_SIDE = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ImageHeader:
    """What an image's header says: its `format` ("png", "jpeg", "gif", "webp") and its
    stored `width` and `height` in pixels."""

    format: str
    width: int
    height: int

    @property
    def media_type(self) -> str:
        """The MIME type of `format` (`image/png`, …)."""
        return f"image/{self.format}"


def read_image_header(data: bytes, *, max_pixels: int = MAX_IMAGE_PIXELS) -> ImageHeader:
    """The header of the image whose first bytes are `data` (the whole file, or enough of
    it). Raises `InvalidImage` for bytes that are not a PNG, JPEG, WebP or GIF, are cut
    before the dimensions, or are corrupt; `ImageTooLarge` for an image declaring more
    than `max_pixels`."""
    header = _parse(bytes(data))
    if header is None:
        raise InvalidImage(f"The {_sniff(data) or 'image'} data ends before its dimensions.", format=_sniff(data))
    return _checked(header, max_pixels)


def read_data_url_header(url: str, *, max_pixels: int = MAX_IMAGE_PIXELS) -> ImageHeader | None:
    """The header of the image in a `data:` URL (RFC 2397, base64 or percent-encoded), or
    None for any other URL (an `https:` image is fetched by the provider: its size is not
    ours to read). Only as much of the payload is decoded as the header needs. Raises as
    `read_image_header` does, and `InvalidImage` for a data URL that is malformed."""
    if url[:5].lower() != "data:":
        return None
    meta, comma, payload = url[5:].partition(",")
    if not comma:
        raise InvalidImage("The data URL has no ',' before its data.")
    return _read_payload(payload, meta.lower().rstrip().endswith(";base64"), max_pixels)


def read_base64_header(payload: str, *, max_pixels: int = MAX_IMAGE_PIXELS) -> ImageHeader:
    """The header of the image whose base64 text is `payload` (Anthropic's `source.data`),
    decoding only as much as the header needs. Raises as `read_image_header` does."""
    return _read_payload(payload, True, max_pixels)


def _read_payload(payload: str, is_base64: bool, max_pixels: int) -> ImageHeader:
    data = b""
    for step in (*_PREFIX_STEPS, None):
        whole = step is None or step >= len(payload)
        chunk = payload if whole else payload[:step]
        data = _decode_base64(chunk, whole) if is_base64 else urllib.parse.unquote_to_bytes(chunk)
        header = _parse(data)
        if header is not None:
            return _checked(header, max_pixels)
        if whole:
            break
    raise InvalidImage(f"The {_sniff(data) or 'image'} data ends before its dimensions.", format=_sniff(data))


def _decode_base64(text: str, whole: bool) -> bytes:
    if not whole:
        # A prefix: characters outside the alphabet (line breaks some encoders add) are
        # skipped, as browsers' forgiving-base64 does, and it is cut to whole
        # 4-character groups.
        text = _NOT_BASE64.sub("", text)
        text = text[: len(text) - len(text) % 4]
    try:
        return binascii.a2b_base64(text)
    except (binascii.Error, ValueError):
        raise InvalidImage("The data URL's payload is not valid base64.") from None


_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/=]")


def _checked(header: ImageHeader, max_pixels: int) -> ImageHeader:
    if header.width < 1 or header.height < 1:
        raise InvalidImage(f"The {header.format} header declares a {header.width}×{header.height} image.",
                           format=header.format)
    if header.width * header.height > max_pixels:
        raise ImageTooLarge(
            f"The image declares {header.width}×{header.height} pixels, more than the {max_pixels:,} allowed.",
            width=header.width, height=header.height, limit=max_pixels, format=header.format,
        )
    return header


def _sniff(data: bytes) -> str | None:
    """The format `data` starts as, if any (enough bytes to say: a few)."""
    if data.startswith(_PNG_SIGNATURE):
        return "png"
    if data.startswith(b"\xff\xd8"):
        return "jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def _parse(data: bytes) -> ImageHeader | None:
    """The header, or None when `data` ends before it (more bytes may complete it)."""
    kind = _sniff(data)
    if kind is None:
        # Too short to tell is "need more"; a start that matches no format is final.
        prefixes = (_PNG_SIGNATURE, b"\xff\xd8", b"GIF87a", b"GIF89a", b"RIFF")
        if len(data) < 12 and (not data or any(p.startswith(data[: len(p)]) for p in prefixes)):
            return None
        raise InvalidImage("The data is not a PNG, JPEG, WebP or GIF image.")
    return _PARSERS[kind](data)


def _png(data: bytes) -> ImageHeader | None:
    if len(data) < 24:
        return None
    length, kind, width, height = struct.unpack(">I4sII", data[8:24])
    if kind != b"IHDR" or length != 13:
        raise InvalidImage("The PNG does not start with its IHDR chunk.", format="png")
    if width > _PNG_MAX_SIDE or height > _PNG_MAX_SIDE:
        raise InvalidImage(f"The PNG declares a {width}×{height} image (at most 2^31-1 a side).", format="png")
    return ImageHeader("png", width, height)


def _gif(data: bytes) -> ImageHeader | None:
    if len(data) < 10:
        return None
    width, height = struct.unpack("<HH", data[6:10])
    return ImageHeader("gif", width, height)


def _jpeg(data: bytes) -> ImageHeader | None:
    i = 2
    n = len(data)
    while True:
        # A marker: FF, any number of FF fill bytes, then a code that is not 00 or FF.
        if i >= n:
            return None
        if data[i] != 0xFF:
            raise InvalidImage(f"The JPEG has no marker at byte {i}.", format="jpeg")
        while i < n and data[i] == 0xFF:
            i += 1
        if i >= n:
            return None
        code = data[i]
        i += 1
        if code == 0x00:
            raise InvalidImage(f"The JPEG has a stuffed byte where a marker belongs (byte {i - 1}).", format="jpeg")
        if code in _JPEG_STANDALONE:
            if code == 0xD9:
                raise InvalidImage("The JPEG ends (EOI) before its frame header.", format="jpeg")
            continue
        if i + 2 > n:
            return None
        (length,) = struct.unpack(">H", data[i : i + 2])
        if length < 2:
            raise InvalidImage(f"The JPEG has a segment of length {length} at byte {i}.", format="jpeg")
        if code in _JPEG_SOF:
            if length < 8:
                raise InvalidImage("The JPEG frame header is too short.", format="jpeg")
            if i + 7 > n:
                return None
            height, width = struct.unpack(">HH", data[i + 3 : i + 7])
            if height == 0:
                raise InvalidImage("The JPEG defers its height to a DNL segment, which is not supported.",
                                   format="jpeg")
            return ImageHeader("jpeg", width, height)
        if code == _JPEG_SOS:
            raise InvalidImage("The JPEG's scan starts before its frame header.", format="jpeg")
        i += length


def _webp(data: bytes) -> ImageHeader | None:
    if len(data) < 30:
        return None
    chunk = data[12:16]
    body = data[20:]
    if chunk == b"VP8 ":
        # RFC 6386 §9.1: a 3-byte frame tag (bit 0 clear: a key frame), the start code.
        if body[0] & 1 or body[3:6] != b"\x9d\x01\x2a":
            raise InvalidImage("The WebP (VP8) does not start with a key frame.", format="webp")
        width, height = struct.unpack("<HH", body[6:10])
        return ImageHeader("webp", width & 0x3FFF, height & 0x3FFF)
    if chunk == b"VP8L":
        if body[0] != 0x2F:
            raise InvalidImage("The WebP (VP8L) lacks its signature byte.", format="webp")
        (bits,) = struct.unpack("<I", body[1:5])
        return ImageHeader("webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if chunk == b"VP8X":
        width = int.from_bytes(body[4:7], "little") + 1
        height = int.from_bytes(body[7:10], "little") + 1
        return ImageHeader("webp", width, height)
    raise InvalidImage(f"The WebP's first chunk is {chunk!r}, not VP8, VP8L or VP8X.", format="webp")


_PARSERS = {"png": _png, "jpeg": _jpeg, "gif": _gif, "webp": _webp}
