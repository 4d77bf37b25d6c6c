// The analytics store: request log rows per domain, behind one interface (DuckDB embedded today, duckdb-store.ts; a
// ClickHouse backend can take its place). Rows are kept per domain so that a query over one account's domains reads
// only their rows: nothing another account owns is in any relation the query's plan touches.

import type {
  ActionCount,
  BreakdownItem,
  Dimension,
  LogsCursor,
  LogsPage,
  Peak,
  RangeSummary,
  ReadRange,
  RuleHits,
  SeriesBucket,
} from './reads.js';
import type { GroupDimension, GroupItem, ProxyClient, TrafficBucket, ValueBucket } from './account-reads.js';

/** One request as the analytics store keeps it: what the edge ships (POST /internal/request-logs) plus its domain. */
export interface LogRow extends Partial<LaterFields> {
  time: Date;
  domainId: number;
  ownerId: number;
  node: string;
  host: string;
  path: string;
  method: string;
  status: number;
  bytes: number;
  cacheStatus: string;
  /** [rule id, rule type, dry run] per rule that matched. */
  ruleHits: [number, string, boolean][];
  /** [edge rule id, managed rule id, phase, target, data, action] per WAF finding. */
  wafEvents: [number, string, number, string, string, string][];
  durationMs: number;
  upstreamMs: number;
  clientIp: string;
  fingerprint: string;
  botScore: number;
  botClass: string;
}

/**
 * Fields added to the log record later (each stored column has a default for rows of older files); absent from a
 * row, they are stored as LATER_DEFAULTS.
 */
export interface LaterFields {
  /** `none` plain HTTP, `TLS` when the edge does not know the version, else `TLSv1.2`, `TLSv1.3`; '' unknown. */
  tlsVersion: string;
  /** `HTTP/1.1`, `HTTP/2`, `HTTP/3`, '' unknown. */
  httpProtocol: string;
  /** One of UA_CATEGORIES, '' unknown. */
  uaCategory: string;
  /** One of SERVING_PATHS, '' unknown. */
  servingPath: string;
  /** One of UNSERVED_REASONS, '' when the origin or the cache answered. */
  unservedReason: string;
  /** Body bytes received from the origin. */
  originBytes: number;
  markdown: boolean;
  /** The rate_limit rule that refused or challenged the request and the key it counted (0 and '' none). */
  rateLimitRule: number;
  rateLimitKey: string;
  /** Of the client address, looked up at ingest (geo.ts): ISO 3166 country code, AS number and organisation. */
  country: string;
  asn: number;
  asOrg: string;
}

/** What a row without the later fields stores: unknown, none. */
export const LATER_DEFAULTS: Readonly<LaterFields> = Object.freeze({
  tlsVersion: '',
  httpProtocol: '',
  uaCategory: '',
  servingPath: '',
  unservedReason: '',
  originBytes: 0,
  markdown: false,
  rateLimitRule: 0,
  rateLimitKey: '',
  country: '',
  asn: 0,
  asOrg: '',
});

/**
 * The columns of `logs` as POST /analytics/query sees them, in order: name, SQL type, meaning. The OpenAPI
 * description and the docs are written from this list.
 */
export const LOG_COLUMNS = [
  // Both: comparing `time` with now() needs no per-row cast; date_trunc and time_bucket on `time_utc` need no time
  // zone arithmetic per row (about 8x faster, measured in bench/control-plane/analytics.bench.ts).
  ['time', 'TIMESTAMPTZ', 'when the request arrived at the edge; compare it with now(), current_timestamp'],
  ['time_utc', 'TIMESTAMP', 'the same instant as UTC wall time, without a zone: group by date_trunc on it'],
  ['domain_id', 'INTEGER', 'id of the domain the host belongs to'],
  ['domain', 'VARCHAR', 'name of that domain'],
  ['owner_id', 'INTEGER', "id of the domain's owner when the request was logged"],
  ['node', 'VARCHAR', 'the edge node that served it'],
  ['host', 'VARCHAR', 'Host of the request'],
  ['path', 'VARCHAR', 'path of the request, with its query string'],
  ['method', 'VARCHAR', 'HTTP method'],
  ['status', 'INTEGER', 'status code answered'],
  ['bytes', 'BIGINT', 'bytes sent to the client'],
  ['cache_status', 'VARCHAR', "cache outcome (HIT, MISS, BYPASS, ...; '' when no cache rule applied)"],
  ['rule_hits', 'JSON', 'array of [rule id, rule type, dry run] for each rule that matched'],
  ['waf_events', 'JSON', 'array of [edge rule id, managed rule id, phase, target, data, action] per WAF finding'],
  ['duration_ms', 'DOUBLE', 'total time at the edge in milliseconds'],
  ['upstream_ms', 'DOUBLE', 'time waiting for the origin in milliseconds (-1: the origin was not asked)'],
  ['client_ip', 'VARCHAR', 'address of the client'],
  ['fingerprint', 'VARCHAR', "JA4H-style fingerprint ('' when no fingerprint rule looked)"],
  ['bot_score', 'INTEGER', 'bot score 1-99, 1 automated (0 when no bot_route rule looked)'],
  ['bot_class', 'VARCHAR', "bot class ('' when no bot_route rule looked)"],
  // Added later: on a table of an older file these columns were added with their defaults ('', 0, false).
  [
    'tls_version',
    'VARCHAR',
    "TLS of the client connection (none: plain HTTP; TLS: the edge does not know the version; '' unknown)",
  ],
  ['http_protocol', 'VARCHAR', "HTTP version of the request (HTTP/1.1, HTTP/2, HTTP/3; '' unknown)"],
  [
    'ua_category',
    'VARCHAR',
    "user-agent category (browser, mobile, crawler, ai_crawler, library, empty, other; '' unknown)",
  ],
  ['serving_path', 'VARCHAR', "where the answer came from (cache, origin, edge; '' unknown)"],
  [
    'unserved_reason',
    'VARCHAR',
    "why the origin did not answer (waf_block, rate_limited, challenge_issued, origin_timeout, ...; '' it did)",
  ],
  ['origin_bytes', 'BIGINT', 'body bytes received from the origin'],
  ['markdown', 'BOOLEAN', 'the answer was the Markdown for agents of an HTML page'],
  ['rate_limit_rule', 'INTEGER', 'id of the rate_limit rule that refused or challenged the request (0 none)'],
  ['rate_limit_key', 'VARCHAR', "the key that rule counted (ip=..., path=..., <header>=...; '' none)"],
  ['country', 'VARCHAR', "ISO 3166 country code of the client address ('' unknown)"],
  ['asn', 'BIGINT', 'autonomous system number of the client address (0 unknown)'],
  ['as_org', 'VARCHAR', "organisation of that autonomous system ('' unknown)"],
] as const;

/** The columns of the later fields (LaterFields), in LOG_COLUMNS' order: a store adds those a table lacks. */
export const LATER_COLUMNS = LOG_COLUMNS.slice(LOG_COLUMNS.findIndex(([name]) => name === 'tls_version'));

/** A request-log batch by the node that sent it and its id (POST /internal/request-logs). */
export interface AppliedBatch {
  node: string;
  id: string;
}

/** Batch ids are remembered this long; an edge node gives up resending a batch well before (edge-node/src/log). */
export const APPLIED_BATCHES_KEEP_MS = 7 * 24 * 3600_000;

/** A domain whose rows a query may read. */
export interface QueryDomain {
  id: number;
  name: string;
}

export interface QueryLimits {
  /** Interrupted after this many ms. */
  timeoutMs: number;
  /** Rows answered at most; `truncated` says there were more. */
  maxRows: number;
}

/** A column of a query's answer: its name and the engine's type. */
export interface QueryColumn {
  name: string;
  type: string;
}

export interface QueryResult {
  columns: QueryColumn[];
  rows: unknown[][];
  truncated: boolean;
}

export interface AnalyticsStore {
  /**
   * Appends rows (any mix of domains), in one batch per domain. With a batch id the rows are appended at most once:
   * the id is recorded in the same store transaction as the rows, and a batch recorded already is skipped (false).
   */
  append(rows: LogRow[], batch?: AppliedBatch): Promise<boolean>;
  /**
   * Runs one read-only SELECT that names the caller's rows as `logs` (a view over exactly these domains). The SQL has
   * passed checkQuery (sandbox.ts) already; a failure of the engine is thrown as QueryFailed.
   */
  query(sql: string, domains: QueryDomain[], limits: QueryLimits): Promise<QueryResult>;
  /**
   * What query() checks before it runs anything, with the same refusals (QueryRefused, QueryFailed): the sandbox and
   * the engine's binding over these domains' `logs`. Answers the columns the query would have (saved queries).
   */
  check(sql: string, domains: QueryDomain[], timeoutMs: number): Promise<QueryColumn[]>;
  /**
   * Requests, bytes and visitors per bucket of `intervalMs` from `startMs` (ms since the epoch) over the domain's rows in the
   * range; buckets without rows are left out. Interrupted after timeoutMs (QueryFailed). `visitors` false: each
   * bucket's visitors are 0, not counted (a read that shows requests or bytes only: they then come from the rollups
   * under any filter on their columns).
   */
  series(
    domainId: number,
    range: ReadRange,
    startMs: number,
    intervalMs: number,
    timeoutMs: number,
    visitors?: boolean,
  ): Promise<SeriesBucket[]>;
  /** Totals of the domain's rows in the range (requests, bytes, visitors, cache, origin, errors). */
  summary(domainId: number, range: ReadRange, timeoutMs: number): Promise<RangeSummary>;
  /** The rules that matched most in the range (rule_hits), most hits first (ties by id), `limit` rules. */
  ruleHits(domainId: number, range: ReadRange, limit: number, timeoutMs: number): Promise<RuleHits[]>;
  /** WAF findings per action in the range (waf_events), most events first (ties by action). */
  wafActions(domainId: number, range: ReadRange, timeoutMs: number): Promise<ActionCount[]>;
  /** The second of the range with the most requests. */
  peak(domainId: number, range: ReadRange, timeoutMs: number): Promise<Peak>;
  /** Requests and bytes per value of a column over the range, most requests first (ties by value), `limit` values. */
  breakdown(
    domainId: number,
    range: ReadRange,
    dimension: Dimension,
    limit: number,
    timeoutMs: number,
  ): Promise<BreakdownItem[]>;
  /** The domain's rows in the range, newest first, `limit` of them, from strictly after `cursor` in that order. */
  logs(
    domainId: number,
    range: ReadRange,
    limit: number,
    cursor: LogsCursor | null,
    timeoutMs: number,
  ): Promise<LogsPage>;
  // Reads over several domains at once (account-reads.ts): the rows of all the listed domains together, so that
  // visitors, peaks and groups are of the union (a client of two domains is one visitor). A per-domain read passes
  // one id. DuckDB: more than MAX_ACCOUNT_DOMAINS domains with rows is QueryFailed (each is a branch of a union).
  /** summary over the union of the domains' rows. */
  accountSummary(domainIds: number[], range: ReadRange, timeoutMs: number): Promise<RangeSummary>;
  /** series over the union of the domains' rows. */
  accountSeries(
    domainIds: number[],
    range: ReadRange,
    startMs: number,
    intervalMs: number,
    timeoutMs: number,
    visitors?: boolean,
  ): Promise<SeriesBucket[]>;
  /** peak over the union of the domains' rows. */
  accountPeak(domainIds: number[], range: ReadRange, timeoutMs: number): Promise<Peak>;
  /** Requests, bytes, visitors per combination of the columns' values, most requests first (ties by values). */
  groups(
    domainIds: number[],
    range: ReadRange,
    dims: GroupDimension[],
    limit: number,
    timeoutMs: number,
  ): Promise<GroupItem[]>;
  /** Bytes per bucket with the billable part (not refused by a security rule), origin and cache parts. */
  traffic(
    domainIds: number[],
    range: ReadRange,
    startMs: number,
    intervalMs: number,
    timeoutMs: number,
  ): Promise<TrafficBucket[]>;
  /** Client addresses with at least minRequests requests and minFingerprints distinct non-empty fingerprints. */
  proxyClients(
    domainIds: number[],
    range: ReadRange,
    minRequests: number,
    minFingerprints: number,
    limit: number,
    timeoutMs: number,
  ): Promise<ProxyClient[]>;
  /** Requests and bytes per bucket and value of `dim`, for the listed values only. */
  seriesBy(
    domainIds: number[],
    range: ReadRange,
    startMs: number,
    intervalMs: number,
    dim: GroupDimension,
    values: (string | number)[],
    timeoutMs: number,
  ): Promise<ValueBucket[]>;
  /** As logs, only the rows with at least one WAF finding. */
  wafLogs(
    domainId: number,
    range: ReadRange,
    limit: number,
    cursor: LogsCursor | null,
    timeoutMs: number,
  ): Promise<LogsPage>;
  /** Drops every row of the domain; rows shipped for it later are not stored. */
  deleteDomain(domainId: number): Promise<void>;
  /** Deletes the domain's rows older than `before`; returns how many. */
  deleteBefore(domainId: number, before: Date): Promise<number>;
  /** The ids of the domains that have rows. */
  domainIds(): Promise<number[]>;
  /** Rows stored for a domain (tests, metrics). */
  countRows(domainId: number): Promise<number>;
  /**
   * Rows of the domain's rollups (rollup.ts) that differ from the rollups computed again from its stored rows: 0 when
   * they are exact (tests; checking a store by hand).
   */
  rollupDrift(domainId: number): Promise<number>;
  close(): Promise<void>;
}

/** A query the engine refused or could not finish (bad column, time limit): answered as a 400 with this text. */
export class QueryFailed extends Error {}

/** The store could not be opened (its file held by another process, a full disk): answered 503. */
export class StoreUnavailable extends Error {}
