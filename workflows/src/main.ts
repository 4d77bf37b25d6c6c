// `npm run workflows`: runs the domain-lifecycle worker until SIGINT/SIGTERM.
import { Runtime, type LogLevel, type LogMetadata } from '@temporalio/worker';
import { componentLogger } from '@platform/shared';
import { loadConfig } from './config.js';
import { createWorker } from './worker.js';
import { coreMetricsAddress, startWorkerOps, type WorkerStatus } from './ops.js';

const log = componentLogger('workflows');

/** The SDK's own messages (worker states, ~30 lines of webpack output per bundle) go to our logger one level down:
 *  its INFO is our debug, so a terminal under `npm start` shows only what needs attention. */
function installSdkRuntime(coreMetrics: string | undefined): void {
  const sdk = componentLogger('temporal-sdk');
  const to = { TRACE: 'trace', DEBUG: 'trace', INFO: 'debug', WARN: 'warn', ERROR: 'error' } as const;
  const emit = (level: LogLevel, message: string, meta?: LogMetadata) => sdk[to[level]](meta ?? {}, message);
  Runtime.install({
    logger: {
      log: emit,
      trace: (m, meta) => emit('TRACE', m, meta),
      debug: (m, meta) => emit('DEBUG', m, meta),
      info: (m, meta) => emit('INFO', m, meta),
      warn: (m, meta) => emit('WARN', m, meta),
      error: (m, meta) => emit('ERROR', m, meta),
    },
    // The SDK's metrics (task latencies, polls, slots) on a private loopback port; /metrics appends them.
    ...(coreMetrics
      ? {
          telemetryOptions: {
            metrics: {
              prometheus: { bindAddress: coreMetrics, countersTotalSuffix: true, useSecondsForDurations: true },
            },
          },
        }
      : {}),
  });
}

/** Temporal may still be starting (npm start launches it first, an operator may not): retry for a while. */
async function connectWithRetry<T>(
  connect: () => Promise<T>,
  forMs: number,
  onError: (reason: string) => void,
): Promise<T> {
  const deadline = Date.now() + forMs;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5000)) {
    try {
      return await connect();
    } catch (err) {
      if (Date.now() + delay > deadline) throw err;
      const reason = err instanceof Error ? err.message : String(err);
      onError(reason);
      log.warn({ err: reason }, 'Temporal not reachable yet; retrying');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const coreMetrics = config.metricsPort ? await coreMetricsAddress() : undefined;
  installSdkRuntime(coreMetrics);
  const status: WorkerStatus = {};
  const ops = config.metricsPort
    ? await startWorkerOps({
        host: config.metricsHost,
        port: config.metricsPort,
        temporalAddress: config.temporalAddress,
        taskQueue: config.taskQueue,
        status,
        coreMetrics,
      })
    : undefined;
  const { worker, connection } = await connectWithRetry(
    () => createWorker(config),
    60_000,
    (reason) => {
      status.lastError = reason;
    },
  );
  status.worker = worker;
  status.lastError = undefined;
  // The terminal's Ctrl-C (SIGINT) and a launcher's SIGTERM may both arrive: shut down once.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'worker draining');
    worker.shutdown();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  const running = worker.run();
  log.info(
    {
      temporal: config.temporalAddress,
      namespace: config.temporalNamespace,
      taskQueue: config.taskQueue,
      resolvers: config.dnsResolvers,
      controlPlane: config.controlPlaneUrl,
      metricsPort: ops?.port,
    },
    'worker polling',
  );
  await running;
  await ops?.close();
  await connection.close();
  process.exit(0);
}

main().catch((err: unknown) => {
  log.error({ err }, 'worker failed');
  process.exit(1);
});
