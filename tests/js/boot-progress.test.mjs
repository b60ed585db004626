// The boot line and the snapshot decision on Node: js/boot/progress.js (stages only move
// forward; bytes shown while a first visit downloads, the bar never goes back) and
// js/boot/snapshot-pays.js (the rule that decides whether the gateway's snapshot is worth
// its bytes). The page showing them is tested in Chromium (tests/e2e/test_network.py).

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { BootProgress, STAGES, wireBytes } from '../../js/boot/progress.js';
import { CPU_REFERENCE_PER_MS, RESTORE_SAVES_MS, cpuScale, cpuWhile, snapshotPays, streamRate } from '../../js/boot/snapshot-pays.js';

test('stages only move forward whatever order they arrive in', () => {
  const p = new BootProgress(0);
  const texts = [];
  // A restore that failed reports runtime and wasm again; the link says hello late.
  for (const stage of ['pyscript', 'runtime', 'wasm', 'snapshot', 'runtime', 'wasm', 'interpreter', 'bogus', 'hello', 'runtime', 'ready']) {
    p.stage(stage);
    texts.push(p.view().text);
  }
  const order = STAGES.map(([, text]) => text);
  const ranks = texts.map((text) => order.indexOf(text));
  assert.deepEqual(ranks, [...ranks].sort((a, b) => a - b));
  assert.equal(texts.at(-1), 'Python ready');
  assert.equal(texts[0], 'Starting Python…'); // index.html's own first text: no step back
});

test('bytes show once every length is known and the bar never goes back', () => {
  const p = new BootProgress(2);
  const v = [];
  p.expect('a', 4_000_000);
  v.push(p.view()); // b's length unknown: no count yet
  p.expect('b', 2_200_000);
  p.add('a', 1_000_000);
  v.push(p.view());
  p.stage('runtime');
  p.add('a', 2_100_000);
  v.push(p.view());
  p.expect('snapshot', 4_000_000); // the total grows: the bar must not drop
  v.push(p.view());
  p.done('a'); p.done('b'); p.done('snapshot');
  v.push(p.view());
  p.expect('late', 1_000_000); // after the last byte: never shown again
  v.push(p.view());

  assert.equal(v[0].fraction ?? null, null);
  assert.equal(v[0].text, 'Starting Python…');
  assert.equal(v[1].text, 'Downloading Python 1.0 of 6.2 MB');
  assert.equal(v[2].text, 'Downloading Python 3.1 of 6.2 MB');
  const fractions = v.slice(1, 4).map((x) => x.fraction);
  assert.deepEqual(fractions, [...fractions].sort((a, b) => a - b));
  assert.ok(fractions[0] > 0);
  assert.ok(v[3].text.endsWith('of 10.2 MB'), v[3].text);
  assert.deepEqual({ ...v[4], fraction: v[4].fraction ?? null }, { text: 'Loading Python…', stage: 'runtime', fraction: null });
  assert.equal(v[5].fraction ?? null, null);
});

test('encoded bytes are scaled to the wire', () => {
  const h = (o) => new Headers(o);
  assert.deepEqual(wireBytes(h({ 'content-length': '100' })), { total: 100, scale: 1 });
  assert.deepEqual(wireBytes(h({ 'content-length': '25', 'content-encoding': 'br', 'x-firsttoken-identity-length': '100' })),
    { total: 25, scale: 0.25 });
  assert.equal(wireBytes(h({ 'content-encoding': 'br' })).total, 0);
  assert.deepEqual(wireBytes(h({ 'content-length': '25', 'content-encoding': 'br' })), { total: 25, scale: 0 }); // counted whole when it ends
});

test('the snapshot is fetched only when its bytes cost less than a plain boot', async () => {
  const mbps = (m) => (m * 1e6) / 8 / 1000; // bytes per ms
  const snap = 4_820_000;
  const ref = CPU_REFERENCE_PER_MS;
  const loopback = snapshotPays({ bytes: snap, rate: mbps(1000) });
  assert.equal(loopback.fetch, true);
  assert.equal(loopback.reason, 'fast-link');
  assert.deepEqual(snapshotPays({ bytes: snap, rate: mbps(9) }),
    { fetch: false, reason: 'slow-link', expected_ms: Math.round(4_820_000 / (9e6 / 8 / 1000)), saves_ms: RESTORE_SAVES_MS });
  // A CPU four times slower than the reference: a restore saves four times as much.
  const busy = snapshotPays({ bytes: snap, rate: mbps(9), cpu: cpuScale(ref / 4) });
  assert.equal(busy.fetch, true);
  assert.equal(busy.saves_ms, 4 * RESTORE_SAVES_MS);
  assert.deepEqual([cpuScale(-1), cpuScale(ref * 2), cpuScale(ref / 4), cpuScale(ref / 1000)], [1, 1, 4, 8]);
  assert.ok((await cpuWhile(Promise.resolve())) > 0); // one slice, then done
  assert.ok((await cpuWhile(new Promise((r) => setTimeout(r, 30)))) > 0);
  assert.equal(snapshotPays({ bytes: snap, rate: mbps(1.6) }).fetch, false);
  // Chromium's 10 Mbit/s cap says nothing.
  assert.equal(snapshotPays({ bytes: snap, rate: null, connection: { downlink: 10 } }).fetch, true);
  // A default estimate never overrules a measurement.
  assert.equal(snapshotPays({ bytes: snap, rate: mbps(1000), connection: { downlink: 1.55 } }).fetch, true);
  assert.equal(snapshotPays({ bytes: snap, rate: null, connection: { downlink: 1.5 } }).fetch, false);
  const saveData = snapshotPays({ bytes: snap, rate: mbps(1000), connection: { saveData: true } });
  assert.equal(saveData.fetch, false);
  assert.equal(saveData.reason, 'save-data');
  const unknown = snapshotPays({ bytes: snap, rate: null });
  assert.equal(unknown.fetch, true);
  assert.equal(unknown.reason, 'link-unknown');
  assert.equal(snapshotPays({ bytes: 0, rate: mbps(1) }).fetch, true);
  // The first chunk's arrival starts the clock: its bytes and the round trip before it do not count.
  const rate = streamRate([[1000, 65536], [1100, 50_000], [1250, 100_000]]);
  assert.ok(Math.abs(rate - 150_000 / 250) < 1e-9, String(rate));
  const burst = streamRate([[5, 65536], [5, 65536]]);
  assert.ok(burst === null || burst === Infinity, String(burst)); // all at once
  assert.equal(streamRate([[5, 65536]]) ?? null, null);
  assert.equal(snapshotPays({ bytes: null, rate: mbps(1) }).fetch, true);
});
