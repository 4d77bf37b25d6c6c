// Operator command line (`npm run admin -- …`): accounts, API keys, plans and overrides, domain members.
// It opens the database itself; with PGlite it refuses to run while the control plane holds DATA_DIR (see README).
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/index.js';
import { ConfigLog } from '../config-log/index.js';
import { acquireDataDirLock, DataDirLockedError } from './data-dir-lock.js';
import { COMMANDS, UsageError, type CommandContext } from './commands.js';

const USAGE = `usage: npm run admin -- <command>
  user create EMAIL [--name NAME]
  user deactivate EMAIL
  user activate EMAIL
  key create EMAIL [--read-only] [--expires never|30|90|365] [--name NAME]   (prints the key alone on stdout)
  key list EMAIL
  key revoke KEY_ID
  plan list
  plan show DOMAIN
  plan set DOMAIN PLAN_SLUG
  plan override DOMAIN FIELD VALUE
  plan clear-override DOMAIN FIELD
  member add DOMAIN EMAIL admin|editor|viewer
  member remove DOMAIN EMAIL`;

/** Exit codes: 0 done, 1 the command failed (not found, conflict, limit), 2 usage error, 3 the PGlite database is in use. */
async function runCli(argv: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  const [group, action, ...rest] = argv;
  const command = COMMANDS[`${group ?? ''} ${action ?? ''}`];
  if (!command) {
    err(group === undefined || group === 'help' || group === '--help' ? USAGE : `unknown command "${argv.join(' ')}"\n${USAGE}`);
    return 2;
  }
  const config = loadConfig();
  let lock: { release(): void } | null = null;
  try {
    lock = config.databaseUrl ? null : acquireDataDirLock(config.dataDir, 'admin CLI');
  } catch (e) {
    if (e instanceof DataDirLockedError) { err(`error: ${e.message}`); return 3; }
    throw e;
  }
  const database = await openDatabase({ dataDir: config.dataDir, databaseUrl: config.databaseUrl });
  const ctx: CommandContext = { db: database.db, configLog: new ConfigLog(config.nsSets), out };
  try {
    await command(ctx, rest);
    return 0;
  } catch (e) {
    if (e instanceof UsageError) { err(`error: ${e.message}\n${USAGE}`); return 2; }
    err(`error: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  } finally {
    await database.close();
    lock?.release();
  }
}

process.exitCode = await runCli(process.argv.slice(2), (l) => process.stdout.write(`${l}\n`), (l) => process.stderr.write(`${l}\n`));
