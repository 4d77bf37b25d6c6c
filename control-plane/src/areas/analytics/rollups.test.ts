// The rollups (rollup.ts) on DuckDB: a stream of batches, some sent again, the store closed and opened again halfway,
// leaves rollups equal to the same aggregates computed again from the raw rows (rollupDrift), and the reads answered
// from them equal what the generated log gives, computed here; retention cutting a bucket in two; a file written
// before the rollups gets them on open. The same scenario runs on ClickHouse in clickhouse.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { cover, DAY, HOUR, LEVELS, MINUTE } from './rollup.js';
import { openDuckDbStore } from './duckdb-store.js';
import {
  assertAccountByPath,
  assertAccountGroups,
  assertReads,
  BASE,
  generateLog,
  RANGES,
  streamScenario,
} from './test-rollups.js';
import { PATH_SHARDS, shardOf, shardSql } from './duckdb-path-copy.js';

const T = 60_000;

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

test('copy by path: a path has the same shard in JavaScript (reads) as in DuckDB (ingest)', async () => {
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  try {
    const paths = [
      '/',
      '',
      '/a',
      '/p/7',
      '/b?x=1',
      '/ä/ü?q=€',
      '/%2e%2e/',
      '/日本',
      ...Array.from({ length: 64 }, (_, i) => `/x${i}`),
    ];
    const list = paths.map((p) => `'${p.replace(/'/g, "''")}'`).join(', ');
    const r = await c.runAndReadAll(`SELECT p, ${shardSql('p')} FROM unnest([${list}]) AS t(p)`);
    const got = new Map(r.getRowsJS().map(([p, s]) => [String(p), Number(s)]));
    for (const p of paths) assert.equal(got.get(p), shardOf(p), p);
    // The paths spread over the shards (not all in one).
    assert.ok(new Set(paths.map(shardOf)).size > PATH_SHARDS / 2);
  } finally {
    c.closeSync();
    db.closeSync();
  }
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

  await t.test('account reads of two domains: filtered on a path, grouped by domain', async () => {
    const seven = generateLog(7, 600, 5);
    await store.append(seven, { node: 'edge-a', id: 'seven' });
    assert.equal(await store.rollupDrift(7), 0);
    const left = rows.filter((x) => x.time.getTime() >= BASE + 13 * HOUR + 17 * MINUTE + 31_250);
    for (const range of RANGES) await assertAccountByPath(store, [5, 7], [...left, ...seven], range);
    for (const range of RANGES.slice(1, 3)) await assertAccountGroups(store, [5, 7], [...left, ...seven], range);
  });

  await t.test('a domain deleted: its rollups with it', async () => {
    await store.append(generateLog(6, 50, 3), { node: 'edge-a', id: 'six' });
    await store.deleteDomain(6);
    assert.equal(await store.countRows(6), 0);
    assert.deepEqual((await store.summary(6, RANGES[0], T)).requests, 0);
    assert.deepEqual((await store.summary(6, { ...RANGES[0], filter: { path: '/a' } }, T)).requests, 0);
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

  await t.test('a file with the first rollups only: the kinds added since built on open', async () => {
    const old = mkdtempSync(join(tmpdir(), 'analytics-rollups-first-'));
    t.after(() => rmSync(old, { recursive: true, force: true }));
    const first = openDuckDbStore({ dir: old, memoryLimitMb: 256, threads: 1 });
    const log = generateLog(9, 1500, 13);
    await first.append(log, { node: 'edge-a', id: 'one' });
    await first.close();
    // The rules, WAF, fingerprints and path clients rollups came after the first five kinds, the per-dimension clients
    // and upstream times after those: a file of that version lacks them. The per-dimension clients were one table per
    // level before they were split by column (13 tables of the hour level now): such a table is dropped on open.
    const db = await DuckDBInstance.create(join(old, 'analytics.duckdb'));
    const c = await db.connect();
    const names = await c.runAndReadAll(
      `SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'
         AND regexp_full_match(table_name, 'r[rwfqde]_9_[0-9]+(_[0-9]+)?')`,
    );
    const perLevel = (kinds: (keyof typeof LEVELS)[]) => kinds.reduce((n, k) => n + LEVELS[k].length, 0);
    assert.equal(
      names.currentRowCount,
      perLevel(['rules', 'waf', 'fingerprints', 'pathClients', 'dimUpstream']) + 13 * LEVELS.dimClients.length,
    );
    for (const [name] of names.getRowsJS()) await c.run(`DROP TABLE main.${String(name)}`);
    await c.run(`CREATE TABLE main.rd_9_3600 (b BIGINT, dim UTINYINT, value VARCHAR, client_ip VARCHAR)`);
    // The path totals of an earlier version (replaced by the copy by path): dropped on open too.
    await c.run(`CREATE TABLE main.rk_9_3600 (b BIGINT, host VARCHAR, path VARCHAR, requests BIGINT)`);
    c.closeSync();
    db.closeSync();

    const again = openDuckDbStore({ dir: old, memoryLimitMb: 256, threads: 1 });
    t.after(() => again.close());
    assert.equal(await again.rollupDrift(9), 0);
    for (const range of RANGES) await assertReads(again, 9, log, range);
    await again.close();
    const after = await DuckDBInstance.create(join(old, 'analytics.duckdb'));
    const a = await after.connect();
    const left = await a.runAndReadAll(
      `SELECT table_name FROM duckdb_tables() WHERE table_name IN ('rd_9_3600', 'rk_9_3600')`,
    );
    assert.equal(left.currentRowCount, 0, 'the tables of earlier versions dropped');
    a.closeSync();
    after.closeSync();
  });
});
