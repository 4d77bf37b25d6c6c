// `npm run workflows`: runs the domain-lifecycle worker until SIGINT/SIGTERM.
import { componentLogger } from '@platform/shared';
import { loadConfig } from './config.js';
import { createWorker } from './worker.js';

const log = componentLogger('workflows');

/** Temporal may still be starting (npm start launches it first, an operator may not): retry for a while. */
async function connectWithRetry<T>(connect: () => Promise<T>, forMs: number): Promise<T> {
  const deadline = Date.now() + forMs;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5000)) {
    try {
      return await connect();
    } catch (err) {
      if (Date.now() + delay > deadline) throw err;
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'Temporal not reachable yet; retrying');
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const { worker, connection } = await connectWithRetry(() => createWorker(config), 60_000);
  log.info(
    {
      temporal: config.temporalAddress,
      namespace: config.temporalNamespace,
      resolvers: config.dnsResolvers,
      controlPlane: config.controlPlaneUrl,
    },
    'worker polling',
  );
  const stop = () => worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  await worker.run();
  await connection.close();
}

main().catch((err: unknown) => {
  log.error({ err }, 'worker failed');
  process.exit(1);
});
