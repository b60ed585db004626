"""Real image files, made byte by byte with the standard library: a PNG, a GIF, a
baseline JPEG header and the three WebP kinds, of any declared size, and data URLs of
them. The PNG and GIF are whole, decodable files (checked against Pillow in
tests/unit/test_image_header.py); the JPEG and WebP are headers with no pixel data,
which is all a header reader may look at."""

from __future__ import annotations

import base64
import struct
import zlib


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png(width: int, height: int, *, pixels: bool = True) -> bytes:
    """A grey PNG (colour type 0, 8 bits). `pixels=False`: the IHDR only, for sizes too
    large to fill (a decompression bomb's header)."""
    head = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    if not pixels:
        return head
    compressor = zlib.compressobj(9)
    row = b"\x00" + b"\x80" * width  # filter type 0, then the row
    data = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    return head + _png_chunk(b"IDAT", data) + _png_chunk(b"IEND", b"")


def gif(width: int, height: int, *, pixels: bool = True) -> bytes:
    """A GIF89a of one colour. Its LZW data sends a clear code before every pixel, so
    every code stays 3 bits wide: valid, if not small. `pixels=False`: the header and
    colour table only."""
    head = b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\x00\x00\x00\xff\xff\xff"
    if not pixels:
        return head
    image = b"\x2c" + struct.pack("<HHHHB", 0, 0, width, height, 0)
    codes = [4, 0] * (width * height) + [5]  # clear, index 0 …, end of information
    bits = 0
    count = 0
    out = bytearray()
    for code in codes:
        bits |= code << count
        count += 3
        while count >= 8:
            out.append(bits & 0xFF)
            bits >>= 8
            count -= 8
    if count:
        out.append(bits & 0xFF)
    blocks = b"".join(bytes([len(out[i : i + 255])]) + bytes(out[i : i + 255]) for i in range(0, len(out), 255))
    return head + image + b"\x02" + blocks + b"\x00" + b"\x3b"


def jpeg(width: int, height: int, *, app_bytes: int = 0, sof: int = 0xC0) -> bytes:
    """SOI, APPn segments holding `app_bytes` in all (0: none; EXIF and ICC data sit
    there, before the frame, at most 65533 bytes a segment), a quantisation table and the
    frame header SOFn: a JPEG's start as a camera writes it, cut after the frame header."""
    out = b"\xff\xd8"
    while app_bytes > 0:
        size = min(app_bytes, 65533)
        app_bytes -= size
        out += b"\xff\xe2" + struct.pack(">H", size + 2) + b"\x00" * size
    out += b"\xff\xdb" + struct.pack(">H", 67) + b"\x00" + bytes(range(64))
    frame = struct.pack(">BHHB", 8, height, width, 3) + b"\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return out + bytes([0xFF, sof]) + struct.pack(">H", len(frame) + 2) + frame


def webp_vp8l(width: int, height: int) -> bytes:
    bits = (width - 1) | (height - 1) << 14
    body = b"\x2f" + struct.pack("<I", bits) + b"\x00" * 8
    return _riff(b"VP8L", body)


def webp_vp8(width: int, height: int) -> bytes:
    body = b"\x10\x02\x00" + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 8
    return _riff(b"VP8 ", body)


def webp_vp8x(width: int, height: int) -> bytes:
    body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return _riff(b"VP8X", body)


def _riff(kind: bytes, body: bytes) -> bytes:
    chunk = kind + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def data_url(data: bytes, media_type: str = "image/png") -> str:
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def image_part(width: int, height: int, detail: str | None = None) -> dict:
    """A Chat Completions image part holding a real PNG of that size."""
    image: dict = {"url": data_url(png(width, height))}
    if detail is not None:
        image["detail"] = detail
    return {"type": "image_url", "image_url": image}
