// An edge node started as a user starts it (node --import tsx edge-node/src/main.ts) against a control plane process
// (or with no control plane, serving the snapshots its store was given), on free ports on 127.0.0.1 with its own
// DATA_DIR.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DomainSnapshot } from '@platform/shared/config';
import { openNodeStore } from '@platform/shared/node-store';
import { send } from '../../edge-node/src/testing/harness.js';
import { stopProcess } from '../helpers/child-process.js';
import { freePort, ROOT, type ControlPlaneProcess } from './sync-harness.js';

export interface EdgeNodeProcess {
  dataDir: string;
  /** The process started (with EDGE_WORKERS > 1, the cluster primary). */
  pid(): number;
  httpPort: number;
  httpsPort: number;
  /** Starts the process again on the same DATA_DIR and ports; `env` overrides (e.g. SYNC_URL of a hub that is down). */
  restart(env?: Record<string, string>): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

const CANNOT_LISTEN = /cannot listen on|EADDRINUSE/;

export async function waitUntil<T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > end)
      throw new Error(`timed out waiting for ${what}${lastErr ? `: ${(lastErr as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts the edge node process. With `cp` null it runs without sync and log shipping and serves `snapshots`, written
 * into its store first as the sync client would have.
 */
export async function startEdgeNodeProcess(
  cp: Pick<ControlPlaneProcess, 'syncUrl' | 'nodeToken' | 'apiUrl'> | null,
  env: Record<string, string> = {},
  snapshots: DomainSnapshot[] = [],
): Promise<EdgeNodeProcess> {
  const dataDir = mkdtempSync(join(tmpdir(), 'edge-node-e2e-'));
  if (snapshots.length > 0) {
    const store = openNodeStore(join(dataDir, 'edge-node'));
    snapshots.forEach((snapshot, i) =>
      store.apply({ version: i + 1, domain: snapshot.name, deleted: false, snapshot }),
    );
    await store.close();
  }
  // A port the caller chose (a CA's http-01 port) or a free one.
  let httpPort = env.EDGE_HTTP_PORT ? Number(env.EDGE_HTTP_PORT) : await freePort();
  let httpsPort = env.EDGE_HTTPS_PORT ? Number(env.EDGE_HTTPS_PORT) : await freePort();
  let proc!: ChildProcess;
  let out = '';
  const launch = async (extra: Record<string, string> = {}) => {
    proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'edge-node/src/main.ts')], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        NODE_ENV: 'test',
        LOG_LEVEL: 'warn',
        DATA_DIR: dataDir,
        EDGE_HTTP_PORT: String(httpPort),
        EDGE_HTTPS_PORT: String(httpsPort),
        SYNC_URL: cp?.syncUrl ?? 'off',
        NODE_TOKEN: cp?.nodeToken ?? '',
        CONTROL_PLANE_URL: cp?.apiUrl ?? 'off',
        EDGE_LOG_FLUSH_MS: '200',
        // Test origins are stubs on loopback (the edge refuses internal origins unless the operator allows them).
        ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
        ...env,
        ...extra,
      },
    });
    proc.stdout!.on('data', (d) => {
      out += d;
    });
    proc.stderr!.on('data', (d) => {
      out += d;
    });
    // An exit or a port it cannot bind ends the wait at once (a cluster primary forks its workers again instead of
    // exiting); the error carries the node's output.
    const failed = await waitUntil(
      'the edge node to listen',
      async () => {
        if (proc.exitCode !== null) return new Error(`edge node exited ${proc.exitCode}`);
        if (CANNOT_LISTEN.test(out)) return new Error('edge node could not listen');
        const res = await send(httpPort, 'probe.invalid', '/');
        return res.status === 421 ? null : undefined;
      },
      60_000,
    ).catch((err: Error) => err);
    if (failed) throw new Error(`${failed.message}\n--- edge node output ---\n${out.slice(-4000)}`);
  };
  // A port chosen free can be taken by another test before the node binds it: start again on fresh ones.
  const firstLaunch = async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await launch();
      } catch (err) {
        const portsOurs = !env.EDGE_HTTP_PORT && !env.EDGE_HTTPS_PORT;
        if (attempt >= 3 || !portsOurs || !CANNOT_LISTEN.test(out)) throw err;
        await stopProcess(proc, 'SIGKILL');
        [httpPort, httpsPort, out] = [await freePort(), await freePort(), ''];
      }
    }
  };
  const kill = async (signal: NodeJS.Signals = 'SIGTERM') => {
    // A worker stuck in a synchronous loop never runs its SIGTERM handler.
    const stuck = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await stopProcess(proc, signal);
    clearTimeout(stuck);
  };
  await firstLaunch();
  return {
    dataDir,
    pid: () => proc.pid!,
    get httpPort() {
      return httpPort;
    },
    get httpsPort() {
      return httpsPort;
    },
    kill,
    restart: launch,
    output: () => out,
    async stop() {
      await kill('SIGTERM');
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Creates the proxied A record `name` of `domain` through the API, its origin plain HTTP on 127.0.0.1:`port`. */
export async function addProxiedRecord(
  cp: Pick<ControlPlaneProcess, 'api'>,
  domain: string,
  name: string,
  port: number,
): Promise<void> {
  await cp.api('POST', `/domains/${domain}/records/`, {
    name,
    type: 'A',
    destination: '127.0.0.1',
    proxied: true,
    scheme: 'Http',
    port,
  });
}
