// The analytics store (issue 15 items 2 and 4) beside its anchor, the Postgres table request_logs that ingest fills
// today (PGlite here, as the control plane runs by default): ingest rows per second (DuckDB's appender in batches
// of 5000 vs INSERTs of 500 rows in one transaction), then p50/p99 of three typical ad-hoc queries on the same rows
// (DuckDB through POST /analytics/query's path: parse, sandbox check, view, run).
// Run: node --import tsx bench/control-plane/analytics.bench.ts   (ROWS=200000 by default; BIG_ROWS=1000000 more
// rows in DuckDB alone, 0 to skip)
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { openDatabase } from '../../control-plane/src/db/index.js';
import { requestLogs } from '../../control-plane/src/db/schema.js';
import { openDuckDbStore } from '../../control-plane/src/areas/analytics/duckdb-store.js';
import type { LogRow } from '../../control-plane/src/areas/analytics/store.js';
import { timeRuns } from './paired-runner.js';

const ROWS = Number(process.env.ROWS ?? 200_000);
const BIG_ROWS = Number(process.env.BIG_ROWS ?? 1_000_000);
const RUNS = 20;
const now = Date.now();

function rowsFor(n: number, domainId: number): LogRow[] {
  return Array.from({ length: n }, (_, i) => ({
    time: new Date(now - (i % 86_400) * 1000),
    domainId,
    ownerId: 1,
    node: `edge-${i % 4}`,
    host: `www${i % 3}.d${domainId}.example.org`,
    path: `/p/${i % 500}`,
    method: i % 10 === 0 ? 'POST' : 'GET',
    status: i % 17 === 0 ? 404 : i % 31 === 0 ? 500 : 200,
    bytes: (i * 7919) % 100_000,
    cacheStatus: i % 3 === 0 ? 'HIT' : 'MISS',
    ruleHits: [],
    wafEvents: [],
    durationMs: (i % 100) / 3,
    upstreamMs: (i % 50) / 3,
    clientIp: `192.0.2.${i % 250}`,
    fingerprint: '',
    botScore: 0,
    botClass: '',
  }));
}

const QUERIES: [string, string, string][] = [
  [
    'status counts, last hour',
    `SELECT status, count(*) AS n, sum(bytes) AS b FROM logs WHERE time > now() - INTERVAL 1 HOUR GROUP BY status ORDER BY n DESC`,
    `SELECT status, count(*) AS n, sum(bytes) AS b FROM request_logs WHERE at > now() - interval '1 hour' GROUP BY status ORDER BY n DESC`,
  ],
  [
    'top 10 paths by bytes',
    `SELECT path, sum(bytes) AS b FROM logs GROUP BY path ORDER BY b DESC LIMIT 10`,
    `SELECT path, sum(bytes) AS b FROM request_logs GROUP BY path ORDER BY b DESC LIMIT 10`,
  ],
  [
    'requests per hour and distinct clients',
    `SELECT date_trunc('hour', time_utc) AS h, count(*), count(DISTINCT client_ip) FROM logs GROUP BY h ORDER BY h`,
    `SELECT date_trunc('hour', at) AS h, count(*), count(DISTINCT client_ip) FROM request_logs GROUP BY h ORDER BY h`,
  ],
];

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
const timed = (fn: () => Promise<unknown>): Promise<number[]> => timeRuns(fn, RUNS);

const dir = mkdtempSync(join(tmpdir(), 'analytics-bench-'));
try {
  const store = openDuckDbStore({ dir: join(dir, 'duck'), memoryLimitMb: 1024, threads: 2 });
  const pg = await openDatabase({ dataDir: join(dir, 'pg') });
  const rows = rowsFor(ROWS, 1);

  let t0 = performance.now();
  for (let i = 0; i < rows.length; i += 5000) await store.append(rows.slice(i, i + 5000));
  const duckIngest = ROWS / ((performance.now() - t0) / 1000);

  t0 = performance.now();
  for (let i = 0; i < rows.length; i += 5000) {
    await pg.db.transaction(async (tx) => {
      for (let j = i; j < Math.min(i + 5000, rows.length); j += 500)
        await tx.insert(requestLogs).values(
          rows.slice(j, j + 500).map((r) => ({
            at: r.time,
            node: r.node,
            host: r.host,
            path: r.path,
            method: r.method,
            status: r.status,
            bytes: r.bytes,
            cacheStatus: r.cacheStatus,
            ruleHits: r.ruleHits,
            wafEvents: r.wafEvents,
            durationMs: r.durationMs,
            upstreamMs: r.upstreamMs,
            clientIp: r.clientIp,
          })),
        );
    });
  }
  const pgIngest = ROWS / ((performance.now() - t0) / 1000);

  console.log(`Node ${process.version}, ${cpus()[0]?.model ?? 'cpu'} x${cpus().length}; ${ROWS} rows`);
  console.table([
    {
      task: 'anchor: PGlite request_logs INSERT (500 rows a statement)',
      'rows/s': Math.round(pgIngest),
      ratio: '1.00',
    },
    {
      task: 'DuckDB appender (5000 rows a batch)',
      'rows/s': Math.round(duckIngest),
      ratio: (duckIngest / pgIngest).toFixed(1),
    },
  ]);

  const domains = [{ id: 1, name: 'd1.example.org' }];
  const limits = { timeoutMs: 60_000, maxRows: 10_000 };
  const table: Record<string, string | number>[] = [];
  for (const [name, duckSql, pgSql] of QUERIES) {
    const p = await timed(() => pg.db.execute(sql.raw(pgSql)));
    const d = await timed(() => store.query(duckSql, domains, limits));
    table.push({
      query: name,
      'PGlite p50 ms': pct(p, 0.5).toFixed(1),
      'PGlite p99 ms': pct(p, 0.99).toFixed(1),
      'DuckDB p50 ms': pct(d, 0.5).toFixed(1),
      'DuckDB p99 ms': pct(d, 0.99).toFixed(1),
      'p50 ratio': (pct(p, 0.5) / pct(d, 0.5)).toFixed(1),
    });
  }
  console.table(table);
  await pg.close();

  if (BIG_ROWS > 0) {
    for (let done = 0; done < BIG_ROWS; done += 100_000) {
      const part = rowsFor(Math.min(100_000, BIG_ROWS - done), 2);
      for (let i = 0; i < part.length; i += 5000) await store.append(part.slice(i, i + 5000));
    }
    const big: Record<string, string>[] = [];
    for (const [name, duckSql] of QUERIES) {
      const d = await timed(() => store.query(duckSql, [{ id: 2, name: 'd2.example.org' }], limits));
      big.push({ query: name, 'p50 ms': pct(d, 0.5).toFixed(1), 'p99 ms': pct(d, 0.99).toFixed(1) });
    }
    console.log(`DuckDB alone, ${BIG_ROWS} rows in one domain:`);
    console.table(big);
  }
  await store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
