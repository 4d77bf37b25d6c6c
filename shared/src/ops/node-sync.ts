// What a DNS or edge node reports about its config sync: the /readyz check and the <prefix>_sync_* metrics.
import type { Registry } from 'prom-client';
import type { NodeSync } from '../node-store/sync-client.js';
import type { NodeStore } from '../node-store/store.js';
import { counterFrom, gaugeFrom } from './metrics.js';
import type { CheckResult } from './readiness.js';
import { startOpsServer, type OpsServer } from './ops-server.js';

/**
 * Ready once the node has caught up with its hub since it started (or sync is off). A node that loses the hub later
 * stays ready, serving the version it holds, and says so in the detail: every node leaving its load balancer when
 * the control plane restarts would turn a control-plane outage into a data-plane one (docs/decisions.md).
 */
export function syncReadiness(sync: NodeSync | undefined, store: NodeStore): CheckResult {
  if (!sync)
    return { ready: true, detail: `sync off (SYNC_URL=off): serving the local store at version ${store.version}` };
  const s = sync.status;
  if (s.state === 'caught-up') return { ready: true, detail: `caught up with ${s.hubUrl} at version ${store.version}` };
  const trying = s.lastError ? `cannot reach ${s.hubUrl}: ${s.lastError}` : `connecting to ${s.hubUrl}`;
  if (s.everCaughtUp) return { ready: true, detail: `serving version ${store.version}; ${trying}` };
  return { ready: false, detail: s.state === 'catching-up' ? `catching up with ${s.hubUrl}` : trying };
}

/** <prefix>_sync_config_version, _hub_version, _lag_versions, _connected and _connect_failures_total. */
export function registerNodeSyncMetrics(
  registry: Registry,
  prefix: string,
  sync: NodeSync | undefined,
  store: NodeStore,
): void {
  gaugeFrom(
    registry,
    `${prefix}_sync_config_version`,
    'Config-log version applied to this node store',
    () => store.version,
  );
  gaugeFrom(
    registry,
    `${prefix}_sync_hub_version`,
    'Latest config-log version the hub announced to this node',
    () => sync?.status.hubVersion ?? store.version,
  );
  gaugeFrom(registry, `${prefix}_sync_lag_versions`, 'Versions announced by the hub and not yet applied', () =>
    Math.max(0, (sync?.status.hubVersion ?? 0) - store.version),
  );
  gaugeFrom(registry, `${prefix}_sync_connected`, '1 while connected to the hub and caught up', () =>
    sync?.status.state === 'caught-up' ? 1 : 0,
  );
  counterFrom(
    registry,
    `${prefix}_sync_connect_failures_total`,
    'Connections to the hub that failed or dropped',
    () => sync?.status.failures ?? 0,
  );
}

export interface NodeOpsOptions {
  host: string;
  port: number;
  /** The node's own metrics; the sync metrics are added to it. */
  registry: Registry;
  /** Metric prefix: dns or edge. */
  prefix: string;
  store: NodeStore;
  sync: NodeSync | undefined;
}

/** The operations listener of a DNS or edge node: its metrics plus <prefix>_sync_*, and /readyz on the sync check. */
export function startNodeOps(o: NodeOpsOptions): Promise<OpsServer> {
  registerNodeSyncMetrics(o.registry, o.prefix, o.sync, o.store);
  return startOpsServer({
    host: o.host,
    port: o.port,
    registry: o.registry,
    checks: { sync: () => syncReadiness(o.sync, o.store) },
  });
}
