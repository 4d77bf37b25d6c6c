// The analytics store's settings, read by config.ts through its EnvReader.
import type { EnvReader } from '@platform/shared';

export interface AnalyticsConfig {
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
}

export function loadAnalyticsConfig(r: EnvReader): AnalyticsConfig {
  return {
    memoryLimitMb: r.int('ANALYTICS_MEMORY_MB', 1024, 64, 1024 * 1024),
    threads: r.int('ANALYTICS_THREADS', 2, 1, 256),
    queryTimeoutMs: r.int('ANALYTICS_QUERY_TIMEOUT_MS', 10_000, 100, 600_000),
    queryMaxRows: r.int('ANALYTICS_QUERY_MAX_ROWS', 10_000, 1, 1_000_000),
    queryConcurrency: r.int('ANALYTICS_QUERY_CONCURRENCY', 2, 1, 64),
    sweepMs: r.int('ANALYTICS_SWEEP_SECONDS', 3600, 10, 7 * 86400) * 1000,
  };
}
