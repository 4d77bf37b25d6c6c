// The analytics store's two backends side by side (issue 15 item 2): DuckDB (embedded, the default) and ClickHouse
// (Debian's clickhouse-server 18.16 started here on 127.0.0.1, test/helpers/clickhouse-server.ts), each holding the
// same ROWS log rows of one domain over one day. Measured: ingest rows per second through the store's append (batches
// of 5000 with a batch id, as POST /internal/request-logs appends), then p50/p99 of every dashboard read the API asks
// of the store over that day (the aim: under 100 ms p99 each at 10 million rows), and of a typical ad-hoc query
// (DuckDB through POST /analytics/query's path; ClickHouse refuses that endpoint, so its equivalent SQL is sent
// straight to the server, for comparison only). Since the rollups (control-plane/src/areas/analytics/rollup.ts) the
// ingest figure includes keeping them (DuckDB: in the batch's transaction; ClickHouse: the materialized views), and the
// reads they answer read whole buckets plus the raw rows of the range's ends; the others still read raw rows.
// Run: node --import tsx bench/control-plane/analytics-backends.bench.ts   (ROWS=10000000 by default; RUNS=20)
// CPU per read is printed beside p50/p99 (DuckDB: this process; ClickHouse: the server of CH_PID, with CH_URL), and
// under it the path each backend took (`path:`, from the tables its statements named: rollup, rollup + raw ends, copy
// by path or raw; the ad-hoc query is not traced).
// Selecting: BACKENDS=duckdb (or clickhouse; both by default), READS=<regular expression> (the reads whose names
// match, and the ad-hoc query when it matches `ad-hoc`), DUCKDB_DIR=<directory> (the DuckDB file kept there: a file
// that already holds ROWS rows is read without ingesting again, so a read can be measured again after a change; its
// ingest figure is then not measured), CH_URL=<http://127.0.0.1:port> (a ClickHouse server already running, instead of
// one started here: its database `bench`, when it holds ROWS rows of the same log, is read without filling it again).
// CH_MEMORY_MB=<MiB> (12288 by default) sizes the server started here.
// CH_FILL=sql and DUCK_FILL=sql write the log on the database side instead of through the store's append (minutes
// instead of the append path's half hour or more on a loaded machine; no ingest figure): ClickHouse by one INSERT ...
// SELECT (its materialized views fill the rollups), DuckDB by the store's append of the first batch (the domain's
// table), one INSERT ... SELECT of the rest and its rollups dropped, so that the store builds them on open.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@clickhouse/client';
import { DuckDBInstance } from '@duckdb/node-api';
import { openDuckDbStore } from '../../control-plane/src/areas/analytics/duckdb-store.js';
import { openClickHouseStore } from '../../control-plane/src/areas/analytics/clickhouse-store.js';
import {
  countClientsSql,
  countValuesSql,
  VALUE_COUNTS,
} from '../../control-plane/src/areas/analytics/clickhouse-rollups.js';
import type { AnalyticsStore, LogRow } from '../../control-plane/src/areas/analytics/store.js';
import type { ReadRange } from '../../control-plane/src/areas/analytics/reads.js';
import { startClickHouse } from '../../test/helpers/clickhouse-server.js';
import { percentile, timeRuns } from './paired-runner.js';

const ROWS = Number(process.env.ROWS ?? 10_000_000);
const BACKENDS = (process.env.BACKENDS ?? 'duckdb,clickhouse').split(',');
const SELECTED = new RegExp(process.env.READS ?? '.');
const KEPT_DIR = process.env.DUCKDB_DIR;
/** CH_FILL=sql: ClickHouse's rows written on the server (fillSql), for its reads only. */
const CH_FILL = process.env.CH_FILL;
/** DUCK_FILL=sql: DuckDB's rows written by SQL (duckFill) into an empty DUCKDB_DIR, for its reads only. */
const DUCK_FILL = process.env.DUCK_FILL;
const CH_URL = process.env.CH_URL;
const RUNS = Number(process.env.RUNS ?? 20);
const BATCH = 5000;
const DAY = 86_400_000;
/** The log's end: now, floored to the minute, or that of the kept DuckDB file's ingest (DUCKDB_DIR). */
const keptNow = KEPT_DIR && existsSync(join(KEPT_DIR, 'bench-now.txt'));
const now = keptNow
  ? Number(readFileSync(join(KEPT_DIR, 'bench-now.txt'), 'utf8'))
  : Math.floor(Date.now() / 60_000) * 60_000;

/** Row i of the log: in time order over the day before `now`, 500 paths, 5000 clients, some rule hits and WAF
 * findings. */
function rowAt(i: number): LogRow {
  return {
    time: new Date(now - DAY + Math.floor(i * (DAY / ROWS))),
    domainId: 1,
    ownerId: 1,
    node: `edge-${i % 4}`,
    host: `www${i % 3}.d1.example.org`,
    path: `/p/${(i * 31) % 500}`,
    method: i % 10 === 0 ? 'POST' : 'GET',
    status: i % 17 === 0 ? 404 : i % 31 === 0 ? 500 : 200,
    bytes: (i * 7919) % 100_000,
    cacheStatus: i % 3 === 0 ? 'HIT' : 'MISS',
    ruleHits: i % 20 === 0 ? [[7 + (i % 3), 'waf', i % 40 === 0]] : [],
    wafEvents: i % 50 === 0 ? [[7, '942100', 2, 'ARGS:q', 'union select', i % 100 === 0 ? 'block' : 'log']] : [],
    durationMs: (i % 100) / 3,
    upstreamMs: i % 3 === 0 ? -1 : (i % 50) / 3,
    clientIp: `192.0.${(i >> 8) % 20}.${i % 250}`,
    fingerprint: '',
    botScore: i % 7 === 0 ? 5 : 80,
    botClass: i % 7 === 0 ? 'ai_crawler' : '',
  };
}

/** rowAt(i) for every i below ROWS as ClickHouse SQL: an INSERT ... SELECT into the store's `logs`. */
function fillSql(table: string): string {
  const ms = `toInt64(${now - DAY} + floor(number * ${DAY / ROWS}))`;
  const i = 'number';
  const hit = `${i} % 20 = 0`;
  const finding = `${i} % 50 = 0`;
  const action = `if(${i} % 100 = 0, 'block', 'log')`;
  const cols: [string, string][] = [
    ['time', `toDateTime(intDiv(${ms}, 1000))`],
    ['time_us', `${ms} * 1000`],
    ['time_utc', `toDateTime(intDiv(${ms}, 1000))`],
    ['domain_id', '1'],
    ['owner_id', '1'],
    ['node', `concat('edge-', toString(${i} % 4))`],
    ['host', `concat('www', toString(${i} % 3), '.d1.example.org')`],
    ['path', `concat('/p/', toString((${i} * 31) % 500))`],
    ['method', `if(${i} % 10 = 0, 'POST', 'GET')`],
    ['status', `if(${i} % 17 = 0, 404, if(${i} % 31 = 0, 500, 200))`],
    ['bytes', `(${i} * 7919) % 100000`],
    ['cache_status', `if(${i} % 3 = 0, 'HIT', 'MISS')`],
    [
      'rule_hits',
      `if(${hit}, concat('[[', toString(7 + ${i} % 3), ',"waf",', if(${i} % 40 = 0, 'true', 'false'), ']]'), '[]')`,
    ],
    ['rule_ids', `if(${hit}, [toInt64(7 + ${i} % 3)], emptyArrayInt64())`],
    ['rule_types', `if(${hit}, ['waf'], emptyArrayString())`],
    ['rule_dry', `if(${hit}, [toUInt8(${i} % 40 = 0)], emptyArrayUInt8())`],
    ['waf_events', `if(${finding}, concat('[[7,"942100",2,"ARGS:q","union select","', ${action}, '"]]'), '[]')`],
    ['waf_actions', `if(${finding}, [${action}], emptyArrayString())`],
    ['duration_ms', `(${i} % 100) / 3`],
    ['upstream_ms', `if(${i} % 3 = 0, -1, (${i} % 50) / 3)`],
    ['client_ip', `concat('192.0.', toString(intDiv(${i}, 256) % 20), '.', toString(${i} % 250))`],
    ['fingerprint', `''`],
    ['bot_score', `if(${i} % 7 = 0, 5, 80)`],
    ['bot_class', `if(${i} % 7 = 0, 'ai_crawler', '')`],
    ['row_id', `bitShiftRight(rand64(), 2)`],
    ['batch', `''`],
  ];
  return `INSERT INTO ${table} (${cols.map(([c]) => c).join(', ')})
    SELECT ${cols.map(([c, e]) => `${e} AS ${c}_v`).join(', ')} FROM numbers(${ROWS})`;
}

/**
 * rowAt(i) for every i from the first batch's end to ROWS, written into DuckDB's table of the domain: the first batch
 * through the store (it creates the table), the rest by one INSERT ... SELECT, then the rollups dropped (the store
 * builds them from every row when it opens the file next).
 */
async function duckFill(dir: string): Promise<void> {
  const first = openDuckDbStore({ dir, memoryLimitMb: 1024, threads: 2 });
  await first.append(
    Array.from({ length: Math.min(BATCH, ROWS) }, (_, k) => rowAt(k)),
    { node: 'bench', id: 'fill-0' },
  );
  await first.close();
  const db = await DuckDBInstance.create(join(dir, 'analytics.duckdb'));
  const c = await db.connect();
  try {
    await c.run(`SET TimeZone = 'UTC'`);
    const ms = `CAST(${now - DAY} + floor(i * ${DAY / ROWS}) AS BIGINT)`;
    const cols: [string, string][] = [
      ['time', `epoch_ms(${ms})::TIMESTAMPTZ`],
      ['time_utc', `epoch_ms(${ms})`],
      ['domain_id', '1'],
      ['owner_id', '1'],
      ['node', `'edge-' || (i % 4)`],
      ['host', `'www' || (i % 3) || '.d1.example.org'`],
      ['path', `'/p/' || ((i * 31) % 500)`],
      ['method', `CASE WHEN i % 10 = 0 THEN 'POST' ELSE 'GET' END`],
      ['status', `CASE WHEN i % 17 = 0 THEN 404 WHEN i % 31 = 0 THEN 500 ELSE 200 END`],
      ['bytes', `(i * 7919) % 100000`],
      ['cache_status', `CASE WHEN i % 3 = 0 THEN 'HIT' ELSE 'MISS' END`],
      [
        'rule_hits',
        `CASE WHEN i % 20 = 0 THEN '[[' || (7 + i % 3) || ',"waf",' || CASE WHEN i % 40 = 0 THEN 'true' ELSE 'false' END || ']]' ELSE '[]' END`,
      ],
      [
        'waf_events',
        `CASE WHEN i % 50 = 0 THEN '[[7,"942100",2,"ARGS:q","union select","' || CASE WHEN i % 100 = 0 THEN 'block' ELSE 'log' END || '"]]' ELSE '[]' END`,
      ],
      ['duration_ms', `(i % 100) / 3`],
      ['upstream_ms', `CASE WHEN i % 3 = 0 THEN -1 ELSE (i % 50) / 3 END`],
      ['client_ip', `'192.0.' || ((i >> 8) % 20) || '.' || (i % 250)`],
      ['fingerprint', `''`],
      ['bot_score', `CASE WHEN i % 7 = 0 THEN 5 ELSE 80 END`],
      ['bot_class', `CASE WHEN i % 7 = 0 THEN 'ai_crawler' ELSE '' END`],
    ];
    await c.run(
      `INSERT INTO main.d_1 BY NAME SELECT ${cols.map(([n, e]) => `${e} AS ${n}`).join(', ')}
       FROM range(${Math.min(BATCH, ROWS)}, ${ROWS}) AS t(i)`,
    );
    const rollups = await c.runAndReadAll(
      `SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'
         AND NOT regexp_full_match(table_name, 'd_[0-9]+') AND table_name <> 'applied_batches'`,
    );
    for (const [t] of rollups.getRowsJS()) await c.run(`DROP TABLE main.${String(t)}`);
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

async function ingest(store: AnalyticsStore, label: string): Promise<number> {
  const t0 = performance.now();
  for (let start = 0, n = 0; start < ROWS; start += BATCH, n++) {
    const rows = Array.from({ length: Math.min(BATCH, ROWS - start) }, (_, k) => rowAt(start + k));
    await store.append(rows, { node: 'bench', id: `${label}-${n}` });
    if ((start + BATCH) % 1_000_000 === 0)
      console.log(
        `${label}: ${start + BATCH} rows, ${Math.round((start + BATCH) / ((performance.now() - t0) / 1000))} rows/s`,
      );
  }
  return ROWS / ((performance.now() - t0) / 1000);
}

/**
 * CPU ms used so far by the reads' side: this process (DuckDB runs in it) or, for ClickHouse, the server whose pid is
 * CH_PID (from /proc; NaN without it). Per read, divided by the runs: the machine is shared, and CPU per read moves
 * far less with the load than wall time.
 */
const CH_PID = process.env.CH_PID;
function cpuMs(side: 'duckdb' | 'clickhouse'): number {
  if (side === 'duckdb') {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
  if (!CH_PID) return NaN;
  const f = readFileSync(`/proc/${CH_PID}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}
let lastCpu = { duckdb: NaN, clickhouse: NaN };
/**
 * The tables the statements of the read being measured named (the stores' onRead): DuckDB's `main.<table>`,
 * ClickHouse's `bench.<table>`, by side.
 */
const seen = { duckdb: new Set<string>(), clickhouse: new Set<string>() };
let reading: 'duckdb' | 'clickhouse' | null = null;
const onRead = (side: 'duckdb' | 'clickhouse') => (sql: string) => {
  if (reading !== side) return;
  for (const m of sql.matchAll(side === 'duckdb' ? /\bmain\.(\w+)/g : /\bbench\.(\w+)/g)) seen[side].add(m[1]);
};
/**
 * Which path a read took, from the tables it read: `rollup` (rollup tables only), `rollup + raw ends` (with the raw
 * rows of the range's ends shorter than a bucket), `copy by path` (DuckDB's rz_ shards, ClickHouse's lp) or `raw`
 * (the log table alone); the table prefixes in brackets (DuckDB's rollup tables without domain and level).
 */
function pathOf(side: 'duckdb' | 'clickhouse'): string {
  const names = [...seen[side]];
  if (names.length === 0) return '-';
  // rows_read: DuckDB's view of the domains' tables (duckdb-store.ts readView).
  const isRaw = (t: string) => (side === 'duckdb' ? /^d_\d+$|^rows_read$/.test(t) : t === 'logs');
  const isCopy = (t: string) => (side === 'duckdb' ? /^rz_/.test(t) : t === 'lp');
  const rollups = [...new Set(names.filter((t) => !isRaw(t) && !isCopy(t)).map((t) => t.replace(/_\d.*$/, '')))];
  const raw = names.some(isRaw);
  const kind = names.some(isCopy)
    ? 'copy by path'
    : rollups.length === 0
      ? 'raw'
      : raw
        ? 'rollup + raw ends'
        : 'rollup';
  return `${kind}${rollups.length ? ` [${rollups.sort().join(' ')}]` : ''}`;
}
async function timed(side: 'duckdb' | 'clickhouse', fn: () => Promise<unknown>): Promise<number[]> {
  seen[side].clear();
  reading = side;
  const c0 = cpuMs(side);
  try {
    const runs = await timeRuns(fn, RUNS);
    lastCpu = { ...lastCpu, [side]: (cpuMs(side) - c0) / RUNS };
    return runs;
  } finally {
    reading = null;
  }
}

const day: ReadRange = { since: new Date(now - DAY), until: new Date(now), filter: {} };
const hour: ReadRange = { since: new Date(now - 3_600_000), until: new Date(now), filter: {} };
const T = 60_000;
/** The store calls behind the dashboard reads (read-routes.ts), over the whole day unless said. */
const READS: [string, (s: AnalyticsStore) => Promise<unknown>][] = [
  ['series, day by 5 min (requests/bandwidth/visitors)', (s) => s.series(1, day, now - DAY, 300_000, T)],
  ['series, last hour by minute', (s) => s.series(1, hour, now - 3_600_000, 60_000, T)],
  ['series, day by minute (the default interval of a day)', (s) => s.series(1, day, now - DAY, 60_000, T)],
  ['summary (totals, origin percentiles)', (s) => s.summary(1, day, T)],
  ['summary, filter bot_class=ai_crawler', (s) => s.summary(1, { ...day, filter: { bot_class: 'ai_crawler' } }, T)],
  [
    'summary, filters bot_class=ai_crawler and status=404',
    (s) => s.summary(1, { ...day, filter: { bot_class: 'ai_crawler', status: 404 } }, T),
  ],
  ['summary, filter path=/p/7', (s) => s.summary(1, { ...day, filter: { path: '/p/7' } }, T)],
  [
    'summary, filters host=www1.d1.example.org and path=/p/7',
    (s) => s.summary(1, { ...day, filter: { host: 'www1.d1.example.org', path: '/p/7' } }, T),
  ],
  ['peak requests per second', (s) => s.peak(1, day, T)],
  ['top 10 paths', (s) => s.breakdown(1, day, 'path', 10, T)],
  ['top 10 client addresses', (s) => s.breakdown(1, day, 'client_ip', 10, T)],
  ['status codes', (s) => s.breakdown(1, day, 'status', 100, T)],
  ['busiest rules', (s) => s.ruleHits(1, day, 10, T)],
  ['security actions', (s) => s.wafActions(1, day, T)],
  // The panel's common filters on the reads above (bench/RESULTS.md 2026-11-26 18:51: over 100 ms p99 then).
  [
    'top 10 paths, filter bot_class=ai_crawler',
    (s) => s.breakdown(1, { ...day, filter: { bot_class: 'ai_crawler' } }, 'path', 10, T),
  ],
  ['status codes, filter path=/p/7', (s) => s.breakdown(1, { ...day, filter: { path: '/p/7' } }, 'status', 100, T)],
  [
    'series, day by 5 min, filter bot_class=ai_crawler',
    (s) => s.series(1, { ...day, filter: { bot_class: 'ai_crawler' } }, now - DAY, 300_000, T),
  ],
  [
    'series, day by 5 min, filter path=/p/7',
    (s) => s.series(1, { ...day, filter: { path: '/p/7' } }, now - DAY, 300_000, T),
  ],
  [
    'summary, filters path=/p/7 and status=404',
    (s) => s.summary(1, { ...day, filter: { path: '/p/7', status: 404 } }, T),
  ],
  ['summary, filter asn=0 (every row of this log)', (s) => s.summary(1, { ...day, filter: { asn: 0 } }, T)],
  ['raw logs, first page of 100', (s) => s.logs(1, day, 100, null, T)],
  ['raw logs, 100 POSTs', (s) => s.logs(1, { ...day, filter: { method: 'POST' } }, 100, null, T)],
  // account-read-routes.ts (over one domain here: the account's union has the same rows)
  ['billable traffic, day by 5 min', (s) => s.traffic([1], day, now - DAY, 300_000, T)],
  ['quota used: billable bytes of the day (one bucket)', (s) => s.traffic([1], day, now - DAY, DAY, T)],
  ['account summary', (s) => s.accountSummary([1], day, T)],
  ['top 10 files (host, path)', (s) => s.groups([1], day, ['host', 'path'], 10, T)],
  ['proxy-like clients', (s) => s.proxyClients([1], day, 50, 3, 10, T)],
  ['behaviour: status class by 15 min', (s) => s.seriesBy([1], day, now - DAY, 900_000, 'status_class', [2, 4, 5], T)],
  ['WAF logs, first page of 100', (s) => s.wafLogs(1, day, 100, null, T)],
  // The other store calls of the dashboard's routes (read-routes.ts, account-read-routes.ts) and the panel's filters
  // on counts columns other than the bot class and status pair (2026-11-27 15:40).
  [
    'summary, filters host=www1.d1.example.org and status=404',
    (s) => s.summary(1, { ...day, filter: { host: 'www1.d1.example.org', status: 404 } }, T),
  ],
  [
    'summary, filters cache_status=HIT and method=POST',
    (s) => s.summary(1, { ...day, filter: { cache_status: 'HIT', method: 'POST' } }, T),
  ],
  ['summary, filter status=404', (s) => s.summary(1, { ...day, filter: { status: 404 } }, T)],
  [
    'series, day by hour, filter status=404 (the panel interval)',
    (s) => s.series(1, { ...day, filter: { status: 404 } }, now - DAY, 3_600_000, T),
  ],
  [
    'series, day by 5 min, filter status=404',
    (s) => s.series(1, { ...day, filter: { status: 404 } }, now - DAY, 300_000, T),
  ],
  [
    'requests/bandwidth (no visitors), day by 5 min, filter status=404',
    (s) => s.series(1, { ...day, filter: { status: 404 } }, now - DAY, 300_000, T, false),
  ],
  [
    'requests/bandwidth (no visitors), day by minute, filters host=www1.d1.example.org and status=404',
    (s) => s.series(1, { ...day, filter: { host: 'www1.d1.example.org', status: 404 } }, now - DAY, 60_000, T, false),
  ],
  [
    'series, day by hour, filters host=www1.d1.example.org and status=404',
    (s) => s.series(1, { ...day, filter: { host: 'www1.d1.example.org', status: 404 } }, now - DAY, 3_600_000, T),
  ],
  ['bot scores: requests by score', (s) => s.breakdown(1, day, 'bot_score', 100, T)],
  ['networks: top 10 AS numbers', (s) => s.breakdown(1, day, 'asn', 10, T)],
  ['rate-limit keys: rules', (s) => s.breakdown(1, day, 'rate_limit_rule', 11, T)],
  ['rate-limit keys: keys', (s) => s.breakdown(1, day, 'rate_limit_key', 11, T)],
  [
    'under attack: rule hits, filter unserved_reason=challenge_issued',
    (s) => s.ruleHits(1, { ...day, filter: { unserved_reason: 'challenge_issued' } }, 100, T),
  ],
  ['account domains: groups by domain', (s) => s.groups([1], day, ['domain_id'], 1, T)],
  ['account domains: by domain per hour', (s) => s.seriesBy([1], day, now - DAY, 3_600_000, 'domain_id', [1], T)],
  ['edge nodes: groups by node', (s) => s.groups([1], day, ['node'], 100, T)],
  ['traffic by node and country', (s) => s.groups([1], day, ['node', 'country'], 100, T)],
  ['behaviour: top status classes', (s) => s.groups([1], day, ['status_class'], 3, T)],
  ['account peak requests per second', (s) => s.accountPeak([1], day, T)],
];
const ADHOC_DUCKDB = `SELECT path, count(*) AS n, count(DISTINCT client_ip) AS clients, avg(duration_ms) AS ms
  FROM logs WHERE status >= 400 GROUP BY path ORDER BY n DESC LIMIT 20`;

const dir = KEPT_DIR ?? mkdtempSync(join(tmpdir(), 'analytics-backends-'));
const useDuck = BACKENDS.includes('duckdb');
const useCh = BACKENDS.includes('clickhouse');
/**
 * The memory of the ClickHouse server started here (CH_MEMORY_MB, MiB): CH_FILL=sql's one INSERT ... SELECT, pushed
 * through every rollup's view, went over 4 GiB at 1 M rows (bench/RESULTS.md, 2026-11-26 18:41); 12 GiB served.
 */
const CH_MEMORY_MB = Number(process.env.CH_MEMORY_MB ?? 12_288);
const server = useCh && !CH_URL ? await startClickHouse({ memoryMb: CH_MEMORY_MB }) : null;
const chUrl = CH_URL ?? server?.url;
try {
  if (useDuck && DUCK_FILL === 'sql' && !existsSync(join(dir, 'analytics.duckdb'))) {
    const t0 = performance.now();
    await duckFill(dir);
    if (KEPT_DIR) writeFileSync(join(dir, 'bench-now.txt'), String(now));
    console.log(`DuckDB: ${ROWS} rows written by INSERT ... SELECT in ${Math.round(performance.now() - t0)} ms`);
  }
  const duck = useDuck ? openDuckDbStore({ dir, memoryLimitMb: 1024, threads: 2, onRead: onRead('duckdb') }) : null;
  const ch = chUrl ? openClickHouseStore({ url: chUrl, database: 'bench', onRead: onRead('clickhouse') }) : null;
  const raw = chUrl ? createClient({ url: chUrl, request_timeout: 3_600_000 }) : null;
  const adhocClickHouse = `SELECT path, count() AS n, uniqExact(client_ip) AS clients, avg(duration_ms) AS ms
    FROM bench.logs WHERE domain_id = 1 AND status >= 400 GROUP BY path ORDER BY n DESC LIMIT 20`;

  let duckIngest = NaN;
  const opened = performance.now();
  const kept = duck && (KEPT_DIR || DUCK_FILL === 'sql') ? await duck.countRows(1) : 0;
  if (duck) console.log(`DuckDB: opened (rollups it lacked built) in ${Math.round(performance.now() - opened)} ms`);
  if (kept !== 0 && kept !== ROWS) throw new Error(`${dir} holds ${kept} rows, not ${ROWS}: empty it first`);
  if (duck && kept === ROWS) console.log(`DuckDB: ${ROWS} rows kept in ${dir}`);
  else if (duck) {
    duckIngest = await ingest(duck, 'duck');
    if (KEPT_DIR) writeFileSync(join(dir, 'bench-now.txt'), String(now));
    console.log(`DuckDB ingest: ${Math.round(duckIngest)} rows/s`);
  }
  let chIngest = NaN;
  const chKept = ch && CH_URL ? await ch.countRows(1) : 0;
  if (chKept !== 0 && chKept !== ROWS) throw new Error(`${CH_URL} holds ${chKept} rows, not ${ROWS}: empty it first`);
  if (chKept === ROWS) console.log(`ClickHouse: ${ROWS} rows kept at ${CH_URL}`);
  else if (ch && raw && CH_FILL === 'sql') {
    // The same rows written by one INSERT ... SELECT on the server (its materialized views fill the rollups):
    // minutes instead of the append path's half hour, and no ingest figure.
    await ch.countRows(1);
    const t0 = performance.now();
    await raw.command({ query: fillSql('bench.logs'), clickhouse_settings: { max_execution_time: 3600 } });
    // The clients per bucket (and per bot class and status) are counted by the store's append: counted here for the rows it did
    // not append.
    await raw.command({ query: countClientsSql('bench', '1') });
    for (const c of VALUE_COUNTS) await raw.command({ query: countValuesSql('bench', c, '1') });
    console.log(`ClickHouse: ${ROWS} rows written by INSERT ... SELECT in ${Math.round(performance.now() - t0)} ms`);
  } else if (ch) chIngest = await ingest(ch, 'ch');
  if (ch) console.log(`ClickHouse ingest: ${Math.round(chIngest)} rows/s`);
  console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}; ${ROWS} rows in one domain`);
  console.log(
    `load average at the reads: ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' / ')}`,
  );
  console.table([
    { task: 'DuckDB append (5000 rows a batch, batch id)', 'rows/s': Math.round(duckIngest), ratio: '1.00' },
    {
      task: 'ClickHouse append (5000 rows a batch, batch id)',
      'rows/s': Math.round(chIngest),
      ratio: (chIngest / duckIngest).toFixed(2),
    },
  ]);

  const table: Record<string, string>[] = [];
  const row = (name: string, d: number[], c: number[]) => {
    // Each read as it is measured: a run cut short keeps what it measured; then the path each backend took.
    const paths = { duckdb: pathOf('duckdb'), clickhouse: pathOf('clickhouse') };
    console.log(
      `${name}: DuckDB ${percentile(d, 50).toFixed(1)} / ${percentile(d, 99).toFixed(1)} ms (CPU ${lastCpu.duckdb.toFixed(1)} ms a read), ClickHouse ${percentile(c, 50).toFixed(1)} / ${percentile(c, 99).toFixed(1)} ms (server CPU ${lastCpu.clickhouse.toFixed(1)} ms a read) (load ${loadavg()[0].toFixed(2)})`,
    );
    console.log(`  path: DuckDB ${paths.duckdb}; ClickHouse ${paths.clickhouse}`);
    table.push({
      read: name,
      'DuckDB p50 ms': percentile(d, 50).toFixed(1),
      'DuckDB p99 ms': percentile(d, 99).toFixed(1),
      'ClickHouse p50 ms': percentile(c, 50).toFixed(1),
      'ClickHouse p99 ms': percentile(c, 99).toFixed(1),
      'p50 ratio CH/DuckDB': (percentile(c, 50) / percentile(d, 50)).toFixed(2),
      'DuckDB CPU ms/read': lastCpu.duckdb.toFixed(1),
      'ClickHouse CPU ms/read': lastCpu.clickhouse.toFixed(1),
      'DuckDB path': paths.duckdb,
      'ClickHouse path': paths.clickhouse,
    });
    lastCpu = { duckdb: NaN, clickhouse: NaN };
    seen.duckdb.clear();
    seen.clickhouse.clear();
  };
  const none = (): Promise<number[]> => Promise.resolve([NaN]);
  for (const [name, fn] of READS)
    if (SELECTED.test(name))
      row(
        name,
        duck ? await timed('duckdb', () => fn(duck)) : await none(),
        ch ? await timed('clickhouse', () => fn(ch)) : await none(),
      );
  const limits = { timeoutMs: 60_000, maxRows: 10_000 };
  const adhoc = 'ad-hoc: 4xx/5xx by path (DuckDB: POST /analytics/query path; ClickHouse: same SQL sent directly)';
  if (SELECTED.test(adhoc))
    row(
      adhoc,
      duck
        ? await timed('duckdb', () => duck.query(ADHOC_DUCKDB, [{ id: 1, name: 'd1.example.org' }], limits))
        : await none(),
      raw
        ? await timed('clickhouse', async () =>
            (await raw.query({ query: adhocClickHouse, format: 'JSONEachRow' })).json(),
          )
        : await none(),
    );
  console.table(table);
  await raw?.close();
  await ch?.close();
  await duck?.close();
} finally {
  await server?.stop();
  if (!KEPT_DIR) rmSync(dir, { recursive: true, force: true });
}
