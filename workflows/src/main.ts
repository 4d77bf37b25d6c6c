// `npm run workflows`: runs the domain-lifecycle worker until SIGINT/SIGTERM.
import { componentLogger } from '@platform/shared';
import { loadConfig } from './config.js';
import { createWorker } from './worker.js';

const log = componentLogger('workflows');

async function main(): Promise<void> {
  const config = loadConfig();
  const { worker, connection } = await createWorker(config);
  log.info({ temporal: config.temporalAddress, namespace: config.temporalNamespace, resolvers: config.dnsResolvers, controlPlane: config.controlPlaneUrl }, 'worker polling');
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
