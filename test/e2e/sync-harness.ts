// Processes for the sync end-to-end tests and the propagation benchmark: a control plane and DNS nodes started as a
// user starts them (node --import tsx …/main.ts), on free ports on 127.0.0.1, each with its own DATA_DIR.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openNodeStore } from '@platform/shared/node-store';
import { stopProcess } from '../helpers/child-process.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { freePort } from '../helpers/free-port.js';

export { freePort };

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** CHILD_CPU_PROF_DIR: every child started here writes a V8 CPU profile there when it exits (bench profiling). */
const profileArgs = process.env.CHILD_CPU_PROF_DIR
  ? ['--cpu-prof', `--cpu-prof-dir=${process.env.CHILD_CPU_PROF_DIR}`]
  : [];

function tsx(script: string, args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [...profileArgs, '--import', 'tsx', join(ROOT, script), ...args], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms = 60_000,
  proc?: ChildProcess,
  output?: () => string,
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    if (proc && proc.exitCode !== null)
      throw new Error(`${what}: process exited with ${proc.exitCode}\n${output?.() ?? ''}`);
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${output?.() ?? ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface ControlPlaneProcess {
  apiUrl: string;
  syncUrl: string;
  key: string;
  nodeToken: string;
  dataDir: string;
  /** Calls the API with the key; a body is sent as JSON. Throws unless the status is `expect` (default 200). */
  api<T = unknown>(method: string, path: string, body?: unknown, expect?: number): Promise<T>;
  /** Runs the admin CLI (only while the control plane is stopped when the database is PGlite); returns stdout. */
  cli(...args: string[]): string;
  /** Stops the process, runs `between` (e.g. admin CLI commands), and starts it again on the same ports and data. */
  restart(between?: () => void): Promise<void>;
  stop(): Promise<void>;
}

/** Creates a user and key with the admin CLI, then starts the control plane (API + sync hub) and waits until both answer. */
export async function startControlPlane(
  label = 'sync',
  env: Record<string, string> = {},
): Promise<ControlPlaneProcess> {
  const tdb: TestDatabase = await createTestDatabase(label);
  const cli = (...args: string[]) => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(ROOT, 'control-plane/src/admin/cli.ts'), ...args], {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'warn', ...tdb.env },
      encoding: 'utf8',
    });
    if (r.status !== 0) throw new Error(`admin ${args.join(' ')} failed: ${r.stderr}`);
    return r.stdout.trim();
  };
  cli('user', 'create', 'sync-owner@example.org');
  const key = cli('key', 'create', 'sync-owner@example.org').split('\n').pop()!.trim();
  // Ports given in `env` are used (a node started before its hub knows where the hub will be).
  const apiPort = env.API_PORT ? Number(env.API_PORT) : await freePort();
  const syncPort = env.SYNC_PORT ? Number(env.SYNC_PORT) : await freePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  let proc: ChildProcess | undefined;
  const halt = async () => {
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc!.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  };
  const launch = async () => {
    proc = tsx('control-plane/src/main.ts', [], {
      ...tdb.env,
      API_PORT: String(apiPort),
      SYNC_PORT: String(syncPort),
      SYNC_POLL_MS: '1000',
      RATE_LIMIT_PER_MINUTE: '1000000',
      // Test origins are stubs on loopback (the platform refuses internal origins unless the operator allows them).
      ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
      ...env,
    });
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
    });
    proc.stderr!.on('data', (d) => {
      out += d;
    });
    await waitFor(
      'the control plane API',
      async () =>
        (await fetch(`${apiUrl}/domains/`, { headers: { authorization: `Bearer ${key}` } })).status === 200
          ? true
          : undefined,
      90_000,
      proc,
      () => out,
    );
  };
  const api: ControlPlaneProcess['api'] = async (method, path, body, expect = 200) => {
    const res = await fetch(`${apiUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as never;
  };
  const stop = async () => {
    await halt();
    await tdb.drop();
  };
  try {
    await launch();
  } catch (err) {
    await stop();
    throw err;
  }
  const nodeToken = env.NODE_TOKEN ?? readFileSync(join(tdb.dataDir, 'node-token'), 'utf8').trim();
  return {
    apiUrl,
    syncUrl: `ws://127.0.0.1:${syncPort}`,
    key,
    nodeToken,
    dataDir: tdb.dataDir,
    api,
    cli,
    stop,
    async restart(between) {
      await halt();
      between?.();
      await launch();
    },
  };
}

export interface DnsNodeProcess {
  dataDir: string;
  dnsPort: number;
  proc: ChildProcess;
  /** Starts the process again on the same DATA_DIR and port (after kill). */
  restart(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** The node's LMDB state: domain → records as [id, name, type, destination, ttl, proxied, mx_priority], by id. */
  readState(): NodeState;
  stop(): Promise<void>;
}

export type NodeState = Record<string, Array<[number, string, string, string, number, boolean, number]>>;

/** Starts `dns-server/src/main.ts` with its own DATA_DIR, syncing from the control plane's hub. */
export async function startDnsNode(cp: ControlPlaneProcess, env: Record<string, string> = {}): Promise<DnsNodeProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sync-dns-node-'));
  const dnsPort = await freePort();
  let proc!: ChildProcess;
  let out = '';
  const launch = async () => {
    out = '';
    proc = tsx('dns-server/src/main.ts', [], {
      DATA_DIR: dataDir,
      DNS_PORT: String(dnsPort),
      SYNC_URL: cp.syncUrl,
      NODE_TOKEN: cp.nodeToken,
      DNS_WORKERS: '1',
      ...env,
    });
    proc.stdout!.on('data', (d) => {
      out += d;
    });
    proc.stderr!.on('data', (d) => {
      out += d;
    });
    // The store exists once the process has opened it; serving starts right after.
    await waitFor(
      'the dns-server',
      async () => (existsSync(join(dataDir, 'dns-node')) ? true : undefined),
      60_000,
      proc,
      () => out,
    );
  };
  const kill = (signal: NodeJS.Signals = 'SIGKILL') => stopProcess(proc, signal);
  await launch();
  return {
    dataDir,
    dnsPort,
    get proc() {
      return proc;
    },
    restart: launch,
    kill,
    readState: () => readNodeState(join(dataDir, 'dns-node')),
    async stop() {
      await kill('SIGTERM');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Reads a node's LMDB store (another process may be writing it: LMDB readers see the last committed state). */
export function readNodeState(path: string): NodeState {
  const store = openNodeStore(path);
  try {
    const state: NodeState = {};
    for (const domain of store.domains().sort()) {
      const s = store.getSnapshot(domain)!;
      state[domain] = s.zone.records
        .map((r) => [r.id, r.name, r.type, r.destination, r.ttl, r.proxied, r.mxPriority] as NodeState[string][number])
        .sort((a, b) => a[0] - b[0]);
    }
    return state;
  } finally {
    void store.close();
  }
}

interface ApiRecord {
  id: number;
  name: string;
  type: string;
  destination: string;
  ttl: number;
  proxied: boolean;
  mx_priority?: number;
}

/** The control plane's state in the same shape, through the API. */
export async function readControlPlaneState(cp: ControlPlaneProcess): Promise<NodeState> {
  const domains = await cp.api<Array<{ name: string }>>('GET', '/domains/');
  const state: NodeState = {};
  for (const { name } of [...domains].sort((a, b) => a.name.localeCompare(b.name))) {
    const records = await cp.api<ApiRecord[]>('GET', `/domains/${name}/records/`);
    state[name] = records
      .map(
        (r) => [r.id, r.name, r.type, r.destination, r.ttl, r.proxied, r.mx_priority ?? 0] as NodeState[string][number],
      )
      .sort((a, b) => a[0] - b[0]);
  }
  return state;
}

/** Waits until every node's store equals the control plane's state; returns that state. */
export async function waitConverged(cp: ControlPlaneProcess, nodes: DnsNodeProcess[], ms = 30_000): Promise<NodeState> {
  const want = await readControlPlaneState(cp);
  const wantJson = JSON.stringify(want);
  let last = '';
  await waitFor(
    'the nodes to converge',
    async () => {
      const states = nodes.map((n) => JSON.stringify(n.readState()));
      last = states.find((s) => s !== wantJson) ?? '';
      return states.every((s) => s === wantJson) ? true : undefined;
    },
    ms,
    undefined,
    () => `want ${wantJson.slice(0, 2000)}\ngot ${last.slice(0, 2000)}`,
  );
  return want;
}
