// node-postgres sends an unnamed statement, parsed and planned anew, unless a query has a name; drizzle names only
// the queries prepared with .prepare(name). This names every parameterised query of a pool's connections after its
// text, so each connection parses and plans it once (as pglite-prepared.ts does for PGlite's one session).
import type pg from 'pg';
import { hasBulkParameter } from './bulk-parameters.js';

/** Statements each connection keeps prepared; further texts run unnamed (the hot ones come first and stay). */
export const PREPARED_PER_CONNECTION = 200;

/** "cached plan must not change result type" (feature_not_supported): a kept plan whose table changed. */
const STALE_PLAN = '0A000';

type QueryConfig = { text?: unknown; name?: unknown; submit?: unknown };

/** Names the queries of every connection `pool` hands out (on its first checkout). */
export function usePreparedStatementsPg(pool: pg.Pool, max = PREPARED_PER_CONNECTION): void {
  const patched = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    if (patched.has(client)) return;
    patched.add(client);
    const names = new Map<string, string>();
    let counter = 0;
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    const nameOf = (text: string): string | undefined => {
      let name = names.get(text);
      if (!name && names.size < max) {
        name = `q${++counter}`;
        names.set(text, name);
      }
      return name;
    };
    /** True when `err` says the kept plan's table changed: the text is parsed again, under a new name, next time. */
    const stale = (err: unknown, text: string, name: string): boolean => {
      if ((err as { code?: unknown } | null)?.code !== STALE_PLAN) return false;
      if (names.get(text) === name) names.delete(text);
      return true;
    };
    client.query = ((config: unknown, ...rest: unknown[]) => {
      const c = config as QueryConfig | null;
      // Only plain config objects (not a Query or Cursor, which have `submit`) without a name of their own.
      if (typeof c !== 'object' || c === null || typeof c.text !== 'string' || c.name || c.submit)
        return query(config, ...rest);
      const text = c.text;
      const values = Array.isArray(rest[0]) ? (rest[0] as unknown[]) : (c as { values?: unknown[] }).values;
      if (hasBulkParameter(values)) return query(config, ...rest);
      const name = nameOf(text);
      if (!name) return query(config, ...rest);
      const last = rest[rest.length - 1];
      if (typeof last === 'function') {
        // Callback form: pg-pool's pool.query, outside any transaction, so a stale plan is simply run again.
        const args = rest.slice(0, -1);
        const callback = last as (err: unknown, ...results: unknown[]) => void;
        return query({ ...c, name }, ...args, (err: unknown, ...results: unknown[]) => {
          if (err && stale(err, text, name)) return query({ ...c, name: nameOf(text) }, ...args, callback);
          callback(err, ...results);
        });
      }
      return (query({ ...c, name }, ...rest) as Promise<unknown>).catch((err: unknown) => {
        stale(err, text, name);
        throw err;
      });
    }) as typeof client.query;
  });
}
