// A lazily connected Temporal client: connects on first use, connects anew on the next use after a failure.
import { Client, Connection } from '@temporalio/client';
import type { TemporalConfig } from './temporal-config.js';

export interface LazyTemporalClient {
  /** The client; rejects when Temporal does not answer within 3 s. */
  get(): Promise<Client>;
  close(): Promise<void>;
}

export function lazyTemporalClient(cfg: Pick<TemporalConfig, 'address' | 'namespace'>): LazyTemporalClient {
  let pending: Promise<{ client: Client; connection: Connection }> | undefined;
  return {
    async get() {
      pending ??= Connection.connect({ address: cfg.address, connectTimeout: '3 seconds' }).then((connection) => ({
        connection,
        client: new Client({ connection, namespace: cfg.namespace }),
      }));
      try {
        return (await pending).client;
      } catch (err) {
        pending = undefined; // try again on the next call
        throw err;
      }
    },
    async close() {
      const c = await pending?.catch(() => undefined);
      pending = undefined;
      await c?.connection.close();
    },
  };
}
