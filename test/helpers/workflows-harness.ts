// End-to-end harness of the domain lifecycle: one Temporal dev server per test file (the provisioned CLI as an
// existing executable), a stub internet DNS, the control plane and the workflows worker started as a user starts
// them (node --import tsx …/main.ts) on free ports, with short durations so timers fire in seconds.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ensureNodeToken } from '@platform/shared/node-token';
import { openDatabase } from '../../control-plane/src/db/index.js';
import { createUser } from '../../control-plane/src/admin/users.js';
import { createApiKey } from '../../control-plane/src/auth/api-keys.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { startStubDns, type StubDns } from './stub-dns.js';
import { freePort } from '../e2e/sync-harness.js';
import { ScriptProcess } from './child-process.js';
import { startTemporalDevServer } from './temporal-dev-server.js';

/** Polls `probe` until it returns a value (not undefined); the message says what was awaited and what was last seen. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, ms = 45_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export interface ApiResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface Lifecycle {
  dns: StubDns;
  /** A second resolver (DNS_RESOLVERS lists both) for propagation cases; usually kept equal to `dns`. */
  dns2: StubDns;
  /** The Temporal dev server (throws while a `temporalDown` lifecycle has not started it). */
  readonly temporal: TestWorkflowEnvironment;
  apiUrl: string;
  dataDir: string;
  /** The test database's URL on Postgres (TEST_DATABASE_URL); undefined with PGlite (DATA_DIR/pglite). */
  databaseUrl: string | undefined;
  /** Calls the public API with the owner's key. */
  api<T = any>(method: string, path: string, body?: unknown): Promise<ApiResponse<T>>;
  /** Calls the /internal API with the node token (as the worker and operators do). */
  internal<T = any>(method: string, path: string, body?: unknown): Promise<ApiResponse<T>>;
  startWorker(): Promise<void>;
  /** SIGTERM (a graceful stop) unless another signal is given (SIGKILL: the worker dies where it is). */
  stopWorker(signal?: NodeJS.Signals): Promise<void>;
  workerOutput(): string;
  /** `temporalDown`: starts the Temporal server on the address the control plane was given, then the worker. */
  startTemporal(): Promise<void>;
  /** Stops the control plane (SIGTERM) and starts it again on the same port and data. */
  restartControlPlane(): Promise<void>;
  controlPlaneOutput(): string;
  close(): Promise<void>;
}

export interface LifecycleOptions {
  /** Nothing listens on TEMPORAL_ADDRESS and no worker runs until startTemporal(). */
  temporalDown?: boolean;
  /** Added to the worker's environment (e.g. WORKER_METRICS_PORT). */
  workerEnv?: Record<string, string>;
  /** A stub already started to be `dns` (one that another process, e.g. Pebble, asks too); closed with the rest. */
  dns?: StubDns;
}

export async function startLifecycle(
  label: string,
  cpEnv: Record<string, string> = {},
  opts: LifecycleOptions = {},
): Promise<Lifecycle> {
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    return await launch(label, cpEnv, opts, cleanups);
  } catch (err) {
    // Nothing may outlive a failed start (a Temporal server left running would keep the test process alive).
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    throw err;
  }
}

async function launch(
  label: string,
  cpEnv: Record<string, string>,
  opts: LifecycleOptions,
  cleanups: Array<() => Promise<unknown>>,
): Promise<Lifecycle> {
  const tdb: TestDatabase = await createTestDatabase(label);
  cleanups.push(() => tdb.drop());
  // The Temporal server starts while the account and key are written (in-process, before the control plane owns
  // the database: with PGlite only one process may open it).
  const temporalPort = opts.temporalDown ? await freePort() : undefined;
  const [started, key] = await Promise.all([
    opts.temporalDown ? undefined : startTemporalDevServer(temporalPort),
    (async () => {
      const database = await openDatabase({ dataDir: tdb.dataDir, databaseUrl: tdb.databaseUrl });
      try {
        const user = await createUser(database.db, `${label}@example.org`);
        return (await createApiKey(database.db, user.id)).key;
      } finally {
        await database.close();
      }
    })(),
  ]);
  let temporal = started;
  cleanups.push(async () => temporal?.teardown());
  const temporalAddress = temporal?.address ?? `127.0.0.1:${temporalPort}`;
  const dns = opts.dns ?? (await startStubDns());
  cleanups.push(() => dns.close());
  const dns2 = await startStubDns();
  cleanups.push(() => dns2.close());
  const apiPort = await freePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const cp = new ScriptProcess('control-plane/src/main.ts', () => ({
    ...tdb.env,
    API_PORT: String(apiPort),
    SYNC_PORT: String(0),
    RATE_LIMIT_PER_MINUTE: '100000',
    TEMPORAL_ADDRESS: temporalAddress,
    ...cpEnv,
  }));
  const call = async (
    headers: Record<string, string>,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<ApiResponse> => {
    const res = await fetch(`${apiUrl}${path}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };
  const api = (method: string, path: string, body?: unknown) =>
    call({ authorization: `Bearer ${key}` }, method, path, body);

  // The node token is generated up front so the control plane and the worker (which bundles its workflow code
  // for a while) start in parallel.
  const nodeToken = ensureNodeToken(tdb.dataDir);
  const worker = new ScriptProcess('workflows/src/main.ts', () => ({
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    DNS_RESOLVERS: `${dns.address},${dns2.address}`,
    DNS_TIMEOUT_MS: '1000',
    CONTROL_PLANE_URL: apiUrl,
    NODE_TOKEN: nodeToken,
    DATA_DIR: tdb.dataDir,
    LOG_LEVEL: 'info',
    ...opts.workerEnv,
  }));
  const startWorker = async () => {
    worker.start();
    await eventually(
      'the worker to poll',
      async () => {
        if (!worker.running) throw new Error(`worker exited:\n${worker.out}`);
        return worker.out.includes('worker polling') ? true : undefined;
      },
      90_000,
    );
  };
  cleanups.push(
    () => cp.stop(),
    () => worker.stop(),
  );
  const startControlPlane = async () => {
    cp.start();
    await eventually(
      'the control plane API',
      async () => {
        if (!cp.running) throw new Error(`control plane exited:\n${cp.out}`);
        return (await api('GET', '/domains/')).status === 200 ? true : undefined;
      },
      90_000,
    );
  };
  await Promise.all([startControlPlane(), temporal ? startWorker() : undefined]);

  return {
    dns,
    dns2,
    get temporal() {
      if (!temporal) throw new Error('the Temporal server is not started (startTemporal)');
      return temporal;
    },
    apiUrl,
    dataDir: tdb.dataDir,
    databaseUrl: tdb.databaseUrl,
    api,
    internal: (method, path, body) => call({ authorization: `Bearer ${nodeToken}` }, method, path, body),
    startWorker,
    stopWorker: (signal) => worker.stop(signal),
    workerOutput: () => worker.out,
    async startTemporal() {
      temporal ??= await startTemporalDevServer(temporalPort);
      await startWorker();
    },
    async restartControlPlane() {
      await cp.stop();
      await startControlPlane();
    },
    controlPlaneOutput: () => cp.out,
    async close() {
      await worker.stop();
      await cp.stop();
      await temporal?.teardown();
      await dns.close();
      await dns2.close();
      await tdb.drop();
    },
  };
}
