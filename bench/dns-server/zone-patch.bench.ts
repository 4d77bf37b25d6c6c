// What one record change costs a DNS node on a 10,000-record zone: a one-record delta entry applied to the node store
// (one LMDB transaction) and patched into the served zone, as the node does it; the patch alone; and, for comparison,
// compiling the whole zone (what every change cost before patches, and what a snapshot still costs).
// Run: node --import tsx bench/dns-server/zone-patch.bench.ts (env RECORDS, default 10000; TIME_MS per task, 2000)
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Bench } from 'tinybench';
import { componentLogger } from '@platform/shared';
import type { DomainSnapshot, ZoneRecord } from '@platform/shared/config';
import { domainChange, openNodeStore } from '@platform/shared/node-store';
import { deltaEntry, snapshotEntry } from '@platform/shared/testing/config-entries';
import { createCounters } from '../../dns-server/src/counters.js';
import { answerQuery } from '../../dns-server/src/handler.js';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { ZoneBuilder } from '../../dns-server/src/zone/builder.js';
import { compileZone } from '../../dns-server/src/zone/compile.js';
import { ZoneTable } from '../../dns-server/src/zone/table.js';
import { ZoneSet } from '../../dns-server/src/zone/zone-set.js';
import { APEX, generateZone } from './zone-gen.js';

const RECORDS = Number(process.env.RECORDS ?? 10_000);
const EDGE = { edgeIpv4: ['203.0.113.1'], edgeIpv6: ['2001:db8::1'] };
const base = generateZone(RECORDS, 2, 1).snapshot;
const header = (serial: number): DomainSnapshot => ({ ...base, zone: { ...base.zone, serial, records: [] } });
/** The k-th change: a TTL change of a record spread over the zone (CNAME, MX and SRV targets included). */
const changed = (k: number): ZoneRecord => {
  const r = base.zone.records[(k * 7919) % base.zone.records.length]!;
  return { ...r, ttl: 60 + (k % 3000) };
};

// The node's path: store (LMDB, default durability) → onApplied → ZoneSet.refresh.
const dir = mkdtempSync(join(tmpdir(), 'bench-zone-patch-'));
const store = openNodeStore(join(dir, 'lmdb'));
const table = new ZoneTable();
const counters = createCounters();
const zones = new ZoneSet(table, store, EDGE, counters, componentLogger('bench.zone-patch'));
store.onApplied((e) => zones.refresh(domainChange(e)));
let version = 1;
let serial = 1;
store.apply(snapshotEntry(version, base));
assert.equal(counters.dns_zone_compiles_total, 1);

const builder = new ZoneBuilder(base, EDGE);
let k = 0;
const bench = new Bench({ time: Number(process.env.TIME_MS ?? 2000), iterations: 10, warmupTime: 300 });
bench
  .add('node: one-record delta (LMDB transaction + zone patch)', () => {
    const n = k++;
    store.apply(deltaEntry(++version, header(++serial), { records: [changed(n)] }));
  })
  .add('zone patch alone (ZoneBuilder.apply)', () => {
    const n = k++;
    builder.apply(header(++serial), [changed(n)], []);
  })
  .add(`whole-zone compile (compileZone, ${RECORDS} records)`, () => {
    compileZone(base, EDGE);
  });
await bench.run();

// Correctness after timing: every delta was a patch, and the patched zone answers like one compiled from scratch.
assert.equal(counters.dns_zone_compiles_total, 1, 'no whole compile after the first');
assert.equal(counters.dns_zone_patches_total, version - 1);
const fresh = new ZoneTable();
fresh.set(compileZone(store.getSnapshot(APEX)!, EDGE).zone!);
for (const r of store.getSnapshot(APEX)!.zone.records.slice(0, 2000)) {
  const q = buildQuery(`${r.name}.${APEX}`, { A: 1, AAAA: 28, CNAME: 5, MX: 15, TXT: 16, SRV: 33, CAA: 257 }[r.type]!);
  const got = answerQuery(q, q.length, true, table, counters)!;
  assert.ok(got.equals(answerQuery(q, q.length, true, fresh, counters)!), `${r.name} ${r.type}`);
}
await store.close();
rmSync(dir, { recursive: true, force: true });

const rows = bench.tasks.map((task) => {
  const l = (task.result as { latency?: { p50?: number; p99?: number; min: number } } | undefined)?.latency;
  return { task: task.name, 'p50 ms': l?.p50?.toFixed(3), 'p99 ms': l?.p99?.toFixed(3), 'min ms': l?.min.toFixed(3) };
});
console.log(`zone ${APEX}: ${RECORDS} records; ${cpus()[0]?.model}, Node ${process.version}`);
console.table(rows);
