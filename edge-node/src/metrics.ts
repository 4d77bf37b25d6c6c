// The edge node's operations endpoint (EDGE_METRICS_PORT): /healthz, /readyz (config sync) and /metrics in Prometheus
// text: requests per status and cache result (counted in counters.ts), what the memory bounds hold, and config sync.
import type { NodeStore, NodeSync } from '@platform/shared/node-store';
import { counterFrom, createRegistry, gaugeFrom, startNodeOps, type OpsServer } from '@platform/shared/ops';
import type { RequestCounters } from './counters.js';
import type { EdgeNode } from './node.js';
import { crawlerVerifier } from './rules/bot.js';

/** What the node's memory bounds hold (README "Configuration"): one process's, or the sum over the workers. */
export interface EdgeMemory {
  originPools: number;
  originPoolsEvicted: number;
  cacheBytes: number;
  cacheEvicted: number;
  logsDropped: number;
  /** Request-log batches kept until the control plane acknowledges them, and their packed bytes. */
  logOutboxBatches: number;
  logOutboxBytes: number;
  /** Uptime probes sent, failed, and skipped by the node's bounds (in flight at the cap, or missed their time). */
  probesSent: number;
  probesFailed: number;
  probesSkipped: number;
  /** Claimed search crawlers looked up (reverse-then-forward DNS), and claims left unverified by the lookup budget. */
  crawlerLookups: number;
  crawlerLookupsSkipped: number;
}

export function memoryOf(
  node: Pick<EdgeNode, 'pools' | 'cache' | 'logs'> & Partial<Pick<EdgeNode, 'prober'>>,
): EdgeMemory {
  const probes = node.prober?.stats;
  return {
    originPools: node.pools.size,
    originPoolsEvicted: node.pools.evicted,
    cacheBytes: node.cache.bytes,
    cacheEvicted: node.cache.evicted,
    logsDropped: node.logs.dropped,
    logOutboxBatches: node.logs.outbox.length,
    logOutboxBytes: node.logs.outboxBytes,
    probesSent: probes?.sent ?? 0,
    probesFailed: probes?.failed ?? 0,
    probesSkipped: (probes?.skippedInFlight ?? 0) + (probes?.missed ?? 0),
    crawlerLookups: crawlerVerifier.started,
    crawlerLookupsSkipped: crawlerVerifier.skipped,
  };
}

export function sumMemory(parts: Iterable<EdgeMemory>): EdgeMemory {
  const sum: EdgeMemory = {
    originPools: 0,
    originPoolsEvicted: 0,
    cacheBytes: 0,
    cacheEvicted: 0,
    logsDropped: 0,
    logOutboxBatches: 0,
    logOutboxBytes: 0,
    probesSent: 0,
    probesFailed: 0,
    probesSkipped: 0,
    crawlerLookups: 0,
    crawlerLookupsSkipped: 0,
  };
  for (const p of parts) for (const k of Object.keys(sum) as (keyof EdgeMemory)[]) sum[k] += p[k];
  return sum;
}

export interface EdgeOpsOptions {
  host: string;
  port: number;
  /** This process's counters, or the sum over the workers in cluster mode. */
  requests: () => RequestCounters;
  /** Pools, cache and request-log drops of this process, or summed over the workers. */
  memory: () => EdgeMemory;
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
  gaugeFrom(
    registry,
    'edge_origin_pools',
    'Origin connection pools open (EDGE_ORIGIN_POOLS_MAX per process)',
    () => o.memory().originPools,
  );
  counterFrom(
    registry,
    'edge_origin_pools_evicted_total',
    'Origin pools closed to stay within EDGE_ORIGIN_POOLS_MAX',
    () => o.memory().originPoolsEvicted,
  );
  gaugeFrom(
    registry,
    'edge_cache_bytes',
    'Bytes cached across all domains (EDGE_CACHE_MAX_BYTES per process)',
    () => o.memory().cacheBytes,
  );
  counterFrom(
    registry,
    'edge_cache_evicted_total',
    'Cache entries evicted to stay within EDGE_CACHE_MAX_BYTES',
    () => o.memory().cacheEvicted,
  );
  counterFrom(
    registry,
    'edge_request_logs_dropped_total',
    'Request-log records dropped (oldest first) while the buffer or the outbox of unacknowledged batches was full',
    () => o.memory().logsDropped,
  );
  gaugeFrom(
    registry,
    'edge_request_log_outbox_batches',
    'Request-log batches kept until the control plane acknowledges them (at most 64 per process)',
    () => o.memory().logOutboxBatches,
  );
  gaugeFrom(
    registry,
    'edge_request_log_outbox_bytes',
    'Packed bytes of those batches (at most 64 MiB per process)',
    () => o.memory().logOutboxBytes,
  );
  counterFrom(
    registry,
    'edge_uptime_probes_total',
    'Uptime probes sent to origins of watched scopes whose traffic was too thin (docs/uptime.md "Probes")',
    () => o.memory().probesSent,
  );
  counterFrom(
    registry,
    'edge_uptime_probes_failed_total',
    'Uptime probes that met a 5xx, no answer, or a refused connection, address or certificate',
    () => o.memory().probesFailed,
  );
  counterFrom(
    registry,
    'edge_uptime_probes_skipped_total',
    'Uptime probes not sent: 64 already waiting for an answer, or due while the process could not send them',
    () => o.memory().probesSkipped,
  );
  counterFrom(
    registry,
    'edge_crawler_lookups_total',
    'Claimed search crawlers verified by reverse-then-forward DNS (bot_route rules; EDGE_CRAWLER_LOOKUPS_PER_S)',
    () => o.memory().crawlerLookups,
  );
  counterFrom(
    registry,
    'edge_crawler_lookups_skipped_total',
    'Crawler claims left unverified without a lookup: the per-second budget spent or 32 lookups in flight',
    () => o.memory().crawlerLookupsSkipped,
  );
  if (o.domains) gaugeFrom(registry, 'edge_domains', 'Domains this node serves', o.domains);
  return startNodeOps({ host: o.host, port: o.port, registry, prefix: 'edge', store: o.store, sync: o.sync });
}
