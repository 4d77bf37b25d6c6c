// Operator command line (`npm run admin -- …`): accounts, API keys, plans and overrides, domain members.
// It opens the database itself; with PGlite, while the control plane holds DATA_DIR, it sends the command line to the
// running control plane through its admin socket instead (DATA_DIR/admin.sock), so both never open PGlite at once.
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/index.js';
import { createConfigLog } from '../config-log/index.js';
import { acquireDataDirLock, DataDirLockedError } from './data-dir-lock.js';
import { executeCommand, findCommand, type CommandContext } from './commands.js';
import { sendToAdminSocket } from './socket.js';

/** Exit codes: 0 done, 1 the command failed (not found, conflict, limit), 2 usage error, 3 the PGlite database is in use. */
async function runCli(argv: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  if (!findCommand(argv, err)) return 2;
  const config = loadConfig();
  let lock: { release(): void } | null = null;
  try {
    lock = config.databaseUrl ? null : acquireDataDirLock(config.dataDir, 'admin CLI');
  } catch (e) {
    if (!(e instanceof DataDirLockedError)) throw e;
    const forwarded = e.holder.owner === 'control-plane' ? await sendToAdminSocket(config.dataDir, argv) : null;
    if (!forwarded) {
      err(`error: ${e.message}`);
      return 3;
    }
    forwarded.stdout.forEach(out);
    forwarded.stderr.forEach(err);
    return forwarded.code;
  }
  const database = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const ctx: CommandContext = { db: database.db, configLog: createConfigLog(config), config, out };
  try {
    return await executeCommand(ctx, argv, err);
  } finally {
    await database.close();
    lock?.release();
  }
}

process.exitCode = await runCli(
  process.argv.slice(2),
  (l) => process.stdout.write(`${l}\n`),
  (l) => process.stderr.write(`${l}\n`),
);
