// The edge node's operations endpoint (EDGE_METRICS_PORT): /healthz, /readyz (config sync) and /metrics in Prometheus
// text: requests per status and cache result (counted in counters.ts) and config sync.
import type { NodeStore, NodeSync } from '@platform/shared/node-store';
import { counterFrom, createRegistry, gaugeFrom, startNodeOps, type OpsServer } from '@platform/shared/ops';
import type { RequestCounters } from './counters.js';

export interface EdgeOpsOptions {
  host: string;
  port: number;
  /** This process's counters, or the sum over the workers in cluster mode. */
  requests: () => RequestCounters;
  /** Domains served (single process only: in cluster mode each worker compiles its own table). */
  domains?: () => number;
  store: NodeStore;
  sync: NodeSync | undefined;
}

export function startEdgeOps(o: EdgeOpsOptions): Promise<OpsServer> {
  const registry = createRegistry();
  counterFrom(
    registry,
    'edge_requests_total',
    'Requests answered, per status (0: the client left first) and cache result (NONE: no cache rule looked)',
    () => o.requests().samples(),
    ['status', 'cache'],
  );
  if (o.domains) gaugeFrom(registry, 'edge_domains', 'Domains this node serves', o.domains);
  return startNodeOps({ host: o.host, port: o.port, registry, prefix: 'edge', store: o.store, sync: o.sync });
}
