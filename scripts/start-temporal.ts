// Starts the Temporal dev server (`temporal server start-dev`, SQLite file under DATA_DIR, UI on 8233) for `npm start`,
// using the CLI provisioned by scripts/setup.mjs; waits until its frontend answers and stops it on exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
// @ts-expect-error -- setup.mjs is plain JavaScript without type declarations
import { temporalCliPath } from './setup.mjs';

export interface TemporalDevServer {
  /** host:port of the gRPC frontend, for TEMPORAL_ADDRESS. */
  address: string;
  uiUrl: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export interface StartTemporalOptions {
  dataDir: string;
  port?: number;
  uiPort?: number;
  host?: string;
  /** How long to wait for the frontend to accept connections. */
  timeoutMs?: number;
  /** Where the server's output goes; stderr of this process by default. */
  output?: NodeJS.WritableStream;
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export async function startTemporalDevServer(opts: StartTemporalOptions): Promise<TemporalDevServer> {
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? 8233;
  const cli =
    process.env.TEMPORAL_CLI && existsSync(process.env.TEMPORAL_CLI)
      ? process.env.TEMPORAL_CLI
      : (temporalCliPath() as string);
  if (!existsSync(cli)) throw new Error(`the Temporal CLI is missing at ${cli}: run npm run setup`);
  if (await portOpen(host, port))
    throw new Error(
      `something already listens on ${host}:${port}; set TEMPORAL_ADDRESS to use a running Temporal server`,
    );
  mkdirSync(opts.dataDir, { recursive: true });
  const child = spawn(
    cli,
    [
      'server',
      'start-dev',
      '--db-filename',
      join(opts.dataDir, 'temporal.db'),
      '--ip',
      host,
      '--port',
      String(port),
      '--ui-port',
      String(uiPort),
      '--namespace',
      'default',
      '--log-level',
      'error',
    ],
    // Its own process group: the terminal's Ctrl-C reaches the launcher, which stops Temporal last.
    { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const out = opts.output ?? process.stderr;
  let stopping = false; // the dev server logs errors of its own shutdown; they mean nothing
  child.stdout!.on('data', (d: Buffer) => {
    if (!stopping) out.write(`[temporal] ${d}`);
  });
  child.stderr!.on('data', (d: Buffer) => {
    if (!stopping) out.write(`[temporal] ${d}`);
  });

  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    stopping = true;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  const onExit = () => {
    if (child.exitCode === null) child.kill('SIGTERM');
  };
  process.once('exit', onExit);

  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  while (!(await portOpen(host, port))) {
    if (child.exitCode !== null) throw new Error(`temporal server start-dev exited with ${child.exitCode}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Temporal did not answer on ${host}:${port}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return { address: `${host}:${port}`, uiUrl: `http://${host}:${uiPort}`, process: child, stop };
}
