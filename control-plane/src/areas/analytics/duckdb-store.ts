// The embedded analytics store: one DuckDB file (DATA_DIR/analytics.duckdb), one table per domain (d_<domain id>).
// Writes (appends, deletes, drops) go through one connection, one at a time; each query gets its own connection with
// a temporary view `logs` over the caller's domains' tables, after the sandbox (sandbox.ts) accepted its statement
// tree. The instance runs with external access disabled (no files, no network, no ATTACH/COPY/INSTALL), extensions
// never loaded or installed on their own, a memory limit and a thread cap, then its configuration locked.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  DuckDBInstance,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
  StatementType,
  type DuckDBConnection,
  type DuckDBAppender,
} from '@duckdb/node-api';
import {
  readBreakdown,
  readLogs,
  readPeak,
  readRuleHits,
  readSeries,
  readSummary,
  readWafActions,
} from './duckdb-reads.js';
import { readGroups, readProxyClients, readSeriesBy, readTraffic } from './duckdb-account-reads.js';
import {
  addToRollups,
  createRollups,
  fillRollups,
  legacyTables,
  rollupBreakdown,
  rollupPathValues,
  rollupGroups,
  rollupDrift,
  missingKinds,
  rollupProxyClients,
  rollupRuleHits,
  rollupWafActions,
  rollupPeak,
  rollupSeries,
  rollupSeriesBy,
  rollupSummary,
  rollupTables,
  rollupTraffic,
  trimRollups,
} from './duckdb-rollups.js';
import {
  addToPathCopy,
  createPathCopy,
  fillPathCopy,
  hasPathCopy,
  pathCopyDrift,
  pathTable,
  pathTables,
  shardOf,
  trimPathCopy,
} from './duckdb-path-copy.js';
import {
  breakdownRollup,
  byPath,
  pathValuesBreakdown,
  countsFilter,
  seriesByRollup,
  groupsRollup,
  newestFirst,
  noFilter,
  seriesClients,
  summaryFromRollups,
} from './rollup.js';
import { MAX_ACCOUNT_DOMAINS } from './account-reads.js';
import { EMPTY_SUMMARY } from './reads.js';
import { checkParsedQuery, QueryRefused } from './sandbox.js';
import {
  APPLIED_BATCHES_KEEP_MS,
  LATER_COLUMNS,
  LATER_DEFAULTS,
  LOG_COLUMNS,
  type AppliedBatch,
  QueryFailed,
  StoreUnavailable,
  type AnalyticsStore,
  type LogRow,
  type QueryColumn,
  type QueryDomain,
  type QueryLimits,
  type QueryResult,
} from './store.js';

export interface DuckDbOptions {
  /** Directory of analytics.duckdb and its spill directory. */
  dir: string;
  memoryLimitMb: number;
  threads: number;
  /**
   * Called with the text of each statement a read runs (the bench prints which tables each read took: rollups, the
   * raw rows or the copy by path). Of the first store to open the file.
   */
  onRead?: (sql: string) => void;
}

/** Characters of answer text at most (rows beyond are cut and `truncated` set). */
const MAX_ANSWER_CHARS = 8 * 1024 * 1024;

/**
 * The later columns (store.ts LATER_COLUMNS) with the default a row of an older file gets: at start, each table
 * lacking one gets it (ALTER TABLE ... ADD COLUMN), so older files keep every row. DuckDB adds a column without NOT
 * NULL; the appender always writes a value.
 */
const LATER_STORED: [string, string, string][] = LATER_COLUMNS.map(([name, type]) => [
  name,
  type,
  type === 'VARCHAR' ? "''" : type === 'BOOLEAN' ? 'false' : '0',
]);

const STORED_COLUMNS = `time TIMESTAMPTZ NOT NULL, time_utc TIMESTAMP NOT NULL, domain_id INTEGER NOT NULL, owner_id INTEGER NOT NULL,
  node VARCHAR NOT NULL, host VARCHAR NOT NULL, path VARCHAR NOT NULL, method VARCHAR NOT NULL,
  status INTEGER NOT NULL, bytes BIGINT NOT NULL, cache_status VARCHAR NOT NULL, rule_hits JSON NOT NULL,
  waf_events JSON NOT NULL, duration_ms DOUBLE NOT NULL, upstream_ms DOUBLE NOT NULL, client_ip VARCHAR NOT NULL,
  fingerprint VARCHAR NOT NULL, bot_score INTEGER NOT NULL, bot_class VARCHAR NOT NULL,
  ${LATER_STORED.map(([name, type, dflt]) => `${name} ${type} DEFAULT ${dflt}`).join(', ')}`;

const table = (domainId: number): string => {
  if (!Number.isSafeInteger(domainId) || domainId < 0) throw new Error(`bad domain id ${domainId}`);
  return `d_${domainId}`;
};
const sqlString = (s: string): string => `'${s.replace(/'/g, "''")}'`;

/** The view's SELECT for one domain's table: the columns of LOG_COLUMNS in order (domain name as a constant). */
function viewBranch(d: QueryDomain): string {
  const cols = LOG_COLUMNS.map(([name]) => (name === 'domain' ? `${sqlString(d.name)} AS domain` : name));
  return `SELECT ${cols.join(', ')} FROM main.${table(d.id)}`;
}
/** `logs` with no table behind it: the same columns, no rows. */
const EMPTY_VIEW = `SELECT ${LOG_COLUMNS.map(([name, type]) => `CAST(NULL AS ${type}) AS ${name}`).join(', ')} WHERE false`;

/** One DuckDB instance per file in this process (two apps on one DATA_DIR share it), counted by its users. */
const open = new Map<string, { store: Promise<DuckDbEngine> | null; users: number }>();

export function openDuckDbStore(opts: DuckDbOptions): AnalyticsStore {
  const path = join(opts.dir, 'analytics.duckdb');
  let entry = open.get(path);
  if (!entry) {
    entry = { store: null, users: 0 };
    open.set(path, entry);
  }
  entry.users++;
  const shared = entry;
  let closed = false;
  // Opened at first use; a failed open (the file held by another process) is tried again at the next use.
  const engine = async (): Promise<DuckDbEngine> => {
    if (closed) throw new StoreUnavailable('analytics store closed');
    const opening = (shared.store ??= DuckDbEngine.create(path, opts).catch((err: unknown) => {
      shared.store = null;
      throw err;
    }));
    try {
      return await opening;
    } catch (err) {
      throw new StoreUnavailable(`analytics store unavailable: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  return {
    append: async (rows, batch) => (await engine()).append(rows, batch),
    query: async (sql, domains, limits) => (await engine()).query(sql, domains, limits),
    check: async (sql, domains, timeoutMs) => (await engine()).check(sql, domains, timeoutMs),
    deleteDomain: async (id) => (await engine()).deleteDomain(id),
    deleteBefore: async (id, before) => (await engine()).deleteBefore(id, before),
    domainIds: async () => (await engine()).domainIds(),
    countRows: async (id) => (await engine()).countRows(id),
    // Reads the rollups answer (duckdb-rollups.ts: no filter, or filters on the counts rollup's columns) read them;
    // the others read the raw rows, and the raw logs newest window first (rollup.ts newestFirst).
    // A read filtered on a path reads that path's table of the domain's copy by path (duckdb-path-copy.ts).
    series: async (id, range, startMs, intervalMs, timeoutMs, visitors = true) =>
      seriesClients(range, intervalMs, visitors)
        ? (await engine()).readRollups([id], timeoutMs, [], (c, ids) =>
            rollupSeries(c, ids, range, startMs, intervalMs, visitors),
          )
        : (await engine()).read(
            id,
            timeoutMs,
            [],
            (c, t) => readSeries(c, t, range, startMs, intervalMs, visitors),
            byPath(range),
          ),
    summary: async (id, range, timeoutMs) =>
      summaryFromRollups(range)
        ? (await engine()).readRollups([id], timeoutMs, EMPTY_SUMMARY, (c, ids) => rollupSummary(c, ids, range))
        : (await engine()).read(id, timeoutMs, EMPTY_SUMMARY, (c, t) => readSummary(c, t, range), byPath(range)),
    ruleHits: async (id, range, limit, timeoutMs) =>
      noFilter(range)
        ? (await engine()).readRollups([id], timeoutMs, [], (c, ids) => rollupRuleHits(c, ids, range, limit))
        : (await engine()).read(id, timeoutMs, [], (c, t) => readRuleHits(c, t, range, limit)),
    wafActions: async (id, range, timeoutMs) =>
      noFilter(range)
        ? (await engine()).readRollups([id], timeoutMs, [], (c, ids) => rollupWafActions(c, ids, range))
        : (await engine()).read(id, timeoutMs, [], (c, t) => readWafActions(c, t, range)),
    peak: async (id, range, timeoutMs) =>
      noFilter(range)
        ? (await engine()).readRollups([id], timeoutMs, null, (c, ids) => rollupPeak(c, ids, range))
        : (await engine()).read(id, timeoutMs, null, (c, t) => readPeak(c, t, range), byPath(range)),
    breakdown: async (id, range, dimension, limit, timeoutMs) => {
      const e = await engine();
      const kind = breakdownRollup(dimension, range);
      return kind
        ? e.readRollups([id], timeoutMs, [], (c, ids) => rollupBreakdown(c, kind, ids, range, dimension, limit))
        : pathValuesBreakdown(dimension, range)
          ? e.readRollups([id], timeoutMs, [], (c, ids) => rollupPathValues(c, ids, range, limit))
          : e.read(id, timeoutMs, [], (c, t) => readBreakdown(c, t, range, dimension, limit), byPath(range));
    },
    logs: async (id, range, limit, cursor, timeoutMs) => {
      const e = await engine();
      return newestFirst(range, cursor, timeoutMs, (w, left) =>
        e.read(id, left, { logs: [], next: null }, (c, t) => readLogs(c, t, w, limit, cursor)),
      );
    },
    accountSummary: async (ids, range, timeoutMs) =>
      summaryFromRollups(range)
        ? (await engine()).readRollups(ids, timeoutMs, EMPTY_SUMMARY, (c, own) => rollupSummary(c, own, range))
        : (await engine()).readView(
            ids,
            false,
            timeoutMs,
            EMPTY_SUMMARY,
            (c, v) => readSummary(c, v, range),
            byPath(range),
          ),
    accountSeries: async (ids, range, startMs, intervalMs, timeoutMs, visitors = true) =>
      seriesClients(range, intervalMs, visitors)
        ? (await engine()).readRollups(ids, timeoutMs, [], (c, own) =>
            rollupSeries(c, own, range, startMs, intervalMs, visitors),
          )
        : (await engine()).readView(
            ids,
            false,
            timeoutMs,
            [],
            (c, v) => readSeries(c, v, range, startMs, intervalMs, visitors),
            byPath(range),
          ),
    accountPeak: async (ids, range, timeoutMs) =>
      noFilter(range)
        ? (await engine()).readRollups(ids, timeoutMs, null, (c, own) => rollupPeak(c, own, range))
        : (await engine()).readView(ids, false, timeoutMs, null, (c, v) => readPeak(c, v, range), byPath(range)),
    groups: async (ids, range, dims, limit, timeoutMs) => {
      const kind = groupsRollup(dims, range);
      return kind
        ? (await engine()).readRollups(ids, timeoutMs, [], (c, own) => rollupGroups(c, kind, own, range, dims, limit))
        : (await engine()).readView(ids, false, timeoutMs, [], (c, v) => readGroups(c, v, range, dims, limit));
    },
    traffic: async (ids, range, startMs, intervalMs, timeoutMs) =>
      countsFilter(range)
        ? (await engine()).readRollups(ids, timeoutMs, [], (c, own) =>
            rollupTraffic(c, own, range, startMs, intervalMs),
          )
        : (await engine()).readView(ids, false, timeoutMs, [], (c, v) => readTraffic(c, v, range, startMs, intervalMs)),
    proxyClients: async (ids, range, minRequests, minFingerprints, limit, timeoutMs) =>
      noFilter(range)
        ? (await engine()).readRollups(ids, timeoutMs, [], (c, own) =>
            rollupProxyClients(c, own, range, minRequests, minFingerprints, limit),
          )
        : (await engine()).readView(ids, false, timeoutMs, [], (c, v) =>
            readProxyClients(c, v, range, minRequests, minFingerprints, limit),
          ),
    seriesBy: async (ids, range, startMs, intervalMs, dim, values, timeoutMs) =>
      seriesByRollup(dim, range)
        ? (await engine()).readRollups(ids, timeoutMs, [], (c, own) =>
            rollupSeriesBy(c, own, range, startMs, intervalMs, dim, values),
          )
        : (await engine()).readView(ids, false, timeoutMs, [], (c, v) =>
            readSeriesBy(c, v, range, startMs, intervalMs, dim, values),
          ),
    wafLogs: async (id, range, limit, cursor, timeoutMs) => {
      const e = await engine();
      return newestFirst(range, cursor, timeoutMs, (w, left) =>
        e.readView([id], true, left, { logs: [], next: null }, (c, v) => readLogs(c, v, w, limit, cursor)),
      );
    },
    rollupDrift: async (id) => (await engine()).rollupDrift(id),
    async close() {
      if (closed) return;
      closed = true;
      if (--shared.users > 0) return;
      open.delete(path);
      await (await shared.store?.catch(() => null))?.close();
    },
  };
}

class DuckDbEngine {
  /** Writes one at a time, in order. */
  private writes: Promise<unknown> = Promise.resolve();
  /** Domains deleted in this process: rows still in flight for them are not stored (ids are never reused). */
  private readonly deleted = new Set<number>();
  /** When applied_batches was last pruned. */
  private prunedAt = 0;

  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly writer: DuckDBConnection,
    private readonly tables: Set<number>,
    private readonly functions: ReadonlySet<string>,
    private readonly onRead?: (sql: string) => void,
  ) {}

  /** A read's connection; with onRead, each statement's text is passed to it first. */
  private async readConnection(): Promise<DuckDBConnection> {
    const conn = await this.instance.connect();
    const seen = this.onRead;
    if (!seen) return conn;
    const run = conn.run.bind(conn);
    const runAndReadAll = conn.runAndReadAll.bind(conn);
    conn.run = (sql, ...rest) => (seen(sql), run(sql, ...rest));
    conn.runAndReadAll = (sql, ...rest) => (seen(sql), runAndReadAll(sql, ...rest));
    return conn;
  }

  static async create(path: string, opts: DuckDbOptions): Promise<DuckDbEngine> {
    mkdirSync(opts.dir, { recursive: true });
    const spill = join(opts.dir, 'analytics.tmp');
    const instance = await DuckDBInstance.create(path, {
      autoload_known_extensions: 'false',
      autoinstall_known_extensions: 'false',
    });
    const writer = await instance.connect();
    try {
      // The spill directory first: once external access is off, no path can be set any more.
      await writer.run(`SET temp_directory = ${sqlString(spill)}`);
      await writer.run(`SET enable_external_access = false`);
      await writer.run(`SET allow_community_extensions = false`);
      await writer.run(`SET memory_limit = '${Math.max(64, Math.floor(opts.memoryLimitMb))}MB'`);
      await writer.run(`SET threads = ${Math.max(1, Math.floor(opts.threads))}`);
      // Days and hours of date_trunc on `time` are UTC's, whatever the machine's zone.
      await writer.run(`SET TimeZone = 'UTC'`);
      // Each batch updates rollup rows in place; checkpointing at DuckDB's default WAL size (16 MB) rewrote them
      // every few batches and took two thirds of the ingest time (bench/RESULTS.md, analytics rollups).
      await writer.run(`SET checkpoint_threshold = '128MB'`);
      await writer.run(`SET lock_configuration = true`);
      // The request-log batches whose rows are stored (append with a batch id); not a d_ table, so no query sees it.
      await writer.run(`CREATE TABLE IF NOT EXISTS main.applied_batches
        (node VARCHAR NOT NULL, batch VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL, PRIMARY KEY (node, batch))`);
      const names = await writer.runAndReadAll(
        `SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' AND regexp_full_match(table_name, 'd_[0-9]+')`,
      );
      const tables = new Set(names.getRowsJS().map((r) => Number(String(r[0]).slice(2))));
      await addLaterColumns(writer);
      // Where a batch's rows wait, in its transaction, to be added to their domain's table and rollups.
      await writer.run(`CREATE TEMP TABLE ingest_stage (${STORED_COLUMNS})`);
      await backfillRollups(writer, tables);
      const fns = await writer.runAndReadAll(
        `SELECT DISTINCT lower(function_name) FROM duckdb_functions()
         WHERE schema_name = 'main' AND function_type IN ('scalar', 'aggregate', 'macro')`,
      );
      const functions = new Set(fns.getRowsJS().map((r) => String(r[0])));
      return new DuckDbEngine(instance, writer, tables, functions, opts.onRead);
    } catch (err) {
      writer.closeSync();
      instance.closeSync();
      throw err;
    }
  }

  private write<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.writes.then(fn, fn);
    this.writes = next.catch(() => undefined);
    return next;
  }

  append(rows: LogRow[], batch?: AppliedBatch): Promise<boolean> {
    const byDomain = new Map<number, LogRow[]>();
    for (const r of rows) {
      if (this.deleted.has(r.domainId)) continue;
      const list = byDomain.get(r.domainId);
      if (list) list.push(r);
      else byDomain.set(r.domainId, [r]);
    }
    if (byDomain.size === 0) return Promise.resolve(true);
    return this.write(async () => {
      // With a batch id: the id and the rows in one transaction, so a crash leaves both or neither, and a batch sent
      // again (its acknowledgement lost) finds its id and adds nothing.
      await this.writer.run('BEGIN TRANSACTION');
      const created: number[] = [];
      try {
        if (batch) {
          const seen = await this.writer.runAndReadAll(
            `SELECT 1 FROM main.applied_batches WHERE node = $1 AND batch = $2`,
            [batch.node, batch.id],
          );
          if (seen.currentRowCount > 0) {
            await this.writer.run('ROLLBACK');
            return false;
          }
          await this.writer.run(`INSERT INTO main.applied_batches VALUES ($1, $2, now()::TIMESTAMP)`, [
            batch.node,
            batch.id,
          ]);
        }
        for (const [domainId, list] of byDomain) {
          if (this.deleted.has(domainId)) continue;
          if (!this.tables.has(domainId)) {
            await this.writer.run(`CREATE TABLE IF NOT EXISTS main.${table(domainId)} (${STORED_COLUMNS})`);
            await createRollups(this.writer, domainId);
            await createPathCopy(this.writer, domainId, table(domainId));
            created.push(domainId);
          }
          // The rows, then their rollups (duckdb-rollups.ts), from the stage: in the batch's transaction (one is
          // opened here without a batch id), so the rollups always hold exactly the stored rows.
          const appender = await this.writer.createAppender('ingest_stage', 'main', 'temp');
          let lo = Infinity;
          let hi = -Infinity;
          try {
            for (const r of list) {
              appendRow(appender, r);
              lo = Math.min(lo, r.time.getTime());
              hi = Math.max(hi, r.time.getTime());
            }
            appender.flushSync();
          } finally {
            appender.closeSync();
          }
          await this.writer.run(`INSERT INTO main.${table(domainId)} BY NAME SELECT * FROM temp.main.ingest_stage`);
          await addToRollups(this.writer, domainId, 'temp.main.ingest_stage', lo, hi);
          await addToPathCopy(this.writer, domainId, 'temp.main.ingest_stage');
          await this.writer.run('DELETE FROM temp.main.ingest_stage');
        }
        await this.writer.run('COMMIT');
      } catch (err) {
        await this.writer.run('ROLLBACK').catch(() => undefined);
        await this.writer.run('DELETE FROM temp.main.ingest_stage').catch(() => undefined);
        throw err;
      }
      for (const id of created) this.tables.add(id);
      if (batch && Date.now() - this.prunedAt > 3600_000) {
        this.prunedAt = Date.now();
        await this.writer.run(
          `DELETE FROM main.applied_batches WHERE applied_at < now()::TIMESTAMP - to_milliseconds($1)`,
          [APPLIED_BATCHES_KEEP_MS],
        );
      }
      return true;
    });
  }

  deleteDomain(domainId: number): Promise<void> {
    this.deleted.add(domainId);
    return this.write(async () => {
      await this.writer.run('BEGIN TRANSACTION');
      try {
        await this.writer.run(`DROP TABLE IF EXISTS main.${table(domainId)}`);
        for (const t of [...rollupTables(domainId), ...legacyTables(domainId), ...pathTables(domainId)])
          await this.writer.run(`DROP TABLE IF EXISTS main.${t}`);
        await this.writer.run('COMMIT');
      } catch (err) {
        await this.writer.run('ROLLBACK').catch(() => undefined);
        throw err;
      }
      this.tables.delete(domainId);
    });
  }

  deleteBefore(domainId: number, before: Date): Promise<number> {
    if (!this.tables.has(domainId)) return Promise.resolve(0);
    return this.write(async () => {
      if (!this.tables.has(domainId)) return 0;
      await this.writer.run('BEGIN TRANSACTION');
      try {
        const res = await this.writer.run(`DELETE FROM main.${table(domainId)} WHERE time < $1`, [
          new DuckDBTimestampTZValue(BigInt(before.getTime()) * 1000n),
        ]);
        if (res.rowsChanged > 0) {
          await trimRollups(this.writer, domainId, table(domainId), before.getTime());
          await trimPathCopy(this.writer, domainId, before.getTime());
        }
        await this.writer.run('COMMIT');
        return res.rowsChanged;
      } catch (err) {
        await this.writer.run('ROLLBACK').catch(() => undefined);
        throw err;
      }
    });
  }

  domainIds(): Promise<number[]> {
    return Promise.resolve([...this.tables].sort((a, b) => a - b));
  }

  async countRows(domainId: number): Promise<number> {
    if (!this.tables.has(domainId)) return 0;
    const conn = await this.instance.connect();
    try {
      const r = await conn.runAndReadAll(`SELECT count(*) FROM main.${table(domainId)}`);
      return Number(r.getRowsJS()[0][0]);
    } finally {
      conn.closeSync();
    }
  }

  /** Rollup rows that differ from the rollups computed again from the domain's rows (duckdb-rollups.ts). */
  async rollupDrift(domainId: number): Promise<number> {
    if (!this.tables.has(domainId)) return 0;
    return this.write(async () => {
      if (!this.tables.has(domainId)) return 0;
      return (
        (await rollupDrift(this.writer, domainId, table(domainId))) +
        (await pathCopyDrift(this.writer, domainId, table(domainId)))
      );
    });
  }

  /**
   * A read over the domains' rollups (duckdb-rollups.ts) on a connection of its own, interrupted at the time limit;
   * only the domains with rows are passed on.
   */
  async readRollups<T>(
    domainIds: number[],
    timeoutMs: number,
    empty: T,
    fn: (conn: DuckDBConnection, ids: number[]) => Promise<T>,
  ): Promise<T> {
    const own = [...new Set(domainIds)].filter((id) => this.tables.has(id) && !this.deleted.has(id));
    if (own.length === 0) return empty;
    if (own.length > MAX_ACCOUNT_DOMAINS)
      throw new QueryFailed(`analytics read: at most ${MAX_ACCOUNT_DOMAINS} domains with logs are read at once`);
    const conn = await this.readConnection();
    const limit = interruptAt(conn, timeoutMs);
    try {
      return await fn(conn, own);
    } catch (err) {
      if (limit.reached()) throw new QueryFailed(`analytics read: stopped at the time limit of ${timeoutMs} ms`);
      // A table dropped between the check and the read: read again without it.
      if (!own.some((id) => !this.tables.has(id))) throw err;
    } finally {
      limit.clear();
      conn.closeSync();
    }
    return this.readRollups(domainIds, timeoutMs, empty, fn);
  }

  /**
   * One per-domain read (duckdb-reads.ts) on a connection of its own, interrupted at the time limit: of the domain's
   * table, or with `path`, of the table of the domain's copy by path that holds that path's rows.
   */
  async read<T>(
    domainId: number,
    timeoutMs: number,
    empty: T,
    fn: (conn: DuckDBConnection, table: string) => Promise<T>,
    path?: string,
  ): Promise<T> {
    if (!this.tables.has(domainId) || this.deleted.has(domainId)) return empty;
    const conn = await this.readConnection();
    const limit = interruptAt(conn, timeoutMs);
    try {
      return await fn(conn, path === undefined ? table(domainId) : pathTable(domainId, shardOf(path)));
    } catch (err) {
      // Dropped between the check and the read: no rows.
      if (!this.tables.has(domainId)) return empty;
      if (limit.reached()) throw new QueryFailed(`analytics read: stopped at the time limit of ${timeoutMs} ms`);
      throw err;
    } finally {
      limit.clear();
      conn.closeSync();
    }
  }

  /**
   * A read over several domains' rows (duckdb-account-reads.ts, or a duckdb-reads.ts one) on a connection of its own:
   * the tables of those that have rows as one temporary view (each row keeps its table's rowid as a column, for the
   * logs cursor), only the rows with WAF findings when `wafOnly`; interrupted at the time limit. With `path` (a read
   * of series, summary or peak filtered on it): the tables of the domains' copies by path holding that path's rows.
   */
  readView<T>(
    domainIds: number[],
    wafOnly: boolean,
    timeoutMs: number,
    empty: T,
    fn: (conn: DuckDBConnection, view: string) => Promise<T>,
    path?: string,
  ): Promise<T> {
    const only = wafOnly ? ` WHERE waf_events::VARCHAR <> '[]'` : '';
    return this.readRollups(domainIds, timeoutMs, empty, async (conn, own) => {
      const branches = own.map((id) =>
        path === undefined
          ? `SELECT *, rowid AS rowid FROM main.${table(id)}${only}`
          : `SELECT * FROM main.${pathTable(id, shardOf(path))}`,
      );
      // By name: a table created before a column was added lines up with the newer ones (missing columns are NULL).
      await conn.run(`CREATE TEMP VIEW rows_read AS ${branches.join(' UNION ALL BY NAME ')}`);
      return fn(conn, 'rows_read');
    });
  }

  /**
   * The sandbox's checks and the engine's binding of `sql` on `conn`, over a `logs` of the domains: the prepared
   * statement, not run.
   */
  private async prepareQuery(conn: DuckDBConnection, sql: string, domains: QueryDomain[]) {
    // The statement tree, from the engine's own parser, bound to the text's one statement.
    const parsed = await conn.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [sql]);
    checkParsedQuery(String(parsed.getRowsJS()[0][0]), this.functions);
    const own = domains.filter((d) => this.tables.has(d.id) && !this.deleted.has(d.id));
    const view = own.length > 0 ? own.map(viewBranch).join(' UNION ALL ') : EMPTY_VIEW;
    await conn.run(`CREATE TEMP VIEW logs AS ${view}`);
    const statements = await conn.extractStatements(sql);
    if (statements.count !== 1) throw new QueryRefused('query: exactly one statement is allowed');
    const prepared = await statements.prepare(0);
    if (prepared.statementType !== StatementType.SELECT)
      throw new QueryRefused('query: only a SELECT statement is allowed');
    return prepared;
  }

  async check(sql: string, domains: QueryDomain[], timeoutMs: number): Promise<QueryColumn[]> {
    const conn = await this.instance.connect();
    const limit = interruptAt(conn, timeoutMs);
    try {
      const prepared = await this.prepareQuery(conn, sql, domains);
      const columns: QueryColumn[] = [];
      for (let i = 0; i < prepared.columnCount; i++)
        columns.push({ name: prepared.columnName(i), type: prepared.columnType(i).toString() });
      return columns;
    } catch (err) {
      throw queryError(err, limit.reached(), timeoutMs);
    } finally {
      limit.clear();
      conn.closeSync();
    }
  }

  async query(sql: string, domains: QueryDomain[], limits: QueryLimits): Promise<QueryResult> {
    const conn = await this.instance.connect();
    const limit = interruptAt(conn, limits.timeoutMs);
    try {
      const prepared = await this.prepareQuery(conn, sql, domains);
      const reader = await prepared.streamAndReadUntil(limits.maxRows + 1);
      const names = reader.columnNames();
      const types = reader.columnTypes().map((t) => t.toString());
      const raw = reader.getRowsJS();
      const rows: unknown[][] = [];
      let chars = 0;
      let truncated = raw.length > limits.maxRows;
      for (const r of raw.slice(0, limits.maxRows)) {
        const row = r.map(plain);
        chars += JSON.stringify(row).length;
        if (chars > MAX_ANSWER_CHARS) {
          truncated = true;
          break;
        }
        rows.push(row);
      }
      return { columns: names.map((name, i) => ({ name, type: types[i] })), rows, truncated };
    } catch (err) {
      throw queryError(err, limit.reached(), limits.timeoutMs);
    } finally {
      limit.clear();
      conn.closeSync();
    }
  }

  async close(): Promise<void> {
    await this.writes;
    this.writer.closeSync();
    this.instance.closeSync();
  }
}

/** What a failed query or check throws: the sandbox's refusal as it is, the time limit, or the engine's failure. */
function queryError(err: unknown, timedOut: boolean, timeoutMs: number): Error {
  if (err instanceof QueryRefused) return err;
  if (timedOut) return new QueryFailed(`query: stopped at the time limit of ${timeoutMs} ms`);
  return new QueryFailed(`query failed: ${err instanceof Error ? err.message : String(err)}`);
}

/** Adds the LATER_STORED columns a domain table of an older file lacks, with their defaults. */
async function addLaterColumns(writer: DuckDBConnection): Promise<void> {
  const have = await writer.runAndReadAll(
    `SELECT table_name, list(column_name) FROM duckdb_columns()
     WHERE schema_name = 'main' AND regexp_full_match(table_name, 'd_[0-9]+') GROUP BY table_name`,
  );
  for (const [name, columns] of have.getRowsJS()) {
    const present = new Set((columns as string[]).map(String));
    for (const [column, type, dflt] of LATER_STORED)
      if (!present.has(column))
        await writer.run(`ALTER TABLE main.${String(name)} ADD COLUMN ${column} ${type} DEFAULT ${dflt}`);
  }
}

/**
 * Builds the rollups and the copy by path (duckdb-path-copy.ts) each domain table lacks (a file of an older version:
 * none, or not the kinds added since): the missing tables created and filled from every row of the domain in one
 * transaction, so a stop halfway leaves none of them and the next start builds them again.
 */
async function backfillRollups(writer: DuckDBConnection, tables: ReadonlySet<number>): Promise<void> {
  const have = await writer.runAndReadAll(`SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'`);
  const names = new Set(have.getRowsJS().map((r) => String(r[0])));
  for (const id of tables) {
    if (!hasPathCopy(id, names)) {
      await writer.run('BEGIN TRANSACTION');
      try {
        for (const t of pathTables(id)) await writer.run(`DROP TABLE IF EXISTS main.${t}`);
        await createPathCopy(writer, id, table(id));
        await fillPathCopy(writer, id, table(id));
        await writer.run('COMMIT');
      } catch (err) {
        await writer.run('ROLLBACK').catch(() => undefined);
        throw err;
      }
    }
    // Tables of earlier versions that nothing reads or keeps any more (the path totals and times, replaced by the copy).
    for (const t of legacyTables(id)) if (names.has(t)) await writer.run(`DROP TABLE main.${t}`);
    const kinds = missingKinds(id, names);
    if (kinds.length === 0) continue;
    await writer.run('BEGIN TRANSACTION');
    try {
      for (const t of [...rollupTables(id, kinds), ...legacyTables(id)])
        await writer.run(`DROP TABLE IF EXISTS main.${t}`);
      await createRollups(writer, id, kinds);
      await fillRollups(writer, id, table(id), kinds);
      await writer.run('COMMIT');
    } catch (err) {
      await writer.run('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
}

/** Interrupts the connection's statement at the limit, and again every 100 ms: an interrupt between two steps would
 * otherwise be lost. */
function interruptAt(conn: DuckDBConnection, ms: number): { reached(): boolean; clear(): void } {
  let reached = false;
  let again: NodeJS.Timeout | undefined;
  const timer = setTimeout(() => {
    reached = true;
    conn.interrupt();
    again = setInterval(() => conn.interrupt(), 100);
  }, ms);
  return {
    reached: () => reached,
    clear() {
      clearTimeout(timer);
      clearInterval(again);
    },
  };
}

function appendRow(a: DuckDBAppender, r: LogRow): void {
  const micros = BigInt(Math.trunc(r.time.getTime())) * 1000n;
  a.appendTimestampTZ(new DuckDBTimestampTZValue(micros));
  a.appendTimestamp(new DuckDBTimestampValue(micros));
  a.appendInteger(r.domainId);
  a.appendInteger(r.ownerId);
  a.appendVarchar(r.node);
  a.appendVarchar(r.host);
  a.appendVarchar(r.path);
  a.appendVarchar(r.method);
  a.appendInteger(r.status);
  a.appendBigInt(BigInt(Math.trunc(r.bytes)));
  a.appendVarchar(r.cacheStatus);
  a.appendVarchar(JSON.stringify(r.ruleHits));
  a.appendVarchar(JSON.stringify(r.wafEvents));
  a.appendDouble(r.durationMs);
  a.appendDouble(r.upstreamMs);
  a.appendVarchar(r.clientIp);
  a.appendVarchar(r.fingerprint);
  a.appendInteger(r.botScore);
  a.appendVarchar(r.botClass);
  const d = LATER_DEFAULTS;
  a.appendVarchar(r.tlsVersion ?? d.tlsVersion);
  a.appendVarchar(r.httpProtocol ?? d.httpProtocol);
  a.appendVarchar(r.uaCategory ?? d.uaCategory);
  a.appendVarchar(r.servingPath ?? d.servingPath);
  a.appendVarchar(r.unservedReason ?? d.unservedReason);
  a.appendBigInt(BigInt(Math.trunc(r.originBytes ?? d.originBytes)));
  a.appendBoolean(r.markdown ?? d.markdown);
  a.appendInteger(r.rateLimitRule ?? d.rateLimitRule);
  a.appendVarchar(r.rateLimitKey ?? d.rateLimitKey);
  a.appendVarchar(r.country ?? d.country);
  a.appendBigInt(BigInt(Math.trunc(r.asn ?? d.asn)));
  a.appendVarchar(r.asOrg ?? d.asOrg);
  a.endRow();
}

/** A value of getRowsJS as JSON can carry it: big integers as numbers when exact (else text), times as ISO text. */
function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}
