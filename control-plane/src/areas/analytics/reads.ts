// The per-domain analytics reads (GET /domains/{domain}/analytics/...): what a read asks of the store (a
// fixed query per read whose values are bound, never SQL text from the request), and the shared parsing of time range, interval and
// filter parameters with their bounds.
import { ApiError } from '../../errors.js';

/** The later fields' columns (store.ts LaterFields) a read may filter and group by. */
const LATER_DIMENSIONS = [
  'country',
  'asn',
  'http_protocol',
  'tls_version',
  'ua_category',
  'serving_path',
  'unserved_reason',
] as const;
/** Columns every request has, that a read may filter and group by. */
const REQUEST_DIMENSIONS = ['host', 'path', 'method', 'status', 'cache_status', 'node'] as const;
/** Filters every read takes, by query parameter name: exact match on the `logs` column of the same name. */
export const FILTER_FIELDS = [...REQUEST_DIMENSIONS, 'bot_class', ...LATER_DIMENSIONS, 'markdown'] as const;
export type FilterField = (typeof FILTER_FIELDS)[number];
export type ReadFilter = Partial<Record<FilterField, string | number | boolean>>;

/** Dimensions of the top-N breakdown: columns of `logs` a read may group by. */
export const DIMENSIONS = [
  ...REQUEST_DIMENSIONS,
  'client_ip',
  'bot_score',
  'bot_class',
  ...LATER_DIMENSIONS,
  'rate_limit_rule',
  'rate_limit_key',
] as const;
export type Dimension = (typeof DIMENSIONS)[number];

/** Intervals of the over-time reads and their length (Cloudflare's minute, 5/15 minutes, hour, day groups). */
export const INTERVALS = { '1m': 60_000, '5m': 300_000, '15m': 900_000, '1h': 3_600_000, '1d': 86_400_000 } as const;
export type Interval = keyof typeof INTERVALS;

/** Points one over-time read answers at most. */
export const MAX_POINTS = 1500;
/** The longest range a read covers (the longest retention, enterprise's 365 days, and a day). */
export const MAX_RANGE_DAYS = 366;
/** Range when `since` is not given: the day before `until`. */
export const DEFAULT_RANGE_MS = 86_400_000;
export const MAX_TOP = 100;
export const DEFAULT_TOP = 10;
export const MAX_LOGS_PAGE = 1000;
export const DEFAULT_LOGS_PAGE = 100;

export interface ReadRange {
  /** Inclusive. */
  since: Date;
  /** Exclusive. */
  until: Date;
  filter: ReadFilter;
}

/** Where a page of raw logs starts: strictly before this row (newest first). */
export interface LogsCursor {
  timeMicros: bigint;
  rowId: bigint;
}

export interface SeriesBucket {
  /** Index of the bucket from the first. */
  bucket: number;
  requests: number;
  bytes: number;
  /** Distinct client addresses. */
  visitors: number;
}
/** Totals of a range. */
export interface RangeSummary {
  requests: number;
  bytes: number;
  /** Distinct client addresses. */
  visitors: number;
  /** Served from the cache: HIT or STALE. */
  cachedRequests: number;
  cachedBytes: number;
  /** Passed to the origin (upstream_ms >= 0), and the bytes answered to their clients. */
  originRequests: number;
  originBytes: number;
  /** Time waiting for the origin: mean and nearest-rank percentiles; null when no request went to the origin. */
  upstreamMs: { avg: number; p50: number; p95: number; p99: number } | null;
  status4xx: number;
  status5xx: number;
  /** Body bytes received from the origin. */
  originFetchedBytes: number;
}
/** What a summary of a range without rows answers. */
export const EMPTY_SUMMARY: RangeSummary = Object.freeze({
  requests: 0,
  bytes: 0,
  visitors: 0,
  cachedRequests: 0,
  cachedBytes: 0,
  originRequests: 0,
  originBytes: 0,
  upstreamMs: null,
  status4xx: 0,
  status5xx: 0,
  originFetchedBytes: 0,
});
/** A rule's hits over a range. */
export interface RuleHits {
  ruleId: number;
  ruleType: string;
  hits: number;
  /** Of those, in dry run (logged, not enforced). */
  dryRun: number;
}
/** WAF findings per action over a range. */
export interface ActionCount {
  action: string;
  events: number;
  /** Requests with at least one finding of this action. */
  requests: number;
}
/** The busiest second of a range (the earliest of equals); null when the range has no request. */
export type Peak = { time: Date; requests: number } | null;
/** A grouped column's value as a read answers it: numbers (big integers too) as numbers, anything else as text. */
export const groupValue = (v: unknown): string | number =>
  typeof v === 'number' || typeof v === 'bigint' ? Number(v) : String(v);
export interface BreakdownItem {
  value: string | number;
  requests: number;
  /** Bytes sent to clients. */
  bytes: number;
  /** Body bytes received from the origin. */
  originBytes: number;
  /** For `asn`: the organisation of the AS (as looked up at ingest). */
  label?: string;
}
export interface LogRecord {
  time: string;
  host: string;
  path: string;
  method: string;
  status: number;
  bytes: number;
  cache_status: string;
  node: string;
  client_ip: string;
  duration_ms: number;
  upstream_ms: number;
  rule_hits: unknown;
  waf_events: unknown;
  fingerprint: string;
  bot_score: number;
  bot_class: string;
  tls_version: string;
  http_protocol: string;
  ua_category: string;
  serving_path: string;
  unserved_reason: string;
  origin_bytes: number;
  markdown: boolean;
  rate_limit_rule: number;
  rate_limit_key: string;
  country: string;
  asn: number;
  as_org: string;
}
/**
 * A LogRecord from a store's row whose columns are named as its fields (rule_hits and waf_events as JSON text,
 * markdown true or 1); a later column that is NULL (a table older than the column) reads as its default.
 */
export function logRecord(time: Date, x: Record<string, unknown>): LogRecord {
  const text = (k: keyof LogRecord): string => String(x[k] ?? '');
  const n = (k: keyof LogRecord): number => Number(x[k] ?? 0);
  return {
    time: time.toISOString(),
    host: text('host'),
    path: text('path'),
    method: text('method'),
    status: n('status'),
    bytes: n('bytes'),
    cache_status: text('cache_status'),
    node: text('node'),
    client_ip: text('client_ip'),
    duration_ms: n('duration_ms'),
    upstream_ms: n('upstream_ms'),
    rule_hits: JSON.parse(String(x.rule_hits)) as unknown,
    waf_events: JSON.parse(String(x.waf_events)) as unknown,
    fingerprint: text('fingerprint'),
    bot_score: n('bot_score'),
    bot_class: text('bot_class'),
    tls_version: text('tls_version'),
    http_protocol: text('http_protocol'),
    ua_category: text('ua_category'),
    serving_path: text('serving_path'),
    unserved_reason: text('unserved_reason'),
    origin_bytes: n('origin_bytes'),
    markdown: x.markdown === true || x.markdown === 1,
    rate_limit_rule: n('rate_limit_rule'),
    rate_limit_key: text('rate_limit_key'),
    country: text('country'),
    asn: n('asn'),
    as_org: text('as_org'),
  };
}
export interface LogsPage {
  logs: LogRecord[];
  /** Where the next page starts; null when this one is the last. */
  next: LogsCursor | null;
}

const bad = (message: string): ApiError => new ApiError('CP_ERR_INVALID_INPUT', message);

/** An ISO 8601 date-time with a zone (2026-11-25T10:00:00Z); `name` in the 400. */
function parseTime(name: string, text: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(?:Z|[+-](\d{2}):(\d{2}))$/.exec(text);
  if (!m) throw bad(`${name}: expected an ISO 8601 date-time with a zone, such as 2026-11-25T10:00:00Z`);
  const [y, mo, d, h, mi, s, oh, om] = m.slice(1).map((x) => Number(x ?? 0));
  // Date would roll 2026-02-30 over to March 2nd: each field must be in its range.
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (mo < 1 || mo > 12 || d < 1 || d > days || h > 23 || mi > 59 || s > 59 || oh > 23 || om > 59)
    throw bad(`${name}: not a valid date-time`);
  const t = new Date(text);
  if (Number.isNaN(t.getTime())) throw bad(`${name}: not a valid date-time`);
  return t;
}

export interface RangeQuery {
  since?: string;
  until?: string;
  host?: string;
  path?: string;
  method?: string;
  status?: number;
  cache_status?: string;
  node?: string;
  bot_class?: string;
  country?: string;
  asn?: number;
  http_protocol?: string;
  tls_version?: string;
  ua_category?: string;
  serving_path?: string;
  unserved_reason?: string;
  markdown?: boolean;
}

/** since/until (until defaults to now, since to a day before until) and the filters; 400 on a bad range. */
export function parseRange(q: RangeQuery, now = new Date()): ReadRange {
  const until = q.until !== undefined ? parseTime('until', q.until) : now;
  const since = q.since !== undefined ? parseTime('since', q.since) : new Date(until.getTime() - DEFAULT_RANGE_MS);
  if (since.getTime() >= until.getTime()) throw bad('since: must be before until');
  if (until.getTime() - since.getTime() > MAX_RANGE_DAYS * 86_400_000)
    throw bad(`since, until: the range may cover at most ${MAX_RANGE_DAYS} days`);
  const filter: ReadFilter = {};
  for (const f of FILTER_FIELDS) if (q[f] !== undefined) filter[f] = q[f];
  return { since, until, filter };
}

/**
 * The buckets of an over-time read: aligned to multiples of the interval since the epoch (UTC minutes, hours, days),
 * from the one holding `since` to the one holding the last instant before `until`. Without `interval`, the shortest
 * that keeps the points within MAX_POINTS; with one that gives more, 400.
 */
export function parseInterval(
  range: ReadRange,
  interval: Interval | undefined,
): { interval: Interval; intervalMs: number; startMs: number; points: number } {
  const span = (ms: number) => {
    const startMs = Math.floor(range.since.getTime() / ms) * ms;
    return { startMs, points: Math.floor((range.until.getTime() - 1 - startMs) / ms) + 1 };
  };
  if (interval !== undefined) {
    const intervalMs = INTERVALS[interval];
    const s = span(intervalMs);
    if (s.points > MAX_POINTS)
      throw bad(
        `interval: ${interval} over this range gives ${s.points} points, more than ${MAX_POINTS}; choose a longer interval or a shorter range`,
      );
    return { interval, intervalMs, ...s };
  }
  for (const [name, ms] of Object.entries(INTERVALS) as [Interval, number][]) {
    const s = span(ms);
    if (s.points <= MAX_POINTS) return { interval: name, intervalMs: ms, ...s };
  }
  throw bad('since, until: no interval keeps this range within the points limit'); // not reached: 366 days of 1d
}

/** The opaque cursor of GET .../analytics/logs: `<time in µs>.<row>` in base 36 (12 digits at most: within int64). */
export function encodeCursor(c: LogsCursor): string {
  return `${c.timeMicros.toString(36)}.${c.rowId.toString(36)}`;
}
export function decodeCursor(text: string): LogsCursor {
  const m = /^(-?[0-9a-z]{1,12})\.([0-9a-z]{1,12})$/.exec(text);
  if (!m) throw bad('cursor: not a cursor this read gave');
  const parse36 = (s: string): bigint => {
    const neg = s.startsWith('-');
    let v = 0n;
    for (const ch of neg ? s.slice(1) : s) v = v * 36n + BigInt(parseInt(ch, 36));
    return neg ? -v : v;
  };
  return { timeMicros: parse36(m[1]), rowId: parse36(m[2]) };
}
