// An image file's format and pixel size from its first bytes, before anything decodes
// it: a decompression bomb (a few KB declaring gigapixels) must be refused before
// createImageBitmap is asked to allocate it. The same rules, with their spec
// references, are py/firsttoken/image_header.py's (the gateway bills and refuses by
// it); tests/unit/test_image_header_js.py holds the two readers to the same answer on
// the same files. Kept here too because the page shrinks photos before Python is ready.
//
// `readImageHeader(bytes)` gives `{format, width, height}`, `null` when the bytes end
// before the dimensions (read more), or throws an `ImageError`.

/** The most pixels an image may declare: py/firsttoken/image_header.py's MAX_IMAGE_PIXELS. */
export const MAX_IMAGE_PIXELS = 8000 * 8000;

/** Why an image is refused: `code` is 'not_image' | 'svg' | 'heic' | 'invalid' |
 * 'too_large' | 'too_many' | 'undecodable' | 'storage'; `message` says it to the user. */
export class ImageError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'ImageError';
    this.code = code;
  }
}

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const ascii = (b, at, n) => String.fromCharCode(...b.subarray(at, at + n));
const u16le = (b, i) => b[i] | (b[i + 1] << 8);
const u16be = (b, i) => (b[i] << 8) | b[i + 1];
const u24le = (b, i) => b[i] | (b[i + 1] << 8) | (b[i + 2] << 16);
const u32be = (b, i) => ((b[i] << 24) >>> 0) + ((b[i + 1] << 16) | (b[i + 2] << 8) | b[i + 3]);

/** The format `b` starts as: 'png' | 'jpeg' | 'gif' | 'webp', or what we refuse by
 * name ('svg', 'heic'), or null. */
export function sniff(b) {
  if (PNG.every((x, i) => b[i] === x)) return 'png';
  if (b[0] === 0xff && b[1] === 0xd8) return 'jpeg';
  if (['GIF87a', 'GIF89a'].includes(ascii(b, 0, 6))) return 'gif';
  if (ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 4) === 'WEBP') return 'webp';
  // ISO BMFF (HEIF, ISO/IEC 23008-12): a 'ftyp' box first, its major brand after it.
  if (ascii(b, 4, 4) === 'ftyp' && /^(heic|heix|hevc|hevx|heim|heis|mif1|msf1|avif)$/.test(ascii(b, 8, 4))) return 'heic';
  const head = new TextDecoder().decode(b.subarray(0, 512)).replace(/^\uFEFF/, '').trimStart().toLowerCase();
  if (head.startsWith('<svg') || (head.startsWith('<?xml') && head.includes('<svg'))) return 'svg';
  return null;
}

export function readImageHeader(b, maxPixels = MAX_IMAGE_PIXELS) {
  const format = sniff(b);
  if (format === null) {
    if (b.length < 12) return null;
    throw new ImageError('not_image', 'This file is not a PNG, JPEG, WebP or GIF image.');
  }
  if (format === 'svg' || format === 'heic') return { format, width: 0, height: 0 };
  const size = PARSERS[format](b);
  if (size === null) return null;
  const [width, height] = size;
  if (width < 1 || height < 1) throw new ImageError('invalid', `The ${format} header declares a ${width}×${height} image.`);
  if (width * height > maxPixels) {
    throw new ImageError('too_large', `This image declares ${width.toLocaleString('en')}×${height.toLocaleString('en')} pixels, more than the ${maxPixels.toLocaleString('en')} allowed.`);
  }
  return { format, width, height };
}

const PARSERS = {
  // W3C PNG §5.6: IHDR is the first chunk, width and height big-endian.
  png(b) {
    if (b.length < 24) return null;
    if (u32be(b, 8) !== 13 || ascii(b, 12, 4) !== 'IHDR') throw new ImageError('invalid', 'The PNG does not start with its IHDR chunk.');
    return [u32be(b, 16), u32be(b, 20)];
  },
  // GIF89a §18: the logical screen's width and height, little-endian.
  gif(b) {
    return b.length < 10 ? null : [u16le(b, 6), u16le(b, 8)];
  },
  // ITU-T T.81 Annex B: marker segments up to the frame header SOFn (C0-CF but C4, C8, CC).
  jpeg(b) {
    let i = 2;
    for (;;) {
      while (i < b.length && b[i] === 0xff && b[i + 1] === 0xff) i += 1; // fill bytes (B.1.1.2)
      if (i + 1 >= b.length) return null;
      if (b[i] !== 0xff) throw new ImageError('invalid', `The JPEG has no marker at byte ${i}.`);
      const code = b[i + 1];
      if (code === 0x00) throw new ImageError('invalid', `The JPEG has a stuffed byte where a marker belongs (byte ${i + 1}).`);
      if (code === 0x01 || code === 0xd8 || (code >= 0xd0 && code <= 0xd7)) { // standalone (B.1.1.3)
        i += 2;
        continue;
      }
      if (code === 0xd9) throw new ImageError('invalid', 'The JPEG ends before its frame header.');
      if (code === 0xda) throw new ImageError('invalid', "The JPEG's scan starts before its frame header.");
      if (i + 4 > b.length) return null;
      const length = u16be(b, i + 2);
      if (length < 2) throw new ImageError('invalid', `The JPEG has a segment of length ${length} at byte ${i}.`);
      if (code >= 0xc0 && code <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(code)) {
        if (length < 8) throw new ImageError('invalid', 'The JPEG frame header is too short.');
        if (i + 9 > b.length) return null;
        const height = u16be(b, i + 5);
        if (height === 0) throw new ImageError('invalid', 'The JPEG defers its height to a DNL segment, which is not supported.');
        return [u16be(b, i + 7), height];
      }
      i += 2 + length;
    }
  },
  // RFC 9649: the first chunk is VP8 (lossy), VP8L (lossless) or VP8X (extended).
  webp(b) {
    if (b.length < 30) return null;
    const chunk = ascii(b, 12, 4);
    if (chunk === 'VP8 ') {
      if (b[20] & 1 || b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) throw new ImageError('invalid', 'The WebP (VP8) does not start with a key frame.');
      return [u16le(b, 26) & 0x3fff, u16le(b, 28) & 0x3fff];
    }
    if (chunk === 'VP8L') {
      if (b[20] !== 0x2f) throw new ImageError('invalid', 'The WebP (VP8L) lacks its signature byte.');
      const bits = (b[21] | (b[22] << 8) | (b[23] << 16) | (b[24] << 24)) >>> 0;
      return [(bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1];
    }
    if (chunk === 'VP8X') return [u24le(b, 24) + 1, u24le(b, 27) + 1];
    throw new ImageError('invalid', `The WebP's first chunk is ${JSON.stringify(chunk)}, not VP8, VP8L or VP8X.`);
  },
};

// What the live count sends of an image: a data URL cut to the header. The core counts
// an image from the pixel size in its header, never from its bytes
// (firsttoken.tokens.images), and reads only as much of a data URL as the header needs
// (firsttoken.image_header), so the cut URL counts exactly as the whole one; and the
// count runs on every pause in typing, while a conversation may hold 3 MB of images
// (attachments.js) that would otherwise cross to the worker and be parsed each time.
// The page's own JPEGs have their frame header in the first few hundred bytes; a
// JPEG from elsewhere (an imported conversation) may carry 64 KB of EXIF before it.
const HEADER_CUTS = [4096, 90112]; // base64 characters: 3 KB, then 66 KB of bytes

/** The bytes of base64 `text` (RFC 4648 §4); throws on what is not base64. Decoded
 * natively where the engine can (`Uint8Array.fromBase64`: Safari 18.2, Chromium 140),
 * else through `atob`. */
export function base64Bytes(text) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** `url` cut to the least that still holds its image's header (read here by the same
 * rules as the core's), or `url` itself if no cut does (the core then decides). */
export function headerOnly(url) {
  const comma = url.indexOf(',');
  if (comma < 0 || !url.slice(0, comma).endsWith(';base64')) return url;
  for (const cut of HEADER_CUTS) {
    if (comma + 1 + cut >= url.length) return url;
    const prefix = url.slice(comma + 1, comma + 1 + cut);
    try {
      if (readImageHeader(base64Bytes(prefix))) return url.slice(0, comma + 1) + prefix;
    } catch {
      return url; // not an image this reader takes: the core says why, from the whole
    }
  }
  return url;
}
