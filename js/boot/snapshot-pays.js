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
//     fetch it  ⇔  bytes / rate < RESTORE_SAVES_MS
//
// with `bytes` the snapshot's length on the wire (its Content-Length: the encoded one)
// and `rate` the link as this worker has seen it so far (`observedRate`), capped by the
// Network Information API's estimate where a browser has one (Chromium; not WebKit).
// At 4.8 MB that needs ~15 Mbit/s: Wi-Fi, wired, a good 5G cell; each of issue 13's
// profiles (9, 4, 1.6 Mbit/s) boots without it, as does a visitor asking to save data.
//
// `observedRate` reads the worker's own downloads: on a first visit they share the link
// with the page's prefetch of the runtime, so the rate comes out low, and the rule errs
// towards booting normally. That is the cheap side to err on: a wrong "boot" costs at
// most RESTORE_SAVES_MS of CPU; a wrong "fetch" on a slow link costs tens of seconds.
// With nothing observed (every file from a cache) the snapshot is fetched, as before.
// Either way the page makes its own snapshot once Python is ready (next-visit.js), so
// only this one visit pays for a plain boot.

/** How much sooner Python is ready from a restore than from a plain boot, once the
 * runtime is here: bench-boot measured 3.2 s cold without the snapshot against 1.2 s
 * with it on this 2-core machine; a phone's CPU takes longer, which only moves the
 * rule towards fetching. */
export const RESTORE_SAVES_MS = 2500;
// Transfers smaller than this mostly measure round trips, not the link.
const MIN_SAMPLE_BYTES = 16 * 1024;
// Chromium caps `downlink` at 10 Mbit/s (fingerprinting): at the cap it says "fast", no more.
const DOWNLINK_CAP_MBPS = 10;

/** The link's rate in bytes per ms from Resource Timing `entries` (this worker's), or
 * null when nothing was downloaded (revalidated files, 304s and cached files carry no
 * body: their transferSize is at most their headers). Parallel transfers share the
 * link, so the rate is their bytes over the span they took together. */
export function observedRate(entries) {
  let bytes = 0;
  let start = Infinity;
  let end = 0;
  for (const e of entries) {
    if (!(e.transferSize > e.encodedBodySize) || !(e.responseEnd > 0)) continue;
    bytes += e.transferSize;
    start = Math.min(start, e.requestStart || e.startTime);
    end = Math.max(end, e.responseEnd);
  }
  if (bytes < MIN_SAMPLE_BYTES || !(end > start)) return null;
  return bytes / (end - start);
}

/** The rate the Network Information API allows (bytes per ms), or null. */
export function connectionRate(connection) {
  const mbps = connection?.downlink;
  if (typeof mbps !== 'number' || !(mbps > 0) || mbps >= DOWNLINK_CAP_MBPS) return null;
  return (mbps * 1e6) / 8 / 1000;
}

/** The decision, with its reason: `{fetch, reason, expected_ms}`.
 * `bytes`: the snapshot's length on the wire (null: unknown); `rate`: observedRate;
 * `connection`: navigator.connection, if any. */
export function snapshotPays({ bytes, rate, connection = null }) {
  if (connection?.saveData) return { fetch: false, reason: 'save-data', expected_ms: null };
  const rates = [rate, connectionRate(connection)].filter((r) => typeof r === 'number' && r > 0);
  if (!rates.length || !(bytes > 0)) return { fetch: true, reason: 'link-unknown', expected_ms: null };
  const expected = bytes / Math.min(...rates);
  return {
    fetch: expected < RESTORE_SAVES_MS,
    reason: expected < RESTORE_SAVES_MS ? 'fast-link' : 'slow-link',
    expected_ms: Math.round(expected),
  };
}
