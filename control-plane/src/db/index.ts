// Opens the system of record: PGlite inside DATA_DIR by default, a Postgres server when DATABASE_URL is set.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { sql } from 'drizzle-orm';
import { componentLogger } from '@platform/shared';
import * as schema from './schema.js';
import { applyMigrations } from './migrate.js';
import { slimParserTable } from './pglite-parsers.js';
import { usePreparedStatements } from './pglite-prepared.js';
import { usePreparedStatementsPg } from './pg-prepared.js';

const log = componentLogger('control-plane.db');

export type Schema = typeof schema;
/**
 * The one database type every route and activity uses, whichever driver is behind it. Without drizzle's relational
 * query API (`db.query.<table>`, which nothing uses): given the schema, drizzle builds a query builder for each of
 * its tables in every transaction it opens (bench/RESULTS.md, issue 8).
 */
export type Db = PgDatabase<PgQueryResultHKT>;
/** A transaction handle; the same query API as Db. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

export interface Database {
  db: Db;
  driver: 'pglite' | 'postgres';
  close(): Promise<void>;
}

export async function openDatabase(opts: { dataDir: string; databaseUrl?: string }): Promise<Database> {
  if (opts.databaseUrl) {
    const { default: pg } = await import('pg');
    const { drizzle } = await import('drizzle-orm/node-postgres');
    // Pipeline mode: a statement queued while another is in flight on the same connection is sent at once, not after
    // the answer (each keeps its own Sync; db/pipeline.ts sends a create's insert right behind its lock).
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 10, pipeline: true });
    // An idle client whose server connection ends (Postgres restarted, database dropped) emits 'error' on the pool;
    // unhandled it would crash the process. The pool discards that client and connects anew on the next query.
    pool.on('error', (err) => log.warn({ err }, 'idle Postgres connection closed by the server'));
    // A client checked out of the pool (a transaction) has no listener of the pool's: its connection failing would
    // emit an unhandled 'error' and end the process. Its queries fail with the error (the request answers 500) and
    // the pool drops the client when it comes back (no longer queryable); this listener only keeps the process up.
    pool.on('connect', (client) => client.on('error', () => undefined));
    const database: Database = {
      db: drizzle(pool) as unknown as Db,
      driver: 'postgres',
      close: () => pool.end(),
    };
    return migrateThenPrepare(database, () => usePreparedStatementsPg(pool));
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  const dir = join(opts.dataDir, 'pglite');
  mkdirSync(dir, { recursive: true });
  const client = await PGlite.create(dir, {
    parsers: { [BYTEA_OID]: parseBytea },
    serializers: { [BYTEA_OID]: (v) => v },
  });
  if (!(await slimParserTable(client)))
    log.warn('PGlite parses differently with its parser table slimmed; kept whole (slower queries)');
  const database: Database = {
    db: drizzle(client) as unknown as Db,
    driver: 'pglite',
    close: () => client.close(),
  };
  return migrateThenPrepare(database, () => usePreparedStatements(client));
}

/** Prepared statements are turned on after the migrations: no plan is kept of a table they are still changing. */
async function migrateThenPrepare(database: Database, usePrepared: () => void): Promise<Database> {
  await applyMigrations(database.db);
  usePrepared();
  return database;
}

const BYTEA_OID = 17;

/**
 * PGlite's own bytea parser builds the array one parseInt per byte (seconds for a large zone's snapshot); Node's hex
 * decoder does it natively. Parameters go the other way as given: a Uint8Array is bound in binary format, no hex.
 */
function parseBytea(text: string): Uint8Array {
  return Buffer.from(text.startsWith('\\x') ? text.slice(2) : text, 'hex');
}

export { schema, sql };
