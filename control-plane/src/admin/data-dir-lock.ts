// A pid lock file in DATA_DIR: with PGlite only one process may open the database, so the control plane and the
// admin CLI refuse to run at the same time on one DATA_DIR, with a clear message instead of a corrupted store.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const LOCK_FILE = 'pglite.lock';

export class DataDirLockedError extends Error {
  constructor(
    readonly holder: { pid: number; owner: string },
    dataDir: string,
  ) {
    super(
      `the PGlite database in ${dataDir} is in use by ${holder.owner} (pid ${holder.pid}); with PGlite only one process may ` +
        'open it: stop that process first (or point DATABASE_URL at a Postgres server, which many processes can share)',
    );
    this.name = 'DataDirLockedError';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock or throws DataDirLockedError; a lock left by a dead process is taken over. */
export function acquireDataDirLock(dataDir: string, owner: string): { release(): void } {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, LOCK_FILE);
  const mine = JSON.stringify({ pid: process.pid, owner });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, mine, { flag: 'wx' });
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        try {
          if (readFileSync(path, 'utf8') === mine) rmSync(path, { force: true });
        } catch {
          /* already gone */
        }
      };
      process.once('exit', release);
      return { release };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder: { pid: number; owner: string } | undefined;
      try {
        holder = JSON.parse(readFileSync(path, 'utf8')) as { pid: number; owner: string };
      } catch {
        holder = undefined;
      }
      if (holder && typeof holder.pid === 'number' && holder.pid !== process.pid && alive(holder.pid))
        throw new DataDirLockedError(holder, dataDir);
      rmSync(path, { force: true }); // stale: its process is gone
    }
  }
  throw new Error(`could not take the lock ${path}`);
}
