// The rollups (rollup.ts) on DuckDB: a stream of batches, some sent again, the store closed and opened again halfway,
// leaves rollups equal to the same aggregates computed again from the raw rows (rollupDrift), and the reads answered
// from them equal what the generated log gives, computed here; retention cutting a bucket in two; a file written
// before the rollups gets them on open. The same scenario runs on ClickHouse in clickhouse.test.ts.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { cover, DAY, HOUR, MINUTE } from './rollup.js';
import { openDuckDbStore } from './duckdb-store.js';
import type { AnalyticsStore, LogRow } from './store.js';
import type { ReadRange } from './reads.js';
import { lcg, pick } from './test-log.js';

const T = 60_000;
/** Whole hours from here: the log spans day, hour, 15, 5 and 1-minute buckets and their edges. */
const BASE = Date.UTC(2026, 10, 24, 22, 0, 0);

/** A log of `n` rows over about 26 hours, in no particular order within a batch, of one domain. */
export function generateLog(domainId: number, n: number, seed = 7): LogRow[] {
  const r = lcg(seed);
  const rows: LogRow[] = [];
  for (let i = 0; i < n; i++) {
    const toOrigin = r() < 0.6;
    rows.push({
      // Clustered: many rows share a second (the peak), some in the last milliseconds of a bucket.
      time: new Date(BASE + Math.floor(r() * 26 * HOUR) - (r() < 0.1 ? Math.floor(r() * 3) : 0)),
      domainId,
      ownerId: 1,
      node: pick(r, ['edge-a', 'edge-b']),
      host: pick(r, ['a.example.org', 'b.example.org']),
      path: pick(r, ['/', '/a', '/b?x=1', '/c/d']),
      method: pick(r, ['GET', 'GET', 'POST']),
      status: pick(r, [200, 200, 200, 304, 404, 403, 500]),
      bytes: Math.floor(r() * 10_000),
      cacheStatus: pick(r, ['HIT', 'MISS', 'STALE', 'BYPASS', '']),
      ruleHits: r() < 0.2 ? [[pick(r, [3, 4]), pick(r, ['waf', 'custom', 'cache']), r() < 0.5]] : [],
      wafEvents: r() < 0.1 ? [[3, '942100', 2, 'ARGS:q', 'x', pick(r, ['block', 'log'])]] : [],
      durationMs: Math.round(r() * 5000) / 10,
      upstreamMs: toOrigin ? Math.round(r() * 3000) / 10 : -1,
      clientIp: `198.51.100.${Math.floor(r() * 40)}`,
      fingerprint: '',
      botScore: 0,
      botClass: pick(r, ['', '', 'ai_crawler']),
      servingPath: pick(r, ['', 'origin', 'cache', 'edge']),
      unservedReason: pick(r, ['', '', 'waf_block', 'origin_timeout']),
      originBytes: toOrigin ? Math.floor(r() * 5000) : 0,
      country: pick(r, ['US', 'DE', '']),
    });
  }
  return rows;
}

const inRange = (rows: LogRow[], range: ReadRange) =>
  rows.filter((x) => x.time.getTime() >= range.since.getTime() && x.time.getTime() < range.until.getTime());
const sum = (xs: LogRow[], f: (x: LogRow) => number) => xs.reduce((a, x) => a + f(x), 0);
const nearestRank = (sorted: number[], q: number) => sorted[Math.ceil(q * sorted.length) - 1];

/** What the reads answer over `rows`, computed here. */
function expectSummary(rows: LogRow[]) {
  const cached = rows.filter((x) => x.cacheStatus === 'HIT' || x.cacheStatus === 'STALE');
  const origin = rows.filter((x) => x.upstreamMs >= 0);
  const ms = origin.map((x) => x.upstreamMs).sort((a, b) => a - b);
  return {
    requests: rows.length,
    bytes: sum(rows, (x) => x.bytes),
    visitors: new Set(rows.map((x) => x.clientIp)).size,
    cachedRequests: cached.length,
    cachedBytes: sum(cached, (x) => x.bytes),
    originRequests: origin.length,
    originBytes: sum(origin, (x) => x.bytes),
    percentiles: ms.length ? [0.5, 0.95, 0.99].map((q) => nearestRank(ms, q)) : null,
    avg: ms.length ? sum(origin, (x) => x.upstreamMs) / ms.length : null,
    status4xx: rows.filter((x) => x.status >= 400 && x.status < 500).length,
    status5xx: rows.filter((x) => x.status >= 500).length,
    originFetchedBytes: sum(rows, (x) => x.originBytes ?? 0),
  };
}

function expectSeries(rows: LogRow[], startMs: number, intervalMs: number) {
  const by = new Map<number, LogRow[]>();
  for (const x of rows) {
    const b = Math.floor((x.time.getTime() - startMs) / intervalMs);
    by.set(b, [...(by.get(b) ?? []), x]);
  }
  return [...by.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([bucket, xs]) => ({
      bucket,
      requests: xs.length,
      bytes: sum(xs, (x) => x.bytes),
      visitors: new Set(xs.map((x) => x.clientIp)).size,
    }));
}

function expectPeak(rows: LogRow[]) {
  const per = new Map<number, number>();
  for (const x of rows)
    per.set(Math.floor(x.time.getTime() / 1000), (per.get(Math.floor(x.time.getTime() / 1000)) ?? 0) + 1);
  let best: { time: Date; requests: number } | null = null;
  for (const [s, n] of [...per.entries()].sort((a, b) => a[0] - b[0]))
    if (!best || n > best.requests) best = { time: new Date(s * 1000), requests: n };
  return best;
}

function expectTop(rows: LogRow[], key: (x: LogRow) => string | number, limit: number) {
  const by = new Map<string | number, LogRow[]>();
  for (const x of rows) by.set(key(x), [...(by.get(key(x)) ?? []), x]);
  return [...by.entries()]
    .map(([value, xs]) => ({
      value,
      requests: xs.length,
      bytes: sum(xs, (x) => x.bytes),
      originBytes: sum(xs, (x) => x.originBytes ?? 0),
    }))
    .sort((a, b) => b.requests - a.requests || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
    .slice(0, limit);
}

/** Every read the rollups answer, over `range`, against the log computed here. */
export async function assertReads(store: AnalyticsStore, domainId: number, rows: LogRow[], range: ReadRange) {
  const inside = inRange(rows, range);
  const e = expectSummary(inside);
  const got = await store.summary(domainId, range, T);
  const { upstreamMs, ...totals } = got;
  const { percentiles, avg, ...want } = e;
  assert.deepEqual(totals, want);
  if (percentiles === null || avg === null) assert.equal(upstreamMs, null);
  else {
    assert.ok(upstreamMs);
    assert.deepEqual([upstreamMs.p50, upstreamMs.p95, upstreamMs.p99], percentiles);
    assert.ok(Math.abs(upstreamMs.avg - avg) < 1e-9);
  }
  for (const interval of [MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR, DAY]) {
    const start = Math.floor(range.since.getTime() / interval) * interval;
    if ((range.until.getTime() - start) / interval > 1500) continue;
    assert.deepEqual(
      await store.series(domainId, range, start, interval, T),
      expectSeries(inside, start, interval),
      `series by ${interval / MINUTE} min`,
    );
  }
  assert.deepEqual(await store.peak(domainId, range, T), expectPeak(inside));
  assert.deepEqual(
    await store.breakdown(domainId, range, 'status', 100, T),
    expectTop(inside, (x) => x.status, 100),
  );
  assert.deepEqual(
    await store.breakdown(domainId, range, 'client_ip', 10, T),
    expectTop(inside, (x) => x.clientIp, 10),
  );
  assert.deepEqual(
    await store.breakdown(domainId, range, 'path', 10, T),
    expectTop(inside, (x) => x.path, 10),
  );
  const filtered = { ...range, filter: { cache_status: 'HIT' } };
  assert.deepEqual(
    await store.breakdown(domainId, filtered, 'country', 10, T),
    expectTop(
      inside.filter((x) => x.cacheStatus === 'HIT'),
      (x) => x.country ?? '',
      10,
    ),
  );
}

/** Ranges with edges inside buckets of every level, whole buckets, and the whole log. */
export const RANGES: ReadRange[] = [
  { since: new Date(BASE - HOUR), until: new Date(BASE + 27 * HOUR), filter: {} },
  { since: new Date(BASE + 1234), until: new Date(BASE + 25 * HOUR + 61_001), filter: {} },
  { since: new Date(BASE + 3 * HOUR + 7 * MINUTE + 500), until: new Date(BASE + 5 * HOUR + 2 * MINUTE), filter: {} },
  { since: new Date(BASE + 2 * HOUR), until: new Date(BASE + 2 * HOUR + 90_000), filter: {} },
];

/**
 * Batches of `rows` appended with ids, some sent twice, the store reopened halfway (`reopen`): afterwards the rollups
 * equal a recomputation from the raw rows, and the reads equal the log's numbers.
 */
export async function streamScenario(
  t: TestContext,
  open: () => AnalyticsStore,
  domainId: number,
  rows: LogRow[],
): Promise<AnalyticsStore> {
  let store = open();
  const batches: LogRow[][] = [];
  for (let i = 0; i < rows.length; i += 97) batches.push(rows.slice(i, i + 97));
  for (const [n, batch] of batches.entries()) {
    if (n === Math.floor(batches.length / 2)) {
      await store.close();
      store = open();
    }
    assert.equal(await store.append(batch, { node: 'edge-a', id: `b${n}` }), true);
    if (n % 5 === 0) assert.equal(await store.append(batch, { node: 'edge-a', id: `b${n}` }), false, 'sent again');
  }
  // The last batch again after a restart: still stored once.
  await store.close();
  store = open();
  t.after(() => store.close());
  assert.equal(await store.append(batches.at(-1) ?? [], { node: 'edge-a', id: `b${batches.length - 1}` }), false);
  assert.equal(await store.countRows(domainId), rows.length);
  assert.equal(await store.rollupDrift(domainId), 0, 'rollups equal the raw rows aggregated again');
  for (const range of RANGES) await assertReads(store, domainId, rows, range);
  return store;
}

test('cover: whole buckets of the longest levels, raw ends, nothing twice', () => {
  const levels = [DAY, HOUR, 5 * MINUTE, MINUTE];
  const lo = BASE + 1234;
  const hi = BASE + 2 * DAY + 3 * HOUR + 7 * MINUTE + 5;
  const c = cover(lo, hi, levels);
  const parts = [
    ...c.pieces.map((p) => [p.lo, p.hi, p.lvl] as const),
    ...c.raw.map((s) => [s.lo, s.hi, 0] as const),
  ].sort((a, b) => a[0] - b[0]);
  assert.equal(parts[0][0], lo);
  assert.equal(parts.at(-1)?.[1], hi);
  for (let i = 1; i < parts.length; i++) assert.equal(parts[i][0], parts[i - 1][1], 'contiguous');
  for (const [a, b, l] of parts) if (l) assert.ok(a % l === 0 && b % l === 0 && b > a);
  assert.ok(c.raw.every((s) => s.hi - s.lo < MINUTE));
  assert.deepEqual(
    c.pieces.filter((p) => p.lvl === DAY),
    [{ lvl: DAY, lo: Math.ceil(lo / DAY) * DAY, hi: Math.floor(hi / DAY) * DAY }],
  );
  assert.deepEqual(cover(BASE + 10, BASE + 20, levels), { pieces: [], raw: [{ lo: BASE + 10, hi: BASE + 20 }] });
});

test('DuckDB rollups: batches sent again and a restart leave them exact; retention; a file without them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'analytics-rollups-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const open = () => openDuckDbStore({ dir, memoryLimitMb: 256, threads: 1 });
  const rows = generateLog(5, 3000);

  const store = await streamScenario(t, open, 5, rows);

  await t.test('retention cutting buckets of every level in two', async () => {
    const before = BASE + 13 * HOUR + 17 * MINUTE + 31_250;
    const gone = rows.filter((x) => x.time.getTime() < before).length;
    assert.equal(await store.deleteBefore(5, new Date(before)), gone);
    assert.equal(await store.rollupDrift(5), 0);
    const left = rows.filter((x) => x.time.getTime() >= before);
    for (const range of RANGES) await assertReads(store, 5, left, range);
  });

  await t.test('a domain deleted: its rollups with it', async () => {
    await store.append(generateLog(6, 50, 3), { node: 'edge-a', id: 'six' });
    await store.deleteDomain(6);
    assert.equal(await store.countRows(6), 0);
    assert.deepEqual((await store.summary(6, RANGES[0], T)).requests, 0);
  });
  await store.close();

  await t.test('a file written before the rollups: built once on open from every row', async () => {
    const old = mkdtempSync(join(tmpdir(), 'analytics-rollups-old-'));
    t.after(() => rmSync(old, { recursive: true, force: true }));
    // Rows stored by the store, then its rollup tables dropped: the file as the version before the rollups left it.
    const first = openDuckDbStore({ dir: old, memoryLimitMb: 256, threads: 1 });
    const log = generateLog(8, 1500, 11);
    await first.append(log, { node: 'edge-a', id: 'one' });
    await first.close();
    const db = await DuckDBInstance.create(join(old, 'analytics.duckdb'));
    const c = await db.connect();
    const names = await c.runAndReadAll(
      `SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND NOT regexp_full_match(table_name, 'd_[0-9]+')
         AND table_name <> 'applied_batches'`,
    );
    assert.ok(names.currentRowCount > 0);
    for (const [name] of names.getRowsJS()) await c.run(`DROP TABLE main.${String(name)}`);
    c.closeSync();
    db.closeSync();

    const again = openDuckDbStore({ dir: old, memoryLimitMb: 256, threads: 1 });
    t.after(() => again.close());
    assert.equal(await again.countRows(8), 1500);
    assert.equal(await again.rollupDrift(8), 0);
    for (const range of RANGES) await assertReads(again, 8, log, range);
    assert.equal(await again.append(log, { node: 'edge-a', id: 'one' }), false);
  });
});
