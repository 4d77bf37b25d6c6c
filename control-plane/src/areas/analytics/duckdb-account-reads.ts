// The reads of account-reads.ts on DuckDB: fixed statements over a temporary view of the connection (the union of the
// domains' tables, duckdb-store.ts readView) with the filters of duckdb-reads.ts and every value bound.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import {
  SECURITY_RULE_TYPES,
  UNBILLED_REASONS,
  type GroupDimension,
  type GroupItem,
  type ProxyClient,
  type TrafficBucket,
  type ValueBucket,
} from './account-reads.js';
import { DIMENSION_SQL, num, where } from './duckdb-reads.js';
import { groupValue, type ReadRange } from './reads.js';

export const GROUP_SQL: Record<GroupDimension, string> = {
  ...DIMENSION_SQL,
  domain_id: 'domain_id',
  status_class: 'status // 100',
};

const list = (xs: readonly string[]) => xs.map((t) => `'${t}'`).join(', ');
/** True for a request the edge refused on one of its own security rules (not billed); older rows by their rule hits. */
export const REFUSED_BY_SECURITY = `(CASE WHEN serving_path <> '' THEN unserved_reason IN (${list(UNBILLED_REASONS)})
  ELSE status >= 400 AND rule_hits::VARCHAR <> '[]' AND len(list_filter(CAST(rule_hits AS JSON[]),
    h -> json_extract_string(h, '$[2]') = 'false' AND json_extract_string(h, '$[1]') IN (${list(SECURITY_RULE_TYPES)}))) > 0
  END)`;

export async function readGroups(
  conn: DuckDBConnection,
  view: string,
  range: ReadRange,
  dims: GroupDimension[],
  limit: number,
): Promise<GroupItem[]> {
  const w = where(range);
  const cols = dims.map((d, i) => `${GROUP_SQL[d]} AS g${i}`).join(', ');
  const keys = dims.map((_, i) => `g${i}`).join(', ');
  const r = await conn.runAndReadAll(
    `SELECT ${cols}, count(*) AS requests, coalesce(sum(bytes), 0) AS bytes, count(DISTINCT client_ip) AS visitors
     FROM main.${view} WHERE ${w.sql} GROUP BY ${keys} ORDER BY requests DESC, ${keys} LIMIT ?::BIGINT`,
    [...w.values, BigInt(limit)],
  );
  return r.getRowsJS().map((row) => ({
    values: dims.map((_, i) => groupValue(row[i])),
    requests: num(row[dims.length]),
    bytes: num(row[dims.length + 1]),
    visitors: num(row[dims.length + 2]),
  }));
}

export async function readTraffic(
  conn: DuckDBConnection,
  view: string,
  range: ReadRange,
  startMs: number,
  intervalMs: number,
): Promise<TrafficBucket[]> {
  const w = where(range);
  const r = await conn.runAndReadAll(
    `SELECT b, count(*), coalesce(sum(bytes), 0),
       count(*) FILTER (WHERE NOT refused), coalesce(sum(bytes) FILTER (WHERE NOT refused), 0),
       count(*) FILTER (WHERE upstream_ms >= 0), coalesce(sum(bytes) FILTER (WHERE upstream_ms >= 0), 0),
       coalesce(sum(bytes) FILTER (WHERE cache_status IN ('HIT', 'STALE')), 0), coalesce(sum(origin_bytes), 0)
     FROM (SELECT (epoch_ms(time_utc) - ?::BIGINT) // ?::BIGINT AS b, bytes, upstream_ms, cache_status, origin_bytes,
             ${REFUSED_BY_SECURITY} AS refused
           FROM main.${view} WHERE ${w.sql})
     GROUP BY b ORDER BY b`,
    [BigInt(startMs), BigInt(intervalMs), ...w.values],
  );
  return r.getRowsJS().map(trafficBucket);
}

/** A TrafficBucket from a row of bucket, requests, bytes, billable requests and bytes, origin requests and bytes,
 * cached bytes, fetched bytes. */
export const trafficBucket = (x: unknown[]): TrafficBucket => ({
  bucket: num(x[0]),
  requests: num(x[1]),
  bytes: num(x[2]),
  billableRequests: num(x[3]),
  billableBytes: num(x[4]),
  originRequests: num(x[5]),
  originBytes: num(x[6]),
  cachedBytes: num(x[7]),
  originFetchedBytes: num(x[8]),
});

export async function readProxyClients(
  conn: DuckDBConnection,
  view: string,
  range: ReadRange,
  minRequests: number,
  minFingerprints: number,
  limit: number,
): Promise<ProxyClient[]> {
  const w = where(range);
  return proxyClientsOf(
    conn,
    `SELECT domain_id, client_ip, fingerprint, bot_class, 1 AS requests, bytes FROM main.${view} WHERE ${w.sql}`,
    w.values,
    minRequests,
    minFingerprints,
    limit,
  );
}

/**
 * Proxy-like clients over the rows of `from` (domain_id, client_ip, fingerprint, bot_class, requests, bytes: a raw
 * row each, or a rollup's sums): the addresses with the most distinct fingerprints. In two steps: the addresses with
 * at least minFingerprints fingerprints, from the rows that have one (minFingerprints is at least 2, so an address
 * without fingerprints is never an answer), then the totals of those addresses only; most addresses are not
 * candidates, and the distinct counts per address of every address were most of the read's time.
 */
export async function proxyClientsOf(
  conn: DuckDBConnection,
  from: string,
  values: DuckDBValue[],
  minRequests: number,
  minFingerprints: number,
  limit: number,
): Promise<ProxyClient[]> {
  const r = await conn.runAndReadAll(
    `WITH src AS (${from}),
       cand AS (SELECT client_ip FROM src WHERE fingerprint <> '' GROUP BY client_ip
                HAVING count(DISTINCT fingerprint) >= ?::BIGINT)
     SELECT client_ip, sum(requests) AS n, coalesce(sum(bytes), 0),
       count(DISTINCT fingerprint) FILTER (WHERE fingerprint <> '') AS fps, count(DISTINCT domain_id),
       count(DISTINCT bot_class) FILTER (WHERE bot_class <> '')
     FROM src WHERE client_ip IN (SELECT client_ip FROM cand) GROUP BY client_ip
     HAVING sum(requests) >= ?::BIGINT AND fps >= ?::BIGINT
     ORDER BY fps DESC, n DESC, client_ip LIMIT ?::BIGINT`,
    [...values, BigInt(minFingerprints), BigInt(minRequests), BigInt(minFingerprints), BigInt(limit)],
  );
  return r.getRowsJS().map((x) => ({
    clientIp: String(x[0]),
    requests: num(x[1]),
    bytes: num(x[2]),
    fingerprints: num(x[3]),
    domains: num(x[4]),
    botClasses: num(x[5]),
  }));
}

export async function readSeriesBy(
  conn: DuckDBConnection,
  view: string,
  range: ReadRange,
  startMs: number,
  intervalMs: number,
  dim: GroupDimension,
  values: (string | number)[],
): Promise<ValueBucket[]> {
  if (values.length === 0) return [];
  const w = where(range);
  const v = valueIn(dim, values);
  const r = await conn.runAndReadAll(
    `SELECT (epoch_ms(time_utc) - ?::BIGINT) // ?::BIGINT AS b, ${v.col} AS v, count(*) AS requests,
       coalesce(sum(bytes), 0) AS bytes
     FROM main.${view} WHERE ${w.sql} AND ${v.sql} GROUP BY b, v ORDER BY b, v`,
    [BigInt(startMs), BigInt(intervalMs), ...w.values, ...v.values],
  );
  return r.getRowsJS().map(valueBucket);
}

/** The group column of `dim` and `<it> IN (values)` with the values bound (numbers, or text compared as text). */
export function valueIn(
  dim: GroupDimension,
  values: (string | number)[],
): { col: string; sql: string; values: (bigint | string)[] } {
  const col = GROUP_SQL[dim];
  const numeric = values.every((v) => typeof v === 'number');
  const list = values.map(() => (numeric ? '?::BIGINT' : '?::VARCHAR')).join(', ');
  return {
    col,
    sql: `${numeric ? col : `CAST(${col} AS VARCHAR)`} IN (${list})`,
    values: values.map((v) => (numeric ? BigInt(v) : String(v))),
  };
}

/** A ValueBucket from a row of bucket, value, requests, bytes. */
export const valueBucket = (x: unknown[]): ValueBucket => ({
  bucket: num(x[0]),
  value: groupValue(x[1]),
  requests: num(x[2]),
  bytes: num(x[3]),
});
