// The control plane's readiness (GET /readyz): its database answers, Temporal answers (when configured), and the
// sync hub listens (when this process runs one).
import type { FastifyInstance } from 'fastify';
import { sql } from 'drizzle-orm';
import type { ReadinessCheck } from '@platform/shared/ops';
import type { SyncHub } from '../sync/index.js';

const reason = (err: unknown) => (err instanceof Error ? err.message : String(err));

export function controlPlaneChecks(
  app: FastifyInstance,
  syncHub: (() => SyncHub | undefined) | undefined,
): Record<string, ReadinessCheck> {
  const checks: Record<string, ReadinessCheck> = {
    database: async () => {
      try {
        await app.db.execute(sql`SELECT 1`);
        return { ready: true, detail: 'answers' };
      } catch (err) {
        return { ready: false, detail: `database does not answer: ${reason(err)}` };
      }
    },
    temporal: async () => {
      if (!app.temporal.enabled)
        return { ready: true, detail: 'not configured (TEMPORAL_ADDRESS is empty): workflows are not started' };
      try {
        await app.temporal.ping();
        return { ready: true, detail: `answers at ${app.config.temporal.address}` };
      } catch (err) {
        return { ready: false, detail: `cannot reach Temporal at ${app.config.temporal.address}: ${reason(err)}` };
      }
    },
  };
  if (syncHub)
    checks.sync = () => {
      const hub = syncHub();
      return hub
        ? {
            ready: true,
            detail: `hub listening on port ${hub.port}, ${hub.nodes} nodes connected, version ${hub.head}`,
          }
        : { ready: false, detail: 'the sync hub has not started yet' };
    };
  return checks;
}
