// The analytics store on a ClickHouse server (ANALYTICS_BACKEND=clickhouse), through its HTTP interface
// (@clickhouse/client): one MergeTree table `logs` for every domain, ordered by (domain_id, time_us), so a read of one
// domain reads only that domain's granules; each row carries the id of the batch it came in (the batch ledger). The
// SQL is the part of ClickHouse's dialect that the oldest server we test against (Debian's 18.16) and current ones
// share: no query
// parameters (values are inlined: numbers checked to be integers, strings escaped), no DateTime64 (time_us holds the
// microseconds), no JSON functions (rule hits and WAF actions are kept as arrays beside their JSON text).
// POST /analytics/query is refused on this backend (docs/decisions.md): its SQL is DuckDB's dialect, checked by
// DuckDB's parser, and ClickHouse would run a different language under the same text.
import { randomBytes } from 'node:crypto';
import { ClickHouseLogLevel, createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import {
  type GroupDimension,
  type GroupItem,
  type ProxyClient,
  type TrafficBucket,
  type ValueBucket,
} from './account-reads.js';
import {
  DIMENSIONS,
  EMPTY_SUMMARY,
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
import {
  aggregateSql,
  CACHED,
  CH_KINDS,
  CH_REFUSED,
  CH_ROLLUP_KINDS,
  CLIENT_COUNTS,
  clientCountsDriftSql,
  clientCountsTableSql,
  COUNTED_LEVELS,
  countClientsSql,
  countValuesSql,
  VALUE_COUNTS,
  valueCountsDriftSql,
  valueCountsTableSql,
  dimSourceSql,
  driftSql,
  LEGACY_TABLES,
  PER_DIM,
  rollupTableSql,
  sourceSql,
  viewName,
  viewSql,
  type RollupKind,
} from './clickhouse-rollups.js';
import {
  asnFilter,
  breakdownRollup,
  byPath,
  COUNT_DIMS,
  PATH_COPY_COLUMNS,
  LEVELS,
  countsFilter,
  countsFilters,
  seriesByRollup,
  groupsClients,
  groupColumnDim,
  cover,
  groupsRollup,
  levelsFor,
  newestFirst,
  noFilter,
  oneCountsFilter,
  pathValuesBreakdown,
  seriesClients,
  summaryFromRollups,
  type CountDim,
} from './rollup.js';
import {
  LATER_COLUMNS,
  LATER_DEFAULTS,
  type AnalyticsStore,
  type AppliedBatch,
  type LOG_COLUMNS,
  type LogRow,
  QueryFailed,
  StoreUnavailable,
} from './store.js';

export interface ClickHouseOptions {
  /** The server's HTTP interface (ANALYTICS_CLICKHOUSE_URL), user and password in it when needed. */
  url: string;
  /** The database of the store's tables (ANALYTICS_CLICKHOUSE_DATABASE); created when missing. */
  database: string;
  /** Called with the text of each SELECT a read sends (the bench prints which tables each read took). */
  onRead?: (sql: string) => void;
}

/** What POST /analytics/query answers on this backend (a 400 with this text). */
export const CLICKHOUSE_QUERY_REFUSED =
  'query: POST /analytics/query is not available on the ClickHouse analytics backend (ANALYTICS_BACKEND=clickhouse); ' +
  'its SQL is DuckDB’s dialect. The per-domain analytics reads answer as usual.';

type LogColumn = (typeof LOG_COLUMNS)[number][0];
/** A stored column: name, ClickHouse type, its value for a row (JSONEachRow). */
type Stored = readonly [name: string, type: string, value: (r: LogRow) => unknown];

/**
 * The stored columns of each column of `logs`, in LOG_COLUMNS' order: a column added there needs its entry here (the
 * Record's type says so). `domain` is not stored (the name is the domain table's, not the log's).
 */
const COLUMNS: Record<LogColumn, readonly Stored[]> = {
  time: [
    ['time', "DateTime('UTC')", (r) => Math.floor(r.time.getTime() / 1000)],
    // Microseconds since the epoch: the ranges, buckets and the logs' order read this (DateTime is whole seconds).
    ['time_us', 'Int64', (r) => Math.trunc(r.time.getTime()) * 1000],
  ],
  time_utc: [['time_utc', "DateTime('UTC')", (r) => Math.floor(r.time.getTime() / 1000)]],
  domain_id: [['domain_id', 'UInt32', (r) => r.domainId]],
  domain: [],
  owner_id: [['owner_id', 'UInt32', (r) => r.ownerId]],
  node: [['node', 'String', (r) => r.node]],
  host: [['host', 'String', (r) => r.host]],
  path: [['path', 'String', (r) => r.path]],
  method: [['method', 'String', (r) => r.method]],
  status: [['status', 'Int32', (r) => r.status]],
  bytes: [['bytes', 'Int64', (r) => Math.trunc(r.bytes)]],
  cache_status: [['cache_status', 'String', (r) => r.cacheStatus]],
  rule_hits: [
    ['rule_hits', 'String', (r) => JSON.stringify(r.ruleHits)],
    ['rule_ids', 'Array(Int64)', (r) => r.ruleHits.map((h) => h[0])],
    ['rule_types', 'Array(String)', (r) => r.ruleHits.map((h) => h[1])],
    ['rule_dry', 'Array(UInt8)', (r) => r.ruleHits.map((h) => (h[2] ? 1 : 0))],
  ],
  waf_events: [
    ['waf_events', 'String', (r) => JSON.stringify(r.wafEvents)],
    ['waf_actions', 'Array(String)', (r) => r.wafEvents.map((e) => e[5])],
  ],
  duration_ms: [['duration_ms', 'Float64', (r) => r.durationMs]],
  upstream_ms: [['upstream_ms', 'Float64', (r) => r.upstreamMs]],
  client_ip: [['client_ip', 'String', (r) => r.clientIp]],
  fingerprint: [['fingerprint', 'String', (r) => r.fingerprint]],
  bot_score: [['bot_score', 'Int32', (r) => r.botScore]],
  bot_class: [['bot_class', 'String', (r) => r.botClass]],
  // The later fields: a table created before them gets them on open (addLaterColumns), with LATER_DEFAULTS.
  tls_version: [['tls_version', 'String', (r) => r.tlsVersion ?? LATER_DEFAULTS.tlsVersion]],
  http_protocol: [['http_protocol', 'String', (r) => r.httpProtocol ?? LATER_DEFAULTS.httpProtocol]],
  ua_category: [['ua_category', 'String', (r) => r.uaCategory ?? LATER_DEFAULTS.uaCategory]],
  serving_path: [['serving_path', 'String', (r) => r.servingPath ?? LATER_DEFAULTS.servingPath]],
  unserved_reason: [['unserved_reason', 'String', (r) => r.unservedReason ?? LATER_DEFAULTS.unservedReason]],
  origin_bytes: [['origin_bytes', 'Int64', (r) => Math.trunc(r.originBytes ?? LATER_DEFAULTS.originBytes)]],
  markdown: [['markdown', 'UInt8', (r) => ((r.markdown ?? LATER_DEFAULTS.markdown) ? 1 : 0)]],
  rate_limit_rule: [['rate_limit_rule', 'Int32', (r) => r.rateLimitRule ?? LATER_DEFAULTS.rateLimitRule]],
  rate_limit_key: [['rate_limit_key', 'String', (r) => r.rateLimitKey ?? LATER_DEFAULTS.rateLimitKey]],
  country: [['country', 'String', (r) => r.country ?? LATER_DEFAULTS.country]],
  asn: [['asn', 'Int64', (r) => Math.trunc(r.asn ?? LATER_DEFAULTS.asn)]],
  as_org: [['as_org', 'String', (r) => r.asOrg ?? LATER_DEFAULTS.asOrg]],
};
/** The later columns (store.ts LATER_COLUMNS): those an older table lacks are added with their type's default. */
const LATER_STORED: ReadonlySet<string> = new Set(LATER_COLUMNS.map(([name]) => name));
const STORED: readonly Stored[] = Object.values(COLUMNS).flat();

/**
 * The copy of `logs` by path (rollup.ts byPath): the columns of PATH_COPY_COLUMNS with the domain and time_us, ordered
 * by (domain_id, path, time_us), so that a read filtered on a path reads that path's granules only (in `logs`, ordered
 * by time, one path's rows are spread over all of them). Filled by a materialized view on `logs`, as the rollups.
 */
const BY_PATH = 'lp';
const BY_PATH_VIEW = 'lp_mv';
const BY_PATH_COLUMNS = STORED.filter(
  ([n]) => n === 'domain_id' || n === 'time_us' || (PATH_COPY_COLUMNS as readonly string[]).includes(n),
);
const BY_PATH_NAMES = BY_PATH_COLUMNS.map(([n]) => n).join(', ');

/** Filters by their kind of value: a filter added in reads.ts needs its entry here. */
const FILTER_KIND: Record<FilterField, 'string' | 'int' | 'bool'> = {
  host: 'string',
  path: 'string',
  method: 'string',
  status: 'int',
  cache_status: 'string',
  node: 'string',
  bot_class: 'string',
  country: 'string',
  asn: 'int',
  http_protocol: 'string',
  tls_version: 'string',
  ua_category: 'string',
  serving_path: 'string',
  unserved_reason: 'string',
  markdown: 'bool',
};

/**
 * The value of the range's filter on `dim` as the per-dimension rollups keep it, a string literal: toString of the
 * column's value (a truth value 1 or 0; a number that is no integer matches nothing, as its filter).
 */
function dimValue(range: ReadRange, dim: CountDim): string {
  const v = range.filter[dim];
  const kind = FILTER_KIND[dim];
  if (kind === 'bool') return chString(v === true || v === 'true' ? '1' : '0');
  if (kind === 'int') return chString(Number.isSafeInteger(Number(v)) ? String(Number(v)) : 'none');
  return chString(String(v));
}

/** The filters present, each a condition with its value inlined (the rollups' columns have the same names). */
function filterParts(range: ReadRange): string[] {
  const parts: string[] = [];
  for (const [field, kind] of Object.entries(FILTER_KIND) as [FilterField, 'string' | 'int' | 'bool'][]) {
    const v = range.filter[field];
    if (v === undefined) continue;
    if (kind === 'bool') parts.push(`${field} = ${v === true || v === 'true' ? 1 : 0}`);
    else if (kind === 'int') parts.push(Number.isSafeInteger(Number(v)) ? `${field} = ${int(Number(v))}` : '0');
    else parts.push(`${field} = ${chString(String(v))}`);
  }
  return parts;
}

/** A TrafficBucket from a row of the traffic reads. */
/**
 * `client_ip IN` the addresses of `from` (rows with client_ip and fingerprint) with at least `min` distinct non-empty
 * fingerprints: proxy-like clients total only those (min is at least 2: an address without fingerprints is never an
 * answer), not every address.
 */
const proxyCandidates = (from: string, min: number): string =>
  `client_ip IN (SELECT client_ip FROM ${from} WHERE fingerprint != '' GROUP BY client_ip
     HAVING uniqExact(fingerprint) >= ${int(min)})`;

const trafficBucket = (x: Record<string, unknown>): TrafficBucket => ({
  bucket: num(x.b),
  requests: num(x.n),
  bytes: num(x.total),
  billableRequests: num(x.br),
  billableBytes: num(x.bb),
  originRequests: num(x.o),
  originBytes: num(x.ob),
  cachedBytes: num(x.cb),
  originFetchedBytes: num(x.fetched),
});

/** A ClickHouse string literal: backslash and quote escaped, control characters as \xHH. */
export function chString(s: string): string {
  let body = '';
  for (const c of s) {
    const code = c.charCodeAt(0);
    if (c === '\\' || c === "'") body += `\\${c}`;
    else if (code < 0x20 || code === 0x7f) body += `\\x${code.toString(16).padStart(2, '0')}`;
    else body += c;
  }
  return `'${body}'`;
}
/** An integer for SQL text: anything else is refused (never reached with the reads' checked values). */
function int(v: number | bigint): string {
  if (typeof v === 'bigint') return v.toString();
  if (!Number.isSafeInteger(v)) throw new Error(`not an integer: ${v}`);
  return String(v);
}

/** A summary from the rollups' row: the totals in order, the distinct clients, the origin percentiles. */
function summaryOf(rows: { x: number[]; vis: number; q: number[] }[]): RangeSummary {
  const { x, vis, q } = rows[0];
  const [requests, bytes, cachedRequests, cachedBytes, originRequests, originBytes, upstreamSum, s4, s5, fetched] =
    x.map(num);
  if (requests === 0) return EMPTY_SUMMARY;
  return {
    requests,
    bytes,
    visitors: num(vis),
    cachedRequests,
    cachedBytes,
    originRequests,
    originBytes,
    upstreamMs:
      originRequests === 0
        ? null
        : { avg: upstreamSum / originRequests, p50: num(q[0]), p95: num(q[1]), p99: num(q[2]) },
    status4xx: s4,
    status5xx: s5,
    originFetchedBytes: fetched,
  };
}

/** Percentile levels for quantilesExact: nearest rank (the ceil(q·n)-th value), as DuckDB's quantile_disc gives. */
const NEAREST_RANK_LEVELS = '0.499999999999, 0.949999999999, 0.989999999999';

/** Row ids below 2^62: the logs cursor carries them in 12 base-36 digits. */
function rowId(): bigint {
  return randomBytes(8).readBigUInt64BE() >> 2n;
}

const num = (v: unknown): number => Number(v);

/** Proxy-like clients from rows of client_ip, n (requests), s (bytes), fps, domains, classes. */
const proxyRows = (rows: Record<string, unknown>[]): ProxyClient[] =>
  rows.map((x) => ({
    clientIp: String(x.client_ip),
    requests: num(x.n),
    bytes: num(x.s),
    fingerprints: num(x.fps),
    domains: num(x.domains),
    botClasses: num(x.classes),
  }));

/** Security actions from rows of action, e (findings), r (requests). */
const actionRows = (rows: Record<string, unknown>[]): ActionCount[] =>
  rows.map((x) => ({ action: String(x.action), events: num(x.e), requests: num(x.r) }));
/** Busiest rules from rows of rule_id, rule_type, n (hits), d (dry-run hits). */
const ruleRows = (rows: Record<string, unknown>[]): RuleHits[] =>
  rows.map((x) => ({ ruleId: num(x.rule_id), ruleType: String(x.rule_type), hits: num(x.n), dryRun: num(x.d) }));

/** The column or expression of a group dimension (account-reads.ts): columns of `logs` by name, the status class. */
function groupColumn(d: GroupDimension): string {
  if (d === 'status_class') return 'intDiv(status, 100)';
  if (d === 'domain_id' || (DIMENSIONS as readonly string[]).includes(d)) return d;
  throw new Error(`unknown dimension ${String(d)}`);
}

/**
 * The rows of one rollup kind a read takes: its levels, the levels of the pieces read from buckets (the others
 * skipped), the domain as a column, and conditions on its columns put in each of its branches (bucket rows, raw ends).
 */
interface RollupSource {
  levels: number[];
  pieceLvl?: (lvl: number) => boolean;
  withDomain?: boolean;
  where?: string[];
}

export function openClickHouseStore(opts: ClickHouseOptions): AnalyticsStore {
  return new ClickHouseStore(opts);
}

class ClickHouseStore implements AnalyticsStore {
  private readonly client: ClickHouseClient;
  private readonly db: string;
  /** The log table, with its database. */
  private readonly table: string;
  private ready: Promise<void> | null = null;
  private closed = false;
  /** Writes one at a time, in order. */
  private writes: Promise<unknown> = Promise.resolve();
  /** Domains deleted in this process: rows still in flight for them are not stored (ids are never reused). */
  private readonly deleted = new Set<number>();

  private readonly onRead?: (sql: string) => void;

  constructor(opts: ClickHouseOptions) {
    this.onRead = opts.onRead;
    this.db = opts.database;
    this.table = `${opts.database}.logs`;
    this.client = createClient({
      url: opts.url,
      request_timeout: 600_000,
      clickhouse_settings: { output_format_json_quote_64bit_integers: 0 },
      log: { level: ClickHouseLogLevel.OFF },
    });
  }

  /** Database and tables created at first use; a failure (server down) is tried again at the next use. */
  private async open(): Promise<void> {
    if (this.closed) throw new StoreUnavailable('analytics store closed');
    this.ready ??= this.create().catch((err: unknown) => {
      this.ready = null;
      throw err;
    });
    try {
      await this.ready;
    } catch (err) {
      throw new StoreUnavailable(`analytics store unavailable: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async create(): Promise<void> {
    await this.client.command({ query: `CREATE DATABASE IF NOT EXISTS ${this.db}` });
    const cols = [...STORED.map(([name, type]) => `${name} ${type}`), 'row_id UInt64', 'batch String'];
    // No PARTITION BY: an INSERT of one block then writes one part, visible whole or not at all (append below).
    await this.client.command({
      query: `CREATE TABLE IF NOT EXISTS ${this.table} (${cols.join(', ')}) ENGINE = MergeTree ORDER BY (domain_id, time_us)`,
    });
    // A table of an older store lacks the later columns: added with their type's default ('' and 0), rows kept.
    const have = await this.select<{ name: string }>(
      `SELECT name FROM system.columns WHERE database = ${chString(this.db)} AND table = 'logs'`,
    );
    const present = new Set(have.map((c) => c.name));
    for (const [name, type] of STORED)
      if (LATER_STORED.has(name) && !present.has(name))
        await this.client.command({ query: `ALTER TABLE ${this.table} ADD COLUMN ${name} ${type}` });
    await this.createRollups();
  }

  /**
   * The rollup tables and their views (clickhouse-rollups.ts). A kind whose view is missing (a database of an older
   * version, or a start stopped halfway) has its table dropped and built again from the stored rows, then its view
   * created, before this store writes anything: a batch is either in the rows the rollup was built from or added by
   * the view. The tables of earlier versions that nothing fills any more are dropped first.
   */
  private async createRollups(): Promise<void> {
    for (const t of LEGACY_TABLES) await this.client.command({ query: `DROP TABLE IF EXISTS ${this.db}.${t}` });
    const views = await this.select<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = ${chString(this.db)} AND engine = 'MaterializedView'`,
    );
    const have = new Set(views.map((v) => v.name));
    // Each kind without its view (a database of an older version, or a start stopped before the view) built again.
    const missing = CH_ROLLUP_KINDS.filter((k) => !have.has(viewName(k)));
    for (const k of missing) {
      await this.client.command({ query: `DROP TABLE IF EXISTS ${this.db}.${CH_KINDS[k].table}` });
      await this.client.command({ query: rollupTableSql(this.db, k) });
      await this.client.command({
        query: `INSERT INTO ${this.db}.${CH_KINDS[k].table} ${aggregateSql(this.db, k, LEVELS[k], '')}`,
      });
      await this.client.command({ query: viewSql(this.db, k) });
    }
    await this.createCounted(CLIENT_COUNTS, clientCountsTableSql, countClientsSql, missing.includes('clients'));
    for (const c of VALUE_COUNTS)
      await this.createCounted(
        c.table,
        (db) => valueCountsTableSql(db, c),
        (db, cond) => countValuesSql(db, c, cond),
        missing.includes(c.kind),
      );
    await this.createPathCopy(have);
  }

  /**
   * The copy by path (BY_PATH) and its view: built again from the stored rows when the view is missing or the table
   * lacks a column of the copy (a database of an older version), before this store writes, as a rollup kind.
   */
  private async createPathCopy(views: ReadonlySet<string>): Promise<void> {
    const cols = await this.select<{ name: string }>(
      `SELECT name FROM system.columns WHERE database = ${chString(this.db)} AND table = '${BY_PATH}'`,
    );
    const present = new Set(cols.map((c) => c.name));
    if (views.has(BY_PATH_VIEW) && BY_PATH_COLUMNS.every(([n]) => present.has(n))) return;
    await this.client.command({ query: `DROP TABLE IF EXISTS ${this.db}.${BY_PATH_VIEW}` });
    await this.client.command({ query: `DROP TABLE IF EXISTS ${this.db}.${BY_PATH}` });
    await this.client.command({
      query: `CREATE TABLE ${this.db}.${BY_PATH} (${BY_PATH_COLUMNS.map(([n, t]) => `${n} ${t}`).join(', ')})
        ENGINE = MergeTree ORDER BY (domain_id, path, time_us)`,
    });
    await this.client.command({
      query: `INSERT INTO ${this.db}.${BY_PATH} SELECT ${BY_PATH_NAMES} FROM ${this.table}`,
    });
    await this.client.command({
      query: `CREATE MATERIALIZED VIEW ${this.db}.${BY_PATH_VIEW} TO ${this.db}.${BY_PATH}
        AS SELECT ${BY_PATH_NAMES} FROM ${this.table}`,
    });
  }

  /** The rows a raw-row read of `range` reads: the copy by path when it is filtered on a path, else `logs`. */
  private rows(range: ReadRange): string {
    return byPath(range) === undefined ? this.table : `${this.db}.${BY_PATH}`;
  }

  /**
   * A table of clients counted per bucket (clickhouse-rollups.ts CLIENT_COUNTS, BOT_COUNTS): counted from its rollup
   * when missing or when that rollup was built again (`rebuilt`); filled under another name and renamed, so that a
   * start stopped halfway leaves none and the next start fills it again.
   */
  private async createCounted(
    table: string,
    tableSql: (db: string) => string,
    countSql: (db: string, cond: string) => string,
    rebuilt: boolean,
  ): Promise<void> {
    const [t] = await this.select<{ n: number }>(
      `SELECT count() AS n FROM system.tables WHERE database = ${chString(this.db)} AND name = '${table}'`,
    );
    if (num(t.n) > 0 && !rebuilt) return;
    const fill = `${table}_fill`;
    await this.client.command({ query: `DROP TABLE IF EXISTS ${this.db}.${fill}` });
    await this.client.command({ query: tableSql(this.db).replace(`.${table} `, `.${fill} `) });
    await this.client.command({ query: countSql(this.db, '1').replace(`.${table} `, `.${fill} `) });
    await this.client.command({ query: `DROP TABLE IF EXISTS ${this.db}.${table}` });
    await this.client.command({ query: `RENAME TABLE ${this.db}.${fill} TO ${this.db}.${table}` });
  }

  /**
   * The clients of the domains' counted buckets (CLIENT_COUNTS, BOT_COUNTS) from the ones holding loMs to hiMs
   * counted again (after rows were added).
   */
  private async countClients(ids: string, loMs: number, hiMs: number): Promise<void> {
    for (const [levels, sql] of [
      [COUNTED_LEVELS, countClientsSql] as const,
      ...VALUE_COUNTS.map((c) => [c.levels, (db: string, cond: string) => countValuesSql(db, c, cond)] as const),
    ]) {
      const lo = Math.floor(loMs / levels[0]) * levels[0];
      await this.client.command({
        query: sql(this.db, `domain_id IN (${ids}) AND b >= ${int(lo)} AND b <= ${int(Math.floor(hiMs))}`),
      });
    }
  }

  private async select<T = Record<string, unknown>>(
    query: string,
    timeoutMs = 60_000,
    settings: ClickHouseSettings = {},
  ): Promise<T[]> {
    const abort = new AbortController();
    let reached = false;
    const timer = setTimeout(() => {
      reached = true;
      abort.abort();
    }, timeoutMs);
    this.onRead?.(query);
    try {
      const rs = await this.client.query({
        query,
        format: 'JSONEachRow',
        abort_signal: abort.signal,
        clickhouse_settings: { max_execution_time: Math.max(1, Math.ceil(timeoutMs / 1000)), ...settings },
      });
      return await rs.json<T>();
    } catch (err) {
      if (reached || /TIMEOUT_EXCEEDED|Timeout exceeded/i.test(String(err)))
        throw new QueryFailed(`analytics read: stopped at the time limit of ${timeoutMs} ms`);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private write<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.writes.then(fn, fn);
    this.writes = next.catch(() => undefined);
    return next;
  }

  async append(rows: LogRow[], batch?: AppliedBatch): Promise<boolean> {
    if (rows.every((r) => this.deleted.has(r.domainId))) return true;
    await this.open();
    return this.write(async () => {
      const kept = rows.filter((r) => !this.deleted.has(r.domainId));
      if (kept.length === 0) return true;
      // The batch's rows are its ledger: each carries the batch key, and the one INSERT below makes them visible all
      // at once or not at all, so the batch is stored exactly when a row with its key is. The lookup reads only the
      // granules of its domains and time span (the table's order), which a batch sent again has too.
      const key = batch ? `${batch.node}\n${batch.id}` : '';
      const ids = [...new Set(kept.map((r) => int(r.domainId)))].join(', ');
      let lo = Infinity;
      let hi = -Infinity;
      for (const r of kept) {
        lo = Math.min(lo, r.time.getTime());
        hi = Math.max(hi, r.time.getTime());
      }
      if (batch) {
        const [found] = await this.select<{ n: number }>(
          `SELECT count() AS n FROM ${this.table} WHERE domain_id IN (${ids})
             AND time_us >= ${int(Math.trunc(lo) * 1000)} AND time_us <= ${int(Math.trunc(hi) * 1000)}
             AND batch = ${chString(key)}`,
        );
        if (num(found.n) > 0) {
          // Stored already; its buckets' clients counted again, in case a stop came between the rows and the count.
          await this.countClients(ids, lo, hi);
          return false;
        }
      }
      const values = kept.map((r) => {
        const o: Record<string, unknown> = { row_id: rowId().toString(), batch: key };
        for (const [name, , value] of STORED) o[name] = value(r);
        return o;
      });
      // One INSERT, parsed as one block (max_insert_block_size above its rows) and so written as one part of an
      // unpartitioned MergeTree: all of the batch's rows become visible at once, or none.
      await this.client.insert({
        table: this.table,
        values,
        format: 'JSONEachRow',
        clickhouse_settings: { max_insert_block_size: String(Math.max(1_048_576, values.length + 1)) },
      });
      // The views have added the rows to the clients rollup: its buckets' clients counted again.
      await this.countClients(ids, lo, hi);
      return true;
    });
  }

  /**
   * Runs an ALTER ... DELETE on `logs` (or another of the store's tables) and waits until ClickHouse has applied it
   * (mutations run in the background).
   */
  private async mutate(where: string, table = 'logs'): Promise<void> {
    await this.client.command({ query: `ALTER TABLE ${this.db}.${table} DELETE WHERE ${where}` });
    const deadline = Date.now() + 600_000;
    for (;;) {
      const [left] = await this.select<{ n: number }>(
        `SELECT count() AS n FROM system.mutations WHERE database = ${chString(this.db)} AND table = ${chString(table)} AND is_done = 0`,
      );
      if (num(left.n) === 0) return;
      if (Date.now() > deadline) throw new Error('analytics store: a delete did not finish within 10 minutes');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async deleteDomain(domainId: number): Promise<void> {
    this.deleted.add(domainId);
    await this.open();
    await this.write(async () => {
      await this.mutate(`domain_id = ${int(domainId)}`);
      await this.mutate(`domain_id = ${int(domainId)}`, BY_PATH);
      for (const k of CH_ROLLUP_KINDS) await this.mutate(`domain_id = ${int(domainId)}`, CH_KINDS[k].table);
      await this.mutate(`domain_id = ${int(domainId)}`, CLIENT_COUNTS);
      for (const c of VALUE_COUNTS) await this.mutate(`domain_id = ${int(domainId)}`, c.table);
    });
  }

  async deleteBefore(domainId: number, before: Date): Promise<number> {
    await this.open();
    return this.write(async () => {
      const where = `domain_id = ${int(domainId)} AND time_us < ${int(before.getTime() * 1000)}`;
      const [c] = await this.select<{ n: number }>(`SELECT count() AS n FROM ${this.table} WHERE ${where}`);
      const n = num(c.n);
      if (n === 0) return 0;
      await this.mutate(where);
      await this.mutate(where, BY_PATH);
      // The rollup buckets that start before the cutoff go; the one of each level holding it is built again from
      // the rows left in it.
      const ms = before.getTime();
      for (const k of CH_ROLLUP_KINDS) {
        const table = CH_KINDS[k].table;
        await this.mutate(`domain_id = ${int(domainId)} AND b < ${int(ms)}`, table);
        for (const l of LEVELS[k]) {
          const start = Math.floor(ms / l) * l;
          if (start === ms) continue;
          const cond = `domain_id = ${int(domainId)} AND time_us >= ${int(start * 1000)} AND time_us < ${int((start + l) * 1000)}`;
          await this.client.command({
            query: `INSERT INTO ${this.db}.${table} ${aggregateSql(this.db, k, [l], cond)}`,
          });
        }
      }
      // The counted buckets before the cutoff go; those holding it are counted again from the rollup built again.
      await this.mutate(`domain_id = ${int(domainId)} AND b < ${int(ms)}`, CLIENT_COUNTS);
      for (const c of VALUE_COUNTS) await this.mutate(`domain_id = ${int(domainId)} AND b < ${int(ms)}`, c.table);
      await this.countClients(int(domainId), ms, ms);
      return n;
    });
  }

  async domainIds(): Promise<number[]> {
    await this.open();
    const rows = await this.select<{ d: number }>(`SELECT DISTINCT domain_id AS d FROM ${this.table} ORDER BY d`);
    return rows.map((r) => num(r.d)).filter((d) => !this.deleted.has(d));
  }

  async countRows(domainId: number): Promise<number> {
    if (this.deleted.has(domainId)) return 0;
    await this.open();
    const [c] = await this.select<{ n: number }>(
      `SELECT count() AS n FROM ${this.table} WHERE domain_id = ${int(domainId)}`,
    );
    return num(c.n);
  }

  async rollupDrift(domainId: number): Promise<number> {
    await this.open();
    let drift = 0;
    for (const k of CH_ROLLUP_KINDS) {
      const [r] = await this.select<{ n: number }>(driftSql(this.db, k, int(domainId)));
      drift += num(r.n);
    }
    const [c] = await this.select<{ n: number }>(clientCountsDriftSql(this.db, int(domainId)));
    let o = 0;
    for (const v of VALUE_COUNTS)
      o += num((await this.select<{ n: number }>(valueCountsDriftSql(this.db, v, int(domainId))))[0].n);
    // The copy by path against `logs`: its rows' count, and the sum of a hash of each row's columns (the same multiset
    // of rows gives the same sum).
    const check = (t: string) =>
      `SELECT count() AS n, sum(cityHash64(${BY_PATH_NAMES})) AS h FROM ${t} WHERE domain_id = ${int(domainId)}`;
    const [mine] = await this.select<{ n: number; h: string }>(check(`${this.db}.${BY_PATH}`));
    const [theirs] = await this.select<{ n: number; h: string }>(check(this.table));
    const copy = Math.abs(num(mine.n) - num(theirs.n)) + (String(mine.h) === String(theirs.h) ? 0 : 1);
    return drift + num(c.n) + o + copy;
  }

  /**
   * An over-time read of the counts rollup at the levels that divide the interval (nothing to read: no points); with
   * `withDomain`, each row's domain as the column domain_id.
   */
  private readCounts<T>(
    domainIds: readonly number[],
    range: ReadRange,
    intervalMs: number,
    timeoutMs: number,
    sql: (from: string) => string,
    map: (rows: Record<string, unknown>[]) => T[],
    withDomain = false,
  ): Promise<T[]> {
    return this.readRollups(
      domainIds,
      range,
      timeoutMs,
      [],
      { counts: { levels: levelsFor('counts', intervalMs), withDomain } },
      (f) => (f.counts ? sql(f.counts) : null),
      map,
    );
  }

  /**
   * A read of the rollups (clickhouse-rollups.ts) over the range for the domains not deleted here: the rows of each
   * kind as a subquery (null when there is nothing to read), handed to `sql`.
   */
  private readRollups<T, R = Record<string, unknown>>(
    domainIds: number | readonly number[],
    range: ReadRange,
    timeoutMs: number,
    empty: T,
    sources: Partial<Record<RollupKind, RollupSource>>,
    sql: (from: Partial<Record<RollupKind, string>>) => string | null,
    map: (rows: R[]) => T,
  ): Promise<T> {
    const ids = [domainIds].flat().filter((id) => !this.deleted.has(id));
    if (ids.length === 0) return Promise.resolve(empty);
    const list = ids.map(int).join(', ');
    const from: Partial<Record<RollupKind, string>> = {};
    const filters = filterParts(range);
    for (const [k, s] of Object.entries(sources) as [RollupKind, RollupSource][]) {
      const cov = cover(range.since.getTime(), range.until.getTime(), s.levels);
      const dim = oneCountsFilter(range);
      const src =
        k in PER_DIM
          ? dim &&
            dimSourceSql(
              this.db,
              k as keyof typeof PER_DIM,
              list,
              cov,
              filters,
              COUNT_DIMS.indexOf(dim),
              dimValue(range, dim),
            )
          : sourceSql(this.db, k, list, cov, [...filters, ...(s.where ?? [])], s.pieceLvl, s.withDomain);
      if (src !== null) from[k] = `(${src})`;
    }
    const text = sql(from);
    return text === null ? Promise.resolve(empty) : this.read(ids, timeoutMs, empty, text, map);
  }

  query(): Promise<never> {
    return Promise.reject(new QueryFailed(CLICKHOUSE_QUERY_REFUSED));
  }

  check(): Promise<never> {
    return this.query();
  }

  /** `domain_id = d AND time_us >= since AND time_us < until` and the filters present (`domain_id IN` for several). */
  private where(domainIds: number | readonly number[], range: ReadRange): string {
    const ids = [domainIds].flat().filter((id) => !this.deleted.has(id));
    const parts = [
      ids.length === 0
        ? '0'
        : ids.length === 1
          ? `domain_id = ${int(ids[0])}`
          : `domain_id IN (${ids.map(int).join(', ')})`,
      `time_us >= ${int(range.since.getTime() * 1000)}`,
      `time_us < ${int(range.until.getTime() * 1000)}`,
    ];
    return [...parts, ...filterParts(range)].join(' AND ');
  }

  /** One read of one domain's or several domains' rows: nothing when all are deleted here, QueryFailed at the time limit. */
  private async read<T, R = Record<string, unknown>>(
    domainIds: number | readonly number[],
    timeoutMs: number,
    empty: T,
    sql: string,
    map: (rows: R[]) => T,
  ): Promise<T> {
    const ids = [domainIds].flat();
    if (ids.length === 0 || ids.every((id) => this.deleted.has(id))) return empty;
    await this.open();
    return map(await this.select<R>(sql, timeoutMs));
  }

  series(
    domainId: number,
    range: ReadRange,
    startMs: number,
    intervalMs: number,
    timeoutMs: number,
    visitors = true,
  ): Promise<SeriesBucket[]> {
    return this.accountSeries([domainId], range, startMs, intervalMs, timeoutMs, visitors);
  }

  accountSeries(
    domainId: number[],
    range: ReadRange,
    startMs: number,
    intervalMs: number,
    timeoutMs: number,
    visitors = true,
  ): Promise<SeriesBucket[]> {
    // As on DuckDB (rollup.ts seriesClients): no filter (the clients rollup), a bot class alone (the fingerprints'
    // clients), an AS number alone (its clients), at whole hours counts columns (their per-dimension or combination
    // clients); requests and bytes from the counts rollup or asnCounts.
    const kind = seriesClients(range, intervalMs, visitors);
    if (kind === 'none') {
      // No visitors asked: requests and bytes of the totals' rollup alone.
      const totals = asnFilter(range) ? 'asnCounts' : 'counts';
      return this.readRollups<SeriesBucket[], { k: number; r: number; s: number }>(
        domainId,
        range,
        timeoutMs,
        [],
        { [totals]: { levels: levelsFor(totals, intervalMs) } },
        (f) =>
          f[totals]
            ? `SELECT intDiv(b - ${int(startMs)}, ${int(intervalMs)}) AS k, sum(requests) AS r, sum(sent) AS s
               FROM ${f[totals]} GROUP BY k ORDER BY k`
            : null,
        (rows) => rows.map((x) => ({ bucket: num(x.k), requests: num(x.r), bytes: num(x.s), visitors: 0 })),
      );
    }
    if (kind) {
      const k = `intDiv(b - ${int(startMs)}, ${int(intervalMs)})`;
      const totals = kind === 'asnClients' ? 'asnCounts' : 'counts';
      // The points that are one counted bucket (one domain) read its count: the clients per bucket, or per value of
      // the filter's column (a bot class, a status: VALUE_COUNTS, whose tables name the column as the rollups do).
      const byValue = VALUE_COUNTS.find((c) => c.kind === kind);
      const counted =
        kind === 'clients'
          ? { table: CLIENT_COUNTS, levels: COUNTED_LEVELS, where: '' }
          : byValue
            ? {
                table: byValue.table,
                levels: byValue.levels,
                where: filterParts(range)
                  .map((p) => ` AND ${p}`)
                  .join(''),
              }
            : null;
      const whole = (l: number) =>
        counted !== null && domainId.length === 1 && l === intervalMs && counted.levels.includes(l);
      return this.readRollups<SeriesBucket[], { k: number; r: number; s: number; v: number }>(
        domainId,
        range,
        timeoutMs,
        [],
        {
          [totals]: { levels: levelsFor(totals, intervalMs) },
          [kind]: { levels: levelsFor(kind, intervalMs) },
        },
        (f) => {
          const cov = cover(range.since.getTime(), range.until.getTime(), levelsFor(kind, intervalMs));
          const pieces = cov.pieces.filter((p) => whole(p.lvl));
          const one =
            counted && pieces.length
              ? `SELECT ${k} AS k, max(n) AS v FROM ${this.db}.${counted.table}
                 WHERE domain_id = ${int(domainId[0])}${counted.where}
                   AND (${pieces.map((p) => `(lvl = ${p.lvl} AND b >= ${p.lo} AND b < ${p.hi})`).join(' OR ')})
                 GROUP BY lvl, b`
              : null;
          const others = pieces.length
            ? sourceSql(
                this.db,
                kind,
                int(domainId[0]),
                { pieces: cov.pieces.filter((p) => !whole(p.lvl)), raw: cov.raw },
                filterParts(range),
              )
            : f[kind];
          const rest = others ? `SELECT ${k} AS k, uniqExact(client_ip) AS v FROM (${others}) GROUP BY k` : null;
          const visitors = [one, rest].filter((x) => x !== null);
          const sums = f[totals];
          return sums && visitors.length
            ? `SELECT k, r, s, v FROM (SELECT ${k} AS k, sum(requests) AS r, sum(sent) AS s FROM ${sums} GROUP BY k)
               ALL INNER JOIN (SELECT k, sum(v) AS v FROM (${visitors.join(' UNION ALL ')}) GROUP BY k) USING (k)
               ORDER BY k`
            : null;
        },
        (rows) => rows.map((x) => ({ bucket: num(x.k), requests: num(x.r), bytes: num(x.s), visitors: num(x.v) })),
      );
    }
    return this.read(
      domainId,
      timeoutMs,
      [],
      `SELECT intDiv(intDiv(time_us, 1000) - ${int(startMs)}, ${int(intervalMs)}) AS b, count() AS requests,
         sum(bytes) AS bytes, ${visitors ? 'uniqExact(client_ip)' : '0'} AS visitors
       FROM ${this.rows(range)} WHERE ${this.where(domainId, range)} GROUP BY b ORDER BY b`,
      (rows) =>
        rows.map((x) => ({
          bucket: num(x.b),
          requests: num(x.requests),
          bytes: num(x.bytes),
          visitors: num(x.visitors),
        })),
    );
  }

  summary(domainId: number, range: ReadRange, timeoutMs: number): Promise<RangeSummary> {
    return this.accountSummary([domainId], range, timeoutMs);
  }

  accountSummary(domainId: number[], range: ReadRange, timeoutMs: number): Promise<RangeSummary> {
    // Filtered on a path (byPath): the raw rows of the copy by path, below. From the rollups (summaryFromRollups): no
    // filter; one on a counts column (its visitors and percentiles from the per-dimension rollups); several on counts
    // columns (from the combination rollups); an AS number alone (the AS number rollups). The totals from the counts
    // rollup with the filters, or from asnCounts.
    if (summaryFromRollups(range)) {
      const one = oneCountsFilter(range) !== null;
      const combo = countsFilters(range);
      const asn = asnFilter(range);
      const sources: Partial<Record<RollupKind, RollupSource>> = asn
        ? {
            asnCounts: { levels: [...LEVELS.asnCounts] },
            asnClients: { levels: [...LEVELS.asnClients] },
            asnUpstream: { levels: [...LEVELS.asnUpstream] },
          }
        : {
            counts: { levels: [...LEVELS.counts] },
            ...(one
              ? { dimClients: { levels: [...LEVELS.dimClients] }, dimUpstream: { levels: [...LEVELS.dimUpstream] } }
              : combo
                ? {
                    comboClients: { levels: [...LEVELS.comboClients] },
                    comboUpstream: { levels: [...LEVELS.comboUpstream] },
                  }
                : { clients: { levels: [...LEVELS.clients] }, upstream: { levels: [...LEVELS.upstream] } }),
          };
      const totals = asn
        ? `toFloat64(sum(requests)), toFloat64(sum(sent)), toFloat64(sum(cached_requests)), toFloat64(sum(cached_sent)),
           toFloat64(sum(origin_requests)), toFloat64(sum(origin_sent)), sum(upstream_sum), toFloat64(sum(status4xx)),
           toFloat64(sum(status5xx)), toFloat64(sum(fetched))`
        : `toFloat64(sum(requests)), toFloat64(sum(sent)), toFloat64(sumIf(requests, ${CACHED})),
           toFloat64(sumIf(sent, ${CACHED})), toFloat64(sum(origin_requests)), toFloat64(sum(origin_sent)),
           sum(upstream_sum), toFloat64(sumIf(requests, status >= 400 AND status < 500)),
           toFloat64(sumIf(requests, status >= 500)), toFloat64(sum(fetched))`;
      return this.readRollups<RangeSummary, { x: number[]; vis: number; q: number[] }>(
        domainId,
        range,
        timeoutMs,
        EMPTY_SUMMARY,
        sources,
        (f) => {
          const counts = f.counts ?? f.asnCounts;
          const visits = f.clients ?? f.dimClients ?? f.comboClients ?? f.asnClients;
          const times = f.upstream ?? f.dimUpstream ?? f.comboUpstream ?? f.asnUpstream;
          return counts && visits
            ? `SELECT [${totals}] AS x,
                 (SELECT uniqExact(client_ip) FROM ${visits}) AS vis,
                 ${times ? `(SELECT quantilesExactWeighted(0.5, 0.95, 0.99)(v, toUInt64(n)) FROM ${times})` : '[0, 0, 0]'} AS q
               FROM ${counts}`
            : null;
        },
        summaryOf,
      );
    }
    return this.read<RangeSummary, { x: unknown[] }>(
      domainId,
      timeoutMs,
      EMPTY_SUMMARY,
      `SELECT [toFloat64(count()), toFloat64(sum(bytes)), toFloat64(uniqExact(client_ip)), toFloat64(countIf(${CACHED})),
         toFloat64(sumIf(bytes, ${CACHED})), toFloat64(countIf(upstream_ms >= 0)), toFloat64(sumIf(bytes, upstream_ms >= 0)),
         toFloat64(countIf(status >= 400 AND status < 500)), toFloat64(countIf(status >= 500)),
         toFloat64(sum(origin_bytes))] AS x,
         avgIf(upstream_ms, upstream_ms >= 0) AS avg,
         quantilesExactIf(${NEAREST_RANK_LEVELS})(upstream_ms, upstream_ms >= 0) AS q
       FROM ${this.rows(range)} WHERE ${this.where(domainId, range)}`,
      (rows) => {
        const r = rows[0] as unknown as { x: number[]; avg: number | null; q: number[] };
        const [requests, bytes, visitors, cachedRequests, cachedBytes, originRequests, originBytes, s4, s5, fetched] =
          r.x;
        return {
          requests,
          bytes,
          visitors,
          cachedRequests,
          cachedBytes,
          originRequests,
          originBytes,
          upstreamMs:
            originRequests === 0 || r.avg === null
              ? null
              : { avg: num(r.avg), p50: num(r.q[0]), p95: num(r.q[1]), p99: num(r.q[2]) },
          status4xx: s4,
          status5xx: s5,
          originFetchedBytes: fetched,
        };
      },
    );
  }

  ruleHits(domainId: number, range: ReadRange, limit: number, timeoutMs: number): Promise<RuleHits[]> {
    if (noFilter(range))
      return this.readRollups<RuleHits[]>(
        domainId,
        range,
        timeoutMs,
        [],
        { rules: { levels: [...LEVELS.rules] } },
        (f) =>
          f.rules
            ? `SELECT rule_id, rule_type, sum(hits) AS n, sum(dry) AS d FROM ${f.rules}
               GROUP BY rule_id, rule_type ORDER BY n DESC, rule_id, rule_type LIMIT ${int(limit)}`
            : null,
        ruleRows,
      );
    return this.read(
      domainId,
      timeoutMs,
      [],
      `SELECT hit_id AS rule_id, hit_type AS rule_type, count() AS n, countIf(hit_dry = 1) AS d FROM ${this.table}
       ARRAY JOIN rule_ids AS hit_id, rule_types AS hit_type, rule_dry AS hit_dry
       WHERE ${this.where(domainId, range)} GROUP BY hit_id, hit_type ORDER BY n DESC, hit_id, hit_type
       LIMIT ${int(limit)}`,
      ruleRows,
    );
  }

  wafActions(domainId: number, range: ReadRange, timeoutMs: number): Promise<ActionCount[]> {
    if (noFilter(range))
      return this.readRollups<ActionCount[]>(
        domainId,
        range,
        timeoutMs,
        [],
        { waf: { levels: [...LEVELS.waf] } },
        (f) =>
          f.waf
            ? `SELECT action, sum(events) AS e, sum(requests) AS r FROM ${f.waf}
               GROUP BY action ORDER BY e DESC, action LIMIT 100`
            : null,
        actionRows,
      );
    return this.read(
      domainId,
      timeoutMs,
      [],
      `SELECT action, count() AS e, uniqExact(row_id) AS r FROM ${this.table}
       ARRAY JOIN waf_actions AS action
       WHERE ${this.where(domainId, range)} GROUP BY action ORDER BY e DESC, action LIMIT 100`,
      actionRows,
    );
  }

  peak(domainId: number, range: ReadRange, timeoutMs: number): Promise<Peak> {
    return this.accountPeak([domainId], range, timeoutMs);
  }

  accountPeak(domainId: number[], range: ReadRange, timeoutMs: number): Promise<Peak> {
    if (noFilter(range))
      return this.readRollups<Peak, { s: number; n: number }>(
        domainId,
        range,
        timeoutMs,
        null,
        { seconds: { levels: [...LEVELS.seconds] } },
        (f) =>
          f.seconds
            ? `SELECT intDiv(b, 1000) AS s, sum(n) AS n FROM ${f.seconds} GROUP BY s ORDER BY n DESC, s LIMIT 1`
            : null,
        (rows) => (rows[0] ? { time: new Date(num(rows[0].s) * 1000), requests: num(rows[0].n) } : null),
      );
    return this.read(
      domainId,
      timeoutMs,
      null,
      `SELECT intDiv(time_us, 1000000) AS s, count() AS n FROM ${this.rows(range)} WHERE ${this.where(domainId, range)}
       GROUP BY s ORDER BY n DESC, s LIMIT 1`,
      (rows) => (rows[0] ? { time: new Date(num(rows[0].s) * 1000), requests: num(rows[0].n) } : null),
    );
  }

  breakdown(
    domainId: number,
    range: ReadRange,
    dimension: Dimension,
    limit: number,
    timeoutMs: number,
  ): Promise<BreakdownItem[]> {
    // Dimensions are columns of `logs` by name (reads.ts); anything else never reaches the SQL.
    if (!DIMENSIONS.includes(dimension)) throw new Error(`unknown dimension ${String(dimension)}`);
    const col = dimension;
    // The top paths under one filter on a counts column: the per-path values (pathValues) of the filter's value.
    const kind = breakdownRollup(dimension, range) ?? (pathValuesBreakdown(dimension, range) ? 'pathValues' : null);
    // The AS numbers' label: the largest AS organisation of their rows (from the raw rows, or asnOrgs' keys).
    const labelled = dimension === 'asn';
    const label = labelled ? ', max(as_org) AS label' : '';
    const items = (rows: Record<string, unknown>[]): BreakdownItem[] =>
      rows.map((x) => ({
        value: groupValue(x.v),
        requests: num(x.r),
        bytes: num(x.s),
        originBytes: num(x.o),
        ...(labelled ? { label: String(x.label ?? '') } : {}),
      }));
    if (kind)
      return this.readRollups<BreakdownItem[]>(
        domainId,
        range,
        timeoutMs,
        [],
        { [kind]: { levels: [...LEVELS[kind]] } },
        (f) =>
          f[kind]
            ? `SELECT ${col} AS v, sum(requests) AS r, sum(sent) AS s, sum(fetched) AS o${label} FROM ${f[kind]}
               GROUP BY v ORDER BY r DESC, v LIMIT ${int(limit)}`
            : null,
        items,
      );
    return this.read(
      domainId,
      timeoutMs,
      [],
      `SELECT ${col} AS v, count() AS r, sum(bytes) AS s, sum(origin_bytes) AS o${label} FROM ${this.rows(range)}
       WHERE ${this.where(domainId, range)} GROUP BY v ORDER BY r DESC, v LIMIT ${int(limit)}`,
      items,
    );
  }

  logs(
    domainId: number,
    range: ReadRange,
    limit: number,
    cursor: LogsCursor | null,
    timeoutMs: number,
  ): Promise<LogsPage> {
    return this.logsWhere(domainId, range, limit, cursor, timeoutMs, '');
  }

  wafLogs(
    domainId: number,
    range: ReadRange,
    limit: number,
    cursor: LogsCursor | null,
    timeoutMs: number,
  ): Promise<LogsPage> {
    return this.logsWhere(domainId, range, limit, cursor, timeoutMs, ' AND notEmpty(waf_actions)');
  }

  /**
   * A page of raw logs, newest first, newest window first (rollup.ts newestFirst): 18.16 sorts the whole range for
   * `ORDER BY … LIMIT` (no read in order), 1.25 s for the first page of a 10-million-row day (bench/RESULTS.md).
   */
  private logsWhere(
    domainId: number,
    range: ReadRange,
    limit: number,
    cursor: LogsCursor | null,
    timeoutMs: number,
    only: string,
  ): Promise<LogsPage> {
    return newestFirst(range, cursor, timeoutMs, (window, left) =>
      this.logsPage(domainId, window, limit, cursor, left, only),
    );
  }

  private logsPage(
    domainId: number,
    range: ReadRange,
    limit: number,
    cursor: LogsCursor | null,
    timeoutMs: number,
    only: string,
  ): Promise<LogsPage> {
    const after = cursor
      ? ` AND (time_us < ${int(cursor.timeMicros)} OR (time_us = ${int(cursor.timeMicros)} AND row_id < ${int(cursor.rowId < 0n ? 0n : cursor.rowId)}))`
      : '';
    return this.read<LogsPage>(
      domainId,
      timeoutMs,
      { logs: [], next: null },
      `SELECT time_us, toString(row_id) AS rid, host, path, method, status, bytes, cache_status, node, client_ip,
         duration_ms, upstream_ms, rule_hits, waf_events, fingerprint, bot_score, bot_class, tls_version,
         http_protocol, ua_category, serving_path, unserved_reason, origin_bytes, markdown, rate_limit_rule,
         rate_limit_key, country, asn, as_org
       FROM ${this.table} WHERE ${this.where(domainId, range)}${only}${after}
       ORDER BY time_us DESC, row_id DESC LIMIT ${int(limit + 1)}`,
      (rows) => {
        const more = rows.length > limit;
        const page = rows.slice(0, limit);
        const logs = page.map((x) => logRecord(new Date(Math.floor(num(x.time_us) / 1000)), x));
        const last = page.at(-1);
        return {
          logs,
          next: more && last ? { timeMicros: BigInt(num(last.time_us)), rowId: BigInt(String(last.rid)) } : null,
        };
      },
    );
  }

  groups(
    domainIds: number[],
    range: ReadRange,
    dims: GroupDimension[],
    limit: number,
    timeoutMs: number,
  ): Promise<GroupItem[]> {
    const cols = dims.map((d, i) => `${groupColumn(d)} AS g${i}`).join(', ');
    const keys = dims.map((_, i) => `g${i}`).join(', ');
    const kind = groupsRollup(dims, range);
    if (kind) return this.rollupGroups(kind, domainIds, range, dims, limit, timeoutMs);
    return this.read(
      domainIds,
      timeoutMs,
      [],
      `SELECT ${cols}, count() AS requests, sum(bytes) AS bytes, uniqExact(client_ip) AS visitors
       FROM ${this.table} WHERE ${this.where(domainIds, range)}
       GROUP BY ${keys} ORDER BY requests DESC, ${keys} LIMIT ${int(limit)}`,
      (rows) =>
        rows.map((x) => ({
          values: dims.map((_, i) => groupValue(x[`g${i}`])),
          requests: num(x.requests),
          bytes: num(x.bytes),
          visitors: num(x.visitors),
        })),
    );
  }

  /**
   * groups from a rollup (rollup.ts groupsRollup): the groups with the most requests ranked from its buckets, then
   * the distinct clients of those groups only, with the raw rows of the range's ends: from the clients per host and
   * path of each hour (pathClients) for the paths, from groupsClients' sets for the counts.
   */
  private async rollupGroups(
    kind: 'paths' | 'counts',
    domainIds: number[],
    range: ReadRange,
    dims: GroupDimension[],
    limit: number,
    timeoutMs: number,
  ): Promise<GroupItem[]> {
    const deadline = Date.now() + timeoutMs;
    const cols = dims.map((d, i) => `${groupColumn(d)} AS g${i}`).join(', ');
    const keys = dims.map((_, i) => `g${i}`).join(', ');
    const top = await this.readRollups<Record<string, unknown>[]>(
      domainIds,
      range,
      timeoutMs,
      [],
      { [kind]: { levels: [...LEVELS[kind]], withDomain: dims.includes('domain_id') } },
      (f) =>
        f[kind]
          ? `SELECT ${cols}, sum(requests) AS r, sum(sent) AS s FROM ${f[kind]}
             GROUP BY ${keys} ORDER BY r DESC, ${keys} LIMIT ${int(limit)}`
          : null,
      (rows) => rows,
    );
    if (top.length === 0) return [];
    const lit = (v: unknown) => (typeof v === 'number' ? int(v) : chString(String(v)));
    const inParts = dims.map(
      (d, i) => `${groupColumn(d)} IN (${[...new Set(top.map((x) => lit(x[`g${i}`])))].join(', ')})`,
    );
    const key = (x: Record<string, unknown>) => dims.map((_, i) => String(x[`g${i}`])).join('\u0000');
    const sets = kind === 'paths' ? 'pathClients' : groupsClients(dims, range);
    const visitors = await (sets === 'dimClients'
      ? this.dimGroupClients(
          domainIds,
          range,
          dims[0],
          [...new Set(top.map((x) => lit(x.g0)))],
          Math.max(1, deadline - Date.now()),
        )
      : this.readRollups(
          domainIds,
          range,
          Math.max(1, deadline - Date.now()),
          new Map<string, number>(),
          // The ranked groups' values in each branch: the clients of those groups only are read (pathClients is ordered
          // by host and path first).
          {
            [sets]: { levels: [...LEVELS[sets]], withDomain: dims.includes('domain_id'), where: inParts },
          },
          (f) =>
            f[sets]
              ? `SELECT ${cols}, uniqExact(client_ip) AS v FROM ${f[sets]} WHERE ${inParts.join(' AND ')}
             GROUP BY ${keys}`
              : null,
          (rows) => new Map(rows.map((x) => [key(x), num(x.v)])),
        ));
    return top.map((x) => ({
      values: dims.map((_, i) => groupValue(x[`g${i}`])),
      requests: num(x.r),
      bytes: num(x.s),
      visitors: visitors.get(key(x)) ?? 0,
    }));
  }

  /**
   * The distinct clients per value of one group column (a counts column, or the status class) among `values` (SQL
   * literals), without a filter (groupsClients 'dimClients'): from that column's rows of the per-dimension clients
   * (ordered by column and value first; values as text cast back to the column's type) over whole hours, and the
   * combination clients' raw rows of the range's ends. Keyed by the value as text.
   */
  private dimGroupClients(
    domainIds: number[],
    range: ReadRange,
    dim: GroupDimension,
    values: string[],
    timeoutMs: number,
  ): Promise<Map<string, number>> {
    const ids = domainIds.filter((id) => !this.deleted.has(id));
    if (ids.length === 0) return Promise.resolve(new Map());
    const list = ids.map(int).join(', ');
    const d = groupColumnDim(dim);
    const type = CH_KINDS.counts.keys.find(([n]) => n === d)?.[1] ?? 'String';
    const typed = type === 'String' ? 'value' : `to${type}(value)`;
    const g = dim === 'status_class' ? `intDiv(${typed}, 100)` : typed;
    const cov = cover(range.since.getTime(), range.until.getTime(), [...LEVELS.dimClients]);
    const branches: string[] = [];
    if (cov.pieces.length > 0)
      branches.push(
        `SELECT ${g} AS g0, client_ip FROM ${this.db}.${CH_KINDS.dimClients.table}
         WHERE domain_id IN (${list}) AND dim = ${COUNT_DIMS.indexOf(d)}
           AND (${cov.pieces.map((p) => `(lvl = ${p.lvl} AND b >= ${p.lo} AND b < ${p.hi})`).join(' OR ')})`,
      );
    const raw = sourceSql(this.db, 'comboClients', list, { pieces: [], raw: cov.raw }, filterParts(range));
    if (raw !== null) branches.push(`SELECT ${groupColumn(dim)} AS g0, client_ip FROM (${raw})`);
    if (branches.length === 0) return Promise.resolve(new Map());
    return this.read(
      ids,
      timeoutMs,
      new Map<string, number>(),
      `SELECT g0, uniqExact(client_ip) AS v FROM (${branches.join(' UNION ALL ')}) WHERE g0 IN (${values.join(', ')})
       GROUP BY g0`,
      (rows: Record<string, unknown>[]) => new Map(rows.map((x) => [String(x.g0), num(x.v)])),
    );
  }

  traffic(
    domainIds: number[],
    range: ReadRange,
    startMs: number,
    intervalMs: number,
    timeoutMs: number,
  ): Promise<TrafficBucket[]> {
    const refused = CH_REFUSED;
    if (countsFilter(range))
      return this.readCounts(
        domainIds,
        range,
        intervalMs,
        timeoutMs,
        (from) => `SELECT intDiv(b - ${int(startMs)}, ${int(intervalMs)}) AS k, sum(requests) AS n, sum(sent) AS total,
                 sumIf(requests, refused = 0) AS br, sumIf(sent, refused = 0) AS bb, sum(origin_requests) AS o,
                 sum(origin_sent) AS ob, sumIf(sent, ${CACHED}) AS cb, sum(fetched) AS fetched
               FROM ${from} GROUP BY k ORDER BY k`,
        (rows) => rows.map((x) => trafficBucket({ ...x, b: x.k })),
      );
    // No alias may be a column's name here: ClickHouse would read `bytes` in sumIf as the alias of sum(bytes).
    return this.read(
      domainIds,
      timeoutMs,
      [],
      `SELECT intDiv(intDiv(time_us, 1000) - ${int(startMs)}, ${int(intervalMs)}) AS b, count() AS n,
         sum(bytes) AS total, countIf(NOT ${refused}) AS br, sumIf(bytes, NOT ${refused}) AS bb,
         countIf(upstream_ms >= 0) AS o, sumIf(bytes, upstream_ms >= 0) AS ob, sumIf(bytes, ${CACHED}) AS cb,
         sum(origin_bytes) AS fetched
       FROM ${this.table} WHERE ${this.where(domainIds, range)} GROUP BY b ORDER BY b`,
      (rows) => rows.map(trafficBucket),
    );
  }

  /**
   * Proxy-like clients. From the fingerprints rollup (no filter) in two steps whose conditions are in each branch of
   * the rollup's rows (bucket rows and raw ends), where the server reads the condition's column first (PREWHERE): the
   * candidates, addresses with at least minFingerprints distinct fingerprints, from the rows that have one (nothing
   * more when there is none), then the totals of the candidates' rows only. 18.16 does not push a condition on a
   * UNION ALL into its branches: over the union, every row of the day was read twice (bench/RESULTS.md).
   */
  async proxyClients(
    domainIds: number[],
    range: ReadRange,
    minRequests: number,
    minFingerprints: number,
    limit: number,
    timeoutMs: number,
  ): Promise<ProxyClient[]> {
    const deadline = Date.now() + timeoutMs;
    const totals = (from: string) =>
      `SELECT client_ip, sum(requests) AS n, sum(sent) AS s, uniqExactIf(fingerprint, fingerprint != '') AS fps,
         uniqExact(domain_id) AS domains, uniqExactIf(bot_class, bot_class != '') AS classes
       FROM ${from} GROUP BY client_ip
       HAVING n >= ${int(minRequests)} AND fps >= ${int(minFingerprints)}
       ORDER BY fps DESC, n DESC, client_ip LIMIT ${int(limit)}`;
    if (!noFilter(range)) {
      const rows = `(SELECT client_ip, 1 AS requests, bytes AS sent, fingerprint, domain_id, bot_class
        FROM ${this.table} WHERE ${this.where(domainIds, range)})`;
      return this.read(
        domainIds,
        timeoutMs,
        [],
        totals(`${rows} WHERE ${proxyCandidates(rows, minFingerprints)}`),
        proxyRows,
      );
    }
    const ids = domainIds.filter((id) => !this.deleted.has(id));
    const cov = cover(range.since.getTime(), range.until.getTime(), [...LEVELS.fingerprints]);
    const list = ids.map(int).join(', ');
    const withPrint = ids.length ? sourceSql(this.db, 'fingerprints', list, cov, [`fingerprint != ''`]) : null;
    if (withPrint === null) return [];
    const candidates = `SELECT client_ip FROM (${withPrint}) GROUP BY client_ip
      HAVING uniqExact(fingerprint) >= ${int(minFingerprints)}`;
    const found = await this.read(
      ids,
      timeoutMs,
      0,
      `SELECT count() AS n FROM (${candidates})`,
      (rows: { n: number }[]) => num(rows[0]?.n ?? 0),
    );
    if (found === 0) return [];
    const rows = sourceSql(this.db, 'fingerprints', list, cov, [`client_ip IN (${candidates})`], undefined, true);
    return rows === null ? [] : this.read(ids, Math.max(1, deadline - Date.now()), [], totals(`(${rows})`), proxyRows);
  }

  seriesBy(
    domainIds: number[],
    range: ReadRange,
    startMs: number,
    intervalMs: number,
    dim: GroupDimension,
    values: (string | number)[],
    timeoutMs: number,
  ): Promise<ValueBucket[]> {
    if (values.length === 0) return Promise.resolve([]);
    const col = groupColumn(dim);
    const numeric = values.every((v) => typeof v === 'number');
    const list = values.map((v) => (numeric ? int(v as number) : chString(String(v)))).join(', ');
    if (seriesByRollup(dim, range))
      return this.readCounts(
        domainIds,
        range,
        intervalMs,
        timeoutMs,
        (from) => `SELECT intDiv(b - ${int(startMs)}, ${int(intervalMs)}) AS k, ${col} AS v, sum(requests) AS r,
                 sum(sent) AS s FROM ${from} WHERE ${numeric ? col : `toString(${col})`} IN (${list})
               GROUP BY k, v ORDER BY k, v`,
        (rows) => rows.map((x) => ({ bucket: num(x.k), value: groupValue(x.v), requests: num(x.r), bytes: num(x.s) })),
        dim === 'domain_id',
      );
    return this.read(
      domainIds,
      timeoutMs,
      [],
      `SELECT intDiv(intDiv(time_us, 1000) - ${int(startMs)}, ${int(intervalMs)}) AS b, ${col} AS v,
         count() AS requests, sum(bytes) AS bytes
       FROM ${this.table} WHERE ${this.where(domainIds, range)} AND ${numeric ? col : `toString(${col})`} IN (${list})
       GROUP BY b, v ORDER BY b, v`,
      (rows) =>
        rows.map((x) => ({
          bucket: num(x.b),
          value: groupValue(x.v),
          requests: num(x.requests),
          bytes: num(x.bytes),
        })),
    );
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.writes;
    await this.client.close();
  }
}
