// Two statements of one transaction sent back to back: on Postgres the second goes out right behind the first, in
// the same round trip, instead of after the first's answer (the pool runs in node-postgres's pipeline mode; each
// statement keeps its own Sync, so each answers and fails on its own, and the server still runs them one after the
// other: the second's snapshot is taken after the first has finished, a lock it took included). On PGlite they run
// one after the other in the same order. A single record create sends its insert behind the domain's lock
// (areas/records/service.ts): one round trip fewer.
import type { Db, Tx } from './index.js';

/** Called once the driver client has queued its next statement (pg-prepared.ts, pglite-prepared.ts call `issued`). */
const waiting = new WeakMap<object, () => void>();

/** The driver client a transaction's statements go to (node-postgres PoolClient, PGlite transaction). */
function clientOf(tx: Db | Tx): object {
  return (tx._.session as unknown as { client: object }).client;
}

/**
 * Runs `send`, which queues statements of `tx` synchronously; on Postgres they leave in one socket write (pg writes
 * each query on its own), on PGlite it simply runs.
 */
export function sendTogether<T>(tx: Tx, send: () => T): T {
  const socket = socketOf(clientOf(tx));
  socket?.cork();
  try {
    return send();
  } finally {
    socket?.uncork();
  }
}

/** The socket of a node-postgres client; undefined for PGlite. */
export function socketOf(client: object): { cork(): void; uncork(): void } | undefined {
  const stream = (client as { connection?: { stream?: { cork?: unknown; uncork?: unknown } } }).connection?.stream;
  return typeof stream?.cork === 'function' && typeof stream.uncork === 'function'
    ? (stream as { cork(): void; uncork(): void })
    : undefined;
}

/** Whether a statement waits to be sent right behind the next one `client` queues (pg-prepared.ts: one write for both). */
export function hasWaiting(client: object): boolean {
  return waiting.has(client);
}

/** The driver's wrappers call this right after `client` queued a statement. */
export function issued(client: object): void {
  const next = waiting.get(client);
  if (next) {
    waiting.delete(client);
    next();
  }
}

/**
 * Runs `first` and `second` in `tx`, `second` started as soon as `first` has queued its statement (or once `first` has
 * succeeded, if it never sends one; never when it failed first). `first` must send exactly one statement before any other of `tx`; nothing else may
 * run in `tx` until both have settled. The caller awaits `first`, then decides whether it needs `second`'s answer
 * (a rejection of `second` that nobody awaits is not reported as unhandled).
 */
export function sendBehind<A, B>(tx: Tx, first: () => Promise<A>, second: () => Promise<B>): [Promise<A>, Promise<B>] {
  const client = clientOf(tx);
  let resolve!: (value: B | PromiseLike<B>) => void;
  let reject!: (err: unknown) => void;
  const b = new Promise<B>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  b.catch(() => undefined);
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    Promise.resolve(second()).then(resolve, reject);
  };
  const stop = () => {
    if (waiting.get(client) === start) waiting.delete(client);
  };
  waiting.set(client, start);
  let a: Promise<A>;
  try {
    // A real promise: drizzle's query builders run their statement again on every `then`.
    a = Promise.resolve(first());
  } catch (err) {
    stop();
    throw err;
  }
  // `first` settled without queuing a statement: `second` runs after it, or not at all when `first` failed.
  a.then(
    () => {
      stop();
      start();
    },
    (err: unknown) => {
      stop();
      if (started) return;
      started = true;
      reject(err);
    },
  );
  return [a, b];
}
