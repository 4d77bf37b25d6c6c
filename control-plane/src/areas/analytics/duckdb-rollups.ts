// The rollups (rollup.ts) on DuckDB: per domain and per kind and level a table `r<kind>_<domain id>_<level in s>`
// (rc_ counts, rv_ clients, ru_ upstream times, rp_ paths, rs_ seconds), a row per bucket start `b` (ms since the epoch)
// and key. They are kept in the batch's transaction (duckdb-store.ts append): the batch's rows are aggregated per
// bucket and key and added to the row of the same bucket and key, or inserted (one row per bucket and key, so a set
// of clients is a set). A read takes whole buckets from the rollups and the raw rows of what is left at the ends of
// its range (rollup.ts cover), and so answers what the same read over the raw rows answers.
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import {
  GROUP_SQL,
  proxyClientsOf,
  REFUSED_BY_SECURITY,
  trafficBucket,
  valueBucket,
  valueIn,
} from './duckdb-account-reads.js';
import { breakdownItem, DIMENSION_SQL, filters, num, tz } from './duckdb-reads.js';
import {
  COUNT_DIMS,
  HOUR,
  LEVELS,
  MINUTE,
  SECOND,
  cover,
  levelsFor,
  countsFilters,
  oneCountsFilter,
  asnFilter,
  seriesClients,
  groupsClients,
  groupColumnDim,
  type breakdownRollup,
  type Cover,
  type CountDim,
  type RollupKind,
  type Span,
} from './rollup.js';
import {
  EMPTY_SUMMARY,
  groupValue,
  type ActionCount,
  type BreakdownItem,
  type Peak,
  type RangeSummary,
  type ReadRange,
  type RuleHits,
} from './reads.js';
import type { GroupDimension, GroupItem, ProxyClient, TrafficBucket, ValueBucket } from './account-reads.js';

/** A column of a rollup: name, SQL type, its value for one raw row (a key) or what is summed (a measure). */
type Col = readonly [name: string, type: string, raw: string];

const CACHED = `cache_status IN ('HIT', 'STALE')`;
const TO_ORIGIN = 'upstream_ms >= 0';

const COUNT_KEY_TYPES: Record<(typeof COUNT_DIMS)[number], string> = {
  host: 'VARCHAR',
  method: 'VARCHAR',
  status: 'INTEGER',
  cache_status: 'VARCHAR',
  node: 'VARCHAR',
  bot_class: 'VARCHAR',
  country: 'VARCHAR',
  http_protocol: 'VARCHAR',
  tls_version: 'VARCHAR',
  ua_category: 'VARCHAR',
  serving_path: 'VARCHAR',
  unserved_reason: 'VARCHAR',
  markdown: 'BOOLEAN',
};

interface KindSql {
  prefix: string;
  keys: readonly Col[];
  measures: readonly Col[];
  /** Only the raw rows this holds are counted. */
  only?: string;
  /**
   * The rows one raw row stands for, when not itself (one per rule hit, one per WAF action): a SELECT over `src`'s
   * rows that pass `conds`, with `time_utc` and the columns the keys and measures read; of a split kind, those of one
   * part (`part`) or, without it, of every part.
   */
  expand?: (src: string, conds: string[], part?: number) => string;
  /**
   * Kept as one table per counts column (COUNT_DIMS index, the key `dim`) and level: a read of one column's values
   * scans that column's rows only (a filter on bot_class reads about a thirteenth of the rows a single table holds).
   */
  split?: true;
}

const whereOf = (conds: string[]): string => (conds.length ? ` WHERE ${conds.join(' AND ')}` : '');

/**
 * Each raw row that passes `conds` as one row per counts column (COUNT_DIMS), or of the column `part` only: `dim` the
 * column's index, `value` its value as text (CAST AS VARCHAR, as a filter's value is compared: dimSource), and the
 * columns of `extra`.
 */
const perDim =
  (extra: string) =>
  (src: string, conds: string[], part?: number): string =>
    part === undefined
      ? `SELECT time_utc, unnest(range(${COUNT_DIMS.length})) AS dim,
           unnest([${COUNT_DIMS.map((d) => `CAST(${d} AS VARCHAR)`).join(', ')}]) AS value, ${extra}
         FROM ${src}${whereOf(conds)}`
      : `SELECT time_utc, ${part} AS dim, CAST(${COUNT_DIMS[part]} AS VARCHAR) AS value, ${extra}
         FROM ${src}${whereOf(conds)}`;

/** The summary's totals of a rollup keyed by a column no counts rollup keeps (asnCounts). */
const SUMMARY_MEASURES: readonly Col[] = [
  ['requests', 'BIGINT', '1'],
  ['bytes', 'BIGINT', 'bytes'],
  ['cached_requests', 'BIGINT', `CASE WHEN ${CACHED} THEN 1 ELSE 0 END`],
  ['cached_bytes', 'BIGINT', `CASE WHEN ${CACHED} THEN bytes ELSE 0 END`],
  ['origin_requests', 'BIGINT', `CASE WHEN ${TO_ORIGIN} THEN 1 ELSE 0 END`],
  ['origin_req_bytes', 'BIGINT', `CASE WHEN ${TO_ORIGIN} THEN bytes ELSE 0 END`],
  ['upstream_sum', 'DOUBLE', `CASE WHEN ${TO_ORIGIN} THEN upstream_ms ELSE 0 END`],
  ['status4xx', 'BIGINT', 'CASE WHEN status >= 400 AND status < 500 THEN 1 ELSE 0 END'],
  ['status5xx', 'BIGINT', 'CASE WHEN status >= 500 THEN 1 ELSE 0 END'],
  ['origin_bytes', 'BIGINT', 'origin_bytes'],
];

/** Requests, bytes sent and origin bytes: what a breakdown reads. */
const TRAFFIC_MEASURES: readonly Col[] = [
  ['requests', 'BIGINT', '1'],
  ['bytes', 'BIGINT', 'bytes'],
  ['origin_bytes', 'BIGINT', 'origin_bytes'],
];

export const KINDS: Record<RollupKind, KindSql> = {
  counts: {
    prefix: 'rc',
    keys: [
      ...COUNT_DIMS.map((d): Col => [d, COUNT_KEY_TYPES[d], d]),
      ['refused', 'BOOLEAN', `coalesce(${REFUSED_BY_SECURITY}, false)`],
    ],
    measures: [
      ['requests', 'BIGINT', '1'],
      ['bytes', 'BIGINT', 'bytes'],
      ['origin_requests', 'BIGINT', `CASE WHEN ${TO_ORIGIN} THEN 1 ELSE 0 END`],
      ['origin_req_bytes', 'BIGINT', `CASE WHEN ${TO_ORIGIN} THEN bytes ELSE 0 END`],
      ['upstream_sum', 'DOUBLE', `CASE WHEN ${TO_ORIGIN} THEN upstream_ms ELSE 0 END`],
      ['origin_bytes', 'BIGINT', 'origin_bytes'],
    ],
  },
  clients: {
    prefix: 'rv',
    keys: [['client_ip', 'VARCHAR', 'client_ip']],
    measures: [
      ['requests', 'BIGINT', '1'],
      ['bytes', 'BIGINT', 'bytes'],
      ['origin_bytes', 'BIGINT', 'origin_bytes'],
    ],
  },
  upstream: {
    prefix: 'ru',
    keys: [['v', 'DOUBLE', 'upstream_ms']],
    measures: [['n', 'BIGINT', '1']],
    only: TO_ORIGIN,
  },
  paths: {
    prefix: 'rp',
    keys: [
      ['host', 'VARCHAR', 'host'],
      ['path', 'VARCHAR', 'path'],
    ],
    measures: [
      ['requests', 'BIGINT', '1'],
      ['bytes', 'BIGINT', 'bytes'],
      ['origin_bytes', 'BIGINT', 'origin_bytes'],
    ],
  },
  seconds: { prefix: 'rs', keys: [], measures: [['n', 'BIGINT', '1']] },
  rules: {
    prefix: 'rr',
    keys: [
      ['rule_id', 'BIGINT', `CAST(json_extract_string(h, '$[0]') AS BIGINT)`],
      ['rule_type', 'VARCHAR', `json_extract_string(h, '$[1]')`],
    ],
    measures: [
      ['hits', 'BIGINT', '1'],
      ['dry', 'BIGINT', `CASE WHEN json_extract_string(h, '$[2]') = 'true' THEN 1 ELSE 0 END`],
    ],
    expand: (src, conds) =>
      `SELECT time_utc, unnest(CAST(rule_hits AS JSON[])) AS h FROM ${src}${whereOf([...conds, `rule_hits::VARCHAR <> '[]'`])}`,
  },
  waf: {
    prefix: 'rw',
    // Per raw row, each action once: its findings, and the request counted once.
    keys: [['action', 'VARCHAR', 'a']],
    measures: [
      ['events', 'BIGINT', 'len(list_filter(acts, x -> x = a))'],
      ['requests', 'BIGINT', '1'],
    ],
    expand: (src, conds) =>
      `SELECT time_utc, unnest(list_distinct(acts)) AS a, acts
       FROM (SELECT time_utc, list_transform(CAST(waf_events AS JSON[]), e -> json_extract_string(e, '$[5]')) AS acts
             FROM ${src}${whereOf([...conds, `waf_events::VARCHAR <> '[]'`])})`,
  },
  pathClients: {
    prefix: 'rq',
    keys: [
      ['host', 'VARCHAR', 'host'],
      ['path', 'VARCHAR', 'path'],
      ['client_ip', 'VARCHAR', 'client_ip'],
    ],
    measures: [['requests', 'BIGINT', '1']],
  },
  fingerprints: {
    prefix: 'rf',
    keys: [
      ['client_ip', 'VARCHAR', 'client_ip'],
      ['fingerprint', 'VARCHAR', 'fingerprint'],
      ['bot_class', 'VARCHAR', 'bot_class'],
    ],
    measures: [
      ['requests', 'BIGINT', '1'],
      ['bytes', 'BIGINT', 'bytes'],
    ],
  },
  dimClients: {
    prefix: 'rd',
    keys: [
      ['dim', 'UTINYINT', 'CAST(dim AS UTINYINT)'],
      ['value', 'VARCHAR', 'value'],
      ['client_ip', 'VARCHAR', 'client_ip'],
    ],
    // No measure: only whether the client was seen (the visitors), so a batch inserts the keys the table lacks and
    // updates no row (an update of the 13 or more rows per client and batch halved the ingest rate).
    measures: [],
    expand: perDim('client_ip'),
    split: true,
  },
  dimUpstream: {
    prefix: 're',
    keys: [
      ['dim', 'UTINYINT', 'CAST(dim AS UTINYINT)'],
      ['value', 'VARCHAR', 'value'],
      ['v', 'DOUBLE', 'upstream_ms'],
    ],
    measures: [['n', 'BIGINT', '1']],
    only: TO_ORIGIN,
    expand: perDim('upstream_ms'),
  },
  comboClients: {
    prefix: 'rm',
    keys: [...COUNT_DIMS.map((d): Col => [d, COUNT_KEY_TYPES[d], d]), ['client_ip', 'VARCHAR', 'client_ip']],
    // No measure, as dimClients: whether the client was seen with these values.
    measures: [],
  },
  comboUpstream: {
    prefix: 'rg',
    keys: [...COUNT_DIMS.map((d): Col => [d, COUNT_KEY_TYPES[d], d]), ['v', 'DOUBLE', 'upstream_ms']],
    measures: [['n', 'BIGINT', '1']],
    only: TO_ORIGIN,
  },
  asnCounts: { prefix: 'ra', keys: [['asn', 'BIGINT', 'asn']], measures: SUMMARY_MEASURES },
  asnClients: {
    prefix: 'rb',
    keys: [
      ['asn', 'BIGINT', 'asn'],
      ['client_ip', 'VARCHAR', 'client_ip'],
    ],
    // No measure, as dimClients: whether the client was seen with this AS number.
    measures: [],
  },
  asnUpstream: {
    prefix: 'rh',
    keys: [
      ['asn', 'BIGINT', 'asn'],
      ['v', 'DOUBLE', 'upstream_ms'],
    ],
    measures: [['n', 'BIGINT', '1']],
    only: TO_ORIGIN,
  },
  scores: { prefix: 'rt', keys: [['bot_score', 'INTEGER', 'bot_score']], measures: TRAFFIC_MEASURES },
  limitRules: { prefix: 'rl', keys: [['rate_limit_rule', 'INTEGER', 'rate_limit_rule']], measures: TRAFFIC_MEASURES },
  limitKeys: { prefix: 'ri', keys: [['rate_limit_key', 'VARCHAR', 'rate_limit_key']], measures: TRAFFIC_MEASURES },
  asnOrgs: {
    prefix: 'rao',
    keys: [
      ['asn', 'BIGINT', 'asn'],
      ['as_org', 'VARCHAR', 'as_org'],
    ],
    measures: TRAFFIC_MEASURES,
  },
  statusClients: {
    prefix: 'rsv',
    keys: [
      ['status', 'INTEGER', 'status'],
      ['client_ip', 'VARCHAR', 'client_ip'],
    ],
    // No measure, as dimClients: whether the client got this status in the bucket.
    measures: [],
  },
  placeClients: {
    prefix: 'rnc',
    keys: [
      ['node', 'VARCHAR', 'node'],
      ['country', 'VARCHAR', 'country'],
      ['client_ip', 'VARCHAR', 'client_ip'],
    ],
    // No measure, as dimClients.
    measures: [],
  },
  pathValues: {
    prefix: 'ry',
    keys: [
      ['host', 'VARCHAR', 'host'],
      ['path', 'VARCHAR', 'path'],
      ['dim', 'UTINYINT', 'CAST(dim AS UTINYINT)'],
      ['value', 'VARCHAR', 'value'],
    ],
    measures: [
      ['requests', 'BIGINT', '1'],
      ['bytes', 'BIGINT', 'bytes'],
      ['origin_bytes', 'BIGINT', 'origin_bytes'],
    ],
    expand: perDim('host, path, bytes, origin_bytes'),
  },
};

const ROLLUP_KINDS = Object.keys(KINDS) as RollupKind[];

/** The table of one kind, domain and level (and, of a split kind, counts column: `part`). */
export function rollupTable(kind: RollupKind, domainId: number, lvl: number, part?: number): string {
  if (!Number.isSafeInteger(domainId) || domainId < 0) throw new Error(`bad domain id ${domainId}`);
  if ((part === undefined) !== !KINDS[kind].split) throw new Error(`${kind}: a part is named exactly when split`);
  return `${KINDS[kind].prefix}_${domainId}_${lvl / SECOND}${part === undefined ? '' : `_${part}`}`;
}

/** The tables of one kind, domain and level: one, or one per part of a split kind (`part` its counts column). */
function levelTables(kind: RollupKind, domainId: number, lvl: number): { t: string; part?: number }[] {
  return KINDS[kind].split
    ? COUNT_DIMS.map((_, part) => ({ t: `main.${rollupTable(kind, domainId, lvl, part)}`, part }))
    : [{ t: `main.${rollupTable(kind, domainId, lvl)}` }];
}

/**
 * Tables of earlier versions of the store that nothing reads or keeps any more (the per-dimension clients as one table
 * per level, before it was split by column): dropped with the kind's tables when it is built again, and with the
 * domain.
 */
export const legacyTables = (domainId: number): string[] =>
  ['rd', 'rk', 'rj'].map((p) => `${p}_${Math.trunc(domainId)}_3600`);

/**
 * Distinct clients counted per bucket of one level of a kind holding clients (and per value of its `by` columns),
 * kept with that table, so that a series point of one such bucket reads one number, not a row per client: the
 * clients per minute (rn_: a set of clients per bucket, its rows counted), and the clients per bot class of the
 * fingerprints' 5-minute and hour buckets (ro_: addresses counted once over their fingerprints; a series filtered on a
 * bot class). Part of the kind (created, filled, trimmed and checked with it).
 */
interface Counted {
  kind: 'clients' | 'fingerprints';
  lvl: number;
  prefix: string;
  by: readonly string[];
  count: string;
}
const COUNTED: readonly Counted[] = [
  { kind: 'clients', lvl: MINUTE, prefix: 'rn', by: [], count: 'count(*)' },
  { kind: 'fingerprints', lvl: 5 * MINUTE, prefix: 'ro', by: ['bot_class'], count: 'count(DISTINCT client_ip)' },
  { kind: 'fingerprints', lvl: HOUR, prefix: 'ro', by: ['bot_class'], count: 'count(DISTINCT client_ip)' },
];
const countedTable = (c: Counted, domainId: number): string =>
  `${c.prefix}_${rollupTable(c.kind, domainId, c.lvl).slice(KINDS[c.kind].prefix.length + 1)}`;

/** Every rollup table of a domain (of `kinds`). */
export function rollupTables(domainId: number, kinds: readonly RollupKind[] = ROLLUP_KINDS): string[] {
  return [
    ...kinds.flatMap((k) => LEVELS[k].flatMap((l) => levelTables(k, domainId, l).map(({ t }) => t.slice(5)))),
    ...COUNTED.filter((c) => kinds.includes(c.kind)).map((c) => countedTable(c, domainId)),
  ];
}

/**
 * The kinds of rollup a domain lacks a table of, given the tables of the file (a file of an older version lacks the
 * kinds added since; a kind's tables are created and filled in one transaction, so a kind has all or none).
 */
export function missingKinds(domainId: number, tables: ReadonlySet<string>): RollupKind[] {
  return ROLLUP_KINDS.filter((k) => rollupTables(domainId, [k]).some((t) => !tables.has(t)));
}

/** Creates a domain's rollup tables of `kinds` (none must exist). */
export async function createRollups(
  conn: DuckDBConnection,
  domainId: number,
  kinds: readonly RollupKind[] = ROLLUP_KINDS,
): Promise<void> {
  for (const k of kinds) {
    const { keys, measures } = KINDS[k];
    const cols = ['b BIGINT NOT NULL', ...[...keys, ...measures].map(([n, t]) => `${n} ${t} NOT NULL`)].join(', ');
    for (const l of LEVELS[k])
      for (const { t } of levelTables(k, domainId, l)) await conn.run(`CREATE TABLE ${t} (${cols})`);
  }
  for (const c of COUNTED.filter((x) => kinds.includes(x.kind))) {
    const by = c.by.map((n) => `${n} ${KINDS[c.kind].keys.find(([k]) => k === n)?.[1] ?? 'VARCHAR'} NOT NULL, `);
    await conn.run(
      `CREATE TABLE main.${countedTable(c, domainId)} (b BIGINT NOT NULL, ${by.join('')}n BIGINT NOT NULL)`,
    );
  }
}

/** The counted clients (COUNTED) of the buckets from the one holding `lo` (ms) to `hi`: from the kind's table. */
const countClients = (c: Counted, domainId: number, lo = -Infinity, hi = Infinity) =>
  `SELECT b, ${c.by.map((n) => `${n}, `).join('')}${c.count} AS n FROM main.${rollupTable(c.kind, domainId, c.lvl)}
   ${Number.isFinite(lo) ? `WHERE b >= ${Math.floor(lo / c.lvl) * c.lvl} AND b <= ${Math.floor(hi)}` : ''} GROUP BY ALL`;
const countedOn = (c: Counted): string => ['b', ...c.by].map((n) => `x.${n} = y.${n}`).join(' AND ');

/**
 * The rows of `src` that pass `conds` in the rollup's columns, one per row it stands for (b the row's ms); of a split
 * kind, those of the part `part` (or of every part).
 */
function perRow(kind: RollupKind, src: string, conds: string[], part?: number): string {
  const { keys, measures, only, expand } = KINDS[kind];
  const all = [...conds, ...(only ? [only] : [])];
  const cols = [
    'epoch_ms(time_utc) AS b',
    ...keys.map(([n, , raw]) => `${raw} AS ${n}`),
    ...measures.map(([n, t, raw]) => `CAST(${raw} AS ${t}) AS ${n}`),
  ];
  return `SELECT ${cols.join(', ')} FROM ${expand ? `(${expand(src, all, part)})` : `${src}${whereOf(all)}`}`;
}

/**
 * The aggregate of raw rows of `source` (WHERE `cond`) per bucket of `lvl` and key, as the table's columns (of one
 * part of a split kind, or of every part).
 */
function aggregate(kind: RollupKind, lvl: number, source: string, cond: string, part?: number): string {
  const { keys, measures } = KINDS[kind];
  const cols = [
    `b // ${lvl} * ${lvl} AS b`,
    ...keys.map(([n]) => n),
    ...measures.map(([n, t]) => `CAST(coalesce(sum(${n}), 0) AS ${t}) AS ${n}`),
  ];
  return `SELECT ${cols.join(', ')} FROM (${perRow(kind, source, cond ? [cond] : [], part)}) GROUP BY ALL`;
}

/** Fills a domain's new (empty) rollups of `kinds` from every raw row it has. */
export async function fillRollups(
  conn: DuckDBConnection,
  domainId: number,
  raw: string,
  kinds: readonly RollupKind[] = ROLLUP_KINDS,
): Promise<void> {
  // In bucket order, as the batches append them: a read's range then skips the rest of the table by its zone maps
  // (a file's rollups built in the aggregate's hash order made every read of them scan the whole table).
  for (const k of kinds)
    for (const l of LEVELS[k])
      for (const { t, part } of levelTables(k, domainId, l))
        await conn.run(`INSERT INTO ${t} ${aggregate(k, l, `main.${raw}`, '', part)} ORDER BY b`);
  for (const c of COUNTED.filter((x) => kinds.includes(x.kind)))
    await conn.run(`INSERT INTO main.${countedTable(c, domainId)} ${countClients(c, domainId)} ORDER BY b`);
}

/**
 * Adds the rows of `source` (a batch, times from loMs to hiMs) to the domain's rollups: the batch's aggregate at the
 * kind's shortest level once, then per level merged into the table (added to the row of the same bucket and key, or
 * inserted). Only the rollup rows of the batch's buckets are read (b in range: the tables' zone maps skip the rest).
 */
export async function addToRollups(
  conn: DuckDBConnection,
  domainId: number,
  source: string,
  loMs: number,
  hiMs: number,
): Promise<void> {
  for (const k of ROLLUP_KINDS) {
    const { keys, measures } = KINDS[k];
    const keyNames = ['b', ...keys.map(([n]) => n)];
    const levels = LEVELS[k];
    const finest = levels[levels.length - 1];
    await conn.run(`CREATE OR REPLACE TEMP TABLE rollup_add AS ${aggregate(k, finest, source, '')}`);
    for (const l of levels)
      for (const { t, part } of levelTables(k, domainId, l)) {
        const only = part === undefined ? '' : ` WHERE dim = ${part}`;
        const from =
          l === finest
            ? `(SELECT * FROM rollup_add${only})`
            : `(SELECT ${[
                `b // ${l} * ${l} AS b`,
                ...keys.map(([n]) => n),
                ...measures.map(([n, type]) => `CAST(sum(${n}) AS ${type}) AS ${n}`),
              ].join(', ')} FROM rollup_add${only} GROUP BY ALL)`;
        const on = keyNames.map((n) => `t.${n} = a.${n}`).join(' AND ');
        const within = `t.b >= ${Math.floor(loMs / l) * l} AND t.b <= ${Math.floor(hiMs)}`;
        const set = measures.map(([n]) => `${n} = t.${n} + a.${n}`).join(', ');
        // A kind without measures (a set of keys per bucket): the keys not in the table yet.
        await conn.run(
          measures.length === 0
            ? `INSERT INTO ${t} SELECT a.* FROM ${from} AS a ANTI JOIN (SELECT * FROM ${t} AS t WHERE ${within}) AS t ON ${on}`
            : `MERGE INTO ${t} AS t USING ${from} AS a ON ${on} AND ${within}
               WHEN MATCHED THEN UPDATE SET ${set} WHEN NOT MATCHED THEN INSERT *`,
        );
      }
  }
  await conn.run('DROP TABLE IF EXISTS rollup_add');
  for (const c of COUNTED)
    await conn.run(
      `MERGE INTO main.${countedTable(c, domainId)} AS x USING (${countClients(c, domainId, loMs, hiMs)}) AS y
       ON ${countedOn(c)} WHEN MATCHED THEN UPDATE SET n = y.n WHEN NOT MATCHED THEN INSERT *`,
    );
}

/**
 * After the domain's raw rows before `before` were deleted: the rollup buckets wholly before it deleted, and the
 * bucket holding it (part of its rows deleted) computed again from the rows left.
 */
export async function trimRollups(
  conn: DuckDBConnection,
  domainId: number,
  raw: string,
  before: number,
): Promise<void> {
  for (const k of ROLLUP_KINDS)
    for (const l of LEVELS[k])
      for (const { t, part } of levelTables(k, domainId, l)) {
        const start = Math.floor(before / l) * l;
        await conn.run(`DELETE FROM ${t} WHERE b < ${start}`);
        if (start === before) continue;
        await conn.run(`DELETE FROM ${t} WHERE b = ${start}`);
        const cond = `time_utc >= epoch_ms(${start}::BIGINT) AND time_utc < epoch_ms(${start + l}::BIGINT)`;
        await conn.run(`INSERT INTO ${t} ${aggregate(k, l, `main.${raw}`, cond, part)}`);
      }
  for (const c of COUNTED) {
    const start = Math.floor(before / c.lvl) * c.lvl;
    await conn.run(`DELETE FROM main.${countedTable(c, domainId)} WHERE b <= ${start}`);
    await conn.run(`INSERT INTO main.${countedTable(c, domainId)} ${countClients(c, domainId, start, start)}`);
  }
}

/**
 * Rows of the domain's rollup tables that differ from the same aggregate computed again from the raw rows, or
 * repeat a bucket and key (0: the rollups are exact; sums of upstream times within 1e-9 of each other, added in
 * another order). For the tests and for checking a store by hand.
 */
export async function rollupDrift(conn: DuckDBConnection, domainId: number, raw: string): Promise<number> {
  let drift = 0;
  for (const k of ROLLUP_KINDS)
    for (const l of LEVELS[k])
      for (const { t, part } of levelTables(k, domainId, l)) {
        const { keys, measures } = KINDS[k];
        const keyNames = ['b', ...keys.map(([n]) => n)];
        const differs =
          measures
            .map(([n, type]) =>
              type === 'DOUBLE' ? `abs(x.${n} - y.${n}) > 1e-9 * greatest(1, abs(y.${n}))` : `x.${n} <> y.${n}`,
            )
            .join(' OR ') || 'false';
        const r = await conn.runAndReadAll(
          `SELECT (SELECT count(*) FROM ${t} AS x FULL JOIN (${aggregate(k, l, `main.${raw}`, '', part)}) AS y
                   ON ${keyNames.map((n) => `x.${n} = y.${n}`).join(' AND ')}
                 WHERE x.b IS NULL OR y.b IS NULL OR ${differs})
           + (SELECT count(*) - count(DISTINCT (${keyNames.join(', ')})) FROM ${t})`,
        );
        drift += num(r.getRowsJS()[0][0]);
      }
  for (const c of COUNTED) {
    const r = await conn.runAndReadAll(
      `SELECT count(*) FROM main.${countedTable(c, domainId)} AS x FULL JOIN (${countClients(c, domainId)}) AS y
       ON ${countedOn(c)} WHERE x.b IS NULL OR y.b IS NULL OR x.n <> y.n`,
    );
    drift += num(r.getRowsJS()[0][0]);
  }
  return drift;
}

// ---- reads ----

/** SQL and bound values. */
interface Part {
  sql: string;
  values: DuckDBValue[];
}

/**
 * The rows of a kind over `cov` for the domains: the rollup rows of its pieces and the raw rows of its ends in the
 * rollup's columns (b the row's ms), each with the filters (columns of the counts rollup).
 */
function source(
  kind: RollupKind,
  ids: number[],
  cov: Cover,
  range: ReadRange,
  pieceLvl?: (lvl: number) => boolean,
  withDomain = false,
): Part {
  const { keys, measures } = KINDS[kind];
  const f = filters(range);
  const branches: string[] = [];
  const values: DuckDBValue[] = [];
  const names = ['b', ...keys.map(([n]) => n), ...measures.map(([n]) => n)].join(', ');
  // The domain's id as a column (ids are checked integers: rollupTable).
  const dom = (id: number) => (withDomain ? `${id} AS domain_id, ` : '');
  for (const p of cov.pieces) {
    if (pieceLvl && !pieceLvl(p.lvl)) continue;
    for (const id of ids) {
      branches.push(
        `SELECT ${dom(id)}${names} FROM main.${rollupTable(kind, id, p.lvl)} WHERE ${['b >= ? AND b < ?', ...f.parts].join(' AND ')}`,
      );
      values.push(BigInt(p.lo), BigInt(p.hi), ...f.values);
    }
  }
  if (!pieceLvl)
    for (const s of cov.raw)
      for (const id of ids) branches.push(`SELECT ${dom(id)}* FROM (${rawBranch(kind, id, s, f, values)})`);
  return { sql: branches.length ? branches.join(' UNION ALL ') : emptyOf(kind, withDomain), values };
}

function rawBranch(
  kind: RollupKind,
  id: number,
  s: Span,
  f: { parts: string[]; values: DuckDBValue[] },
  values: DuckDBValue[],
): string {
  values.push(tz(new Date(s.lo)), tz(new Date(s.hi)), ...f.values);
  return perRow(kind, `main.d_${id}`, ['time >= ?::TIMESTAMPTZ', 'time < ?::TIMESTAMPTZ', ...f.parts]);
}

function emptyOf(kind: RollupKind, withDomain: boolean): string {
  const { keys, measures } = KINDS[kind];
  return `SELECT ${[...(withDomain ? ['CAST(NULL AS INTEGER) AS domain_id'] : []), 'CAST(NULL AS BIGINT) AS b', ...[...keys, ...measures].map(([n, t]) => `CAST(NULL AS ${t}) AS ${n}`)].join(', ')} WHERE false`;
}

const span = (range: ReadRange): [number, number] => [range.since.getTime(), range.until.getTime()];

/**
 * The `column` of a per-dimension rollup (dimClients, dimUpstream) over `cov`'s whole buckets for the value of the
 * range's one filter (oneCountsFilter), and of the base kind's raw rows of its ends with the filter: the same rows as
 * the base kind's over the raw rows with that filter.
 */
function dimSource(
  kind: 'dimClients' | 'dimUpstream',
  base: 'clients' | 'upstream',
  ids: number[],
  cov: Cover,
  range: ReadRange,
  dim: CountDim,
  columns: string,
): Part {
  const branches: string[] = [];
  const values: DuckDBValue[] = [];
  const v = range.filter[dim];
  for (const p of cov.pieces)
    for (const id of ids) {
      // The filter's value as text the way the row's value was written (CAST AS VARCHAR of the column's type).
      const part = COUNT_DIMS.indexOf(dim);
      // A split kind keeps the column's rows in a table of their own.
      const from = KINDS[kind].split
        ? `main.${rollupTable(kind, id, p.lvl, part)} WHERE b >= ? AND b < ?`
        : `main.${rollupTable(kind, id, p.lvl)} WHERE b >= ? AND b < ? AND dim = ${part}`;
      branches.push(`SELECT ${columns} FROM ${from} AND value = CAST(?::${COUNT_KEY_TYPES[dim]} AS VARCHAR)`);
      values.push(BigInt(p.lo), BigInt(p.hi), typeof v === 'number' || typeof v === 'boolean' ? v : String(v));
    }
  const raw = source(base, ids, { pieces: [], raw: cov.raw }, range);
  branches.push(`SELECT ${columns} FROM (${raw.sql})`);
  values.push(...raw.values);
  return { sql: branches.join(' UNION ALL '), values };
}

/** The rollups of a summary filtered on a column the counts rollup does not keep: an AS number (asnFilter). */
const KEYED = {
  asn: { counts: 'asnCounts', clients: 'asnClients', upstream: 'asnUpstream' },
} as const;

/** The summary's totals from the counts rollup (its columns' filters) or a keyed one's totals (KEYED). */
const TOTALS_SQL = {
  counts: `sum(requests), sum(bytes), sum(requests) FILTER (WHERE ${CACHED}), sum(bytes) FILTER (WHERE ${CACHED}),
    sum(origin_requests), sum(origin_req_bytes), sum(upstream_sum),
    sum(requests) FILTER (WHERE status >= 400 AND status < 500), sum(requests) FILTER (WHERE status >= 500),
    sum(origin_bytes)`,
  keyed: `sum(requests), sum(bytes), sum(cached_requests), sum(cached_bytes), sum(origin_requests),
    sum(origin_req_bytes), sum(upstream_sum), sum(status4xx), sum(status5xx), sum(origin_bytes)`,
} as const;

/**
 * summary from the rollups: no filter; one on a counts column (oneCountsFilter: its distinct clients and percentiles
 * from the per-dimension rollups, the totals from the counts rollup with the filter); several on counts columns
 * (countsFilters: the totals from the counts rollup, the clients and times per combination of the counts columns);
 * or an AS number (asnFilter: the AS number rollups). A summary filtered on a path reads the copy by path
 * (duckdb-path-copy.ts).
 */
export async function rollupSummary(conn: DuckDBConnection, ids: number[], range: ReadRange): Promise<RangeSummary> {
  const [lo, hi] = span(range);
  const dim = oneCountsFilter(range);
  const keyed = asnFilter(range) ? KEYED.asn : null;
  const totals = keyed ? keyed.counts : 'counts';
  const c = source(totals, ids, cover(lo, hi, LEVELS[totals]), range);
  const r = await conn.runAndReadAll(
    `SELECT ${TOTALS_SQL[totals === 'counts' ? 'counts' : 'keyed']} FROM (${c.sql})`,
    c.values,
  );
  const x = r.getRowsJS()[0].map((v) => (v === null ? 0 : num(v)));
  if (x[0] === 0) return EMPTY_SUMMARY;
  const combo = countsFilters(range);
  const v = dim
    ? dimSource('dimClients', 'clients', ids, cover(lo, hi, LEVELS.dimClients), range, dim, 'client_ip')
    : keyed
      ? source(keyed.clients, ids, cover(lo, hi, LEVELS[keyed.clients]), range)
      : combo
        ? source('comboClients', ids, cover(lo, hi, LEVELS.comboClients), range)
        : source('clients', ids, cover(lo, hi, LEVELS.clients), range);
  const visitors = await conn.runAndReadAll(`SELECT count(DISTINCT client_ip) FROM (${v.sql})`, v.values);
  let upstreamMs: RangeSummary['upstreamMs'] = null;
  if (x[4] > 0) {
    const u = dim
      ? dimSource('dimUpstream', 'upstream', ids, cover(lo, hi, LEVELS.dimUpstream), range, dim, 'v, n')
      : keyed
        ? source(keyed.upstream, ids, cover(lo, hi, LEVELS[keyed.upstream]), range)
        : combo
          ? source('comboUpstream', ids, cover(lo, hi, LEVELS.comboUpstream), range)
          : source('upstream', ids, cover(lo, hi, LEVELS.upstream), range);
    const q = await conn.runAndReadAll(
      `WITH h AS (SELECT v, sum(n) AS n FROM (${u.sql}) GROUP BY v),
         c AS (SELECT v, sum(n) OVER (ORDER BY v) AS cum, sum(n) OVER () AS tot FROM h)
       SELECT min(v) FILTER (WHERE cum >= ceil(0.5 * tot)), min(v) FILTER (WHERE cum >= ceil(0.95 * tot)),
         min(v) FILTER (WHERE cum >= ceil(0.99 * tot)) FROM c`,
      u.values,
    );
    const [p50, p95, p99] = q.getRowsJS()[0].map(num);
    upstreamMs = { avg: x[6] / x[4], p50, p95, p99 };
  }
  return {
    requests: x[0],
    bytes: x[1],
    visitors: num(visitors.getRowsJS()[0][0]),
    cachedRequests: x[2],
    cachedBytes: x[3],
    originRequests: x[4],
    originBytes: x[5],
    upstreamMs,
    status4xx: x[7],
    status5xx: x[8],
    originFetchedBytes: x[9],
  };
}

/**
 * series from the rollups (no filter, or filters a set of clients keeps at this interval: rollup.ts seriesClients):
 * requests and bytes per point, distinct clients per point (0 without `withVisitors`).
 */
export async function rollupSeries(
  conn: DuckDBConnection,
  ids: number[],
  range: ReadRange,
  startMs: number,
  intervalMs: number,
  withVisitors = true,
): Promise<{ bucket: number; requests: number; bytes: number; visitors: number }[]> {
  const [lo, hi] = span(range);
  const k = `(b - ${Math.trunc(startMs)}) // ${Math.trunc(intervalMs)}`;
  const kind = seriesClients(range, intervalMs, withVisitors);
  if (!kind) throw new Error('rollupSeries: no rollup holds the clients under these filters');
  const totals = kind === 'asnClients' || (kind === 'none' && asnFilter(range)) ? 'asnCounts' : 'counts';
  const c = source(totals, ids, cover(lo, hi, levelsFor(totals, intervalMs)), range);
  const counts = await conn.runAndReadAll(
    `SELECT ${k} AS k, sum(requests), sum(bytes) FROM (${c.sql}) GROUP BY k ORDER BY k`,
    c.values,
  );
  if (kind === 'none')
    return counts.getRowsJS().map((x) => ({ bucket: num(x[0]), requests: num(x[1]), bytes: num(x[2]), visitors: 0 }));
  const vc = cover(lo, hi, levelsFor(kind, intervalMs));
  const visitors = new Map<number, number>();
  // Points that are one bucket of a level whose clients are counted (COUNTED: one domain) read that count.
  const counted = ids.length === 1 ? COUNTED.find((c) => c.kind === kind && c.lvl === intervalMs) : undefined;
  // Else a point that is one bucket of a set of clients: its rows are its distinct clients (one domain; of the AS
  // number clients, those of the filter's AS number; of the status clients, those of the filter's status). Not of the
  // fingerprints, a set of address and fingerprint.
  const whole =
    ids.length === 1 && (counted || kind === 'clients' || kind === 'asnClients' || kind === 'statusClients')
      ? (l: number) => l === intervalMs
      : () => false;
  const f = filters(range);
  const w = counted
    ? {
        // The filter (of the fingerprints: the bot class) is a column of the counts.
        sql: `SELECT ${k} AS k, n FROM main.${countedTable(counted, ids[0])}
              WHERE (${
                vc.pieces
                  .filter((p) => whole(p.lvl))
                  .map(() => '(b >= ? AND b < ?)')
                  .join(' OR ') || 'false'
              })${f.parts.map((x) => ` AND ${x}`).join('')}`,
        values: [...vc.pieces.filter((p) => whole(p.lvl)).flatMap((p) => [BigInt(p.lo), BigInt(p.hi)]), ...f.values],
      }
    : (({ sql, values }) => ({ sql: `SELECT ${k} AS k, count(*) FROM (${sql}) GROUP BY k`, values }))(
        source(kind, ids, vc, range, whole),
      );
  const restCover = { pieces: vc.pieces.filter((p) => !whole(p.lvl)), raw: vc.raw };
  // One counts column's filter: that value's clients per hour (dimClients, and the clients' raw rows of the ends).
  const dim = oneCountsFilter(range);
  const rest =
    kind === 'dimClients' && dim
      ? dimSource('dimClients', 'clients', ids, restCover, range, dim, 'b, client_ip')
      : source(kind, ids, restCover, range);
  const r = await conn.runAndReadAll(
    `${w.sql} UNION ALL SELECT ${k} AS k, count(DISTINCT client_ip) FROM (${rest.sql}) GROUP BY k`,
    [...w.values, ...rest.values],
  );
  for (const [b, n] of r.getRowsJS()) visitors.set(num(b), (visitors.get(num(b)) ?? 0) + num(n));
  return counts.getRowsJS().map((x) => ({
    bucket: num(x[0]),
    requests: num(x[1]),
    bytes: num(x[2]),
    visitors: visitors.get(num(x[0])) ?? 0,
  }));
}

/** peak from the per-second rollup (no filter). */
export async function rollupPeak(conn: DuckDBConnection, ids: number[], range: ReadRange): Promise<Peak> {
  const [lo, hi] = span(range);
  const s = source('seconds', ids, cover(lo, hi, LEVELS.seconds), range);
  const r = await conn.runAndReadAll(
    `SELECT b // 1000 AS s, sum(n) AS n FROM (${s.sql}) GROUP BY s ORDER BY n DESC, s LIMIT 1`,
    s.values,
  );
  const x = r.getRowsJS()[0];
  return x ? { time: new Date(num(x[0]) * 1000), requests: num(x[1]) } : null;
}

/** breakdown from a rollup: `kind` keeps the column (and the filters). */
export async function rollupBreakdown(
  conn: DuckDBConnection,
  kind: NonNullable<ReturnType<typeof breakdownRollup>>,
  ids: number[],
  range: ReadRange,
  column: string,
  limit: number,
): Promise<BreakdownItem[]> {
  const [lo, hi] = span(range);
  const s = source(kind, ids, cover(lo, hi, LEVELS[kind]), range);
  const col = DIMENSION_SQL[column as keyof typeof DIMENSION_SQL];
  // The AS numbers' label, as over the raw rows: the largest AS organisation of their rows.
  const labelled = kind === 'asnOrgs';
  const r = await conn.runAndReadAll(
    `SELECT ${col} AS v, sum(requests) AS requests, sum(bytes) AS bytes, sum(origin_bytes) AS origin_bytes
       ${labelled ? ', max(as_org) AS label' : ''}
     FROM (${s.sql}) GROUP BY v ORDER BY requests DESC, v LIMIT ?::BIGINT`,
    [...s.values, BigInt(limit)],
  );
  return r.getRowsJS().map((x) => breakdownItem(x, labelled));
}

/**
 * The top paths under one filter on a counts column, from the per-path values rollup (rollup.ts pathValuesBreakdown):
 * its column's rows of the filter's value. The ends of the range shorter than an hour read the paths kind's raw rows
 * with the filter.
 */
export async function rollupPathValues(
  conn: DuckDBConnection,
  ids: number[],
  range: ReadRange,
  limit: number,
): Promise<BreakdownItem[]> {
  const [lo, hi] = span(range);
  const cov = cover(lo, hi, LEVELS.pathValues);
  const dim = oneCountsFilter(range);
  if (!dim) throw new Error('rollupPathValues: the top paths need one filter on a counts column');
  const v = range.filter[dim];
  const branches: string[] = [];
  const values: DuckDBValue[] = [];
  for (const p of cov.pieces)
    for (const id of ids) {
      branches.push(
        `SELECT path AS v, requests, bytes, origin_bytes FROM main.${rollupTable('pathValues', id, p.lvl)}
         WHERE b >= ? AND b < ? AND dim = ${COUNT_DIMS.indexOf(dim)}
           AND value = CAST(?::${COUNT_KEY_TYPES[dim]} AS VARCHAR)`,
      );
      values.push(BigInt(p.lo), BigInt(p.hi), typeof v === 'number' || typeof v === 'boolean' ? v : String(v));
    }
  const raw = source('paths', ids, { pieces: [], raw: cov.raw }, range);
  branches.push(`SELECT path AS v, requests, bytes, origin_bytes FROM (${raw.sql})`);
  values.push(...raw.values);
  const r = await conn.runAndReadAll(
    `SELECT v, sum(requests) AS requests, sum(bytes) AS bytes, sum(origin_bytes) AS origin_bytes
     FROM (${branches.join(' UNION ALL ')}) GROUP BY v ORDER BY requests DESC, v LIMIT ?::BIGINT`,
    [...values, BigInt(limit)],
  );
  return r.getRowsJS().map((x) => breakdownItem(x));
}

/** traffic from the counts rollup (filters on its columns). */
export async function rollupTraffic(
  conn: DuckDBConnection,
  ids: number[],
  range: ReadRange,
  startMs: number,
  intervalMs: number,
): Promise<TrafficBucket[]> {
  const [lo, hi] = span(range);
  const s = source('counts', ids, cover(lo, hi, levelsFor('counts', intervalMs)), range);
  const r = await conn.runAndReadAll(
    `SELECT (b - ${Math.trunc(startMs)}) // ${Math.trunc(intervalMs)} AS k, sum(requests), sum(bytes),
       coalesce(sum(requests) FILTER (WHERE NOT refused), 0), coalesce(sum(bytes) FILTER (WHERE NOT refused), 0),
       sum(origin_requests), sum(origin_req_bytes), coalesce(sum(bytes) FILTER (WHERE ${CACHED}), 0), sum(origin_bytes)
     FROM (${s.sql}) GROUP BY k ORDER BY k`,
    s.values,
  );
  return r.getRowsJS().map(trafficBucket);
}

/** seriesBy from the counts rollup (a column it keeps or the domain, filters on its columns: seriesByRollup). */
export async function rollupSeriesBy(
  conn: DuckDBConnection,
  ids: number[],
  range: ReadRange,
  startMs: number,
  intervalMs: number,
  dim: GroupDimension,
  values: (string | number)[],
): Promise<ValueBucket[]> {
  if (values.length === 0) return [];
  const [lo, hi] = span(range);
  const s = source(
    'counts',
    ids,
    cover(lo, hi, levelsFor('counts', intervalMs)),
    range,
    undefined,
    dim === 'domain_id',
  );
  const v = valueIn(dim, values);
  const r = await conn.runAndReadAll(
    `SELECT (b - ${Math.trunc(startMs)}) // ${Math.trunc(intervalMs)} AS k, ${v.col} AS v, sum(requests), sum(bytes)
     FROM (${s.sql}) WHERE ${v.sql} GROUP BY k, v ORDER BY k, v`,
    [...s.values, ...v.values],
  );
  return r.getRowsJS().map(valueBucket);
}

/** ruleHits from the rules rollup (no filter). */
export async function rollupRuleHits(
  conn: DuckDBConnection,
  ids: number[],
  range: ReadRange,
  limit: number,
): Promise<RuleHits[]> {
  const [lo, hi] = span(range);
  const s = source('rules', ids, cover(lo, hi, LEVELS.rules), range);
  const r = await conn.runAndReadAll(
    `SELECT rule_id, rule_type, sum(hits) AS n, sum(dry) FROM (${s.sql})
     GROUP BY rule_id, rule_type ORDER BY n DESC, rule_id, rule_type LIMIT ?::BIGINT`,
    [...s.values, BigInt(limit)],
  );
  return r.getRowsJS().map((x) => ({ ruleId: num(x[0]), ruleType: String(x[1]), hits: num(x[2]), dryRun: num(x[3]) }));
}

/** wafActions from the waf rollup (no filter): findings per action, and the requests with one (counted once each). */
export async function rollupWafActions(
  conn: DuckDBConnection,
  ids: number[],
  range: ReadRange,
): Promise<ActionCount[]> {
  const [lo, hi] = span(range);
  const s = source('waf', ids, cover(lo, hi, LEVELS.waf), range);
  const r = await conn.runAndReadAll(
    `SELECT action, sum(events) AS n, sum(requests) FROM (${s.sql}) GROUP BY action ORDER BY n DESC, action LIMIT 100`,
    s.values,
  );
  return r.getRowsJS().map((x) => ({ action: String(x[0]), events: num(x[1]), requests: num(x[2]) }));
}

/** proxyClients from the fingerprints rollup (no filter): distinct fingerprints, domains, bot classes per address. */
export async function rollupProxyClients(
  conn: DuckDBConnection,
  ids: number[],
  range: ReadRange,
  minRequests: number,
  minFingerprints: number,
  limit: number,
): Promise<ProxyClient[]> {
  const [lo, hi] = span(range);
  const s = source('fingerprints', ids, cover(lo, hi, LEVELS.fingerprints), range, undefined, true);
  return proxyClientsOf(conn, s.sql, s.values, minRequests, minFingerprints, limit);
}

/**
 * The group column `dim` (one counts column, or the status class) of each client of the per-dimension clients over
 * `cov`'s whole buckets (that column's table: its values as text cast back to the column's type), and of the
 * combination clients' raw rows of its ends, as g0 and client_ip (groupsClients 'dimClients': no filter).
 */
function dimGroups(ids: number[], cov: Cover, range: ReadRange, dim: GroupDimension): Part {
  const d = groupColumnDim(dim);
  const typed = `CAST(value AS ${COUNT_KEY_TYPES[d]})`;
  const g = dim === 'status_class' ? `${typed} // 100` : typed;
  const branches: string[] = [];
  const values: DuckDBValue[] = [];
  for (const p of cov.pieces)
    for (const id of ids) {
      branches.push(
        `SELECT ${g} AS g0, client_ip FROM main.${rollupTable('dimClients', id, p.lvl, COUNT_DIMS.indexOf(d))}
         WHERE b >= ? AND b < ?`,
      );
      values.push(BigInt(p.lo), BigInt(p.hi));
    }
  const raw = source('comboClients', ids, { pieces: [], raw: cov.raw }, range);
  branches.push(`SELECT ${GROUP_SQL[dim]} AS g0, client_ip FROM (${raw.sql})`);
  values.push(...raw.values);
  return { sql: branches.join(' UNION ALL '), values };
}

/** A value bound for comparison with a group column: text, a whole number or a truth value. */
const bindAs = (v: unknown): [string, DuckDBValue] =>
  typeof v === 'string'
    ? ['?::VARCHAR', v]
    : typeof v === 'boolean'
      ? ['?::BOOLEAN', v]
      : ['?::BIGINT', typeof v === 'bigint' ? v : BigInt(Number(v))];
const groupKey = (row: unknown[], n: number): string => row.slice(0, n).map(String).join('\u0000');

/**
 * groups from a rollup (rollup.ts groupsRollup): the groups with the most requests ranked from its buckets (requests
 * and bytes are sums), then the distinct clients of those groups only, with the raw rows of the range's ends: from the
 * clients per host and path of each hour (pathClients) for the paths, from groupsClients' sets for the counts.
 */
export async function rollupGroups(
  conn: DuckDBConnection,
  kind: 'paths' | 'counts',
  ids: number[],
  range: ReadRange,
  dims: GroupDimension[],
  limit: number,
): Promise<GroupItem[]> {
  const [lo, hi] = span(range);
  const s = source(kind, ids, cover(lo, hi, LEVELS[kind]), range, undefined, dims.includes('domain_id'));
  const cols = dims.map((d, i) => `${GROUP_SQL[d]} AS g${i}`).join(', ');
  const keys = dims.map((_, i) => `g${i}`).join(', ');
  const top = (
    await conn.runAndReadAll(
      `SELECT ${cols}, sum(requests) AS requests, coalesce(sum(bytes), 0) AS bytes FROM (${s.sql})
       GROUP BY ${keys} ORDER BY requests DESC, ${keys} LIMIT ?::BIGINT`,
      [...s.values, BigInt(limit)],
    )
  ).getRowsJS();
  if (top.length === 0) return [];
  // Each column to the values of the ranked groups (a superset of their combinations; others are left out below).
  const inParts: string[] = [];
  const inValues: DuckDBValue[] = [];
  dims.forEach((_, i) => {
    const seen = new Map<string, [string, DuckDBValue]>();
    for (const row of top) seen.set(String(row[i]), bindAs(row[i]));
    inParts.push(`g${i} IN (${[...seen.values()].map(([p]) => p).join(', ')})`);
    inValues.push(...[...seen.values()].map(([, v]) => v));
  });
  const sets = kind === 'paths' ? 'pathClients' : groupsClients(dims, range);
  const c =
    sets === 'dimClients'
      ? dimGroups(ids, cover(lo, hi, LEVELS.dimClients), range, dims[0])
      : (({ sql, values }) => ({ sql: `SELECT ${cols}, client_ip FROM (${sql})`, values }))(
          source(sets, ids, cover(lo, hi, LEVELS[sets]), range, undefined, dims.includes('domain_id')),
        );
  const v = await conn.runAndReadAll(
    `SELECT ${keys}, count(DISTINCT client_ip) FROM (${c.sql}) WHERE ${inParts.join(' AND ')} GROUP BY ${keys}`,
    [...c.values, ...inValues],
  );
  const visitors = new Map(v.getRowsJS().map((row) => [groupKey(row, dims.length), num(row[dims.length])]));
  return top.map((row) => ({
    values: dims.map((_, i) => groupValue(row[i])),
    requests: num(row[dims.length]),
    bytes: num(row[dims.length + 1]),
    visitors: visitors.get(groupKey(row, dims.length)) ?? 0,
  }));
}
