// Entry point of the control plane: opens the database, builds the API, listens, and shuts down cleanly on SIGTERM/SIGINT.
import { componentLogger, ensureNodeToken } from '@platform/shared';
import { loadConfig } from './config.js';
import { openDatabase } from './db/index.js';
import { build } from './app.js';
import { acquireDataDirLock } from './admin/data-dir-lock.js';
import { ConfigLog } from './config-log/index.js';
import { startSyncHub } from './sync/index.js';

const log = componentLogger('control-plane');

async function main(): Promise<void> {
  const config = loadConfig();
  // With PGlite the database belongs to this process alone: refuse to start beside a running admin CLI or control plane.
  const lock = config.databaseUrl ? null : acquireDataDirLock(config.dataDir, 'control-plane');
  const database = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const configLog = new ConfigLog(config.nsSets);
  const app = await build({ config, database, configLog });
  // The sync hub streams the config log to DNS and edge nodes (control-plane/README.md, "Sync").
  const syncHub = await startSyncHub({ host: config.syncHost, port: config.syncPort, pollMs: config.syncPollMs,
    token: ensureNodeToken(config.dataDir, config.nodeToken), db: database.db, configLog });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => { log.error('shutdown timed out'); process.exit(1); }, 10_000);
    force.unref();
    try {
      await syncHub.close();
      await app.close();
      await database.close();
    } finally {
      lock?.release();
    }
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  const address = await app.listen({ host: config.apiHost, port: config.apiPort });
  log.info({ address, driver: database.driver, dataDir: config.dataDir }, 'control plane listening');
}

main().catch((err: unknown) => {
  log.error({ err }, 'control plane failed to start');
  process.stderr.write(`control-plane: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
