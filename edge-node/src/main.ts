// Entry point of `npm run edge-node`: one process, or a primary running node sync plus EDGE_WORKERS workers.
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { onShutdownSignals, startNodeSyncFromConfig, startWorkerPool } from '@platform/shared/node-process';
import { domainChange, openNodeStore, type DomainChange } from '@platform/shared/node-store';
import { loadConfig, type EdgeConfig } from './config.js';
import { startLogShipper } from './log/shipper.js';
import { startCacheReporter } from './cache/inventory.js';
import { log, nodeStorePath, startEdgeNode } from './node.js';
import { RequestCounters, sumRequestCounters } from './counters.js';
import { memoryOf, startEdgeOps, sumMemory, type EdgeMemory } from './metrics.js';
import { RATE_LIMIT_SEED_ENV, rateLimits } from './rules/rate-limit.js';

/** `rateLimit`: what the other workers counted (rate-limit.ts `collect`), relayed by the primary. */
type PrimaryMessage = { type: 'applied'; change: DomainChange } | { type: 'rateLimit'; entries: number[] };
type WorkerMessage =
  { type: 'requests'; cells: Array<[number, number]>; memory: EdgeMemory } | { type: 'rateLimit'; entries: number[] };

/** How often a worker sends the primary its rate_limit counts (the error bound of a node-wide limit is one round). */
const RATE_LIMIT_SHARE_MS = 100;

let config: Readonly<EdgeConfig>;
try {
  config = loadConfig();
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}

async function runSingle(): Promise<void> {
  const node = await startEdgeNode(config);
  node.store.onApplied((e) => node.refresh(domainChange(e)));
  const sync = startNodeSyncFromConfig(node.store, { ...config, nodeIdPrefix: 'edge' });
  const shipper = startLogShipper(node.logs, config, node.prober);
  const inventory = await startCacheReporter(node.cache, config, undefined, node.policy);
  const ops = config.metricsPort
    ? await startEdgeOps({
        host: config.host,
        port: config.metricsPort,
        requests: () => node.requests,
        memory: () => memoryOf(node),
        domains: () => node.table.size,
        store: node.store,
        sync,
      })
    : undefined;
  log.info(
    {
      host: config.host,
      httpPort: node.server.httpPort,
      httpsPort: node.server.httpsPort,
      metricsPort: ops?.port,
      domains: node.table.size,
      workers: 1,
    },
    'edge-node listening',
  );
  onShutdownSignals(
    async () => {
      await sync?.stop();
      await ops?.close();
      await shipper.stop();
      await inventory.stop();
      await node.close();
    },
    log,
    process.exit,
  );
}

async function runWorker(): Promise<void> {
  // Workers share the listening ports (SO_REUSEPORT in uWS) and read the store the primary keeps in sync.
  const node = await startEdgeNode(config);
  const shipper = startLogShipper(node.logs, config, node.prober);
  const inventory = await startCacheReporter(node.cache, config, undefined, node.policy);
  process.on('message', (m: PrimaryMessage) => {
    if (m?.type === 'applied') node.refresh(m.change);
    else if (m?.type === 'rateLimit' && Array.isArray(m.entries)) rateLimits.merge(m.entries, Date.now());
  });
  // rate_limit counts are for the node: each worker tells the others (through the primary) what it counted.
  rateLimits.sharing = true;
  setInterval(() => {
    const entries = rateLimits.collect();
    if (entries.length > 0) process.send!({ type: 'rateLimit', entries } satisfies WorkerMessage);
  }, RATE_LIMIT_SHARE_MS).unref();
  // The primary serves the metrics: it gets this worker's request counts once a second.
  setInterval(
    () =>
      process.send!({
        type: 'requests',
        cells: node.requests.nonZero(),
        memory: memoryOf(node),
      } satisfies WorkerMessage),
    1000,
  ).unref();
  process.on('SIGTERM', () => {
    void shipper
      .stop()
      .then(() => inventory.stop())
      .then(() => node.close())
      .then(() => process.exit(0));
  });
}

/**
 * What the workers last reported, for the primary's sums: a worker that exited keeps its counters (evictions, drops)
 * in the totals, but its gauges (open pools, cached bytes) went with it.
 */
function reported(live: ReadonlySet<{ id: number }>, memory: Map<number, EdgeMemory>): EdgeMemory[] {
  const ids = new Set([...live].map((w) => w.id));
  return [...memory].map(([id, m]) => (ids.has(id) ? m : { ...m, originPools: 0, cacheBytes: 0 }));
}

async function runPrimary(): Promise<void> {
  const store = openNodeStore(nodeStorePath(config));
  const cells = new Map<number, Array<[number, number]>>();
  const memory = new Map<number, EdgeMemory>();
  const pool = startWorkerPool<WorkerMessage>({
    count: config.workers,
    name: 'edge',
    log,
    env: { [RATE_LIMIT_SEED_ENV]: String(randomBytes(4).readUInt32LE(0)) },
    onMessage(w, m) {
      if (m.type === 'rateLimit') {
        for (const other of pool.workers)
          if (other !== w && other.isConnected()) other.send(m satisfies PrimaryMessage);
        return;
      }
      if (m.type !== 'requests') return;
      cells.set(w.id, m.cells);
      memory.set(w.id, m.memory);
    },
  });
  store.onApplied((e) => {
    for (const w of pool.workers) w.send({ type: 'applied', change: domainChange(e) } satisfies PrimaryMessage);
  });
  const sync = startNodeSyncFromConfig(store, { ...config, nodeIdPrefix: 'edge' });
  const total = new RequestCounters();
  const ops = config.metricsPort
    ? await startEdgeOps({
        host: config.host,
        port: config.metricsPort,
        requests: () => sumRequestCounters(cells.values(), total),
        memory: () => sumMemory(reported(pool.workers, memory)),
        store,
        sync,
      })
    : undefined;
  log.info(
    {
      host: config.host,
      httpPort: config.httpPort,
      httpsPort: config.httpsPort,
      metricsPort: ops?.port,
      workers: config.workers,
    },
    'edge-node listening',
  );
  onShutdownSignals(
    async () => {
      pool.stopRespawning();
      await sync?.stop();
      await ops?.close();
      await pool.stop();
      await store.close();
    },
    log,
    process.exit,
  );
}

const run = config.workers > 1 ? (cluster.isPrimary ? runPrimary : runWorker) : runSingle;
run().catch((err) => {
  log.fatal({ err }, 'edge-node failed to start');
  process.exit(1);
});
