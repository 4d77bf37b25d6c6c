// Admin commands (npm run admin -- …) against a lifecycle harness's control plane, as an operator runs them: through
// its admin socket on PGlite (only that process may open the database), or on Postgres with a connection of its own
// (closed by the returned close(), before the harness drops the database).
import assert from 'node:assert/strict';
import { executeCommand } from '../../control-plane/src/admin/commands.js';
import { sendToAdminSocket } from '../../control-plane/src/admin/socket.js';
import { openDatabase } from '../../control-plane/src/db/index.js';
import { createConfigLog } from '../../control-plane/src/config-log/index.js';
import { loadConfig } from '../../control-plane/src/config.js';
import type { Lifecycle } from './workflows-harness.js';

export interface LifecycleAdmin {
  /** Runs the command, asserts it exited 0, and answers its output. */
  run(...argv: string[]): Promise<string>;
  close(): Promise<void>;
}

/** `env`: the control plane's settings the commands depend on (e.g. the billing day). */
export function lifecycleAdmin(lc: Lifecycle, env: Record<string, string> = {}): LifecycleAdmin {
  let direct: Awaited<ReturnType<typeof openDatabase>> | null = null;
  return {
    async run(...argv) {
      if (!lc.databaseUrl) {
        const r = await sendToAdminSocket(lc.dataDir, argv);
        assert.ok(r, 'the admin socket answers');
        assert.equal(r.code, 0, `${argv.join(' ')}: ${r.stderr.join('\n')}`);
        return r.stdout.join('\n');
      }
      const config = loadConfig({ DATA_DIR: lc.dataDir, DATABASE_URL: lc.databaseUrl, ...env });
      direct ??= await openDatabase({ dataDir: lc.dataDir, databaseUrl: lc.databaseUrl });
      const out: string[] = [];
      const err: string[] = [];
      const code = await executeCommand(
        { db: direct.db, configLog: createConfigLog(config), out: (l) => out.push(l), billing: config.billing },
        argv,
        (l) => err.push(l),
      );
      assert.equal(code, 0, `${argv.join(' ')}: ${err.join('\n')}`);
      return out.join('\n');
    },
    async close() {
      await direct?.close();
      direct = null;
    },
  };
}
