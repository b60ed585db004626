// What the page tells a person while Python starts: one line that only moves forward,
// and on a first visit how much of Python has been downloaded.
//
// Boot stages arrive from several places (the link itself, the loader in the worker,
// a restore that failed and fell back to a plain boot, which reports `runtime` and
// `wasm` again), so a stage that ranks at or below the one shown is ignored: the text
// never goes back. The byte count is what the page's own prefetch of the runtime
// (boot.js) has received, plus the gateway's snapshot when the loader chose to
// fetch it, in bytes on the wire (`wireBytes`): "Downloading Python 3.1 of 6.2 MB".
// It shows from the moment every runtime file's length is known until the last byte,
// and then never again, even if the snapshot adds to the total afterwards.

export const STAGES = [
  ['pyscript', 'Starting Python…'], // also index.html's first text
  ['runtime', 'Loading Python…'],
  ['wasm', 'Starting the interpreter…'],
  ['snapshot', 'Restoring Python…'],
  ['interpreter', 'Python started, loading firsttoken…'],
  ['hello', 'Python started, saying hello…'],
  ['ready', 'Python ready'],
];
const RANK = new Map(STAGES.map(([stage], i) => [stage, i]));
const TEXT = new Map(STAGES);

/** Decoded bytes read from a response → bytes on the wire. With a content coding, the
 * gateway says the identity length (`x-firsttoken-identity-length`, gateway/precompressed.py)
 * and the reader's count is scaled by the ratio: exact at the end, proportional before. */
export function wireBytes(headers) {
  const wire = Number(headers.get('content-length'));
  if (!Number.isSafeInteger(wire) || wire <= 0) return { total: 0, scale: 1 };
  if (!headers.get('content-encoding')) return { total: wire, scale: 1 };
  const identity = Number(headers.get('x-firsttoken-identity-length'));
  return { total: wire, scale: Number.isSafeInteger(identity) && identity > 0 ? wire / identity : 0 };
}

export const megabytes = (bytes) => (bytes / 1e6).toFixed(1);

export class BootProgress {
  /** `expected`: how many downloads make up the total (their lengths are all known
   * before the bar shows). */
  constructor(expected = 0) {
    this.rank = 0;
    this.expected = expected;
    this.totals = new Map(); // download name → bytes on the wire
    this.received = new Map();
    this.fraction = 0; // what the bar shows: never less than before
    this.downloaded = expected === 0; // latched: the byte count shows no more
  }

  /** A boot stage reached; false if it was ignored (not past the one shown). */
  stage(name) {
    const rank = RANK.get(name);
    if (rank === undefined || rank <= this.rank) return false;
    this.rank = rank;
    return true;
  }

  /** A download of `total` bytes (0: unknown) named `name` began. */
  expect(name, total) {
    this.totals.set(name, total);
    if (!this.received.has(name)) this.received.set(name, 0);
    this.update();
  }

  /** `bytes` more of `name` arrived (on the wire). */
  add(name, bytes) {
    this.received.set(name, Math.min((this.received.get(name) ?? 0) + bytes, this.totals.get(name) ?? Infinity));
    this.update();
  }

  /** `name` is complete (or failed: it counts as done either way, so the bar ends). */
  done(name) {
    this.received.set(name, this.totals.get(name) ?? this.received.get(name) ?? 0);
    this.update();
  }

  /** {received, total} in bytes on the wire, or null while a length is unknown. */
  bytes() {
    if (this.totals.size < this.expected) return null;
    let total = 0;
    for (const t of this.totals.values()) {
      if (!(t > 0)) return null;
      total += t;
    }
    let received = 0;
    for (const r of this.received.values()) received += r;
    return { received, total };
  }

  update() {
    const bytes = this.bytes();
    if (!bytes || this.downloaded) return;
    this.fraction = Math.max(this.fraction, Math.min(1, bytes.received / bytes.total));
    if (bytes.received >= bytes.total) this.downloaded = true;
  }

  /** Whether the byte count is what to show now. */
  downloading() {
    return !this.downloaded && this.bytes() !== null && this.rank < RANK.get('interpreter');
  }

  /** The line to show, and the bar: `{text, stage, fraction}`, fraction null when no bar;
   * while downloading, `shown` and `total` bytes too (the page words the line in the
   * reader's language from them and `stage`: js/page/page.js). */
  view() {
    const stage = STAGES[this.rank][0];
    if (this.downloading()) {
      const { received, total } = this.bytes();
      const shown = Math.max(received, this.fraction * total);
      return { text: `Downloading Python ${megabytes(shown)} of ${megabytes(total)} MB`, stage, fraction: this.fraction, shown, total };
    }
    return { text: TEXT.get(stage), stage, fraction: null };
  }
}
