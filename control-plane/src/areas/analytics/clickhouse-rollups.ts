// The rollups (rollup.ts) on ClickHouse: per kind one SummingMergeTree table `r<kind>` ordered by (domain_id, lvl, b,
// key), filled by a materialized view on `logs` (every INSERT of a batch into `logs` adds its aggregate per level; the
// server adds rows of the same key up as it merges parts), built once from the stored rows when the views are missing.
// Reads sum over the rows of a key (parts not yet merged hold several) and take whole buckets from the rollups and the
// raw rows of the range's ends, as on DuckDB (duckdb-rollups.ts). SQL of 18.16: no window functions, no GROUP BY ALL,
// UNION ALL branches of the same types; a measure is never aliased as a column of `logs` (18.16 would read the alias
// inside the other aggregates).
import { SECURITY_RULE_TYPES, UNBILLED_REASONS } from './account-reads.js';
import { COUNT_DIMS, HOUR, LEVELS, MINUTE, type Cover, type RollupKind as AnyRollupKind } from './rollup.js';

/** Every kind of rollup.ts is kept on ClickHouse. A read filtered on a path reads the copy of `logs` ordered by path
 * (clickhouse-store.ts BY_PATH). */
export type RollupKind = AnyRollupKind;

type Col = readonly [name: string, type: string, raw: string];
interface KindSql {
  table: string;
  keys: readonly Col[];
  measures: readonly Col[];
  only?: string;
  /**
   * The keys the table's order starts with, before (lvl, b): a read of one value of them finds its rows as one range
   * of the primary key instead of scanning every row of its buckets.
   */
  first?: readonly string[];
}

const TO_ORIGIN = 'upstream_ms >= 0';
/** A request answered from the cache. */
export const CACHED = `cache_status IN ('HIT', 'STALE')`;
const types = SECURITY_RULE_TYPES.map((t) => `'${t}'`).join(', ');
const reasons = UNBILLED_REASONS.map((t) => `'${t}'`).join(', ');
/** Refused by a security rule (account-reads.ts); rows logged before the edge said why by their rule hits. */
export const CH_REFUSED = `(serving_path != '' AND unserved_reason IN (${reasons})
  OR serving_path = '' AND status >= 400 AND arrayExists((t, d) -> d = 0 AND has([${types}], t), rule_types, rule_dry))`;

const KEY_TYPE: Record<(typeof COUNT_DIMS)[number], string> = {
  host: 'String',
  method: 'String',
  status: 'Int32',
  cache_status: 'String',
  node: 'String',
  bot_class: 'String',
  country: 'String',
  http_protocol: 'String',
  tls_version: 'String',
  ua_category: 'String',
  serving_path: 'String',
  unserved_reason: 'String',
  markdown: 'UInt8',
};

/** (index, value as text) of each counts column of a row: the rows of the per-dimension rollups. */
const DIM_VALUES = COUNT_DIMS.map((d, i) => `(toUInt8(${i}), ${KEY_TYPE[d] === 'String' ? d : `toString(${d})`})`).join(
  ', ',
);

/** Requests, bytes sent and bytes fetched from the origin. */
const TRAFFIC: readonly Col[] = [
  ['requests', 'Int64', '1'],
  ['sent', 'Int64', 'bytes'],
  ['fetched', 'Int64', 'origin_bytes'],
];
/** The requests passed to the origin, their bytes and their upstream times' sum. */
const ORIGIN: readonly Col[] = [
  ['origin_requests', 'Int64', `if(${TO_ORIGIN}, 1, 0)`],
  ['origin_sent', 'Int64', `if(${TO_ORIGIN}, bytes, 0)`],
  ['upstream_sum', 'Float64', `if(${TO_ORIGIN}, upstream_ms, 0)`],
];

export const CH_KINDS: Record<RollupKind, KindSql> = {
  counts: {
    table: 'rc',
    keys: [...COUNT_DIMS.map((d): Col => [d, KEY_TYPE[d], d]), ['refused', 'UInt8', `toUInt8(${CH_REFUSED})`]],
    measures: [['requests', 'Int64', '1'], ['sent', 'Int64', 'bytes'], ...ORIGIN, ['fetched', 'Int64', 'origin_bytes']],
  },
  clients: {
    table: 'rv',
    keys: [['client_ip', 'String', 'client_ip']],
    measures: TRAFFIC,
  },
  upstream: { table: 'ru', keys: [['v', 'Float64', 'upstream_ms']], measures: [['n', 'Int64', '1']], only: TO_ORIGIN },
  paths: {
    table: 'rp',
    keys: [
      ['host', 'String', 'host'],
      ['path', 'String', 'path'],
    ],
    measures: TRAFFIC,
  },
  seconds: { table: 'rs', keys: [], measures: [['n', 'Int64', '1']] },
  // One row per rule hit: the hit's (id, type, dry run) as `h`, named once inside the first key and read by the rest.
  rules: {
    table: 'rr',
    keys: [
      [
        'rule_id',
        'Int64',
        'tupleElement(arrayJoin(arrayMap((i, t, d) -> (i, t, d), rule_ids, rule_types, rule_dry)) AS h, 1)',
      ],
      ['rule_type', 'String', 'tupleElement(h, 2)'],
    ],
    measures: [
      ['hits', 'Int64', '1'],
      ['dry', 'Int64', 'tupleElement(h, 3)'],
    ],
  },
  // One row per action of a request (its first finding of that action): the findings of that action, the request once.
  waf: {
    table: 'rw',
    keys: [
      [
        'action',
        'String',
        'arrayJoin(arrayFilter((a, i) -> indexOf(waf_actions, a) = i, waf_actions, arrayEnumerate(waf_actions)))',
      ],
    ],
    measures: [
      ['events', 'Int64', 'countEqual(waf_actions, action)'],
      ['requests', 'Int64', '1'],
    ],
  },
  // Ordered by host and path first: the visitors of the top files read the ranked paths' rows only.
  pathClients: {
    table: 'rqp',
    first: ['host', 'path'],
    keys: [
      ['host', 'String', 'host'],
      ['path', 'String', 'path'],
      ['client_ip', 'String', 'client_ip'],
    ],
    measures: [['requests', 'Int64', '1']],
  },
  fingerprints: {
    table: 'rf',
    keys: [
      ['client_ip', 'String', 'client_ip'],
      ['fingerprint', 'String', 'fingerprint'],
      ['bot_class', 'String', 'bot_class'],
    ],
    measures: [
      ['requests', 'Int64', '1'],
      ['sent', 'Int64', 'bytes'],
    ],
  },
  // One row per counts column of a request: the column's index and its value as text (toString), as on DuckDB; ordered
  // by column and value first, so that a summary filtered on one reads that value's rows only.
  dimClients: {
    table: 'rdv',
    first: ['dim', 'value'],
    keys: [
      ['dim', 'UInt8', `tupleElement(arrayJoin([${DIM_VALUES}]) AS dv, 1)`],
      ['value', 'String', 'tupleElement(dv, 2)'],
      ['client_ip', 'String', 'client_ip'],
    ],
    measures: [['requests', 'Int64', '1']],
  },
  dimUpstream: {
    table: 'rev',
    first: ['dim', 'value'],
    keys: [
      ['dim', 'UInt8', `tupleElement(arrayJoin([${DIM_VALUES}]) AS dv, 1)`],
      ['value', 'String', 'tupleElement(dv, 2)'],
      ['v', 'Float64', 'upstream_ms'],
    ],
    measures: [['n', 'Int64', '1']],
    only: TO_ORIGIN,
  },
  // The clients and times of each combination of the counts columns' values: a summary filtered on several of them
  // (a filter on each of its columns, as on the counts rollup). A measure, as every kind here: SummingMergeTree keeps
  // one row per key as it merges. The clients' table is about a fifth of the requests (2.1 M rows for the bench's 10 M):
  // ordered by bot class and status first, the panel's usual pair, which it then finds as one range (a day's
  // visitors under both: 200 -> 40 ms on the bench's server); the other columns' values are few enough that the
  // server skips granules by them too.
  comboClients: {
    table: 'rm',
    first: ['bot_class', 'status'],
    keys: [...COUNT_DIMS.map((d): Col => [d, KEY_TYPE[d], d]), ['client_ip', 'String', 'client_ip']],
    measures: [['requests', 'Int64', '1']],
  },
  comboUpstream: {
    table: 'rg',
    keys: [...COUNT_DIMS.map((d): Col => [d, KEY_TYPE[d], d]), ['v', 'Float64', 'upstream_ms']],
    measures: [['n', 'Int64', '1']],
    only: TO_ORIGIN,
  },
  scores: { table: 'rt', keys: [['bot_score', 'Int32', 'bot_score']], measures: TRAFFIC },
  limitRules: { table: 'rl', keys: [['rate_limit_rule', 'Int32', 'rate_limit_rule']], measures: TRAFFIC },
  limitKeys: { table: 'ri', keys: [['rate_limit_key', 'String', 'rate_limit_key']], measures: TRAFFIC },
  // The networks read: per AS number and organisation (the label, max(as_org) over the rows, as on the raw rows).
  asnOrgs: {
    table: 'rao',
    keys: [
      ['asn', 'Int64', 'asn'],
      ['as_org', 'String', 'as_org'],
    ],
    measures: TRAFFIC,
  },
  // The clients of each status per 5 minutes, ordered by status first: a series filtered on a status reads its rows.
  statusClients: {
    table: 'rsv',
    first: ['status'],
    keys: [
      ['status', 'Int32', 'status'],
      ['client_ip', 'String', 'client_ip'],
    ],
    measures: [['requests', 'Int64', '1']],
  },
  // The clients of each node and country per hour and 5 minutes: traffic by node and country.
  placeClients: {
    table: 'rnc',
    keys: [
      ['node', 'String', 'node'],
      ['country', 'String', 'country'],
      ['client_ip', 'String', 'client_ip'],
    ],
    measures: [['requests', 'Int64', '1']],
  },
  // Requests and bytes per counts column's value (as dimClients: index and value as text), host and path: the top paths
  // under one filter on a counts column. Ordered by column and value first: such a read finds that value's rows.
  pathValues: {
    table: 'ry',
    first: ['dim', 'value'],
    keys: [
      ['dim', 'UInt8', `tupleElement(arrayJoin([${DIM_VALUES}]) AS dv, 1)`],
      ['value', 'String', 'tupleElement(dv, 2)'],
      ['host', 'String', 'host'],
      ['path', 'String', 'path'],
    ],
    measures: TRAFFIC,
  },
  // The summary's totals, clients and times per AS number, ordered by it first: a summary filtered on an AS number.
  asnCounts: {
    table: 'ra',
    first: ['asn'],
    keys: [['asn', 'Int64', 'asn']],
    measures: [
      ['requests', 'Int64', '1'],
      ['sent', 'Int64', 'bytes'],
      ['cached_requests', 'Int64', `if(${CACHED}, 1, 0)`],
      ['cached_sent', 'Int64', `if(${CACHED}, bytes, 0)`],
      ...ORIGIN,
      ['status4xx', 'Int64', 'if(status >= 400 AND status < 500, 1, 0)'],
      ['status5xx', 'Int64', 'if(status >= 500, 1, 0)'],
      ['fetched', 'Int64', 'origin_bytes'],
    ],
  },
  asnClients: {
    table: 'rb',
    first: ['asn'],
    keys: [
      ['asn', 'Int64', 'asn'],
      ['client_ip', 'String', 'client_ip'],
    ],
    measures: [['requests', 'Int64', '1']],
  },
  asnUpstream: {
    table: 'rh',
    first: ['asn'],
    keys: [
      ['asn', 'Int64', 'asn'],
      ['v', 'Float64', 'upstream_ms'],
    ],
    measures: [['n', 'Int64', '1']],
    only: TO_ORIGIN,
  },
};
export const CH_ROLLUP_KINDS = Object.keys(CH_KINDS) as RollupKind[];
/**
 * Tables and views of earlier versions that nothing reads or fills any more (the per-dimension and path clients
 * rollups ordered by bucket first; the path totals and times, replaced by the copy by path): dropped at start, views
 * first (a view left would keep filling its table at every INSERT).
 */
export const LEGACY_TABLES: readonly string[] = [
  'rd_mv',
  're_mv',
  'rq_mv',
  'rk_mv',
  'rj_mv',
  'rd',
  're',
  'rq',
  'rk',
  'rj',
];

const cast = (type: string, sql: string) => `to${type}(${sql})`;
const keyExpr = ([n, , raw]: Col) => (raw === n ? n : `${raw} AS ${n}`);

export function rollupTableSql(db: string, kind: RollupKind): string {
  const { table, keys, measures, first = [] } = CH_KINDS[kind];
  const cols = ['domain_id UInt32', 'lvl UInt32', 'b Int64', ...[...keys, ...measures].map(([n, t]) => `${n} ${t}`)];
  const rest = keys.map(([n]) => n).filter((n) => !first.includes(n));
  const order = ['domain_id', ...first, 'lvl', 'b', ...rest].join(', ');
  return `CREATE TABLE IF NOT EXISTS ${db}.${table} (${cols.join(', ')}) ENGINE = SummingMergeTree ORDER BY (${order})`;
}

/** The aggregate of `logs` rows (WHERE `cond`) per domain, level of `levels`, bucket and key: the view's SELECT. */
export function aggregateSql(db: string, kind: RollupKind, levels: readonly number[], cond: string): string {
  const { keys, measures, only } = CH_KINDS[kind];
  const cols = [
    'domain_id',
    'lvl',
    'intDiv(intDiv(time_us, 1000), lvl) * lvl AS b',
    ...keys.map(keyExpr),
    ...measures.map(([n, t, raw]) => `${cast(t, `sum(${raw})`)} AS ${n}`),
  ];
  const where = [cond, only].filter(Boolean).join(' AND ');
  return `SELECT ${cols.join(', ')} FROM ${db}.logs ARRAY JOIN [${levels.map((l) => `toUInt32(${l})`).join(', ')}] AS lvl${where ? ` WHERE ${where}` : ''}
    GROUP BY ${['domain_id', 'lvl', 'b', ...keys.map(([n]) => n)].join(', ')}`;
}

export const viewName = (kind: RollupKind): string => `${CH_KINDS[kind].table}_mv`;
export function viewSql(db: string, kind: RollupKind): string {
  return `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.${viewName(kind)} TO ${db}.${CH_KINDS[kind].table}
    AS ${aggregateSql(db, kind, LEVELS[kind], '')}`;
}

/**
 * Rows of the domain's rollups (summed per key) that differ from the aggregate of its `logs` rows computed again:
 * one statement per kind, its count the drift.
 */
export function driftSql(db: string, kind: RollupKind, domainId: string): string {
  const { table, keys, measures } = CH_KINDS[kind];
  const key = ['lvl', 'b', ...keys.map(([n]) => n)];
  const x = measures.map(([n]) => `sum(${n}) AS x_${n}`).join(', ');
  const y = measures.map(([n]) => `${n} AS y_${n}`).join(', ');
  const differs = measures
    .map(([n, t]) => (t === 'Float64' ? `abs(x_${n} - y_${n}) > 1e-9 * greatest(1, abs(y_${n}))` : `x_${n} != y_${n}`))
    .join(' OR ');
  return `SELECT count() AS n FROM
    (SELECT ${key.join(', ')}, ${x} FROM ${db}.${table} WHERE domain_id = ${domainId} GROUP BY ${key.join(', ')})
    ALL FULL OUTER JOIN
    (SELECT ${key.join(', ')}, ${y} FROM (${aggregateSql(db, kind, LEVELS[kind], `domain_id = ${domainId}`)}))
    USING (${key.join(', ')}) WHERE ${differs}`;
}

/**
 * The rows of a kind over `cov` for the domains (`ids` the SQL list), with the filter fragments: the rollup rows of
 * its whole buckets and the raw rows of its ends, in the rollup's columns (b the row's ms). Null: nothing to read.
 */
export function sourceSql(
  db: string,
  kind: RollupKind,
  ids: string,
  cov: Cover,
  filters: string[],
  pieceLvl?: (lvl: number) => boolean,
  withDomain = false,
): string | null {
  const { table, keys, measures, only } = CH_KINDS[kind];
  const dom = withDomain ? ['domain_id'] : [];
  const names = [...dom, 'b', ...keys.map(([n]) => n), ...measures.map(([n]) => n)].join(', ');
  const branches: string[] = [];
  const pieces = cov.pieces.filter((p) => !pieceLvl || pieceLvl(p.lvl));
  if (pieces.length > 0) {
    const within = pieces.map((p) => `(lvl = ${p.lvl} AND b >= ${p.lo} AND b < ${p.hi})`).join(' OR ');
    branches.push(
      `SELECT ${names} FROM ${db}.${table} WHERE ${[`domain_id IN (${ids})`, `(${within})`, ...filters].join(' AND ')}`,
    );
  }
  if (!pieceLvl && cov.raw.length > 0) {
    const within = cov.raw.map((s) => `(time_us >= ${s.lo * 1000} AND time_us < ${s.hi * 1000})`).join(' OR ');
    const cols = [
      ...dom,
      'toInt64(intDiv(time_us, 1000)) AS b',
      ...keys.map(([n, t, raw]) => (raw === n ? n : `${cast(t, raw)} AS ${n}`)),
      ...measures.map(([n, t, raw]) => `${cast(t, raw)} AS ${n}`),
    ];
    const conds = [`domain_id IN (${ids})`, `(${within})`, ...filters, ...(only ? [only] : [])];
    branches.push(`SELECT ${cols.join(', ')} FROM ${db}.logs WHERE ${conds.join(' AND ')}`);
  }
  return branches.length > 0 ? branches.join(' UNION ALL ') : null;
}

/**
 * The kinds keyed by a counts column's index and value (dim, value): the base kind whose raw rows, with the range's
 * filter, give the same rows for the ends of a range, and the columns a read takes of them.
 */
export const PER_DIM = {
  dimClients: { base: 'clients', columns: 'b, client_ip' },
  dimUpstream: { base: 'upstream', columns: 'v, n' },
  pathValues: { base: 'paths', columns: 'path, requests, sent, fetched' },
} as const;
export type PerDimKind = keyof typeof PER_DIM;

/**
 * The columns (PER_DIM) of a per-dimension rollup over `cov`'s whole buckets for one counts column (`dim`, its index)
 * and value (`value`, as text: toString of the column's type), and of the base kind's raw rows of its ends with the
 * range's filter (`filters`): the same rows as the base kind's over the raw rows with that filter.
 */
export function dimSourceSql(
  db: string,
  kind: PerDimKind,
  ids: string,
  cov: Cover,
  filters: string[],
  dim: number,
  value: string,
): string | null {
  const { base, columns } = PER_DIM[kind];
  const branches: string[] = [];
  if (cov.pieces.length > 0) {
    const within = cov.pieces.map((p) => `(lvl = ${p.lvl} AND b >= ${p.lo} AND b < ${p.hi})`).join(' OR ');
    branches.push(
      `SELECT ${columns} FROM ${db}.${CH_KINDS[kind].table}
       WHERE domain_id IN (${ids}) AND dim = ${dim} AND value = ${value} AND (${within})`,
    );
  }
  const raw = sourceSql(db, base, ids, { pieces: [], raw: cov.raw }, filters);
  if (raw !== null) branches.push(`SELECT ${columns} FROM (${raw})`);
  return branches.length > 0 ? branches.join(' UNION ALL ') : null;
}

/**
 * The clients per bucket (as DuckDB's clients per minute): per domain, level of COUNTED_LEVELS and bucket of the
 * clients rollup, its distinct clients, written by the store after each batch for the buckets the batch touched
 * (countClientsSql), so that a series point of one such bucket reads one number instead of counting its clients. A
 * bucket only gains clients (retention writes the bucket holding its cutoff again after deleting it), so the largest
 * count written for a bucket is its count: the table keeps the largest (ReplacingMergeTree by n), and reads take
 * max(n) whatever the merges have done.
 */
export const CLIENT_COUNTS = 'rn';
/** The clients rollup's levels whose buckets are counted (longer buckets hold more clients to count per batch). */
export const COUNTED_LEVELS: readonly number[] = [5 * MINUTE, MINUTE];
export const clientCountsTableSql = (db: string): string =>
  `CREATE TABLE IF NOT EXISTS ${db}.${CLIENT_COUNTS} (domain_id UInt32, lvl UInt32, b Int64, n UInt64)
   ENGINE = ReplacingMergeTree(n) ORDER BY (domain_id, lvl, b)`;
/** Counts again the clients of the clients rollup's buckets of COUNTED_LEVELS that pass `cond`, into CLIENT_COUNTS. */
export const countClientsSql = (db: string, cond: string): string =>
  `INSERT INTO ${db}.${CLIENT_COUNTS} SELECT domain_id, lvl, b, uniqExact(client_ip) FROM ${db}.${CH_KINDS.clients.table}
   WHERE lvl IN (${COUNTED_LEVELS.join(', ')}) AND ${cond} GROUP BY domain_id, lvl, b`;
/** Buckets of CLIENT_COUNTS whose count differs from the clients of the rollup's bucket, or that one of them lacks. */
export const clientCountsDriftSql = (db: string, domainId: string): string =>
  `SELECT count() AS n FROM
    (SELECT lvl, b, max(n) AS x FROM ${db}.${CLIENT_COUNTS} WHERE domain_id = ${domainId} GROUP BY lvl, b)
    ALL FULL OUTER JOIN
    (SELECT lvl, b, uniqExact(client_ip) AS y FROM ${db}.${CH_KINDS.clients.table}
     WHERE domain_id = ${domainId} AND lvl IN (${COUNTED_LEVELS.join(', ')}) GROUP BY lvl, b)
    USING (lvl, b) WHERE x != y`;

/**
 * The clients per value of one key of a rollup holding clients, per bucket (as DuckDB's ro_ tables): per domain, value,
 * level and bucket, the distinct addresses, written after each batch for the buckets it touched as CLIENT_COUNTS is
 * (the largest count of a bucket is its count: ReplacingMergeTree by n, reads take max(n)), so that a series point of
 * one such bucket filtered on that value reads one number. Ordered by the value before the buckets: such a series
 * reads its value's rows. The fingerprints per bot class (their addresses counted once over their fingerprints: a
 * series filtered on a bot class) and the status clients per status (a series at 5-minute points filtered on a
 * status).
 */
export interface ValueCounts {
  table: string;
  /** The rollup counted, and its key (the series' filter) with its type. */
  kind: 'fingerprints' | 'statusClients';
  by: 'bot_class' | 'status';
  type: string;
  levels: readonly number[];
}
export const VALUE_COUNTS: readonly ValueCounts[] = [
  { table: 'ro', kind: 'fingerprints', by: 'bot_class', type: 'String', levels: [HOUR, 5 * MINUTE] },
  { table: 'rsn', kind: 'statusClients', by: 'status', type: 'Int32', levels: [5 * MINUTE] },
];
export const valueCountsTableSql = (db: string, c: ValueCounts): string =>
  `CREATE TABLE IF NOT EXISTS ${db}.${c.table} (domain_id UInt32, ${c.by} ${c.type}, lvl UInt32, b Int64, n UInt64)
   ENGINE = ReplacingMergeTree(n) ORDER BY (domain_id, ${c.by}, lvl, b)`;
/** Counts again the clients per value of the rollup's buckets that pass `cond`, into the table of `c`. */
export const countValuesSql = (db: string, c: ValueCounts, cond: string): string =>
  `INSERT INTO ${db}.${c.table} SELECT domain_id, ${c.by}, lvl, b, uniqExact(client_ip)
   FROM ${db}.${CH_KINDS[c.kind].table}
   WHERE lvl IN (${c.levels.join(', ')}) AND ${cond} GROUP BY domain_id, ${c.by}, lvl, b`;
/** Buckets and values of the table of `c` whose count differs from its rollup's, or that one of them lacks. */
export const valueCountsDriftSql = (db: string, c: ValueCounts, domainId: string): string =>
  `SELECT count() AS n FROM
    (SELECT ${c.by}, lvl, b, max(n) AS x FROM ${db}.${c.table} WHERE domain_id = ${domainId}
     GROUP BY ${c.by}, lvl, b)
    ALL FULL OUTER JOIN
    (SELECT ${c.by}, lvl, b, uniqExact(client_ip) AS y FROM ${db}.${CH_KINDS[c.kind].table}
     WHERE domain_id = ${domainId} AND lvl IN (${c.levels.join(', ')}) GROUP BY ${c.by}, lvl, b)
    USING (${c.by}, lvl, b) WHERE x != y`;
