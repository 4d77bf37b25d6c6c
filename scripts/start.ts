// `npm start`: runs every process of the platform on one machine with embedded defaults
// (PGlite + LMDB under DATA_DIR, a Temporal dev server unless TEMPORAL_ADDRESS is set).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: resolve(process.env.DATA_DIR ?? join(root, 'data')) };
mkdirSync(env.DATA_DIR!, { recursive: true });

const children: ChildProcess[] = [];
const stops: Array<() => Promise<void>> = [];
let stopping = false;

function prefixLines(name: string, stream: NodeJS.ReadableStream, out: NodeJS.WritableStream): void {
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) out.write(`[${name}] ${line}\n`);
  });
}

function run(name: string, entry: string): ChildProcess | undefined {
  if (!existsSync(join(root, entry))) {
    process.stderr.write(`[start] ${name}: ${entry} not present yet, skipped\n`);
    return undefined;
  }
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  prefixLines(name, child.stdout!, process.stdout);
  prefixLines(name, child.stderr!, process.stderr);
  child.on('exit', (code, signal) => {
    if (stopping) return;
    process.stderr.write(`[start] ${name} exited (${signal ?? code}); stopping everything\n`);
    void shutdown(1);
  });
  children.push(child);
  return child;
}

function waitForPort(host: string, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolvePort, reject) => {
    const attempt = () => {
      const socket = createConnection({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolvePort();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing answered on ${host}:${port} within ${timeoutMs} ms`));
        else setTimeout(attempt, 200);
      });
    };
    attempt();
  });
}

async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(
    children.map(
      (c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r))),
    ),
  );
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));

async function main(): Promise<void> {
  const temporalModule = join(root, 'scripts', 'start-temporal.ts');
  if (!env.TEMPORAL_ADDRESS && existsSync(temporalModule)) {
    const { startTemporalDevServer } = (await import(pathToFileURL(temporalModule).href)) as {
      startTemporalDevServer(opts: {
        dataDir: string;
      }): Promise<{ address: string; uiUrl: string; stop(): Promise<void> }>;
    };
    const temporal = await startTemporalDevServer({ dataDir: env.DATA_DIR! });
    stops.push(() => temporal.stop());
    env.TEMPORAL_ADDRESS = temporal.address;
    process.stderr.write(`[start] Temporal dev server at ${temporal.address}, UI at ${temporal.uiUrl}\n`);
  }
  const apiHost = env.API_HOST ?? '127.0.0.1';
  const apiPort = Number(env.API_PORT ?? 8080);
  if (run('control-plane', 'control-plane/src/main.ts')) {
    await waitForPort(apiHost, apiPort, 60_000);
    process.stderr.write(`[start] control plane API at http://${apiHost}:${apiPort}/ (OpenAPI: /openapi.json)\n`);
  }
  run('workflows', 'workflows/src/main.ts');
  run('dns-server', 'dns-server/src/main.ts');
  run('edge-node', 'edge-node/src/main.ts');
  process.stderr.write('[start] running; Ctrl-C stops every process\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`[start] ${err instanceof Error ? err.message : String(err)}\n`);
  void shutdown(1);
});
