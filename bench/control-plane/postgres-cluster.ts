// A throwaway Postgres cluster for one benchmark run, started as .ci/run starts its own: initdb into a temp dir
// (trust auth), pg_ctl on a free port on 127.0.0.1 with the socket in that dir; stop() removes everything.
// As root, the server runs as the `postgres` user (it refuses root). Durability settings are Postgres's defaults
// (fsync on), unlike .ci/run's fsync=off: the comparison is with PowerDNS's SQLite, which syncs its WAL on commit.
import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/e2e/sync-harness.js';

export interface PostgresCluster {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  version: string;
  /** The postmaster's pid: its process tree is the whole cluster. */
  pid: number;
  stop(): Promise<void>;
}

function pgBin(): string {
  const base = '/usr/lib/postgresql';
  const versions = readdirSync(base).sort((a, b) => Number(a) - Number(b));
  if (versions.length === 0) throw new Error(`no Postgres under ${base}`);
  return join(base, versions.at(-1)!, 'bin');
}

export async function startPostgresCluster(): Promise<PostgresCluster> {
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), 'bench-pg-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    chownSync(dir, uid, gid);
  }
  const run = (tool: string, args: string[]) => {
    const argv = asRoot ? ['runuser', '-u', 'postgres', '--', join(bin, tool), ...args] : [join(bin, tool), ...args];
    const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed: ${r.stderr || r.stdout}`);
    return r.stdout;
  };
  const data = join(dir, 'data');
  const port = await freePort();
  let started = false;
  const stop = async () => {
    try {
      if (started) run('pg_ctl', ['-D', data, 'stop', '-m', 'fast']);
    } finally {
      started = false;
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres']);
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100`;
    run('pg_ctl', ['-D', data, '-o', opts, '-l', join(dir, 'log'), 'start', '-w']);
    started = true;
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const version = run('postgres', ['--version']).trim();
    return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, version, pid, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
