// Entry point of the control plane: opens the database, builds the API, listens, and shuts down cleanly on SIGTERM/SIGINT.
import { componentLogger } from '@platform/shared';
import { ensureNodeToken } from '@platform/shared/node-token';
import { loadConfig } from './config.js';
import { openDatabase } from './db/index.js';
import { build } from './app.js';
import { acquireDataDirLock } from './admin/data-dir-lock.js';
import { startAdminSocket } from './admin/socket.js';
import { createConfigLog } from './config-log/index.js';
import { startSyncHub, type SyncHub } from './sync/index.js';
import { WorkflowOutbox } from './workflow-outbox/outbox.js';
import { startWorkflowDispatcher } from './workflow-outbox/dispatcher.js';

const log = componentLogger('control-plane');

async function main(): Promise<void> {
  const config = loadConfig();
  // With PGlite the database belongs to this process alone: refuse to start beside a running admin CLI or control plane.
  const lock = config.databaseUrl ? null : acquireDataDirLock(config.dataDir, 'control-plane');
  const database = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const configLog = createConfigLog(config);
  const workflowOutbox = new WorkflowOutbox();
  // The hub starts after the API is built; /readyz and /metrics read it from here once it runs.
  const started: { syncHub?: SyncHub } = {};
  const app = await build({ config, database, configLog, workflowOutbox, syncHub: () => started.syncHub });
  // The sync hub streams the config log to DNS and edge nodes (control-plane/README.md, "Sync").
  // With PGlite the admin CLI cannot open the database while we run; it sends its commands through this socket.
  const adminSocket = lock
    ? await startAdminSocket({ dataDir: config.dataDir, db: database.db, configLog }).catch((err: unknown) => {
        log.warn(
          { err },
          'admin socket unavailable (a DATA_DIR path too long for a Unix socket?): the admin CLI needs the control plane stopped',
        );
        return null;
      })
    : null;
  const syncHub = await startSyncHub({
    host: config.syncHost,
    port: config.syncPort,
    pollMs: config.syncPollMs,
    token: ensureNodeToken(config.dataDir, config.nodeToken),
    db: database.db,
    configLog,
    tombstoneRetentionMs: config.syncTombstoneRetentionMs,
    compactAfterDeltas: config.syncCompactAfterDeltas,
  });
  started.syncHub = syncHub;
  // Starts the workflows that writes recorded (control-plane/README.md, "Workflows"); not without TEMPORAL_ADDRESS.
  const dispatcher = config.temporal.address
    ? startWorkflowDispatcher({
        db: database.db,
        outbox: workflowOutbox,
        temporal: config.temporal,
        log: componentLogger('control-plane.workflow-dispatcher'),
      })
    : null;

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error('shutdown timed out');
      process.exit(1);
    }, 10_000);
    force.unref();
    try {
      await adminSocket?.close();
      await syncHub.close();
      await app.close();
      await dispatcher?.close();
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
