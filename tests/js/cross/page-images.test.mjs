// The page's image logic on Node, against the core: js/images/header.js reads every file
// py/firsttoken/image_header.py reads, to the same dimensions or the same refusal (the
// page refuses a decompression bomb before decoding, the gateway before billing: one
// rule), and the header the live count sends alone is one the core reads as the whole;
// what a file is refused for before a byte is read; a user message's images as content
// parts (js/page/conversation.js); exports that keep them (js/page/export.js); and which
// stored URLs are ever shown. The files and the core's readings come from
// tests/unit/test_page_images.py; the page itself: tests/e2e/test_images_page.py.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { fixture } from './fixture.mjs';
import { headerOnly, readImageHeader, ImageError } from '../../../js/images/header.js';
import { refuseFile, fitSide, CoreSizes, MAX_FILE_BYTES } from '../../../js/images/shrink.js';
import { conversation, withImages } from '../../../js/page/conversation.js';
import { toJson, toMarkdown } from '../../../js/page/export.js';
import { isImageUrl, heldBytes } from '../../../js/page/attachments.js';
import { preparedText } from '../../../js/page/status-text.js';

const { files, reads, prefixReads, dataUrlPrefix } = fixture;
const bytesOf = (name) => Uint8Array.from(Buffer.from(files[name], 'base64'));
const NAMES = Object.keys(files).sort();

/** What the page's reader makes of `bytes`, in the core's terms: its header, or the code
 * of its refusal (the core's ImageTooLarge is too_large, any other InvalidImage invalid). */
function pageReads(bytes) {
  try {
    const h = readImageHeader(bytes);
    return h === null ? { code: 'more' } : JSON.parse(JSON.stringify(h)); // all it says, as the core's JSON
  } catch (e) {
    if (!(e instanceof ImageError)) throw e;
    return { code: e.code === 'too_large' ? 'too_large' : 'invalid' };
  }
}

for (const name of NAMES) {
  test(`the page reads each header as the core does: ${name}`, () => {
    assert.deepEqual(pageReads(bytesOf(name)), reads[name]);
  });
}

test('a header cut short asks for more', () => {
  // 200 KB of EXIF before the frame header: from the first 64 KB the reader asks for
  // more (the worker then reads more), as the core's does (its refusal of the same cut,
  // "ends before", is asserted by the Python test).
  assert.equal(readImageHeader(bytesOf('jpeg-exif').subarray(0, 65536)), null);
});

test('what is refused before reading', () => {
  assert.deepEqual([
    { size: MAX_FILE_BYTES + 1, type: 'image/jpeg', name: 'huge.jpg' }, { size: 10, type: 'application/pdf', name: 'a.pdf' },
    { size: 10, type: 'image/svg+xml', name: 'a.svg' }, { size: 10, type: '', name: 'pasted' },
    { size: MAX_FILE_BYTES, type: 'image/heic', name: 'b' },
  ].map((file) => refuseFile(file)?.code ?? null), ['too_large', 'not_image', 'svg', null, null]);
});

test('the fallback size fits 2048 and never grows', () => {
  assert.deepEqual([fitSide(4032, 3024), fitSide(100, 50), fitSide(3, 9000)],
    [{ width: 2048, height: 1536 }, { width: 100, height: 50 }, { width: 1, height: 2048 }]);
});

const url = 'data:image/jpeg;base64,/9j/AAAA';
const image = { url, width: 1024, height: 768, bytes: 9, detail: 'high' };
const entries = [
  { role: 'user', content: 'What is this?', images: [image] },
  { role: 'assistant', content: 'A receipt.', state: 'done' },
  { role: 'user', content: '', images: [image, { ...image, detail: undefined }] },
];

test('images go as content parts after the text', () => {
  const part = { type: 'image_url', image_url: { url, detail: 'high' } };
  assert.deepEqual(JSON.parse(JSON.stringify(conversation('Be brief.', entries))), [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: [{ type: 'text', text: 'What is this?' }, part] },
    { role: 'assistant', content: 'A receipt.' },
    // An image-only message is a turn of its own; no text part.
    { role: 'user', content: [part, { type: 'image_url', image_url: { url } }] },
  ]);
  assert.deepEqual(JSON.parse(JSON.stringify(withImages('', [image]))), [part]);
});

test('exports keep the images', () => {
  const c = { id: 'c1', title: 'Receipt', created: 0, updated: 0, entries };
  assert.ok(toMarkdown(c).includes('![Image, 1024×768](data:image/jpeg;base64,/9j/AAAA)\n\nWhat is this?'));
  assert.equal(JSON.parse(toJson(c)).messages[0].images[0].url, url);
});

test("only the page's own image URLs are ever shown", () => {
  assert.deepEqual([url, 'data:image/png;base64,iVBO', 'https://tracker.example/p.png', 'javascript:alert(1)',
    'data:image/svg+xml;base64,PHN2Zz4=', 'data:text/html;base64,PGI+', null].map(isImageUrl),
  [true, true, false, false, false, false, false]);
  assert.equal(heldBytes(entries), 3 * url.length);
});

test('the size is asked of the core once Python is ready', async () => {
  // Not before Python is ready (the fallback, nothing queued); then `image.size` with the
  // model, answered by `image.sized`; a wrong answer is not used.
  const sent = [];
  const link = { ready: false, send: (m) => sent.push(m) };
  const sizes = new CoreSizes(link, () => 'gpt-4o');
  assert.deepEqual(await sizes.size(4032, 3024, 'high'), { width: 2048, height: 1536 });
  link.ready = true;
  const asked = sizes.size(4032, 3024, 'high');
  sizes.answer({ type: 'image.sized', id: sent[0].id, width: 1024, height: 768, tokens: 765, exact: true });
  assert.deepEqual(await asked, { width: 1024, height: 768 });
  const wrong = sizes.size(400, 300, 'high');
  sizes.answer({ type: 'image.sized', id: sent[1].id, width: 800, height: 600, tokens: 1, exact: true });
  assert.deepEqual(await wrong, { width: 400, height: 300 }); // larger than the image: not used
  assert.deepEqual(JSON.parse(JSON.stringify(sent[0])),
    { type: 'image.size', id: sent[0].id, model: 'gpt-4o', width: 4032, height: 3024, detail: 'high' });
});

for (const name of NAMES) {
  test(`the live count sends a header the core reads as the whole: ${name}`, () => {
    const whole = dataUrlPrefix + files[name];
    const cut = headerOnly(whole);
    assert.ok(whole.startsWith(cut));
    const length = cut.length - dataUrlPrefix.length;
    // The core's reading of each prefix length it was asked about (tests/unit/test_page_images.py);
    // a cut at a length it was not asked about fails here rather than go unchecked.
    const core = cut === whole ? reads[`url:${name}`] : prefixReads[name][String(length)];
    assert.ok(core, `the core has no reading of ${name} cut at ${length} base64 characters`);
    assert.deepEqual(core, reads[`url:${name}`]);
  });
}

test('the header of a large image is a few kilobytes', () => {
  // A JPEG's and a PNG's headers are in their first bytes; one after 200 KB of EXIF is
  // past every cut, and goes whole (the core reads it there).
  for (const name of ['jpeg-long', 'png-long']) {
    assert.ok(headerOnly(dataUrlPrefix + files[name]).length < 4200 && 4200 < bytesOf(name).length, name);
  }
  assert.equal(headerOnly(dataUrlPrefix + files['jpeg-exif']), dataUrlPrefix + files['jpeg-exif']);
});

test('the fit line says how many photos were not sent', () => {
  assert.deepEqual([
    preparedText({ dropped: [1, 2], truncated: [{ index: 3, tokens_cut: 765 }], images_dropped: 3 }).fit,
    preparedText({ dropped: [], truncated: [], images_dropped: 1 }).fit,
    preparedText({ dropped: [], truncated: [] }).fit,
  ], [
    "To fit the model's budget: 2 earlier messages left out, 1 shortened, 3 earlier photos not sent.",
    "To fit the model's budget: 1 earlier photo not sent.",
    null,
  ]);
});
