// The photo shrinker, in a dedicated worker: a 12 MP photo's decode and resize take
// hundreds of milliseconds, which on the main thread would freeze typing and painting.
//
// Two requests per image, matched by `id`:
//   {type: 'probe', id, file}  → {type: 'probed', id, width, height} once the file is
//       checked (header read before any decode: header.js) and decoded; the decoded
//       bitmap waits here for the size to shrink it to (the main thread asks the core,
//       which knows the model's rules);
//   {type: 'shrink', id, width, height, quality} → {type: 'shrunk', id, url, width,
//       height, bytes}: resized to exactly that size and encoded as a JPEG data URL.
//   {type: 'drop', id}: forget a probed image (the user removed it meanwhile).
// A refusal is {type: 'refused', id, code, message} (header.js's ImageError codes).
//
// Re-encoding from pixels drops every metadata segment of the original (EXIF, GPS
// location included): a canvas holds pixels only, and its JPEG encoder writes none
// back (HTML, "Serialising bitmaps to a file": only the image data and the type's own
// required headers). createImageBitmap applies the EXIF orientation first
// (`imageOrientation: 'from-image'`, the default), so the photo stays upright once
// its orientation tag is gone.

import { ImageError, readImageHeader } from './header.js';

/** Bytes read to find the dimensions: a JPEG's EXIF and ICC segments come before its
 * frame header and may take up to a few hundred KB; more is read if needed. */
const HEAD_BYTES = 64 * 1024;
const HEAD_MAX = 1024 * 1024;

const bitmaps = new Map(); // id → ImageBitmap, between 'probed' and 'shrink'

self.onmessage = async ({ data }) => {
  const { id } = data;
  try {
    if (data.type === 'probe') {
      const bitmap = await decode(data.file);
      bitmaps.set(id, bitmap);
      self.postMessage({ type: 'probed', id, width: bitmap.width, height: bitmap.height });
    } else if (data.type === 'shrink') {
      const bitmap = bitmaps.get(id);
      bitmaps.delete(id);
      if (!bitmap) throw new ImageError('undecodable', 'The image was not prepared.');
      self.postMessage({ type: 'shrunk', id, ...(await encode(bitmap, data.width, data.height, data.quality)) });
    } else if (data.type === 'drop') {
      bitmaps.get(id)?.close();
      bitmaps.delete(id);
    }
  } catch (e) {
    const refusal = e instanceof ImageError ? e : new ImageError('undecodable', 'This image could not be read: it may be damaged or in a format this browser cannot open.');
    self.postMessage({ type: 'refused', id, code: refusal.code, message: refusal.message });
  }
};

async function decode(file) {
  let header = null;
  for (let n = HEAD_BYTES; header === null; n *= 4) {
    const bytes = new Uint8Array(await file.slice(0, n).arrayBuffer());
    header = readImageHeader(bytes);
    if (header === null && (bytes.length < n || n >= HEAD_MAX)) {
      throw new ImageError('invalid', 'This image ends before its size: it is cut short or damaged.');
    }
  }
  if (header.format === 'svg') {
    // A drawing can hold scripts and links to fetch: never rendered here.
    throw new ImageError('svg', 'SVG drawings are not sent: export it as PNG or JPEG and attach that.');
  }
  try {
    return await createImageBitmap(file);
  } catch {
    if (header.format === 'heic') {
      throw new ImageError('heic', 'This photo is HEIC, which this browser cannot open: share it as JPEG (on iPhone, Settings › Camera › Formats › Most Compatible) and attach it again.');
    }
    throw new ImageError('undecodable', 'This image could not be decoded: it may be damaged or cut short.');
  }
}

async function encode(bitmap, width, height, quality = 0.85) {
  const canvas = new OffscreenCanvas(width, height);
  const g = canvas.getContext('2d');
  // A transparent PNG's background becomes white, not JPEG's black.
  g.fillStyle = '#fff';
  g.fillRect(0, 0, width, height);
  g.imageSmoothingQuality = 'high';
  g.drawImage(bitmap, 0, 0, width, height);
  bitmap.close();
  const blob = await canvas.convertToBlob({ type: 'image/jpeg', quality });
  return { url: new FileReaderSync().readAsDataURL(blob), width, height, bytes: blob.size };
}
