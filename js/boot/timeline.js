// @ts-check
// The `ready` event's boot record (bridge/PROTOCOL.md, "Boot"), placed on the page's own
// timeline, and told in one line.
//
// The loader in the worker (pyodide-loader.js) measures its stages from its own start;
// the page knows when it began starting Python. Shifted by the difference, every *_ms
// but import_ms reads "this long after the page began starting Python".

const SHIFTED = ['assets_ms', 'snapshot_ms', 'wasm_ms', 'interpreter_ms', 'loader_ms'];

/** A copy of `boot` on the page's timeline: `started` is when the page began starting
 * Python, `readyAt` when `ready` arrived (epoch ms, both). */
export function onPageTimeline(boot, started, readyAt) {
  const placed = { ...(boot || {}) };
  if (typeof placed.worker_start === 'number') {
    const shift = placed.worker_start - started;
    placed.worker_ms = Math.round(shift);
    for (const key of SHIFTED) {
      if (typeof placed[key] === 'number') placed[key] = Math.round(placed[key] + shift);
    }
  }
  delete placed.worker_start;
  // py/boot.py started running: what PyScript did after the loader shows between
  // loader_ms and entry_ms.
  if (typeof placed.entry_start === 'number') placed.entry_ms = Math.round(placed.entry_start - started);
  delete placed.entry_start;
  placed.ready_ms = readyAt - started;
  return placed;
}

/** How long Python took, and where the time went, e.g.
 * `Python ready in 420 ms (snapshot restored · worker 180 · …)`. */
export function describeBoot(boot) {
  if (!boot) return '';
  const ms = (v) => (typeof v === 'number' ? `${Math.round(v)}` : '–');
  const parts = [`snapshot ${boot.snapshot ?? 'none'}${boot.snapshot_from ? ` from ${boot.snapshot_from}` : ''}`];
  for (const [key, label] of [['worker_ms', 'worker'], ['assets_ms', 'assets'], ['wasm_ms', 'wasm'],
    ['interpreter_ms', 'interpreter'], ['import_ms', 'firsttoken']]) {
    if (boot[key] != null) parts.push(`${label} ${ms(boot[key])}`);
  }
  return `Python ready in ${ms(boot.ready_ms)} ms (${parts.join(' · ')})`;
}
