// Entry point of `npm run edge-node`: one process, or a primary running node sync plus EDGE_WORKERS workers.
import cluster, { type Worker } from 'node:cluster';
import { ensureNodeToken, openNodeStore, startNodeSync, type NodeStore, type NodeSync } from '@platform/shared';
import { loadConfig, type EdgeConfig } from './config.js';
import { startLogShipper } from './log/shipper.js';
import { log, nodeStorePath, startEdgeNode } from './node.js';

type PrimaryMessage = { type: 'applied'; domain: string };

let config: Readonly<EdgeConfig>;
try {
  config = loadConfig();
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}

function startSync(store: NodeStore, cfg: EdgeConfig): NodeSync | undefined {
  if (!cfg.syncUrl) return undefined;
  return startNodeSync(store, { hubUrl: cfg.syncUrl, token: ensureNodeToken(cfg.dataDir, cfg.nodeToken), nodeId: `edge-${process.pid}` });
}

function onSignals(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    stop().then(() => process.exit(0), (err) => { log.error({ err }, 'shutdown failed'); process.exit(1); });
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

async function runSingle(): Promise<void> {
  const node = await startEdgeNode(config);
  node.store.onApplied((e) => node.refresh(e.domain, e.snapshot, e.deleted));
  const sync = startSync(node.store, config);
  const shipper = startLogShipper(node.logs, config);
  log.info({ host: config.host, httpPort: node.server.httpPort, httpsPort: node.server.httpsPort, domains: node.table.size, workers: 1 }, 'edge-node listening');
  onSignals(async () => { await sync?.stop(); await shipper.stop(); await node.close(); });
}

async function runWorker(): Promise<void> {
  // Workers share the listening ports (SO_REUSEPORT in uWS) and read the store the primary keeps in sync.
  const node = await startEdgeNode(config);
  const shipper = startLogShipper(node.logs, config);
  process.on('message', (m: PrimaryMessage) => { if (m?.type === 'applied') node.refresh(m.domain); });
  process.on('SIGTERM', () => { void shipper.stop().then(() => node.close()).then(() => process.exit(0)); });
}

async function runPrimary(): Promise<void> {
  const store = openNodeStore(nodeStorePath(config));
  const workers = new Set<Worker>();
  let stopping = false;
  const fork = () => {
    const w = cluster.fork();
    workers.add(w);
    w.on('exit', (code) => {
      workers.delete(w);
      if (stopping) return;
      log.error({ worker: w.id, code }, 'edge worker exited; starting another');
      fork();
    });
  };
  for (let i = 0; i < config.workers; i++) fork();
  store.onApplied((e) => { for (const w of workers) w.send({ type: 'applied', domain: e.domain } satisfies PrimaryMessage); });
  const sync = startSync(store, config);
  log.info({ host: config.host, httpPort: config.httpPort, httpsPort: config.httpsPort, workers: config.workers }, 'edge-node listening');
  onSignals(async () => {
    stopping = true;
    await sync?.stop();
    await Promise.all([...workers].map((w) => new Promise((r) => { w.once('exit', r); w.process.kill('SIGTERM'); })));
    await store.close();
  });
}

const run = config.workers > 1 ? (cluster.isPrimary ? runPrimary : runWorker) : runSingle;
run().catch((err) => {
  log.fatal({ err }, 'edge-node failed to start');
  process.exit(1);
});
