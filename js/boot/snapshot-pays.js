// @ts-check
// Whether downloading the gateway's install-time snapshot pays on this visit.
//
// A first visit can boot Python two ways, and both end correct:
//   - restore the gateway's snapshot: Python is ready ~RESTORE_SAVES_MS sooner once
//     the bytes are here, but they are megabytes (4.8 MB as brotli) more to download,
//     on a link the runtime (wasm, standard library) is already filling;
//   - boot Pyodide normally: no extra bytes, seconds of CPU once the runtime is in.
// The link is the bottleneck of a first visit, so fetching the snapshot adds about
// `bytes / rate` to the download and takes RESTORE_SAVES_MS off the boot after it:
//
//     fetch the rest  ⇔  bytes left / rate < RESTORE_SAVES_MS × cpuScale
//
// `rate` is measured on the snapshot's own body: the loader asks for it at once and
// reads PROBE_MS of it (from its first chunk, so the round trip does not count), or
// PROBE_BYTES, whichever comes first (`streamRate`). It shares the link with the
// runtime's downloads then, so the rate comes out low and the rule errs towards
// booting normally: the cheap side to err on, as a wrong "boot" costs at most
// RESTORE_SAVES_MS of CPU, a wrong "fetch" on a slow link tens of seconds. What the
// probe cost is at most PROBE_MS of the link. Only with no measurement (a body that
// came in one chunk) does the Network Information API's estimate stand in for it,
// where a browser has one (Chromium, not WebKit): before a page has moved much data it
// is a default (headless Chromium on loopback says 1.55 Mbit/s), so a measurement
// always wins over it. At 4.8 MB of brotli
// the rule needs ~15 Mbit/s: Wi-Fi, wired, a good 5G cell; each of issue 13's
// profiles (9, 4, 1.6 Mbit/s) boots without it, as does a visitor asking to save data.
//
// A plain boot is CPU, so what a restore saves grows with a slow or busy CPU. While the
// request for the snapshot is out (a round trip this thread would only wait through),
// the loader runs a fixed loop in slices, yielding between them (`cpuWhile`), and
// compares the work done per ms of wall time with what one idle core of the machine
// that measured RESTORE_SAVES_MS does (`cpuScale`, at least 1, at most 8). A slow
// phone scores low, and so does a busy one: on that machine at load average 25 a
// plain boot took 26 s where it takes 3 idle, and the loop ran 3–15× slower.
// Rates and lengths are in decoded bytes (what a reader counts); their ratio is the
// same on the wire. Either way the page makes its own snapshot once Python is ready
// (next-visit.js), so only this one visit pays for a plain boot.

/** How much sooner Python is ready from a restore than from a plain boot, once the
 * runtime is here: bench-boot measured 3.2 s cold without the snapshot against 1.2 s
 * with it on this 2-core machine; a phone's CPU takes longer, which only moves the
 * rule towards fetching. */
export const RESTORE_SAVES_MS = 2500;
/** Loop iterations per ms of wall time on one idle core of the machine behind
 * RESTORE_SAVES_MS (its best run: 10⁶ in 2.2 ms, Node 20's V8), yields included. */
export const CPU_REFERENCE_PER_MS = 400_000;
const CPU_SCALE_MAX = 8;
const SLICE = 200_000; // iterations: ~0.5 ms on that core
const CPU_PROBE_MAX_MS = 300;

function slice() {
  let h = 0x811c9dc5;
  for (let i = 0; i < SLICE; i++) {
    h ^= i & 0xff;
    h = Math.imul(h, 0x01000193);
  }
  return h;
}

/** Loop iterations done per ms of wall time, in slices, until `pending` settles (at
 * most CPU_PROBE_MAX_MS, at least one slice). Yields through a MessageChannel between
 * slices: no timer clamping, and the awaited response is handled as soon as it comes. */
export async function cpuWhile(pending) {
  let settled = false;
  pending.then(() => { settled = true; }, () => { settled = true; });
  const channel = new MessageChannel();
  let wake = null;
  channel.port1.onmessage = () => wake();
  const yieldNow = () => new Promise((resolve) => {
    wake = resolve;
    channel.port2.postMessage(0);
  });
  const start = performance.now();
  let done = 0;
  let sink = 0;
  try {
    do {
      sink ^= slice();
      done += SLICE;
      await yieldNow();
    } while (!settled && performance.now() - start < CPU_PROBE_MAX_MS);
  } finally {
    channel.port1.close();
  }
  const elapsed = performance.now() - start;
  return sink === 0.5 ? 0 : done / Math.max(elapsed, 0.001); // never 0.5: keeps the loop
}

/** How many times RESTORE_SAVES_MS a restore saves here, from cpuWhile's rate. */
export function cpuScale(perMs) {
  if (!(perMs > 0)) return 1;
  return Math.min(CPU_SCALE_MAX, Math.max(1, CPU_REFERENCE_PER_MS / perMs));
}

/** How long, and how much, of the snapshot's body is read before deciding. */
export const PROBE_MS = 250;
export const PROBE_BYTES = 1 << 20;
// Chromium caps `downlink` at 10 Mbit/s (fingerprinting): at the cap it says "fast", no more.
const DOWNLINK_CAP_MBPS = 10;

/** Bytes per ms from a body's `samples` ([time ms, bytes] per chunk, in arrival order):
 * the bytes after the first chunk over the time since it (the round trip and the
 * server's start left out). Infinity when they all came at once; null with one chunk. */
export function streamRate(samples) {
  if (samples.length < 2) return null;
  let bytes = 0;
  for (let i = 1; i < samples.length; i++) bytes += samples[i][1];
  const span = samples.at(-1)[0] - samples[0][0];
  return span > 0 ? bytes / span : Infinity;
}

/** The rate the Network Information API allows (bytes per ms), or null. */
export function connectionRate(connection) {
  const mbps = connection?.downlink;
  if (typeof mbps !== 'number' || !(mbps > 0) || mbps >= DOWNLINK_CAP_MBPS) return null;
  return (mbps * 1e6) / 8 / 1000;
}

/** The decision, with its reason: `{fetch, reason, expected_ms, saves_ms}`.
 * `bytes`: what is left of the snapshot (null: unknown); `rate`: streamRate's;
 * `connection`: navigator.connection, if any; `cpu`: cpuScale's. */
export function snapshotPays({ bytes, rate, connection = null, cpu = 1 }) {
  const saves = Math.round(RESTORE_SAVES_MS * cpu);
  if (connection?.saveData) return { fetch: false, reason: 'save-data', expected_ms: null, saves_ms: saves };
  const link = typeof rate === 'number' && rate > 0 ? rate : connectionRate(connection);
  if (!link || typeof bytes !== 'number' || !(bytes >= 0)) {
    return { fetch: true, reason: 'link-unknown', expected_ms: null, saves_ms: saves };
  }
  const expected = bytes / link;
  return {
    fetch: expected < saves,
    reason: expected < saves ? 'fast-link' : 'slow-link',
    expected_ms: Math.round(expected),
    saves_ms: saves,
  };
}
