// Process plumbing shared by the edge and DNS node entry points: config sync, shutdown signals, the cluster worker pool.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from './logger.js';
import { ensureNodeToken } from './node-token.js';
import { startNodeSync, type NodeSync } from './node-store/sync-client.js';
import type { NodeStore } from './node-store/store.js';

export interface NodeSyncConfig {
  /** SYNC_URL; undefined when sync is off. */
  syncUrl: string | undefined;
  dataDir: string;
  nodeToken: string | undefined;
  /** The hub logs the node as `<prefix>-<pid>`. */
  nodeIdPrefix: string;
}

/** Starts syncing the store from the hub, or returns undefined when no SYNC_URL is configured. */
export function startNodeSyncFromConfig(store: NodeStore, cfg: NodeSyncConfig): NodeSync | undefined {
  if (!cfg.syncUrl) return undefined;
  return startNodeSync(store, {
    hubUrl: cfg.syncUrl,
    token: ensureNodeToken(cfg.dataDir, cfg.nodeToken),
    nodeId: `${cfg.nodeIdPrefix}-${process.pid}`,
  });
}

/** Runs `stop` once on the first SIGTERM or SIGINT, then calls `exit` with 0, or 1 (after logging) if it failed.
 *  The entry point passes `process.exit`: only main.ts ends the process (STYLE.md §1). */
export function onShutdownSignals(stop: () => Promise<void>, log: Logger, exit: (code: number) => void): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    stop().then(
      () => exit(0),
      (err) => {
        log.error({ err }, 'shutdown failed');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

export interface WorkerPoolOptions<M> {
  count: number;
  /** Environment added to each forked worker's. */
  env?: Record<string, string>;
  /** Names the worker in the exit log line: `<name> worker exited; starting another`. */
  name: string;
  log: Logger;
  onMessage?: (worker: Worker, message: M) => void;
}

export interface WorkerPool {
  /** The live workers (a replaced one leaves the set when it exits). */
  readonly workers: ReadonlySet<Worker>;
  /** From now on an exiting worker is not replaced. */
  stopRespawning(): void;
  /** Stops respawning, sends SIGTERM to every worker and resolves once all have exited. */
  stop(): Promise<void>;
}

/** Forks `count` cluster workers from the primary and replaces any that exits until stopped. */
export function startWorkerPool<M>(opts: WorkerPoolOptions<M>): WorkerPool {
  const workers = new Set<Worker>();
  let stopping = false;
  const fork = () => {
    const w = cluster.fork(opts.env);
    workers.add(w);
    if (opts.onMessage) w.on('message', (m: M) => opts.onMessage!(w, m));
    w.on('exit', (code) => {
      workers.delete(w);
      if (stopping) return;
      opts.log.error({ worker: w.id, code }, `${opts.name} worker exited; starting another`);
      fork();
    });
  };
  for (let i = 0; i < opts.count; i++) fork();
  return {
    workers,
    stopRespawning() {
      stopping = true;
    },
    async stop() {
      stopping = true;
      await Promise.all(
        [...workers].map(
          (w) =>
            new Promise((r) => {
              w.once('exit', r);
              w.process.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}
