// node-postgres sends an unnamed statement, parsed and planned anew, unless a query has a name; drizzle names only
// the queries prepared with .prepare(name). This names every parameterised query of a pool's connections after its
// text, so each connection parses and plans it once (as pglite-prepared.ts does for PGlite's one session).
// It also saves a transaction two round trips (pg-pipelined.ts): drizzle's `begin` is held back and sent with the
// transaction's first statement, and a statement sent with `thenCommit` (compiled.ts: the config log's append, the
// last statement of every write) carries the COMMIT; drizzle's own `commit` then sends nothing.
import type pg from 'pg';
import { hasBulkParameter } from './bulk-parameters.js';
import { PipelinedQuery } from './pg-pipelined.js';
import { hasWaiting, issued, socketOf } from './pipeline.js';

/** Statements each connection keeps prepared; further texts run unnamed (the hot ones come first and stay). */
export const PREPARED_PER_CONNECTION = 200;

/** "cached plan must not change result type" (feature_not_supported): a kept plan whose table changed. */
const STALE_PLAN = '0A000';

type QueryConfig = { text?: unknown; name?: unknown; submit?: unknown; thenCommit?: unknown; beforeBegin?: unknown };

/** A statement config with `thenCommit: true` is sent with its transaction's COMMIT (one round trip). */
export interface ThenCommit {
  thenCommit?: boolean;
}

/**
 * A statement config with `beforeBegin: true`, the first of its transaction, is sent at once ahead of the BEGIN held
 * back, so it runs and commits on its own (auth/authenticate.ts: the key lookup, which counts the request even when
 * the write is refused); the next statement is sent with the BEGIN as usual. It starts no statement waiting behind
 * the next one (pipeline.ts sendBehind).
 */
export interface BeforeBegin {
  beforeBegin?: boolean;
}

/** What drizzle's transaction sends to open and end it (node-postgres session: sql`begin`, sql`commit`, sql`rollback`). */
const BEGIN = 'begin';
const COMMIT = 'commit';
const ROLLBACK = 'rollback';

/** The answer of a BEGIN, COMMIT or ROLLBACK not sent (nothing reads it but its command). */
const noRows = (command: string) => ({ command, rowCount: null, oid: 0, rows: [], fields: [] });

/** Names the queries of every connection `pool` hands out (on its first checkout). */
export function usePreparedStatementsPg(pool: pg.Pool, max = PREPARED_PER_CONNECTION): void {
  const patched = new WeakMap<pg.PoolClient, { reset(): void }>();
  // A client goes back to the pool with nothing held back (drizzle always ends its transaction before).
  pool.on('release', (_err: unknown, client: pg.PoolClient) => patched.get(client)?.reset());
  pool.on('acquire', (client) => {
    if (patched.has(client)) return;
    const names = new Map<string, string>();
    let counter = 0;
    /** drizzle's `begin`, not sent yet: it goes with the next statement. */
    let beginHeld = false;
    /** The transaction was committed by its last statement (thenCommit): drizzle's `commit` sends nothing. */
    let committed = false;
    patched.set(client, {
      reset() {
        beginHeld = false;
        committed = false;
      },
    });
    const original = client.query.bind(client) as (...args: unknown[]) => unknown;
    /** Whether the call being served queued anything (a held BEGIN or a COMMIT not sent queue nothing). */
    let queuedAny = false;
    const query = (...args: unknown[]): unknown => {
      queuedAny = true;
      return original(...args);
    };
    const nameOf = (text: string): string | undefined => {
      let name = names.get(text);
      if (!name && names.size < max) {
        name = `q${++counter}`;
        names.set(text, name);
      }
      return name;
    };
    /** True when `err` says the kept plan's table changed: the text is parsed again, under a new name, next time. */
    const stale = (err: unknown, text: string, name: string | undefined): boolean => {
      if ((err as { code?: unknown } | null)?.code !== STALE_PLAN) return false;
      if (name && names.get(text) === name) names.delete(text);
      return true;
    };
    /** Sends the held `begin` on its own, before a query this does not pipeline (pg sends queries in order). */
    const sendHeldBegin = () => {
      if (!beginHeld) return;
      beginHeld = false;
      (query({ text: BEGIN }) as Promise<unknown>).catch(() => undefined); // the next query reports a broken connection
    };
    const socket = socketOf(client);
    client.query = ((config: unknown, ...rest: unknown[]) => {
      queuedAny = false;
      // pipeline.ts: a statement waits to go right behind this one. pg writes each query to the socket on its own
      // (it corks and uncorks around each); held corked, both leave in one write (one wake-up of the server).
      const behind = socket !== undefined && hasWaiting(client);
      if (behind) socket.cork();
      try {
        const answer = send(config, rest);
        if (queuedAny) issued(client);
        return answer;
      } finally {
        if (behind) socket.uncork();
      }
    }) as typeof client.query;
    const send = (config: unknown, rest: unknown[]): unknown => {
      const c = config as QueryConfig | null;
      const last = rest[rest.length - 1];
      if (committed) {
        committed = false;
        const text = typeof config === 'string' ? config : String(c?.text);
        if (text === COMMIT) return Promise.resolve(noRows('COMMIT'));
        // A programming error: the write path appends last (config-log/change-domain.ts); say so rather than pretend.
        const err = new Error(`"${text.slice(0, 40)}" after the transaction was committed by its last statement`);
        if (typeof last === 'function') return void (last as (e: Error) => void)(err);
        return Promise.reject(err);
      }
      // Only plain config objects (not a Query or Cursor, which have `submit`) without a name of their own.
      if (typeof c !== 'object' || c === null || typeof c.text !== 'string' || c.name || c.submit) {
        sendHeldBegin();
        return query(config, ...rest);
      }
      const text = c.text;
      if (c.beforeBegin === true) {
        if (!beginHeld || typeof last === 'function') {
          // A programming error: it would run and count inside the transaction, and be lost with a rollback.
          return Promise.reject(
            new Error(`"${text.slice(0, 40)}" sent before BEGIN, but it is not the first statement`),
          );
        }
        const name = nameOf(text);
        const sent = query(name ? { ...c, name } : c, ...rest) as Promise<unknown>;
        queuedAny = false; // the statement waiting behind the next one goes behind the BEGIN's statement, not this
        return sent.catch((err: unknown) => {
          stale(err, text, name);
          throw err;
        });
      }
      if (typeof last !== 'function') {
        if (text === BEGIN && !beginHeld) {
          beginHeld = true;
          return Promise.resolve(noRows('BEGIN'));
        }
        if (beginHeld && (text === COMMIT || text === ROLLBACK)) {
          beginHeld = false; // an empty transaction: nothing was sent, nothing to end
          return Promise.resolve(noRows(text.toUpperCase()));
        }
      } else sendHeldBegin();
      const values = Array.isArray(rest[0]) ? (rest[0] as unknown[]) : (c as { values?: unknown[] }).values;
      const name = hasBulkParameter(values) ? undefined : nameOf(text);
      const thenCommit = c.thenCommit === true;
      if (typeof last !== 'function' && (beginHeld || thenCommit)) {
        const pipelined = { begin: beginHeld, commit: thenCommit };
        beginHeld = false;
        return new Promise((resolve, reject) => {
          const callback = (err: Error | null, result: unknown) => {
            if (err) {
              stale(err, text, name);
              reject(err);
            } else {
              committed = thenCommit;
              resolve(result);
            }
          };
          query(new PipelinedQuery(name ? { ...c, name } : c, values, callback, pipelined));
        });
      }
      if (!name) return query(config, ...rest);
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
    };
  });
}
