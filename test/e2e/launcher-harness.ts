// `npm start` as a user runs it, on ports and a DATA_DIR of the test's own: started, asked, stopped by a signal.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './dns-helpers.js';
import { freePort } from '../helpers/free-port.js';

export interface Launcher {
  proc: ChildProcess;
  dataDir: string;
  ports: Record<string, number>;
  env: Record<string, string>;
  /** Everything it printed, stdout and stderr. */
  output(): string;
  /** Resolves with the exit code once it has exited. */
  exited: Promise<number | null>;
  api<T>(method: string, path: string, body?: unknown): Promise<T>;
  key: string;
}

export { freePort };

/** Ports no default uses, chosen free now. */
export async function launcherPorts(): Promise<Record<string, number>> {
  const names = [
    'API_PORT',
    'SYNC_PORT',
    'DNS_PORT',
    'EDGE_HTTP_PORT',
    'EDGE_HTTPS_PORT',
    'DNS_METRICS_PORT',
    'EDGE_METRICS_PORT',
    'WORKER_METRICS_PORT',
    'TEMPORAL_PORT',
    'TEMPORAL_UI_PORT',
    'MAIL_PORT',
  ];
  const ports: Record<string, number> = {};
  for (const n of names) ports[n] = await freePort();
  return ports;
}

function admin(env: Record<string, string>, ...args: string[]): string {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'control-plane/src/admin/cli.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`admin ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** Runs `npm start` (or the launcher script itself) and waits for its ready summary. */
export async function startLauncher(opts: LauncherOptions): Promise<Launcher> {
  // A port chosen free can be taken by another test file before the launcher binds it; the launcher then names it
  // and exits. Fresh ports are chosen again, unless the test chose them itself.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startLauncherOnce(opts);
    } catch (err) {
      const raced = !opts.ports && err instanceof PortTakenError && attempt < 3;
      if (!raced) throw err;
    }
  }
}

interface LauncherOptions {
  name: string;
  ports?: Record<string, number>;
  extraEnv?: Record<string, string>;
  viaNpm?: boolean;
}

class PortTakenError extends Error {}

async function startLauncherOnce(opts: LauncherOptions): Promise<Launcher> {
  const dataDir = mkdtempSync(join(tmpdir(), `launcher-${opts.name}-`));
  const ports = opts.ports ?? (await launcherPorts());
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    // The closed network of a test: the worker's resolvers are a port where nothing answers.
    DNS_RESOLVERS: '127.0.0.1:9',
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    ...opts.extraEnv,
  };
  const { NODE_ENV: _omitted, ...parentEnv } = process.env;
  const argv = opts.viaNpm ? ['npm', ['start']] : [process.execPath, ['--import', 'tsx', 'scripts/start.ts']];
  const proc = spawn(argv[0] as string, argv[1] as string[], {
    cwd: ROOT,
    env: { ...parentEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  let ready = false;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      clearInterval(poll);
      killTree(proc.pid!);
      reject(new Error(`launcher ${opts.name} not ready in 180 s:\n${out.slice(-4000)}`));
    }, 180_000);
    const poll = setInterval(() => {
      if (out.includes('ready: every process is up')) {
        ready = true;
        clearInterval(poll);
        clearTimeout(timer);
        resolve();
      }
    }, 100);
    void exited.then((code) => {
      // After ready, an exit is the test's business (its own cleanup removes the directory,
      // possibly while orphaned children still write into it).
      if (ready) return;
      clearInterval(poll);
      clearTimeout(timer);
      rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
      const Failure = /is already in use/.test(out) ? PortTakenError : Error;
      reject(new Failure(`launcher ${opts.name} exited (${code}) before ready:\n${out.slice(-4000)}`));
    });
  });
  admin(env, 'user', 'create', `${opts.name}@example.org`);
  const key = admin(env, 'key', 'create', `${opts.name}@example.org`);
  const base = `http://127.0.0.1:${ports.API_PORT}`;
  return {
    proc,
    dataDir,
    ports,
    env,
    output: () => out,
    exited,
    key,
    async api<T>(method: string, path: string, body?: unknown): Promise<T> {
      const res = await fetch(base + path, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${text}`);
      return (text ? JSON.parse(text) : undefined) as T;
    },
  };
}

/** Pids of every process the launcher started (its descendants), read from /proc. */
export function descendants(pid: number): number[] {
  const r = spawnSync('ps', ['-e', '-o', 'pid=,ppid=,pgid='], { encoding: 'utf8' });
  const rows = r.stdout
    .trim()
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number));
  const found = new Set<number>([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [p, pp] of rows) {
      if (!found.has(p) && found.has(pp)) {
        found.add(p);
        grew = true;
      }
    }
  }
  found.delete(pid);
  return [...found];
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function removeLauncherDir(l: Launcher): void {
  rmSync(l.dataDir, { recursive: true, force: true, maxRetries: 5 });
}

/** After a failed test: the launcher and everything it started are killed, so nothing holds the test's pipes. */
export function killLauncher(l: Launcher): void {
  killTree(l.proc.pid!);
}

function killTree(root: number): void {
  for (const pid of [...descendants(root), root]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
