// The ClickHouse backend of the analytics store (ANALYTICS_BACKEND=clickhouse) against a real ClickHouse server
// started here (test/helpers/clickhouse-server.ts): the store's writes (idempotent batches, also of several domains;
// deletes; retention), filter values that try to break out of their literal, the refusal of POST /analytics/query,
// and the rollups' scenario. clickhouse-reads.test.ts runs the reads' own test files again on ClickHouse.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '@clickhouse/client';
import { eq } from 'drizzle-orm';
import { domains } from '../../db/schema.js';
import { setOverride } from '../../plans/subscriptions.js';
import { startClickHouse } from '../../../../test/helpers/clickhouse-server.js';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { CLICKHOUSE_QUERY_REFUSED, chString, openClickHouseStore } from './clickhouse-store.js';
import { QueryFailed, type LogRow } from './store.js';
import {
  assertAccountByPath,
  assertAccountGroups,
  assertReads,
  BASE,
  generateLog,
  RANGES,
  streamScenario,
} from './test-rollups.js';

const HOUR = 3_600_000;

function row(domainId: number, time: number, extra: Partial<LogRow> = {}): LogRow {
  return {
    time: new Date(time),
    domainId,
    ownerId: 1,
    node: 'edge-a',
    host: `d${domainId}.example.org`,
    path: '/',
    method: 'GET',
    status: 200,
    bytes: 100,
    cacheStatus: 'MISS',
    ruleHits: [],
    wafEvents: [],
    durationMs: 1,
    upstreamMs: 0.5,
    clientIp: '198.51.100.1',
    fingerprint: '',
    botScore: 0,
    botClass: '',
    ...extra,
  };
}

test('analytics on ClickHouse: the store and its rollups', { timeout: 900_000 }, async (t) => {
  const server = await startClickHouse();
  t.after(() => server.stop());

  await t.test('batches are stored once; deletes, retention, domain ids', async () => {
    const store = openClickHouseStore({ url: server.url, database: 'store_test' });
    t.after(() => store.close());
    const now = Date.now();
    const rows = [row(1, now - 1000), row(1, now - 2000), row(2, now - 3000), row(2, now - 10 * HOUR)];
    assert.equal(await store.append(rows, { node: 'edge-a', id: 'b1' }), true);
    assert.equal(await store.append(rows, { node: 'edge-a', id: 'b1' }), false, 'the same batch again');
    assert.equal(await store.append(rows.slice(0, 1), { node: 'edge-b', id: 'b1' }), true, 'another node');
    assert.equal(await store.countRows(1), 3);
    assert.equal(await store.countRows(2), 2);
    assert.deepEqual(await store.domainIds(), [1, 2]);

    // A batch of several domains, sent again: its rows are found by their batch id in each domain's time span.
    const mixed = [row(3, now - 500), row(1, now - 5 * HOUR), row(3, now - 700)];
    assert.equal(await store.append(mixed, { node: 'edge-a', id: 'b2' }), true);
    assert.equal(await store.append(mixed, { node: 'edge-a', id: 'b2' }), false);
    assert.equal(await store.append(mixed.slice(0, 1), { node: 'edge-a', id: 'b3' }), true);
    assert.equal(await store.countRows(3), 3);
    assert.equal(await store.countRows(1), 4);
    const raw = createClient({ url: server.url });
    t.after(() => raw.close());

    assert.equal(await store.deleteBefore(2, new Date(now - HOUR)), 1);
    assert.equal(await store.countRows(2), 1);
    assert.equal(await store.deleteBefore(2, new Date(now - HOUR)), 0);
    await store.deleteDomain(2);
    assert.equal(await store.countRows(2), 0);
    assert.deepEqual(await store.domainIds(), [1, 3]);
    // Rows of a deleted domain arriving later are not stored.
    assert.equal(await store.append([row(2, now)]), true);
    const [left] = await (
      await raw.query({ query: 'SELECT count() AS n FROM store_test.logs WHERE domain_id = 2', format: 'JSONEachRow' })
    ).json<{ n: string }>();
    assert.equal(Number(left.n), 0);

    await assert.rejects(
      store.query('SELECT 1 FROM logs', [{ id: 1, name: 'd1.example.org' }], { timeoutMs: 1000, maxRows: 10 }),
      (err: unknown) => err instanceof QueryFailed && err.message === CLICKHOUSE_QUERY_REFUSED,
    );
  });

  await t.test('a filter value is a value, whatever it holds', async () => {
    const store = openClickHouseStore({ url: server.url, database: 'filter_test' });
    t.after(() => store.close());
    const now = Date.now();
    const odd = ["x' OR '1'='1", "\\' OR 1=1 --", 'a\\', "'", '\u0000\n\t\u007f', '日本\u{1F600}', '%_*'];
    await store.append(odd.map((path, i) => row(5, now - i * 1000, { path })));
    const range = { since: new Date(now - HOUR), until: new Date(now + 1000) };
    for (const path of odd) {
      const got = await store.breakdown(5, { ...range, filter: { path } }, 'path', 10, 10_000);
      assert.deepEqual(got, [{ value: path, requests: 1, bytes: 100, originBytes: 0 }], JSON.stringify(path));
    }
    assert.equal(chString("a'b\\c\n"), "'a\\'b\\\\c\\x0a'");
  });

  await t.test('POST /analytics/query answers 400 with the refusal', async (t) => {
    const cp = await startTestControlPlane(t, {
      ANALYTICS_BACKEND: 'clickhouse',
      ANALYTICS_CLICKHOUSE_URL: server.url,
      ANALYTICS_CLICKHOUSE_DATABASE: 'query_test',
    });
    const user = await cp.user();
    const name = await cp.domain(user.key, 'ch-query.example.org');
    const [d] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
    await setOverride(cp.database.db, d.id, 'logs_enabled', true);
    const res = await cp.call(user.key, 'POST', '/analytics/query', { query: 'SELECT count(*) FROM logs' });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal((JSON.parse(res.body) as { error: string }).error, CLICKHOUSE_QUERY_REFUSED);
  });

  await t.test('a logs table of the first columns gets the later ones on open, every row kept', async () => {
    const raw = createClient({ url: server.url });
    t.after(() => raw.close());
    await raw.command({ query: 'CREATE DATABASE IF NOT EXISTS later_test' });
    // The table as the first ClickHouse store created it (no later fields).
    await raw.command({
      query: `CREATE TABLE later_test.logs (time DateTime('UTC'), time_us Int64, time_utc DateTime('UTC'),
        domain_id UInt32, owner_id UInt32, node String, host String, path String, method String, status Int32,
        bytes Int64, cache_status String, rule_hits String, rule_ids Array(Int64), rule_types Array(String),
        rule_dry Array(UInt8), waf_events String, waf_actions Array(String), duration_ms Float64, upstream_ms Float64,
        client_ip String, fingerprint String, bot_score Int32, bot_class String, row_id UInt64, batch String)
        ENGINE = MergeTree ORDER BY (domain_id, time_us)`,
    });
    const now = Date.now();
    await raw.insert({
      table: 'later_test.logs',
      format: 'JSONEachRow',
      values: [
        {
          time: Math.floor(now / 1000),
          time_us: now * 1000,
          domain_id: 7,
          path: '/old',
          rule_hits: '[]',
          waf_events: '[]',
        },
      ],
    });
    const store = openClickHouseStore({ url: server.url, database: 'later_test' });
    t.after(() => store.close());
    assert.equal(await store.countRows(7), 1);
    await store.append([row(7, now - 10, { path: '/new', country: 'US', asn: 15169, originBytes: 9, markdown: true })]);
    const range = { since: new Date(now - HOUR), until: new Date(now + 1000), filter: {} };
    const page = await store.logs(7, range, 10, null, 10_000);
    assert.deepEqual(
      page.logs.map((l) => [l.path, l.country, l.asn, l.origin_bytes, l.markdown, l.tls_version]),
      [
        ['/old', '', 0, 0, false, ''],
        ['/new', 'US', 15169, 9, true, ''],
      ],
    );
    assert.equal((await store.summary(7, { ...range, filter: { markdown: true } }, 10_000)).requests, 1);
    assert.equal(await store.rollupDrift(7), 0, 'rollups built from the older table on open');
  });

  await t.test(
    'rollups: batches sent again and restarts leave them exact; retention; a database without them',
    async (t) => {
      const open = () => openClickHouseStore({ url: server.url, database: 'rollup_test' });
      const rows = generateLog(5, 3000);
      const store = await streamScenario(t, open, 5, rows);
      const before = BASE + 13 * HOUR + 17 * 60_000 + 31_250;
      assert.equal(await store.deleteBefore(5, new Date(before)), rows.filter((x) => x.time.getTime() < before).length);
      assert.equal(await store.rollupDrift(5), 0, 'after retention');
      const left = rows.filter((x) => x.time.getTime() >= before);
      for (const range of RANGES) await assertReads(store, 5, left, range);
      const seven = generateLog(7, 600, 5);
      await store.append(seven, { node: 'edge-a', id: 'seven' });
      for (const range of RANGES) await assertAccountByPath(store, [5, 7], [...left, ...seven], range);
      for (const range of RANGES.slice(1, 3)) await assertAccountGroups(store, [5, 7], [...left, ...seven], range);
      await store.close();

      // The database as the version before the rollups left it: the views and rollup tables gone.
      const raw = createClient({ url: server.url });
      t.after(() => raw.close());
      const tables = await (
        await raw.query({
          query: `SELECT name FROM system.tables WHERE database = 'rollup_test' AND name != 'logs'`,
          format: 'JSONEachRow',
        })
      ).json<{ name: string }>();
      assert.ok(tables.length >= 10);
      for (const { name } of tables) await raw.command({ query: `DROP TABLE rollup_test.${name}` });
      // A rollup of an earlier version that nothing fills or reads any more, with its view: dropped on open.
      await raw.command({
        query: `CREATE TABLE rollup_test.rd (domain_id UInt32) ENGINE = MergeTree ORDER BY domain_id`,
      });
      await raw.command({
        query: `CREATE MATERIALIZED VIEW rollup_test.rd_mv TO rollup_test.rd AS SELECT domain_id FROM rollup_test.logs`,
      });
      const again = open();
      t.after(() => again.close());
      assert.equal(await again.rollupDrift(5), 0, 'built again from the rows on open');
      const legacy = await (
        await raw.query({
          query: `SELECT name FROM system.tables WHERE database = 'rollup_test' AND name IN ('rd', 'rd_mv')`,
          format: 'JSONEachRow',
        })
      ).json<{ name: string }>();
      assert.deepEqual(legacy, [], 'the per-dimension rollup of an earlier version and its view dropped');
      for (const range of RANGES) await assertReads(again, 5, left, range);
      await again.deleteDomain(5);
      assert.equal((await again.summary(5, RANGES[0], 10_000)).requests, 0);
      assert.equal((await again.summary(5, { ...RANGES[0], filter: { path: '/a' } }, 10_000)).requests, 0, 'by path');
    },
  );
});
