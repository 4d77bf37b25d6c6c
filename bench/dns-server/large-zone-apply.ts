// What a DNS node spends on a large zone arriving through config sync: one delta entry of N records (a zone import)
// or a snapshot of N records (a late node catching up), applied as the node does it (sync frame → node store in LMDB
// → onApplied → ZoneSet), until the zone answers its last record; meanwhile another zone is asked every millisecond
// (a timer), so the longest gap between its answers is how long the node stopped answering. Then the memory the
// compiled zone keeps, and single-record writes into the large zone (apply → answer, in process), with the GC pauses
// seen meanwhile. The large entry is written on the store's writer thread (the node answers meanwhile); the CPU figure
// is the process's, that thread included.
// Run: node --expose-gc --import tsx bench/dns-server/large-zone-apply.ts
//   env RECORDS (1000000), MODE (delta | snapshot), WRITES (200), WRITER_READY (1), OPEN_MS (5000: from the store's
//   open to the large entry), add --cpu-prof for a profile.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { componentLogger } from '@platform/shared';
import { encodeConfigEntry, packEntries, unpackEntries, type ZoneRecord } from '@platform/shared/config';
import { openNodeStore } from '@platform/shared/node-store';
import { deltaEntry, domainHeader, snapshotEntry, zoneRecord } from '@platform/shared/testing/config-entries';
import { createCounters } from '../../dns-server/src/counters.js';
import { answerQuery } from '../../dns-server/src/handler.js';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { ZoneTable } from '../../dns-server/src/zone/table.js';
import { ZoneSet } from '../../dns-server/src/zone/zone-set.js';

const RECORDS = Number(process.env.RECORDS ?? 1_000_000);
const MODE = process.env.MODE ?? 'delta';
const WRITES = Number(process.env.WRITES ?? 200);
const APEX = 'large.example';
const OTHER = 'other.example';
const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8::1'] };
const ip = (i: number, net: number) => `10.${net}.${(i >> 8) & 255}.${i & 255}`;
const gc = (globalThis as { gc?: () => void }).gc;
const heap = () => {
  gc?.();
  gc?.();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, external: m.external + m.arrayBuffers, rss: m.rss };
};
const mb = (n: number) => `${(n / 1048576).toFixed(0)} MB`;

// The import as the control plane writes it: records r0..r{N-1}, A, TTL 300, the API's defaults.
const records: ZoneRecord[] = Array.from({ length: RECORDS }, (_, i) => zoneRecord(i + 10, `r${i}`, ip(i, 0)));
let version = 1;
let serial = 1;
const frame = (entry: Parameters<typeof encodeConfigEntry>[0]) => packEntries([encodeConfigEntry(entry)]);
const bigFrame =
  MODE === 'snapshot'
    ? frame(snapshotEntry(3, { ...domainHeader(APEX, 3), zone: { ...domainHeader(APEX, 3).zone, records } }))
    : frame(deltaEntry(3, domainHeader(APEX, 3), { records }));
records.length = 0;

const dir = mkdtempSync(join(tmpdir(), 'bench-large-zone-'));
// As dns-server's main.ts opens it: the writer thread started at open (WRITER_READY=0: at the first large batch).
const store = openNodeStore(join(dir, 'lmdb'), {
  durability: (process.env.DURABILITY ?? 'data') as 'data',
  writerReady: process.env.WRITER_READY !== '0',
});
const table = new ZoneTable();
const counters = createCounters();
const zones = new ZoneSet(table, store, EDGE, counters, componentLogger('bench.large-zone'));
/** Time spent in ZoneSet.refresh (the rest of an apply is the store: split, LMDB transaction, commit). */
let refreshMs = 0;
store.onApplied((e) => {
  const s = performance.now();
  zones.refresh(e); // as dns-server/src/main.ts (one process): the event, with the entry's records in hand
  refreshMs += performance.now() - s;
});
const other = domainHeader(OTHER, 1);
store.applyEncoded(
  unpackEntries(
    frame(
      snapshotEntry(version++, { ...other, zone: { ...other.zone, records: [zoneRecord(1, 'www', '192.0.2.1')] } }),
    ),
  ),
);
if (MODE === 'delta') store.applyEncoded(unpackEntries(frame(snapshotEntry(version++, domainHeader(APEX, 2)))));
else version++;
serial = 3;
version = 3;

const answers = (name: string, type: number, expect: string): boolean => {
  const q = buildQuery(name, type);
  const r = answerQuery(q, q.length, false, table, counters);
  if (!r || (r[3]! & 15) !== 0 || r.readUInt16BE(6) === 0) return false;
  const want = Buffer.from(expect.split('.').map(Number));
  return r.subarray(r.length - 4).equals(want);
};
assert.ok(answers(`www.${OTHER}`, 1, '192.0.2.1'));

const gcPauses: number[] = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcPauses.push(e.duration);
}).observe({ entryTypes: ['gc'] });

/** GC entries reach the observer a little later: wait for those of the forced collections before counting. */
const settle = () => new Promise((r) => setTimeout(r, 100));

// The large entry: applied as sync-client does it; the other zone is asked every event-loop turn meanwhile.
const before = heap();
await settle();
// A node's store is open long before an import arrives: its writer thread (writerReady) has started meanwhile.
await new Promise((r) => setTimeout(r, Number(process.env.OPEN_MS ?? 5000)));
const load0 = loadavg()[0]!;
let otherAnswers = 0;
let otherWrong = 0;
let lastAnswer = performance.now();
let longestGap = 0;
let asking = true;
const ask = () => {
  if (!asking) return;
  const now = performance.now();
  longestGap = Math.max(longestGap, now - lastAnswer);
  lastAnswer = now;
  if (answers(`www.${OTHER}`, 1, '192.0.2.1')) otherAnswers++;
  else otherWrong++;
  setTimeout(ask, 1);
};
const lastName = `r${RECORDS - 1}.${APEX}`;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
gcPauses.length = 0;
setImmediate(ask);
// A large batch is written on the store's writer thread: the promise resolves once it is committed and heard.
await store.applyEncoded(unpackEntries(bigFrame));
const tApplied = performance.now();
const gapUntilCommitted = Math.max(longestGap, tApplied - lastAnswer);
const storeMs = tApplied - t0 - refreshMs;
while (!answers(lastName, 1, ip(RECORDS - 1, 0))) await new Promise((r) => setImmediate(r));
const tAnswered = performance.now();
const cpu = process.cpuUsage(cpu0);
asking = false;
longestGap = Math.max(longestGap, performance.now() - lastAnswer);
await settle();
const bigGc = { count: gcPauses.length, total: gcPauses.reduce((a, b) => a + b, 0), max: Math.max(0, ...gcPauses) };
const after = heap();
await settle();
for (const i of [0, RECORDS >> 1, RECORDS - 2]) assert.ok(answers(`r${i}.${APEX}`, 1, ip(i, 0)), `r${i}`);

// Single writes into the large zone: one record's address changed per delta, from the frame to the answer.
const lat: number[] = [];
const storeLat: number[] = [];
gcPauses.length = 0;
for (let k = 0; k < WRITES; k++) {
  const i = (k * 7919) % RECORDS;
  const target = ip(i, 1 + (k % 200));
  const f = frame(
    deltaEntry(++version, domainHeader(APEX, ++serial), { records: [zoneRecord(i + 10, `r${i}`, target)] }),
  );
  const w0 = performance.now();
  refreshMs = 0;
  await store.applyEncoded(unpackEntries(f));
  storeLat.push(performance.now() - w0 - refreshMs);
  while (!answers(`r${i}.${APEX}`, 1, target)) await new Promise((r) => setImmediate(r));
  lat.push(performance.now() - w0);
  await new Promise((r) => setTimeout(r, 2));
}
lat.sort((a, b) => a - b);
storeLat.sort((a, b) => a - b);
const at = (xs: number[], p: number) =>
  xs.length === 0 ? '-' : xs[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!.toFixed(2);
const pct = (p: number) => at(lat, p);

console.log(
  `${MODE} of ${RECORDS} records (${mb(bigFrame.length)} frame); ${cpus()[0]?.model}, Node ${process.version}`,
);
console.table({
  'frame → the store committed it and listeners heard it (ms)': (tApplied - t0).toFixed(0),
  'of which the store: split + LMDB transaction (ms)': storeMs.toFixed(0),
  'longest gap between answers until then (ms)': gapUntilCommitted.toFixed(1),
  'frame → last record answered (ms)': (tAnswered - t0).toFixed(0),
  'CPU user+system (ms)': ((cpu.user + cpu.system) / 1000).toFixed(0),
  'longest gap between answers of another zone (ms)': longestGap.toFixed(1),
  'answers of another zone meanwhile': `${otherAnswers} right, ${otherWrong} wrong`,
  'GC during apply (count / total ms / max ms)': `${bigGc.count} / ${bigGc.total.toFixed(0)} / ${bigGc.max.toFixed(1)}`,
  'heap kept after GC (per record)': `${mb(after.heap - before.heap)} (${((after.heap - before.heap) / RECORDS).toFixed(0)} B)`,
  'external kept (per record)': `${mb(after.external - before.external)} (${((after.external - before.external) / RECORDS).toFixed(0)} B)`,
  RSS: mb(after.rss),
  [`single write → answer, n=${WRITES} (p50 / p99 / max ms)`]: `${pct(50)} / ${pct(99)} / ${lat.at(-1)?.toFixed(2) ?? '-'}`,
  'of which the store (split + LMDB commit), p50 / p99 / max ms': `${at(storeLat, 50)} / ${at(storeLat, 99)} / ${storeLat.at(-1)?.toFixed(2) ?? '-'}`,
  'GC during writes (count / max ms)': `${gcPauses.length} / ${Math.max(0, ...gcPauses).toFixed(1)}`,
  'load average (1 min, start → end)': `${load0.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}`,
});
await store.close();
rmSync(dir, { recursive: true, force: true });
