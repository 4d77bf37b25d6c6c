// The per-domain reads on DuckDB: fixed statements over one domain's table (d_<id>, named from its integer id), with
// every value of the request bound as a parameter. The WHERE clause is put together from constant fragments, one per
// filter present; the grouped column comes from a fixed map of the allowed dimensions.
import { DuckDBTimestampTZValue, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import {
  groupValue,
  logRecord,
  type ActionCount,
  type BreakdownItem,
  type Dimension,
  type FilterField,
  type LogsCursor,
  type LogsPage,
  type Peak,
  type RangeSummary,
  type ReadRange,
  type RuleHits,
  type SeriesBucket,
} from './reads.js';

const FILTER_SQL: Record<FilterField, string> = {
  host: 'host = ?::VARCHAR',
  path: 'path = ?::VARCHAR',
  method: 'method = ?::VARCHAR',
  status: 'status = ?::INTEGER',
  cache_status: 'cache_status = ?::VARCHAR',
  node: 'node = ?::VARCHAR',
  bot_class: 'bot_class = ?::VARCHAR',
  country: 'country = ?::VARCHAR',
  asn: 'asn = ?::BIGINT',
  http_protocol: 'http_protocol = ?::VARCHAR',
  tls_version: 'tls_version = ?::VARCHAR',
  ua_category: 'ua_category = ?::VARCHAR',
  serving_path: 'serving_path = ?::VARCHAR',
  unserved_reason: 'unserved_reason = ?::VARCHAR',
  markdown: 'markdown = ?::BOOLEAN',
};
export const DIMENSION_SQL: Record<Dimension, string> = {
  host: 'host',
  path: 'path',
  method: 'method',
  status: 'status',
  cache_status: 'cache_status',
  node: 'node',
  client_ip: 'client_ip',
  bot_score: 'bot_score',
  bot_class: 'bot_class',
  country: 'country',
  asn: 'asn',
  http_protocol: 'http_protocol',
  tls_version: 'tls_version',
  ua_category: 'ua_category',
  serving_path: 'serving_path',
  unserved_reason: 'unserved_reason',
  rate_limit_rule: 'rate_limit_rule',
  rate_limit_key: 'rate_limit_key',
};
/** A label of a dimension's value, from the same rows: the AS organisation of an AS number. */
const LABEL_SQL: Partial<Record<Dimension, string>> = { asn: 'max(as_org)' };

export const tz = (d: Date): DuckDBTimestampTZValue => new DuckDBTimestampTZValue(BigInt(d.getTime()) * 1000n);

/** `time >= since AND time < until` and the filters present, with their values in order. */
export function where(range: ReadRange): { sql: string; values: DuckDBValue[] } {
  const f = filters(range);
  return {
    sql: ['time >= ?::TIMESTAMPTZ', 'time < ?::TIMESTAMPTZ', ...f.parts].join(' AND '),
    values: [tz(range.since), tz(range.until), ...f.values],
  };
}

/** The filters present, each a fragment with its value (the rollups' columns have the same names). */
export function filters(range: ReadRange): { parts: string[]; values: DuckDBValue[] } {
  const parts: string[] = [];
  const values: DuckDBValue[] = [];
  for (const [field, fragment] of Object.entries(FILTER_SQL) as [FilterField, string][]) {
    const v = range.filter[field];
    if (v === undefined) continue;
    parts.push(fragment);
    values.push(typeof v === 'number' || typeof v === 'boolean' ? v : String(v));
  }
  return { parts, values };
}

export const num = (v: unknown): number => Number(v);

export async function readSeries(
  conn: DuckDBConnection,
  table: string,
  range: ReadRange,
  startMs: number,
  intervalMs: number,
  visitors = true,
): Promise<SeriesBucket[]> {
  const w = where(range);
  // Without visitors (store.ts series): 0, not counted.
  const r = await conn.runAndReadAll(
    `SELECT (epoch_ms(time_utc) - ?::BIGINT) // ?::BIGINT AS b, count(*) AS requests, coalesce(sum(bytes), 0) AS bytes,
       ${visitors ? 'count(DISTINCT client_ip)' : '0'} AS visitors
     FROM main.${table} WHERE ${w.sql} GROUP BY b ORDER BY b`,
    [BigInt(startMs), BigInt(intervalMs), ...w.values],
  );
  return r
    .getRowsJS()
    .map((row) => ({ bucket: num(row[0]), requests: num(row[1]), bytes: num(row[2]), visitors: num(row[3]) }));
}

export async function readSummary(conn: DuckDBConnection, table: string, range: ReadRange): Promise<RangeSummary> {
  const w = where(range);
  const r = await conn.runAndReadAll(
    `SELECT count(*), coalesce(sum(bytes), 0), count(DISTINCT client_ip),
       count(*) FILTER (WHERE cache_status IN ('HIT', 'STALE')),
       coalesce(sum(bytes) FILTER (WHERE cache_status IN ('HIT', 'STALE')), 0),
       count(*) FILTER (WHERE upstream_ms >= 0), coalesce(sum(bytes) FILTER (WHERE upstream_ms >= 0), 0),
       avg(upstream_ms) FILTER (WHERE upstream_ms >= 0),
       quantile_disc(upstream_ms, [0.5, 0.95, 0.99]) FILTER (WHERE upstream_ms >= 0),
       count(*) FILTER (WHERE status >= 400 AND status < 500), count(*) FILTER (WHERE status >= 500),
       coalesce(sum(origin_bytes), 0)
     FROM main.${table} WHERE ${w.sql}`,
    w.values,
  );
  const x = r.getRowsJS()[0];
  const q = x[8] as number[] | null;
  return {
    requests: num(x[0]),
    bytes: num(x[1]),
    visitors: num(x[2]),
    cachedRequests: num(x[3]),
    cachedBytes: num(x[4]),
    originRequests: num(x[5]),
    originBytes: num(x[6]),
    upstreamMs: x[7] === null || !q ? null : { avg: num(x[7]), p50: num(q[0]), p95: num(q[1]), p99: num(q[2]) },
    status4xx: num(x[9]),
    status5xx: num(x[10]),
    originFetchedBytes: num(x[11]),
  };
}

export async function readRuleHits(
  conn: DuckDBConnection,
  table: string,
  range: ReadRange,
  limit: number,
): Promise<RuleHits[]> {
  const w = where(range);
  const r = await conn.runAndReadAll(
    `SELECT CAST(json_extract_string(h, '$[0]') AS BIGINT) AS id, json_extract_string(h, '$[1]') AS type,
       count(*) AS hits, count(*) FILTER (WHERE json_extract_string(h, '$[2]') = 'true') AS dry
     FROM (SELECT unnest(CAST(rule_hits AS JSON[])) AS h FROM main.${table} WHERE ${w.sql})
     GROUP BY id, type ORDER BY hits DESC, id, type LIMIT ?::BIGINT`,
    [...w.values, BigInt(limit)],
  );
  return r.getRowsJS().map((x) => ({ ruleId: num(x[0]), ruleType: String(x[1]), hits: num(x[2]), dryRun: num(x[3]) }));
}

export async function readWafActions(conn: DuckDBConnection, table: string, range: ReadRange): Promise<ActionCount[]> {
  const w = where(range);
  const r = await conn.runAndReadAll(
    `SELECT json_extract_string(e, '$[5]') AS action, count(*) AS events, count(DISTINCT rid) AS requests
     FROM (SELECT rowid AS rid, unnest(CAST(waf_events AS JSON[])) AS e FROM main.${table} WHERE ${w.sql})
     GROUP BY action ORDER BY events DESC, action LIMIT 100`,
    w.values,
  );
  return r.getRowsJS().map((x) => ({ action: String(x[0]), events: num(x[1]), requests: num(x[2]) }));
}

export async function readPeak(conn: DuckDBConnection, table: string, range: ReadRange): Promise<Peak> {
  const w = where(range);
  const r = await conn.runAndReadAll(
    `SELECT epoch_ms(time_utc) // 1000 AS s, count(*) AS n FROM main.${table} WHERE ${w.sql}
     GROUP BY s ORDER BY n DESC, s LIMIT 1`,
    w.values,
  );
  const x = r.getRowsJS()[0];
  return x ? { time: new Date(num(x[0]) * 1000), requests: num(x[1]) } : null;
}

export async function readBreakdown(
  conn: DuckDBConnection,
  table: string,
  range: ReadRange,
  dimension: Dimension,
  limit: number,
): Promise<BreakdownItem[]> {
  const w = where(range);
  const col = DIMENSION_SQL[dimension];
  const label = LABEL_SQL[dimension];
  const r = await conn.runAndReadAll(
    `SELECT ${col} AS v, count(*) AS requests, coalesce(sum(bytes), 0) AS bytes,
       coalesce(sum(origin_bytes), 0) AS origin_bytes${label ? `, ${label} AS label` : ''}
     FROM main.${table} WHERE ${w.sql} GROUP BY v ORDER BY requests DESC, v LIMIT ?::BIGINT`,
    [...w.values, BigInt(limit)],
  );
  return r.getRowsJS().map((row) => breakdownItem(row, label !== undefined));
}

/** A BreakdownItem from a row of value, requests, bytes, origin bytes (and the label when `labelled`). */
export const breakdownItem = (row: unknown[], labelled = false): BreakdownItem => ({
  value: groupValue(row[0]),
  requests: num(row[1]),
  bytes: num(row[2]),
  originBytes: num(row[3]),
  ...(labelled ? { label: String(row[4] ?? '') } : {}),
});

export async function readLogs(
  conn: DuckDBConnection,
  table: string,
  range: ReadRange,
  limit: number,
  cursor: LogsCursor | null,
): Promise<LogsPage> {
  const w = where(range);
  const after = cursor ? ' AND (epoch_us(time), rowid) < (?::BIGINT, ?::BIGINT)' : '';
  const values = cursor ? [...w.values, cursor.timeMicros, cursor.rowId] : w.values;
  const r = await conn.runAndReadAll(
    `SELECT epoch_us(time) AS us, rowid, host, path, method, status, bytes, cache_status, node, client_ip,
       duration_ms, upstream_ms, rule_hits::VARCHAR AS rule_hits, waf_events::VARCHAR AS waf_events, fingerprint,
       bot_score, bot_class, tls_version, http_protocol, ua_category, serving_path, unserved_reason, origin_bytes,
       markdown, rate_limit_rule, rate_limit_key, country, asn, as_org
     FROM main.${table} WHERE ${w.sql}${after} ORDER BY us DESC, rowid DESC LIMIT ?::BIGINT`,
    [...values, BigInt(limit + 1)],
  );
  const rows = r.getRowObjectsJS();
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    logs: page.map((x) => logRecord(new Date(Number(BigInt(x.us as bigint) / 1000n)), x)),
    next: more && last ? { timeMicros: BigInt(last.us as bigint), rowId: BigInt(last.rowid as bigint) } : null,
  };
}
