// The rollups' test scenario, for rollups.test.ts (DuckDB) and clickhouse.test.ts: a generated log of known content,
// the reads the rollups answer computed again here, and a stream of batches with some sent again and a restart.
import type { TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { DAY, HOUR, MINUTE } from './rollup.js';
import type { AnalyticsStore, LogRow } from './store.js';
import type { Dimension, ReadRange } from './reads.js';
import type { GroupDimension } from './account-reads.js';
import { lcg, pick } from './test-log.js';

const T = 60_000;
/** Whole hours from here: the log spans day, hour, 15, 5 and 1-minute buckets and their edges. */
export const BASE = Date.UTC(2026, 10, 24, 22, 0, 0);

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
      // Rule hits of one or two rules; WAF findings of one or two actions, a request with two of the same now and then.
      ruleHits:
        r() < 0.2
          ? [
              [pick(r, [3, 4]), pick(r, ['waf', 'custom', 'cache']), r() < 0.5],
              ...(r() < 0.3 ? [[5, 'waf', false] as [number, string, boolean]] : []),
            ]
          : [],
      wafEvents:
        r() < 0.1
          ? [
              [3, '942100', 2, 'ARGS:q', 'x', pick(r, ['block', 'log'])],
              ...(r() < 0.4
                ? [
                    [
                      3,
                      '941100',
                      2,
                      'ARGS:p',
                      'y',
                      pick(r, ['block', 'log', 'challenge']),
                    ] as LogRow['wafEvents'][number],
                  ]
                : []),
            ]
          : [],
      durationMs: Math.round(r() * 5000) / 10,
      upstreamMs: toOrigin ? Math.round(r() * 3000) / 10 : -1,
      clientIp: `198.51.100.${Math.floor(r() * 40)}`,
      fingerprint: pick(r, ['', '', 'fa', 'fb', 'fc']),
      // Scores and rate-limit refusals by the row's index (not drawn: the rows' other fields stay as they were).
      botScore: (i * 37) % 100,
      rateLimitRule: i % 9 === 0 ? 1 + (i % 2) : 0,
      rateLimitKey: i % 9 === 0 ? `ip=198.51.100.${i % 5}` : '',
      botClass: pick(r, ['', '', 'ai_crawler']),
      servingPath: pick(r, ['', 'origin', 'cache', 'edge']),
      unservedReason: pick(r, ['', '', 'waf_block', 'origin_timeout']),
      originBytes: toOrigin ? Math.floor(r() * 5000) : 0,
      country: pick(r, ['US', 'DE', '']),
      asn: pick(r, [0, 64500, 64500, 64501]),
    });
    // The AS organisation by the row's index (not drawn: the other fields stay as they were): one AS number with an
    // unknown organisation on some rows, one with two names, so the label (the largest) is tested.
    const row = rows[rows.length - 1];
    row.asOrg = row.asn === 64500 ? (i % 5 === 0 ? '' : 'Example Net') : row.asn === 64501 ? `Other ${i % 2}` : '';
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

const cmp = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);

function expectRules(rows: LogRow[], limit: number) {
  const by = new Map<string, { ruleId: number; ruleType: string; hits: number; dryRun: number }>();
  for (const x of rows)
    for (const [id, type, dry] of x.ruleHits) {
      const k = `${id}/${type}`;
      const e = by.get(k) ?? { ruleId: id, ruleType: type, hits: 0, dryRun: 0 };
      e.hits++;
      if (dry) e.dryRun++;
      by.set(k, e);
    }
  return [...by.values()]
    .sort((a, b) => b.hits - a.hits || a.ruleId - b.ruleId || cmp(a.ruleType, b.ruleType))
    .slice(0, limit);
}

function expectActions(rows: LogRow[]) {
  const by = new Map<string, { action: string; events: number; requests: number }>();
  for (const x of rows) {
    for (const e of x.wafEvents) {
      const a = by.get(e[5]) ?? { action: e[5], events: 0, requests: 0 };
      a.events++;
      by.set(e[5], a);
    }
    for (const action of new Set(x.wafEvents.map((e) => e[5]))) (by.get(action) ?? { requests: 0 }).requests++;
  }
  return [...by.values()].sort((a, b) => b.events - a.events || cmp(a.action, b.action));
}

function expectProxyClients(rows: LogRow[], minRequests: number, minFingerprints: number, limit: number) {
  const by = new Map<string, LogRow[]>();
  for (const x of rows) by.set(x.clientIp, [...(by.get(x.clientIp) ?? []), x]);
  const distinct = (xs: string[]) => new Set(xs.filter((v) => v !== '')).size;
  return [...by.entries()]
    .map(([clientIp, xs]) => ({
      clientIp,
      requests: xs.length,
      bytes: sum(xs, (x) => x.bytes),
      fingerprints: distinct(xs.map((x) => x.fingerprint)),
      domains: new Set(xs.map((x) => x.domainId)).size,
      botClasses: distinct(xs.map((x) => x.botClass)),
    }))
    .filter((c) => c.requests >= minRequests && c.fingerprints >= minFingerprints)
    .sort((a, b) => b.fingerprints - a.fingerprints || b.requests - a.requests || cmp(a.clientIp, b.clientIp))
    .slice(0, limit);
}

function expectGroups(rows: LogRow[], key: (x: LogRow) => (string | number)[], limit: number) {
  const by = new Map<string, LogRow[]>();
  for (const x of rows) by.set(JSON.stringify(key(x)), [...(by.get(JSON.stringify(key(x))) ?? []), x]);
  return [...by.values()]
    .map((xs) => ({
      values: key(xs[0]),
      requests: xs.length,
      bytes: sum(xs, (x) => x.bytes),
      visitors: new Set(xs.map((x) => x.clientIp)).size,
    }))
    .sort((a, b) => {
      if (b.requests !== a.requests) return b.requests - a.requests;
      for (let i = 0; i < a.values.length; i++) if (a.values[i] !== b.values[i]) return cmp(a.values[i], b.values[i]);
      return 0;
    })
    .slice(0, limit);
}

function expectSeriesBy(
  rows: LogRow[],
  startMs: number,
  intervalMs: number,
  key: (x: LogRow) => string | number,
  values: (string | number)[],
) {
  const by = new Map<string, { bucket: number; value: string | number; requests: number; bytes: number }>();
  for (const x of rows) {
    if (!values.includes(key(x))) continue;
    const bucket = Math.floor((x.time.getTime() - startMs) / intervalMs);
    const k = JSON.stringify([bucket, key(x)]);
    const e = by.get(k) ?? { bucket, value: key(x), requests: 0, bytes: 0 };
    e.requests++;
    e.bytes += x.bytes;
    by.set(k, e);
  }
  return [...by.values()].sort((a, b) => a.bucket - b.bucket || cmp(a.value, b.value));
}

/** A summary read against the one computed here over `rows` (those of the range that pass its filter). */
async function assertSummary(store: AnalyticsStore, domainId: number, rows: LogRow[], range: ReadRange) {
  const e = expectSummary(rows);
  const got = await store.summary(domainId, range, T);
  const { upstreamMs, ...totals } = got;
  const { percentiles, avg, ...want } = e;
  const what = `summary, filter ${JSON.stringify(range.filter)}`;
  assert.deepEqual(totals, want, what);
  if (percentiles === null || avg === null) assert.equal(upstreamMs, null, what);
  else {
    assert.ok(upstreamMs, what);
    assert.deepEqual([upstreamMs.p50, upstreamMs.p95, upstreamMs.p99], percentiles, what);
    assert.ok(Math.abs(upstreamMs.avg - avg) < 1e-9, what);
  }
}

/**
 * Filters of one counts column (the per-dimension rollups answer them), of several (the combination rollups), of a path and at most a host
 * (the path rollups), of a path with another column (raw rows) and of an AS number.
 */
const SUMMARY_FILTERS: [ReadRange['filter'], (x: LogRow) => boolean][] = [
  [{ bot_class: 'ai_crawler' }, (x) => x.botClass === 'ai_crawler'],
  [{ bot_class: '' }, (x) => x.botClass === ''],
  [{ status: 404 }, (x) => x.status === 404],
  [{ country: 'US' }, (x) => x.country === 'US'],
  [{ country: '' }, (x) => (x.country ?? '') === ''],
  [{ host: 'b.example.org' }, (x) => x.host === 'b.example.org'],
  [{ cache_status: 'STALE' }, (x) => x.cacheStatus === 'STALE'],
  [{ unserved_reason: 'waf_block' }, (x) => x.unservedReason === 'waf_block'],
  [{ markdown: false }, (x) => !(x.markdown ?? false)],
  [{ markdown: true }, (x) => x.markdown ?? false],
  [{ method: 'PUT' }, (x) => x.method === 'PUT'],
  // Several counts columns: the combination rollups (comboClients, comboUpstream); a combination no row has.
  [{ host: 'a.example.org', status: 200 }, (x) => x.host === 'a.example.org' && x.status === 200],
  [
    { cache_status: 'HIT', markdown: false, node: 'edge-b' },
    (x) => x.cacheStatus === 'HIT' && !(x.markdown ?? false) && x.node === 'edge-b',
  ],
  [
    { bot_class: '', status: 404, country: '' },
    (x) => x.botClass === '' && x.status === 404 && (x.country ?? '') === '',
  ],
  [{ method: 'PUT', status: 200 }, () => false],
  // A path, alone or with a host (the copy by path); a path no row has.
  [{ path: '/a' }, (x) => x.path === '/a'],
  [{ path: '/b?x=1' }, (x) => x.path === '/b?x=1'],
  [{ host: 'b.example.org', path: '/c/d' }, (x) => x.host === 'b.example.org' && x.path === '/c/d'],
  [{ path: '/none' }, () => false],
  // A path with other columns: the raw rows (DuckDB: of the path's table of the copy by path).
  [{ path: '/', status: 200 }, (x) => x.path === '/' && x.status === 200],
  [{ path: '/a', status: 200, country: 'US' }, (x) => x.path === '/a' && x.status === 200 && x.country === 'US'],
  [{ path: '/c/d', asn: 64500 }, (x) => x.path === '/c/d' && x.asn === 64500],
  // An AS number (the AS number rollups); one no row has; with another column (the raw rows).
  [{ asn: 64500 }, (x) => x.asn === 64500],
  [{ asn: 0 }, (x) => (x.asn ?? 0) === 0],
  [{ asn: 64999 }, () => false],
  [{ asn: 64501, status: 200 }, (x) => x.asn === 64501 && x.status === 200],
];

/** Every read the rollups answer, over `range`, against the log computed here. */
export async function assertReads(store: AnalyticsStore, domainId: number, rows: LogRow[], range: ReadRange) {
  const inside = inRange(rows, range);
  await assertSummary(store, domainId, inside, range);
  for (const [filter, keep] of SUMMARY_FILTERS)
    await assertSummary(store, domainId, inside.filter(keep), { ...range, filter });
  for (const interval of [MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR, DAY]) {
    const start = Math.floor(range.since.getTime() / interval) * interval;
    if ((range.until.getTime() - start) / interval > 1500) continue;
    assert.deepEqual(
      await store.series(domainId, range, start, interval, T),
      expectSeries(inside, start, interval),
      `series by ${interval / MINUTE} min`,
    );
  }
  // Filtered series: a bot class (the fingerprints' clients), an AS number (its clients), a path (the copy by path).
  const seriesFilters: [ReadRange['filter'], (x: LogRow) => boolean][] = [
    [{ bot_class: 'ai_crawler' }, (x) => x.botClass === 'ai_crawler'],
    [{ asn: 64500 }, (x) => x.asn === 64500],
    [{ path: '/a' }, (x) => x.path === '/a'],
    // A path with other columns (DuckDB: the copy by path).
    [{ host: 'a.example.org', path: '/b?x=1' }, (x) => x.host === 'a.example.org' && x.path === '/b?x=1'],
    [{ path: '/c/d', status: 200 }, (x) => x.path === '/c/d' && x.status === 200],
  ];
  // The reads rerouted last (2026-11-27) are compared over two of the ranges (both with raw ends and whole buckets):
  // the ClickHouse test file runs them too, within its time limit on a loaded machine.
  const more = range === RANGES[1] || range === RANGES[2];
  // Counts columns: at whole hours the per-dimension clients (one) or the combination clients (several); at shorter
  // intervals the raw rows.
  const countsSeriesFilters: [ReadRange['filter'], (x: LogRow) => boolean][] = !more
    ? []
    : [
        // A status alone at 5 minutes: the clients per status per 5 minutes (statusClients).
        [{ status: 404 }, (x) => x.status === 404],
        [{ status: 200 }, (x) => x.status === 200],
        [{ country: '' }, (x) => (x.country ?? '') === ''],
        [{ host: 'a.example.org', status: 200 }, (x) => x.host === 'a.example.org' && x.status === 200],
        [
          { cache_status: 'HIT', markdown: false, node: 'edge-b' },
          (x) => x.cacheStatus === 'HIT' && !(x.markdown ?? false) && x.node === 'edge-b',
        ],
        [{ method: 'PUT', status: 200 }, () => false],
      ];
  for (const [filters, intervals] of [
    [seriesFilters, [MINUTE, 5 * MINUTE, 15 * MINUTE, HOUR, DAY]],
    [countsSeriesFilters, [5 * MINUTE, HOUR, DAY]],
  ] as const)
    for (const [filter, keep] of filters)
      for (const interval of intervals) {
        const start = Math.floor(range.since.getTime() / interval) * interval;
        if ((range.until.getTime() - start) / interval > 1500) continue;
        const want = expectSeries(inside.filter(keep), start, interval);
        assert.deepEqual(
          await store.series(domainId, { ...range, filter }, start, interval, T),
          want,
          `series by ${interval / MINUTE} min, filter ${JSON.stringify(filter)}`,
        );
        // Without visitors (the requests and bandwidth reads: the counts rollup under any filter of its columns).
        if (more && interval === 5 * MINUTE)
          assert.deepEqual(
            await store.series(domainId, { ...range, filter }, start, interval, T, false),
            want.map((b) => ({ ...b, visitors: 0 })),
            `series by ${interval / MINUTE} min without visitors, filter ${JSON.stringify(filter)}`,
          );
      }
  assert.deepEqual(await store.peak(domainId, range, T), expectPeak(inside));
  assert.deepEqual(
    await store.peak(domainId, { ...range, filter: { path: '/c/d' } }, T),
    expectPeak(inside.filter((x) => x.path === '/c/d')),
    'peak, filter path',
  );
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
  assert.deepEqual(await store.ruleHits(domainId, range, 10, T), expectRules(inside, 10), 'busiest rules');
  assert.deepEqual(await store.ruleHits(domainId, range, 2, T), expectRules(inside, 2), 'busiest 2 rules');
  assert.deepEqual(await store.wafActions(domainId, range, T), expectActions(inside), 'security actions');
  assert.deepEqual(
    await store.proxyClients([domainId], range, 2, 2, 10, T),
    expectProxyClients(inside, 2, 2, 10),
    'proxy-like clients',
  );
  // The log has three fingerprints: no address is a candidate (the read stops after its first step).
  assert.deepEqual(await store.proxyClients([domainId], range, 1, 4, 10, T), [], 'proxy-like clients, none');
  assert.deepEqual(
    await store.groups([domainId], range, ['host', 'path'], 3, T),
    expectGroups(inside, (x) => [x.host, x.path], 3),
    'top files',
  );
  assert.deepEqual(
    await store.groups([domainId], { ...range, filter: { host: 'b.example.org' } }, ['domain_id', 'path'], 10, T),
    expectGroups(
      inside.filter((x) => x.host === 'b.example.org'),
      (x) => [x.domainId, x.path],
      10,
    ),
    'top paths of a host, with the domain',
  );
  // Groups by counts columns, the status class and the domain, with filters on counts columns: ranked from the counts
  // rollup, their visitors from the combination clients (the clients for the domain alone).
  const groupCases: [
    GroupDimension[],
    ReadRange['filter'],
    (x: LogRow) => boolean,
    (x: LogRow) => (string | number)[],
    number,
  ][] = [
    [['node'], {}, () => true, (x) => [x.node], 100],
    [['status_class'], {}, () => true, (x) => [Math.floor(x.status / 100)], 3],
    [['domain_id'], {}, () => true, (x) => [x.domainId], 1],
    [['node', 'country'], {}, () => true, (x) => [x.node, x.country ?? ''], 100],
    // Node and country under a filter on either: the clients per node and country (placeClients).
    [['country'], { node: 'edge-b' }, (x) => x.node === 'edge-b', (x) => [x.country ?? ''], 2],
    [['node', 'country'], { country: 'US' }, (x) => x.country === 'US', (x) => [x.node, x.country ?? ''], 100],
    [['bot_class'], { status: 200 }, (x) => x.status === 200, (x) => [x.botClass], 10],
    [['cache_status'], { country: 'US' }, (x) => x.country === 'US', (x) => [x.cacheStatus], 2],
    [
      ['domain_id', 'status'],
      { host: 'a.example.org', method: 'GET' },
      (x) => x.host === 'a.example.org' && x.method === 'GET',
      (x) => [x.domainId, x.status],
      4,
    ],
    [['domain_id'], { unserved_reason: 'waf_block' }, (x) => x.unservedReason === 'waf_block', (x) => [x.domainId], 1],
    [['method'], { method: 'PUT', status: 200 }, () => false, (x) => [x.method], 10],
  ];
  for (const [dims, filter, keep, key, limit] of more ? groupCases : [])
    assert.deepEqual(
      await store.groups([domainId], { ...range, filter }, dims, limit, T),
      expectGroups(inside.filter(keep), key, limit),
      `groups by ${dims.join(', ')}, filter ${JSON.stringify(filter)}`,
    );
  // Requests and bytes per value over time (behaviour, the account's domains): the counts rollup.
  const seriesByCases: [GroupDimension, (string | number)[], (x: LogRow) => string | number][] = [
    ['domain_id', [domainId], (x) => x.domainId],
    ['status_class', [2, 4], (x) => Math.floor(x.status / 100)],
    ['node', ['edge-b'], (x) => x.node],
  ];
  for (const [dim, values, key] of more ? seriesByCases : [])
    for (const interval of [HOUR]) {
      const start = Math.floor(range.since.getTime() / interval) * interval;
      if ((range.until.getTime() - start) / interval > 1500) continue;
      assert.deepEqual(
        await store.seriesBy([domainId], range, start, interval, dim, values, T),
        expectSeriesBy(inside, start, interval, key, values),
        `series by ${dim} per ${interval / MINUTE} min`,
      );
    }
  // The top paths under one counts filter, and a breakdown by a counts column under a path (and a host): DuckDB's per-path
  // values (pathValues); a path no row has.
  const top: [ReadRange['filter'], (x: LogRow) => boolean, Dimension, (x: LogRow) => string | number][] = [
    [{ bot_class: 'ai_crawler' }, (x) => x.botClass === 'ai_crawler', 'path', (x) => x.path],
    [{ status: 404 }, (x) => x.status === 404, 'path', (x) => x.path],
    [{ markdown: false }, (x) => !(x.markdown ?? false), 'path', (x) => x.path],
    [{ path: '/a' }, (x) => x.path === '/a', 'status', (x) => x.status],
    [{ path: '/b?x=1' }, (x) => x.path === '/b?x=1', 'country', (x) => x.country ?? ''],
    [
      { host: 'b.example.org', path: '/c/d' },
      (x) => x.host === 'b.example.org' && x.path === '/c/d',
      'status',
      (x) => x.status,
    ],
    [{ path: '/none' }, () => false, 'bot_class', (x) => x.botClass],
    // Dimensions no rollup keeps, under a path (DuckDB: the copy by path).
    [{ path: '/a' }, (x) => x.path === '/a', 'client_ip', (x) => x.clientIp],
    [{ path: '/', method: 'GET' }, (x) => x.path === '/' && x.method === 'GET', 'host', (x) => x.host],
  ];
  for (const [filter, keep, dimension, key] of top)
    assert.deepEqual(
      await store.breakdown(domainId, { ...range, filter }, dimension, 10, T),
      expectTop(inside.filter(keep), key, 10),
      `breakdown by ${dimension}, filter ${JSON.stringify(filter)}`,
    );
  // Columns outside the counts rollup with a rollup of their own (bot scores, rate-limit rules and keys) without a
  // filter; with one, the raw rows.
  const values: [Dimension, (x: LogRow) => string | number, ReadRange['filter'], (x: LogRow) => boolean][] = [
    ['bot_score', (x) => x.botScore, {}, () => true],
    ['rate_limit_rule', (x) => x.rateLimitRule ?? 0, {}, () => true],
    ['rate_limit_key', (x) => x.rateLimitKey ?? '', {}, () => true],
    ['bot_score', (x) => x.botScore, { status: 200 }, (x) => x.status === 200],
  ];
  for (const [dimension, key, filter, keep] of more ? values : [])
    for (const limit of dimension === 'bot_score' ? [100, 3] : [3])
      assert.deepEqual(
        await store.breakdown(domainId, { ...range, filter }, dimension, limit, T),
        expectTop(inside.filter(keep), key, limit),
        `breakdown by ${dimension}, filter ${JSON.stringify(filter)}, top ${limit}`,
      );
  // The networks read: AS numbers labelled with the largest organisation of their rows (asnOrgs without a filter).
  for (const [filter, keep] of more
    ? ([
        [{}, () => true],
        [{ status: 200 }, (x: LogRow) => x.status === 200],
      ] as const)
    : [])
    for (const limit of [10, 2]) {
      const rowsOf = inside.filter(keep);
      assert.deepEqual(
        await store.breakdown(domainId, { ...range, filter }, 'asn', limit, T),
        expectTop(rowsOf, (x) => x.asn ?? 0, limit).map((t) => ({
          ...t,
          label: rowsOf
            .filter((x) => (x.asn ?? 0) === t.value)
            .map((x) => x.asOrg ?? '')
            .reduce((a, b) => (b > a ? b : a), ''),
        })),
        `breakdown by asn, filter ${JSON.stringify(filter)}, top ${limit}`,
      );
    }
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

/**
 * The account reads of several domains filtered on a path (DuckDB: the domains' copies by path), against `rows` (of
 * those domains) computed here.
 */
export async function assertAccountByPath(store: AnalyticsStore, ids: number[], rows: LogRow[], range: ReadRange) {
  for (const [filter, keep] of [
    [{ path: '/a' }, (x: LogRow) => x.path === '/a'],
    [{ path: '/c/d', status: 200 }, (x: LogRow) => x.path === '/c/d' && x.status === 200],
  ] as const) {
    const inside = inRange(rows, range).filter(keep);
    const r = { ...range, filter };
    const { upstreamMs, ...totals } = await store.accountSummary(ids, r, T);
    const { percentiles, avg, ...want } = expectSummary(inside);
    assert.deepEqual(totals, want, `account summary, filter ${JSON.stringify(filter)}`);
    assert.deepEqual(upstreamMs && [upstreamMs.p50, upstreamMs.p95, upstreamMs.p99], percentiles);
    assert.ok(avg === null ? upstreamMs === null : Math.abs((upstreamMs?.avg ?? NaN) - avg) < 1e-9);
    const start = Math.floor(range.since.getTime() / HOUR) * HOUR;
    assert.deepEqual(
      await store.accountSeries(ids, r, start, HOUR, T),
      expectSeries(inside, start, HOUR),
      `account series, filter ${JSON.stringify(filter)}`,
    );
    assert.deepEqual(await store.accountPeak(ids, r, T), expectPeak(inside), 'account peak');
  }
}

/**
 * The account reads of several domains grouped by domain (the account's domains: the counts rollup and the clients or
 * combination clients per domain), against `rows` (of those domains) computed here.
 */
export async function assertAccountGroups(store: AnalyticsStore, ids: number[], rows: LogRow[], range: ReadRange) {
  for (const [filter, keep] of [
    [{}, () => true],
    [{ status: 200 }, (x: LogRow) => x.status === 200],
  ] as const) {
    const inside = inRange(rows, range).filter(keep);
    const r = { ...range, filter };
    assert.deepEqual(
      await store.groups(ids, r, ['domain_id'], ids.length, T),
      expectGroups(inside, (x) => [x.domainId], ids.length),
      `account domains, filter ${JSON.stringify(filter)}`,
    );
    assert.deepEqual(
      await store.groups(ids, r, ['domain_id', 'node'], 3, T),
      expectGroups(inside, (x) => [x.domainId, x.node], 3),
      `account domains and nodes, filter ${JSON.stringify(filter)}`,
    );
    const start = Math.floor(range.since.getTime() / HOUR) * HOUR;
    assert.deepEqual(
      await store.seriesBy(ids, r, start, HOUR, 'domain_id', ids, T),
      expectSeriesBy(inside, start, HOUR, (x) => x.domainId, ids),
      `account domains per hour, filter ${JSON.stringify(filter)}`,
    );
  }
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
