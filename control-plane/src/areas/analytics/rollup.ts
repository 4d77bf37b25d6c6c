// Pre-aggregated rollups of the request logs, shared by both backends (duckdb-rollups.ts, clickhouse-rollups.ts):
// which columns a rollup keeps, the bucket lengths (levels) each kind of rollup is kept at, and how a read's time
// range is cut into whole buckets of those levels plus the raw rows of the pieces no bucket covers whole. A read
// answered this way gives the same numbers as one over the raw rows: every measure is a count or a sum, distinct
// clients are a set per bucket (a client once per bucket), percentiles a histogram of the exact values.
import type { FilterField, LogsCursor, LogsPage, ReadRange } from './reads.js';
import { QueryFailed } from './store.js';
import type { GroupDimension } from './account-reads.js';

export const SECOND = 1000;
export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

/**
 * The columns the counts rollup keeps per bucket: the request's low-cardinality columns (a filter or a group on one
 * of them reads the rollup), `refused` (not billed: account-reads.ts UNBILLED_REASONS and the older rows' rule hits).
 * Not kept: path, client address, AS number, bot score, rate-limit keys (many values; read from their own rollups or
 * the raw rows). The per-dimension rollups (dimClients, dimUpstream) name a column by its index in this list: a
 * change to it needs those rollups built again (as it needs the counts rollup built again for its new column).
 */
export const COUNT_DIMS = [
  'host',
  'method',
  'status',
  'cache_status',
  'node',
  'bot_class',
  'country',
  'http_protocol',
  'tls_version',
  'ua_category',
  'serving_path',
  'unserved_reason',
  'markdown',
] as const;
export type CountDim = (typeof COUNT_DIMS)[number];

/** Bucket lengths of each rollup, longest first. Every one divides the next longer, and every read interval. */
export const LEVELS = {
  /** Requests, bytes, origin and cache parts per combination of COUNT_DIMS. */
  counts: [HOUR, MINUTE],
  /** Requests and bytes per client address: the distinct clients of any union of buckets (visitors). */
  clients: [DAY, HOUR, 15 * MINUTE, 5 * MINUTE, MINUTE],
  /** Requests per exact upstream_ms value of the requests passed to the origin: exact percentiles. */
  upstream: [HOUR, MINUTE],
  /** Requests and bytes per host and path (top paths). */
  paths: [HOUR, MINUTE],
  /** Requests per second (peak). */
  seconds: [SECOND],
  /** Hits and dry-run hits per rule id and type (busiest rules). */
  rules: [HOUR, MINUTE],
  /** WAF findings and requests with a finding per action (security actions). */
  waf: [HOUR, MINUTE],
  /**
   * Requests and bytes per client address, fingerprint and bot class (proxy-like clients): not kept per minute,
   * where it would hold about a row per request; the ends of a range shorter than 5 minutes read raw rows.
   */
  fingerprints: [HOUR, 5 * MINUTE],
  /**
   * The clients of each host and path (the visitors of the top files): per hour only, as a shorter bucket holds about
   * a row per request; the ends of a range shorter than an hour read raw rows.
   */
  pathClients: [HOUR],
  /**
   * The clients of each value of each counts column (COUNT_DIMS, by index): the visitors of a summary filtered on one
   * of them. Per hour only (a client is a row per column and value it showed in the bucket: 13 rows or more per client
   * and hour); the ends of a range shorter than an hour read raw rows.
   */
  dimClients: [HOUR],
  /** Requests per exact upstream_ms value per value of each counts column: the origin percentiles of such a summary. */
  dimUpstream: [HOUR],
  /**
   * The clients of each combination of the counts columns' values (COUNT_DIMS): the visitors of a summary filtered on
   * several of them (a distinct count under a conjunction needs the combinations, not each column's values). Per hour
   * only (about a fifth of the requests of the bench's log are new combinations of client and values in an hour); the
   * ends of a range shorter than an hour read raw rows.
   */
  comboClients: [HOUR],
  /** Requests per exact upstream_ms value per combination of the counts columns: the percentiles of such a summary. */
  comboUpstream: [HOUR],
  /**
   * Requests and bytes per host, path and value of each counts column (COUNT_DIMS, by index): the top paths filtered
   * on one counts column (a breakdown filtered on a path reads the copy by path). Per hour, as the other per-path
   * kinds; the ends of a range shorter than an hour read raw rows.
   */
  pathValues: [HOUR],
  /**
   * The summary's totals per AS number (requests, bytes, cached, to the origin, 4xx, 5xx): a summary
   * filtered on an AS number, with the clients of asnClients and the times of asnUpstream. Few AS numbers a minute, so
   * kept per minute too.
   */
  asnCounts: [HOUR, MINUTE],
  /**
   * The clients of each AS number. An AS number follows from the address (GeoIP at ingest), so a bucket holds about a
   * row per client, as the clients rollup; per 5 minutes at the shortest (the ends of a range shorter than that read
   * raw rows), as a row per client and minute would be a second clients-per-minute table at every batch.
   */
  asnClients: [HOUR, 5 * MINUTE],
  /** Requests per exact upstream_ms value per AS number: the origin percentiles of such a summary. */
  asnUpstream: [HOUR, MINUTE],
  /** Requests, bytes and origin bytes per bot score (the bot scores read: a breakdown by bot_score). */
  scores: [HOUR, MINUTE],
  /** Requests, bytes and origin bytes per rate_limit rule id (the tripped rate-limit keys read: its rules). */
  limitRules: [HOUR, MINUTE],
  /** Requests, bytes and origin bytes per rate-limit key (the tripped rate-limit keys read: its keys). */
  limitKeys: [HOUR, MINUTE],
  /**
   * Requests, bytes and origin bytes per AS number and AS organisation (the networks read: a breakdown by AS number
   * labelled with the organisation of its rows, max(as_org)). The organisation follows from the AS number in the GeoIP
   * data, so this holds about a row per AS number and bucket; kept per minute too, as asnCounts.
   */
  asnOrgs: [HOUR, MINUTE],
  /**
   * The clients of each status per 5 minutes (the visitors of a series at 5-minute points filtered on a status: the
   * panel's status filter). Per 5 minutes only (an hour's point reads dimClients); a bucket holds a row per client and
   * status it got, about the clients rollup's 5-minute rows on a log whose clients see one or two statuses. The ends of
   * a range shorter than 5 minutes read raw rows.
   */
  statusClients: [5 * MINUTE],
  /**
   * The clients of each node and country (the visitors of traffic by node and country, and of groups by either under
   * filters on either): per hour and 5 minutes, so a day's range reads raw rows for its ends shorter than 5 minutes
   * only (comboClients, per hour, left up to two hours of raw rows). A client is usually on one node and always in one
   * country per GeoIP lookup: about a row per client and bucket.
   */
  placeClients: [HOUR, 5 * MINUTE],
} as const satisfies Record<string, readonly number[]>;
export type RollupKind = keyof typeof LEVELS;

/** Whole buckets of one level: `lvl` the bucket length, bucket starts from `lo` (inclusive) to `hi` (exclusive). */
export interface Piece {
  lvl: number;
  lo: number;
  hi: number;
}
/** A time range in ms, [lo, hi). */
export interface Span {
  lo: number;
  hi: number;
}
/** A range cut into whole buckets and the raw rows left over. */
export interface Cover {
  pieces: Piece[];
  raw: Span[];
}

const floorTo = (t: number, l: number) => Math.floor(t / l) * l;
const ceilTo = (t: number, l: number) => Math.ceil(t / l) * l;

/**
 * [lo, hi) as whole buckets of the longest levels that fit (levels longest first, each dividing the longer ones) and
 * what is left at its ends, shorter than the shortest level, as raw spans. No two parts overlap; together they are
 * the range. With a series interval, pass only levels that divide it: no part then crosses a point of the series.
 */
export function cover(lo: number, hi: number, levels: readonly number[]): Cover {
  const out: Cover = { pieces: [], raw: [] };
  const walk = (a: number, b: number, i: number) => {
    if (a >= b) return;
    if (i >= levels.length) {
      out.raw.push({ lo: a, hi: b });
      return;
    }
    const l = levels[i];
    const s = ceilTo(a, l);
    const e = floorTo(b, l);
    if (s >= e) {
      walk(a, b, i + 1);
      return;
    }
    walk(a, s, i + 1);
    out.pieces.push({ lvl: l, lo: s, hi: e });
    walk(e, b, i + 1);
  };
  walk(lo, hi, 0);
  return out;
}

/** The levels of a rollup a series of `intervalMs` points may read: those that divide the interval. */
export const levelsFor = (kind: RollupKind, intervalMs?: number): number[] =>
  LEVELS[kind].filter((l) => intervalMs === undefined || (l <= intervalMs && intervalMs % l === 0));

/** True when the range's filters are all columns of the counts rollup (none: true). */
export const countsFilter = (range: ReadRange): boolean =>
  Object.keys(range.filter).every((f) => (COUNT_DIMS as readonly string[]).includes(f as FilterField));
/** True when the range has no filter: the rollups without COUNT_DIMS (clients, upstream, seconds) answer it. */
export const noFilter = (range: ReadRange): boolean => Object.keys(range.filter).length === 0;
/**
 * The range's one filter when it is on a column of the counts rollup (the dimClients and dimUpstream rollups answer
 * it), else null: no filter, several, or one on another column.
 */
export function oneCountsFilter(range: ReadRange): CountDim | null {
  const fields = Object.keys(range.filter);
  return fields.length === 1 && (COUNT_DIMS as readonly string[]).includes(fields[0]) ? (fields[0] as CountDim) : null;
}
/**
 * True when the range has several filters, all on columns of the counts rollup: the combination rollups
 * (comboClients, comboUpstream) answer its summary's clients and times.
 */
export const countsFilters = (range: ReadRange): boolean => Object.keys(range.filter).length > 1 && countsFilter(range);
/**
 * The columns of the stores' copy of the rows by path (byPath): every filter's column and every column the series,
 * summary, peak and breakdown read over raw rows (a breakdown of any dimension, the AS organisation of an AS number's
 * label). Not kept: the rule hits and WAF findings, fingerprint, duration, the owner id (and on DuckDB the domain id:
 * its tables are per domain).
 */
export const PATH_COPY_COLUMNS = [
  'time',
  'time_utc',
  'node',
  'host',
  'path',
  'method',
  'status',
  'bytes',
  'cache_status',
  'upstream_ms',
  'client_ip',
  'bot_score',
  'bot_class',
  'tls_version',
  'http_protocol',
  'ua_category',
  'serving_path',
  'unserved_reason',
  'origin_bytes',
  'markdown',
  'rate_limit_rule',
  'rate_limit_key',
  'country',
  'asn',
  'as_org',
] as const;
/**
 * The path the range is filtered on, if any: the store's copy of the rows by path (DuckDB: the table of that path's
 * shard, duckdb-path-copy.ts) answers its raw-row reads (series, summary, peak, breakdown), whatever else it filters on.
 */
export const byPath = (range: ReadRange): string | undefined =>
  range.filter.path === undefined ? undefined : String(range.filter.path);
/** True when the range's one filter is an AS number: the AS number rollups (asnCounts, asnClients, asnUpstream) answer
 * its summary. */
export const asnFilter = (range: ReadRange): boolean =>
  Object.keys(range.filter).length === 1 && range.filter.asn !== undefined;
/**
 * True when the rollups answer a summary (the stores' rollupSummary, accountSummary): no filter, filters on the counts
 * rollup's columns, or an AS number; one filtered on a path reads the copy by path, any other the raw rows.
 */
export const summaryFromRollups = (range: ReadRange): boolean =>
  byPath(range) === undefined &&
  (noFilter(range) || oneCountsFilter(range) !== null || countsFilters(range) || asnFilter(range));
/**
 * The rollup whose sets of clients give a series' visitors under the range's filters, or null (the raw rows): the
 * clients (no filter), the fingerprints (a bot class alone: a set of address, fingerprint and bot class per 5 minutes
 * and hour), the AS number clients (an AS number alone); at an interval of whole hours (`intervalMs`, the panel's),
 * the per-dimension clients (one filter on a counts column: its value's clients per hour) or the combination clients
 * (several); at other intervals of whole 5 minutes, a status alone (statusClients); without `visitors` (not
 * counted), 'none' for any filter of the counts rollup or an AS number alone. Its requests and bytes: the counts
 * rollup, or asnCounts (an AS number alone).
 */
export function seriesClients(
  range: ReadRange,
  intervalMs?: number,
  visitors = true,
): 'clients' | 'fingerprints' | 'asnClients' | 'statusClients' | 'dimClients' | 'comboClients' | 'none' | null {
  // Without visitors (the requests and bandwidth reads): no set of clients, the totals' rollup under any filter it
  // keeps (a path reads the copy by path).
  if (!visitors && byPath(range) === undefined && (countsFilter(range) || asnFilter(range))) return 'none';
  const fields = Object.keys(range.filter);
  if (fields.length === 0) return 'clients';
  if (fields.length === 1 && fields[0] === 'bot_class') return 'fingerprints';
  if (fields.length === 1 && fields[0] === 'asn') return 'asnClients';
  const hourly = intervalMs !== undefined && intervalMs % HOUR === 0;
  if (hourly && oneCountsFilter(range) !== null) return 'dimClients';
  // A status alone at points of whole 5 minutes: its clients per 5 minutes.
  if (fields.length === 1 && fields[0] === 'status' && intervalMs !== undefined && intervalMs % (5 * MINUTE) === 0)
    return 'statusClients';
  if (hourly && countsFilters(range)) return 'comboClients';
  return null;
}
/** A group column the counts rollup keeps (or derives: the status class). */
export const countsGroup = (d: GroupDimension): boolean =>
  d === 'status_class' || (COUNT_DIMS as readonly string[]).includes(d);

/**
 * The rollups keyed by one column outside the counts rollup, each the breakdown by that column without a filter (the AS
 * number's with its label: the AS organisation, a key of asnOrgs beside it).
 */
export const VALUE_KINDS = {
  bot_score: 'scores',
  rate_limit_rule: 'limitRules',
  rate_limit_key: 'limitKeys',
  asn: 'asnOrgs',
} as const;
export type ValueKind = (typeof VALUE_KINDS)[keyof typeof VALUE_KINDS];

/** The rollup a top-N breakdown by `dimension` over `range` reads, or null: the raw rows. */
export function breakdownRollup(
  dimension: string,
  range: ReadRange,
): 'counts' | 'clients' | 'paths' | ValueKind | null {
  if ((COUNT_DIMS as readonly string[]).includes(dimension) && countsFilter(range)) return 'counts';
  if (Object.hasOwn(VALUE_KINDS, dimension) && noFilter(range))
    return VALUE_KINDS[dimension as keyof typeof VALUE_KINDS];
  if (dimension === 'client_ip' && noFilter(range)) return 'clients';
  if (dimension === 'path' && Object.keys(range.filter).every((f) => f === 'host')) return 'paths';
  return null;
}

/**
 * True when the per-path values rollup (pathValues) answers a top-N breakdown that breakdownRollup leaves to the raw
 * rows: the top paths with one filter on a counts column. (A breakdown filtered on a path reads the copy by path.)
 */
export const pathValuesBreakdown = (dimension: string, range: ReadRange): boolean =>
  dimension === 'path' && breakdownRollup(dimension, range) === null && oneCountsFilter(range) !== null;

/**
 * The rollup whose buckets rank the groups of `dims` over `range` (requests and bytes; the visitors of the groups
 * ranked first are counted from groupsClients' sets), or null: the raw rows. The paths rollup, for groups by host and
 * path (and the domain) with at most a host filter: the top files. The counts rollup, for groups by its columns, the
 * status class and the domain with filters on its columns only: the edge nodes, nodes and countries, the account's
 * domains, the top values of the account and behaviour reads.
 */
export function groupsRollup(dims: readonly GroupDimension[], range: ReadRange): 'paths' | 'counts' | null {
  const own = dims.filter((d) => d !== 'domain_id');
  if (
    own.length > 0 &&
    own.every((d) => d === 'host' || d === 'path') &&
    Object.keys(range.filter).every((f) => f === 'host')
  )
    return 'paths';
  return dims.length > 0 && dims.every((d) => d === 'domain_id' || countsGroup(d)) && countsFilter(range)
    ? 'counts'
    : null;
}

/**
 * The sets of clients that give the visitors of groups ranked from the counts rollup (groupsRollup 'counts'): the
 * clients rollup for the domains alone without a filter (a set per domain and bucket); the per-dimension clients for
 * one counts column (or the status class, of the status's values) without a filter (that column's sets only); the
 * clients per node and country for groups by node, country (and the domain) under filters on those only; else
 * the combination clients (every counts column beside the address, so any group of them under any filter on them is
 * exact).
 */
export function groupsClients(
  dims: readonly GroupDimension[],
  range: ReadRange,
): 'clients' | 'dimClients' | 'placeClients' | 'comboClients' {
  if (noFilter(range) && dims.every((d) => d === 'domain_id')) return 'clients';
  if (noFilter(range) && dims.length === 1 && countsGroup(dims[0])) return 'dimClients';
  const place = (f: string) => f === 'node' || f === 'country';
  return dims.some(place) && dims.every((d) => d === 'domain_id' || place(d)) && Object.keys(range.filter).every(place)
    ? 'placeClients'
    : 'comboClients';
}
/** The counts column whose values a group column is (the status class: the status). */
export const groupColumnDim = (d: GroupDimension): CountDim => (d === 'status_class' ? 'status' : (d as CountDim));

/** True when the counts rollup answers a series per value of `dim` (seriesBy): a group column it keeps, or the domain. */
export const seriesByRollup = (dim: GroupDimension, range: ReadRange): boolean =>
  (dim === 'domain_id' || countsGroup(dim)) && countsFilter(range);

/**
 * A page of raw logs, newest first, read newest window first: the last minute before the page's upper end, then 16
 * times wider until the window holds more than a page or reaches `since`. The newest rows of the range are the newest
 * of any window that holds more than a page, so the answer is that of sorting the whole range, and a first page of a
 * busy day reads the last minutes only. `page` reads one window (the range narrowed) with the cursor.
 */
export async function newestFirst(
  range: ReadRange,
  cursor: LogsCursor | null,
  timeoutMs: number,
  page: (window: ReadRange, timeoutMs: number) => Promise<LogsPage>,
): Promise<LogsPage> {
  const deadline = Date.now() + timeoutMs;
  const sinceMs = range.since.getTime();
  // Rows are kept to the millisecond: the cursor's millisecond, whole, is below this upper end.
  const upperMs = Math.min(
    range.until.getTime(),
    cursor ? Math.floor(Number(cursor.timeMicros) / 1000) + 1 : Number.POSITIVE_INFINITY,
  );
  if (upperMs <= sinceMs) return { logs: [], next: null };
  for (let width = MINUTE; ; width *= 16) {
    const lowMs = Math.max(sinceMs, upperMs - width);
    const left = deadline - Date.now();
    if (left <= 0) throw new QueryFailed(`analytics read: stopped at the time limit of ${timeoutMs} ms`);
    const got = await page({ ...range, since: new Date(lowMs), until: new Date(upperMs) }, left);
    if (got.next !== null || lowMs === sinceMs) return got;
  }
}
