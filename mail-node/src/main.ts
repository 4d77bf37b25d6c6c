// Entry point of `npm run mail-node`: the SMTP server of email routing (server.ts).
import { onShutdownSignals } from '@platform/shared/node-process';
import { loadConfig, type MailNodeConfig } from './config.js';
import { log, startMailNode } from './server.js';

let config: Readonly<MailNodeConfig>;
try {
  config = loadConfig();
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}

const node = await startMailNode(config);
log.info({ host: config.host, port: node.port, controlPlane: config.controlPlaneUrl }, 'mail node listening');
// SIGUSR2: the process's memory in the log (after a full GC when node runs with --expose-gc), for operators and the bench.
process.on('SIGUSR2', () => {
  (globalThis as { gc?: () => void }).gc?.();
  log.info({ memory: process.memoryUsage(), connections: node.connections() }, 'mail node memory');
});
onShutdownSignals(
  () => node.close(),
  log,
  (code) => process.exit(code),
);
