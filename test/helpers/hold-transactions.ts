// Reproduces a race deterministically: while armed, every db.transaction() call is held before it begins (whatever
// the request read before it has been read). The test then changes the database and releases the held
// transactions one at a time, each running to its commit before the next begins. The database stays real.
import type { Db } from '../../control-plane/src/db/index.js';

export interface HeldTransactions {
  /**
   * Resolves once `n` transactions are being held, or once any of `requests` has answered (a request that answers
   * without opening a transaction must not hang the test; its assertions then tell what went wrong).
   */
  waitFor(n: number, requests?: Promise<unknown>[]): Promise<void>;
  /** Stops holding new transactions (held ones stay held). */
  disarm(): void;
  /** Disarms, then lets the held transactions run in the order they were called, each to its end. */
  releaseInOrder(): Promise<void>;
  /** Puts db.transaction back. */
  restore(): void;
}

export function holdTransactions(db: Db): HeldTransactions {
  const original = db.transaction;
  const held: { release: () => void; done: Promise<unknown> }[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let armed = true;
  const notify = () => {
    for (const w of waiters.splice(0)) {
      if (held.length >= w.n) w.resolve();
      else waiters.push(w);
    }
  };
  db.transaction = ((...args: Parameters<Db['transaction']>) => {
    if (!armed) return original.apply(db, args);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const run = gate.then(() => original.apply(db, args));
    held.push({ release, done: run.catch(() => undefined) });
    notify();
    return run;
  }) as Db['transaction'];
  return {
    waitFor: (n, requests = []) =>
      new Promise<void>((resolve) => {
        waiters.push({ n, resolve });
        notify();
        for (const r of requests)
          void r.then(
            () => resolve(),
            () => resolve(),
          );
      }),
    disarm: () => {
      armed = false;
    },
    async releaseInOrder() {
      armed = false;
      for (const h of held.splice(0)) {
        h.release();
        await h.done;
      }
    },
    restore: () => {
      armed = false;
      db.transaction = original;
    },
  };
}
