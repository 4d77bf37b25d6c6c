// Hot statements turned into text once. drizzle builds a statement's text and parameter list on every call (walking
// its fragments, checking each chunk's kind); for the few statements of a single API write that is a measurable part
// of the request (bench/RESULTS.md, issue 8). A compiled statement is written with drizzle's `sql` and placeholders,
// rendered to text once, and each call sends that text with the values filled in to the transaction's
// own driver client: on PGlite and Postgres it still runs as a named prepared statement (pglite-prepared.ts,
// pg-prepared.ts), with the driver's own value parsing (json parsed, bigint as the driver gives it).
import { fillPlaceholders, sql, type Placeholder, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { Db, Tx } from './index.js';
import type { BeforeBegin, ThenCommit } from './pg-prepared.js';

const dialect = new PgDialect();

interface DriverClient {
  query(...args: unknown[]): Promise<{ rows: unknown[] }>;
  /** PGlite (and its transaction handle) only: node-postgres clients have no `exec`. */
  exec?: unknown;
}

/**
 * A statement compiled once; call it with the transaction (or database) and the placeholders' values. `thenCommit`:
 * it is the last statement of the transaction `db`, which ends with it: on Postgres the COMMIT is sent with it in
 * one round trip (pg-prepared.ts) and the transaction's own commit then sends nothing; nothing may run after it.
 * `beforeBegin`: it is the first statement of the transaction `db`, to run outside it (pg-prepared.ts); on PGlite it
 * runs in the transaction.
 */
export type CompiledStatement<P extends string> = <T>(
  db: Db | Tx,
  values: Record<P, unknown>,
  opts?: ThenCommit & BeforeBegin,
) => Promise<T[]>;

/**
 * Compiles `build(param)` once (at its first call): `param(name)` stands for a value given at each call (the same name may appear more
 * than once); any other value interpolated into the `sql` is a constant bound at every call. Values are bound as
 * parameters, never spliced into the text.
 */
export function compiled<P extends string>(build: (param: (name: P) => Placeholder<P>) => SQL): CompiledStatement<P> {
  let query: { sql: string; params: unknown[] } | undefined;
  return async <T>(db: Db | Tx, values: Record<P, unknown>, opts?: ThenCommit & BeforeBegin): Promise<T[]> => {
    // On first use, so that a module's statement may use fragments defined further down in it.
    query ??= dialect.sqlToQuery(build((name) => sql.placeholder(name)));
    const text = query.sql;
    const client = (db._.session as unknown as { client: DriverClient }).client;
    const params = fillPlaceholders(query.params, values);
    // node-postgres takes a config object (pg-prepared.ts names it after its text); PGlite the text, the values and
    // the options (pglite-prepared.ts: the COMMIT goes with the statement there too, in the same call into PGlite).
    const result =
      typeof client.exec === 'function'
        ? await client.query(text, params, ...(opts?.thenCommit || opts?.beforeBegin ? [opts] : []))
        : await client.query(opts?.thenCommit || opts?.beforeBegin ? { text, ...opts } : { text }, params);
    return result.rows as T[];
  };
}
