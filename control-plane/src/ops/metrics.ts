// The control plane's Prometheus metrics: requests and latencies per route, the config log's head, the sync hub
// (connections, published version, each node's lag) and the workflow outbox's backlog.
import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, type Registry } from 'prom-client';
import { sql } from 'drizzle-orm';
import { createRegistry, gaugeFrom } from '@platform/shared/ops';
import { rowsOf } from '../db/migrate.js';
import type { SyncHub } from '../sync/index.js';

/** A route label for requests no route matched (their paths are unbounded: never a label). */
const UNMATCHED = 'unmatched';

export function controlPlaneRegistry(app: FastifyInstance, syncHub: () => SyncHub | undefined): Registry {
  const registry = createRegistry();
  const labelNames = ['method', 'route', 'status_code'];
  const requests = new Counter({
    name: 'control_plane_http_requests_total',
    help: 'API requests answered, per method, route template and status',
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'control_plane_http_request_duration_seconds',
    help: 'Time from receiving a request to sending its response, per method, route template and status',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  app.addHook('onResponse', async (request, reply) => {
    const labels = {
      method: request.method,
      route: request.routeOptions.url ?? UNMATCHED,
      status_code: String(reply.statusCode),
    };
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
  });

  gaugeFrom(registry, 'control_plane_config_log_head_version', 'Highest version in the config log', () =>
    app.configLog.head(app.db),
  );
  gaugeFrom(
    registry,
    'control_plane_workflow_outbox_backlog',
    'Workflow starts recorded and not yet taken by Temporal',
    async () => {
      const result = await app.db.execute(sql`SELECT count(*) AS n FROM workflow_outbox`);
      return Number(rowsOf<{ n: string | number }>(result)[0]?.n ?? 0);
    },
  );
  gaugeFrom(
    registry,
    'control_plane_sync_connected_nodes',
    'Nodes connected to the sync hub',
    () => syncHub()?.nodes ?? 0,
  );
  gaugeFrom(
    registry,
    'control_plane_sync_published_version',
    'Highest config-log version the sync hub has sent to live nodes',
    () => syncHub()?.head ?? 0,
  );
  gaugeFrom(
    registry,
    'control_plane_sync_node_lag_versions',
    'Versions published by the hub that a connected node has not reported applying, per node',
    async () => {
      const hub = syncHub();
      if (!hub) return [];
      const { head, nodes } = await hub.connectedNodes();
      return nodes.map((n) => [{ node: n.node }, Math.max(0, head - n.version)] as const);
    },
    ['node'],
  );
  return registry;
}
