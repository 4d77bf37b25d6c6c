// Entry point of `npm run dns-server`: one process, or a primary running node sync plus DNS_WORKERS workers.
import cluster from 'node:cluster';
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import { onShutdownSignals, startNodeSyncFromConfig, startWorkerPool } from '@platform/shared/node-process';
import { domainChange, openNodeStore, wholeDomain, type DomainChange } from '@platform/shared/node-store';
import { loadConfig, type DnsServerConfig } from './config.js';
import { createCounters, type Counters } from './counters.js';
import { startDnsOps, sumCounters } from './metrics.js';
import { log, nodeStorePath, startServingNode, type ServingNode } from './node.js';
import { LARGE_CHANGE } from './zone/zone-set.js';

type WorkerMessage = { type: 'listening'; port: number } | { type: 'counters'; counters: Counters };
type PrimaryMessage = { type: 'applied'; change: DomainChange };

let config: Readonly<DnsServerConfig>;
try {
  config = loadConfig();
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}

/** The store of the process that writes (single, or the primary): its writer thread started before a large import
 *  arrives, so the import does not wait for the thread's start. */
const writingStore = () => openNodeStore(nodeStorePath(config), { writerReady: true });

async function runSingle(): Promise<void> {
  const node = await startServingNode(config, writingStore());
  // The event itself, not its domainChange: a large entry's records in hand are compiled without reading them back.
  node.store.onApplied((e) => node.refresh(e));
  const sync = startNodeSyncFromConfig(node.store, { ...config, nodeIdPrefix: 'dns' });
  const ops = config.metricsPort
    ? await startDnsOps({
        host: config.host,
        port: config.metricsPort,
        counters: () => node.counters,
        store: node.store,
        sync,
      })
    : undefined;
  log.info(
    { host: config.host, port: node.server.port, metricsPort: ops?.port, zones: node.table.size, workers: 1 },
    'dns-server listening',
  );
  onShutdownSignals(
    async () => {
      await sync?.stop();
      await ops?.close();
      await node.close();
    },
    log,
    process.exit,
  );
}

async function runWorker(): Promise<void> {
  // Listen before loading: a change applied while this worker starts is either in what it loads or in `early`.
  const early = new Set<string>();
  const serving: { node?: ServingNode } = {};
  process.on('message', (m: PrimaryMessage) => {
    if (m?.type !== 'applied') return;
    if (serving.node) serving.node.refresh(m.change);
    else early.add(m.change.domain);
  });
  const node = await startServingNode(config);
  serving.node = node;
  for (const domain of early) node.refresh(wholeDomain(domain));
  process.send!({ type: 'listening', port: node.server.port } satisfies WorkerMessage);
  setInterval(() => process.send!({ type: 'counters', counters: node.counters } satisfies WorkerMessage), 1000).unref();
  process.on('SIGTERM', () => {
    void node.close().then(() => process.exit(0));
  });
}

/** A port free for both UDP and TCP, so that workers asked for port 0 share one. */
async function freePort(host: string): Promise<number> {
  for (let i = 0; i < 20; i++) {
    const udp = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    const port = await new Promise<number>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(0, host, () => resolve(udp.address().port));
    });
    const ok = await new Promise<boolean>((resolve) => {
      const tcp = createServer();
      tcp.once('error', () => resolve(false));
      tcp.listen(port, host, () => tcp.close(() => resolve(true)));
    });
    udp.close();
    if (ok) return port;
  }
  throw new Error('no free port for UDP and TCP');
}

async function runPrimary(): Promise<void> {
  const store = writingStore();
  const port = config.port || (await freePort(config.host));
  const counters = new Map<number, Counters>();
  let listening = 0;
  const pool = startWorkerPool<WorkerMessage>({
    count: config.workers,
    env: { DNS_PORT: String(port) },
    name: 'dns',
    log,
    onMessage(w, m) {
      if (m.type === 'counters') counters.set(w.id, m.counters);
      else if (m.type === 'listening' && ++listening === config.workers) {
        log.info(
          { host: config.host, port, zones: store.domains().length, workers: config.workers },
          'dns-server listening',
        );
      }
    },
  });
  store.onApplied((e) => {
    // A large change is compiled whole by each worker (zone-set.ts LARGE_CHANGE): its ids need not cross IPC.
    const change = domainChange(e);
    if (change.recordIds.length >= LARGE_CHANGE) {
      change.recordCount = Math.max(change.recordCount ?? 0, change.recordIds.length);
      change.recordIds = [];
    }
    for (const w of pool.workers) {
      // A worker that is exiting is replaced, and its successor loads the store afresh.
      if (w.isConnected()) w.send({ type: 'applied', change } satisfies PrimaryMessage, undefined, () => undefined);
    }
  });
  const sync = startNodeSyncFromConfig(store, { ...config, nodeIdPrefix: 'dns' });
  const total = createCounters();
  const ops = config.metricsPort
    ? await startDnsOps({
        host: config.host,
        port: config.metricsPort,
        counters: () => sumCounters(counters.values(), total),
        store,
        sync,
      })
    : undefined;
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
  log.fatal({ err }, 'dns-server failed to start');
  process.exit(1);
});
