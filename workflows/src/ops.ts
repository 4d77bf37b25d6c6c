// The worker's operations endpoint (WORKER_METRICS_PORT): /healthz, /readyz (connected to Temporal and polling) and
// /metrics: the Temporal SDK's own metrics (workflow and activity task latencies, poll results, slots), which its
// Core runtime exports on a private loopback port, appended to prom-client's process metrics.
import { createServer } from 'node:net';
import type { Worker } from '@temporalio/worker';
import { createRegistry, startOpsServer, type OpsServer } from '@platform/shared/ops';

/** What /readyz reports: the worker once created, or why it is not yet. */
export interface WorkerStatus {
  worker?: Worker;
  /** The last failure to connect to Temporal (cleared once connected). */
  lastError?: string;
}

export interface WorkerOpsOptions {
  host: string;
  port: number;
  temporalAddress: string;
  taskQueue: string;
  status: WorkerStatus;
  /** Where the SDK's Prometheus exporter listens (coreMetricsAddress()); undefined: no SDK metrics. */
  coreMetrics?: string;
}

/** A free loopback address for the SDK's exporter (it must be bound before the first connection: Runtime.install). */
export async function coreMetricsAddress(): Promise<string> {
  const port = await new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  return `127.0.0.1:${port}`;
}

export function startWorkerOps(o: WorkerOpsOptions): Promise<OpsServer> {
  return startOpsServer({
    host: o.host,
    port: o.port,
    registry: createRegistry(),
    checks: {
      temporal: () => {
        const { worker, lastError } = o.status;
        if (!worker) {
          const why = lastError ? `cannot reach Temporal at ${o.temporalAddress}: ${lastError}` : 'connecting';
          return { ready: false, detail: why };
        }
        const state = worker.getState();
        return state === 'RUNNING'
          ? { ready: true, detail: `polling task queue ${o.taskQueue} at ${o.temporalAddress}` }
          : { ready: false, detail: `worker is ${state.toLowerCase()}` };
      },
    },
    extraMetrics: o.coreMetrics
      ? async () => {
          // The exporter answers once the runtime runs; before that there is nothing of the SDK to show.
          const res = await fetch(`http://${o.coreMetrics}/metrics`).catch(() => undefined);
          return res?.ok ? res.text() : '';
        }
      : undefined,
  });
}
