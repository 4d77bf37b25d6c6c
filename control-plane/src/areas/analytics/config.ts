// The analytics store's settings, read by config.ts through its EnvReader.
import type { EnvReader } from '@platform/shared';

export interface AnalyticsConfig {
  /** ANALYTICS_BACKEND: `duckdb` (embedded, DATA_DIR/analytics.duckdb) or `clickhouse` (ANALYTICS_CLICKHOUSE_URL). */
  backend: 'duckdb' | 'clickhouse';
  /** ANALYTICS_CLICKHOUSE_URL: the ClickHouse server's HTTP interface (user and password in the URL when needed). */
  clickhouseUrl: string;
  /** ANALYTICS_CLICKHOUSE_DATABASE: the database the store creates its tables in (created when missing). */
  clickhouseDatabase: string;
  /** ANALYTICS_MEMORY_MB: the DuckDB instance's memory limit (queries and writes together). */
  memoryLimitMb: number;
  /** ANALYTICS_THREADS: DuckDB worker threads. */
  threads: number;
  /** ANALYTICS_QUERY_TIMEOUT_MS: POST /analytics/query is interrupted after this. */
  queryTimeoutMs: number;
  /** ANALYTICS_QUERY_MAX_ROWS: rows one query answers at most (`truncated` says there were more). */
  queryMaxRows: number;
  /** ANALYTICS_QUERY_CONCURRENCY: queries running at once in this process; more get 429. */
  queryConcurrency: number;
  /** ANALYTICS_SWEEP_SECONDS: how often rows past their plan's retention (and deleted domains' rows) are removed. */
  sweepMs: number;
  /** ANALYTICS_ALERT_MIN_INTERVAL_SECONDS: the shortest evaluation interval a saved query's alert may have. */
  alertMinIntervalSeconds: number;
}

export function loadAnalyticsConfig(r: EnvReader): AnalyticsConfig {
  const backend = r.string('ANALYTICS_BACKEND', 'duckdb');
  if (backend !== 'duckdb' && backend !== 'clickhouse')
    r.problems.push(`ANALYTICS_BACKEND must be duckdb or clickhouse, got "${backend}"`);
  const clickhouseUrl = r.string('ANALYTICS_CLICKHOUSE_URL', 'http://127.0.0.1:8123');
  if (!/^https?:\/\/[^\s]+$/.test(clickhouseUrl))
    r.problems.push(`ANALYTICS_CLICKHOUSE_URL must be an http:// or https:// URL, got "${clickhouseUrl}"`);
  const clickhouseDatabase = r.string('ANALYTICS_CLICKHOUSE_DATABASE', 'edge_analytics');
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(clickhouseDatabase))
    r.problems.push(`ANALYTICS_CLICKHOUSE_DATABASE must be a plain identifier, got "${clickhouseDatabase}"`);
  return {
    backend: backend === 'clickhouse' ? 'clickhouse' : 'duckdb',
    clickhouseUrl,
    clickhouseDatabase,
    memoryLimitMb: r.int('ANALYTICS_MEMORY_MB', 1024, 64, 1024 * 1024),
    threads: r.int('ANALYTICS_THREADS', 2, 1, 256),
    queryTimeoutMs: r.int('ANALYTICS_QUERY_TIMEOUT_MS', 10_000, 100, 600_000),
    queryMaxRows: r.int('ANALYTICS_QUERY_MAX_ROWS', 10_000, 1, 1_000_000),
    queryConcurrency: r.int('ANALYTICS_QUERY_CONCURRENCY', 2, 1, 64),
    sweepMs: r.int('ANALYTICS_SWEEP_SECONDS', 3600, 10, 7 * 86400) * 1000,
    alertMinIntervalSeconds: r.int('ANALYTICS_ALERT_MIN_INTERVAL_SECONDS', 60, 1, 86400),
  };
}
