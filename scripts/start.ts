// `npm start`: runs every process of the platform on one machine with embedded defaults (PGlite + LMDB under
// DATA_DIR, a Temporal dev server of its own unless TEMPORAL_ADDRESS is set). Every port is checked before anything
// starts; every child is told the addresses actually in use; one summary is printed when all of them are ready.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { prettyFactory } from 'pino-pretty';
import { claimPorts, portFromEnv, PortProblem, type PortSpec } from './launcher-ports.js';
import { startTemporalDevServer } from './start-temporal.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const exitWithLauncher = pathToFileURL(join(root, 'scripts', 'exit-with-launcher.mjs')).href;
const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: resolve(process.env.DATA_DIR ?? join(root, 'data')) };
const dataDir = env.DATA_DIR!;
const pretty = process.stdout.isTTY
  ? prettyFactory({ colorize: true, ignore: 'pid,hostname', translateTime: 'HH:MM:ss' })
  : null;

interface Child {
  name: string;
  process: ChildProcess;
  /** Resolves when the process logged `readyMessage` (or at once when none is awaited). */
  ready: Promise<void>;
}

const children: Child[] = [];
const stops: Array<() => Promise<void>> = [];
let stopping = false;

function say(line: string): void {
  process.stderr.write(`[start] ${line}\n`);
}

/** One log line of a child: pretty on a terminal, JSON (tagged with the process) otherwise. */
function relay(name: string, line: string, out: NodeJS.WritableStream): void {
  if (line === '') return;
  if (line.startsWith('{')) {
    if (pretty) {
      try {
        out.write(pretty(`{"name":"${name}",${line.slice(1)}`));
        return;
      } catch {
        // not JSON after all: printed as it is
      }
    } else {
      out.write(`{"process":"${name}",${line.slice(1)}\n`);
      return;
    }
  }
  out.write(`[${name}] ${line}\n`);
}

function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let buffered = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buffered += chunk;
    const parts = buffered.split('\n');
    buffered = parts.pop() ?? '';
    for (const part of parts) onLine(part);
  });
}

function run(name: string, entry: string, readyMessage?: string): Child {
  // Its own process group: the terminal's Ctrl-C reaches only the launcher, which stops each child once.
  const child = spawn(process.execPath, ['--import', exitWithLauncher, '--import', 'tsx', entry], {
    cwd: root,
    env,
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let markReady: () => void = () => undefined;
  const ready = readyMessage ? new Promise<void>((r) => (markReady = r)) : Promise.resolve();
  const onLine = (out: NodeJS.WritableStream) => (line: string) => {
    if (readyMessage && line.includes(`"msg":"${readyMessage}"`)) markReady();
    relay(name, line, out);
  };
  lines(child.stdout!, onLine(process.stdout));
  lines(child.stderr!, onLine(process.stderr));
  child.on('exit', (code, signal) => {
    if (stopping) return;
    say(`${name} exited (${signal ?? code}); stopping everything`);
    void shutdown(1);
  });
  const entryRecord = { name, process: child, ready };
  children.push(entryRecord);
  return entryRecord;
}

function waitForPort(host: string, port: number, label: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolvePort, reject) => {
    const attempt = () => {
      if (stopping) return;
      const socket = createConnection({ host, port });
      socket.once('connect', () => {
        socket.destroy();
        resolvePort();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline)
          reject(new Error(`the ${label} did not answer on ${host}:${port} within ${timeoutMs / 1000} s`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/** Polls a /readyz until it answers 200; the last answer (or error) is named if it never does. */
async function waitForReady(label: string, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (!stopping) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
      last = `${res.status} ${(await res.text()).slice(0, 300)}`;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (Date.now() > deadline)
      throw new Error(`the ${label} was not ready within ${timeoutMs / 1000} s (${url}: ${last})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  const running = () => children.filter(({ process: c }) => c.exitCode === null && c.signalCode === null);
  for (const { process: child } of running()) child.kill('SIGTERM');
  // A child that has not finished its clean shutdown in 10 s is killed, so Ctrl-C always ends the launcher.
  setTimeout(() => {
    for (const { name, process: child } of running()) {
      say(`${name} did not stop within 10 s; killing it`);
      child.kill('SIGKILL');
    }
  }, 10_000).unref();
  await Promise.all(
    children.map(
      ({ process: c }) =>
        new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(null) : c.once('exit', r))),
    ),
  );
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));
process.on('SIGHUP', () => void shutdown(0));
// npm (or whatever ran the launcher) killed with SIGKILL sends no signal on: the launcher, re-parented, stops itself
// and its children instead of holding the ports for ever.
const parentAtStart = process.ppid;
setInterval(() => {
  if (process.ppid !== parentAtStart) {
    say(`the process that started npm start (pid ${parentAtStart}) is gone: stopping`);
    void shutdown(0);
  }
}, 1000).unref();

async function main(): Promise<void> {
  mkdirSync(dataDir, { recursive: true });
  const apiHost = env.API_HOST ?? '127.0.0.1';
  const syncHost = env.SYNC_HOST ?? '127.0.0.1';
  const dnsHost = env.DNS_HOST ?? '127.0.0.1';
  const edgeHost = env.EDGE_HOST ?? '127.0.0.1';
  const ownTemporal = !env.TEMPORAL_ADDRESS;
  const httpsPort = portFromEnv(env, 'EDGE_HTTPS_PORT', 8443);
  const specs: PortSpec[] = [
    { variable: 'API_PORT', label: 'control plane API', host: apiHost, port: portFromEnv(env, 'API_PORT', 8080) },
    { variable: 'SYNC_PORT', label: 'sync hub', host: syncHost, port: portFromEnv(env, 'SYNC_PORT', 8090) },
    { variable: 'DNS_PORT', label: 'DNS node', host: dnsHost, port: portFromEnv(env, 'DNS_PORT', 5353), udp: true },
    { variable: 'EDGE_HTTP_PORT', label: 'edge HTTP', host: edgeHost, port: portFromEnv(env, 'EDGE_HTTP_PORT', 8081) },
  ];
  const mailHost = env.MAIL_HOST ?? '127.0.0.1';
  specs.push({
    variable: 'MAIL_PORT',
    label: 'mail node (SMTP)',
    host: mailHost,
    port: portFromEnv(env, 'MAIL_PORT', 2525),
  });
  if (env.EDGE_HTTPS_PORT !== '-1')
    specs.push({ variable: 'EDGE_HTTPS_PORT', label: 'edge HTTPS', host: edgeHost, port: httpsPort });
  // Metrics listeners are on under npm start (0 turns one off, as for the process run alone).
  const workerMetricsHost = env.WORKER_METRICS_HOST ?? '127.0.0.1';
  const metricsListeners = [
    { variable: 'DNS_METRICS_PORT', label: 'DNS metrics', host: dnsHost, fallback: 9153 },
    { variable: 'EDGE_METRICS_PORT', label: 'edge metrics', host: edgeHost, fallback: 9154 },
    { variable: 'WORKER_METRICS_PORT', label: 'worker metrics', host: workerMetricsHost, fallback: 9155 },
  ];
  for (const { variable, label, host, fallback } of metricsListeners) {
    const chosen = portFromEnv(env, variable, fallback);
    if (chosen !== 0) specs.push({ variable, label, host, port: chosen });
  }
  if (ownTemporal) {
    specs.push(
      {
        variable: 'TEMPORAL_PORT',
        label: 'Temporal dev server',
        host: '127.0.0.1',
        port: portFromEnv(env, 'TEMPORAL_PORT', 7233),
      },
      {
        variable: 'TEMPORAL_UI_PORT',
        label: 'Temporal UI',
        host: '127.0.0.1',
        port: portFromEnv(env, 'TEMPORAL_UI_PORT', 8233),
      },
    );
  }
  const ports = await claimPorts(specs);
  const port = (variable: string) => ports.get(variable)!;
  for (const [variable, value] of ports) env[variable] = String(value);

  // Workflows of this instance go to this instance's worker, even on a Temporal shared with another instance.
  env.TEMPORAL_TASK_QUEUE ??= `domain-lifecycle-${createHash('sha256').update(dataDir).digest('hex').slice(0, 12)}`;
  let temporalUi: string | undefined;
  if (ownTemporal) {
    const temporal = await startTemporalDevServer({
      dataDir,
      port: port('TEMPORAL_PORT'),
      uiPort: port('TEMPORAL_UI_PORT'),
    });
    stops.push(() => temporal.stop());
    env.TEMPORAL_ADDRESS = temporal.address;
    temporalUi = temporal.uiUrl;
  }
  const apiUrl = `http://${apiHost}:${port('API_PORT')}`;
  env.CONTROL_PLANE_URL = apiUrl;
  env.SYNC_URL = `ws://${syncHost}:${port('SYNC_PORT')}`;

  const waitMs = 120_000;
  run('control-plane', 'control-plane/src/main.ts');
  await waitForPort(apiHost, port('API_PORT'), 'control plane', waitMs);
  await waitForPort(syncHost, port('SYNC_PORT'), 'sync hub', waitMs);
  const worker = run('workflows', 'workflows/src/main.ts', 'worker polling');
  run('dns-server', 'dns-server/src/main.ts');
  run('edge-node', 'edge-node/src/main.ts');
  run('mail-node', 'mail-node/src/main.ts');
  await Promise.all([
    waitForPort(dnsHost, port('DNS_PORT'), 'DNS node', waitMs),
    waitForPort(edgeHost, port('EDGE_HTTP_PORT'), 'edge node', waitMs),
    waitForPort(mailHost, port('MAIL_PORT'), 'mail node', waitMs),
    Promise.race([
      worker.ready,
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error('the workflow worker did not start polling within 120 s')), waitMs).unref(),
      ),
    ]),
  ]);
  // Listening is not ready: every process says on its /readyz when its database, Temporal or config sync is there.
  const readiness = [{ label: 'control plane', url: `${apiUrl}/readyz` }];
  for (const { variable, label, host } of metricsListeners)
    if (ports.has(variable)) readiness.push({ label, url: `http://${host}:${port(variable)}/readyz` });
  await Promise.all(readiness.map(({ label, url }) => waitForReady(label, url, waitMs)));
  if (stopping) return;
  const rows: Array<[string, string]> = [
    ['API', `${apiUrl}/  (OpenAPI ${apiUrl}/openapi.json, reference ${apiUrl}/docs)`],
    ['API health', `${apiUrl}/healthz  ${apiUrl}/readyz  ${apiUrl}/metrics`],
    ['sync hub', env.SYNC_URL],
    [
      'Temporal',
      `${env.TEMPORAL_ADDRESS}${temporalUi ? `  UI ${temporalUi}` : ''}  (task queue ${env.TEMPORAL_TASK_QUEUE})`,
    ],
    ['DNS', `${dnsHost}:${port('DNS_PORT')} UDP and TCP  (dig @${dnsHost} -p ${port('DNS_PORT')} example.org)`],
    [
      'edge',
      `http://${edgeHost}:${port('EDGE_HTTP_PORT')}${ports.has('EDGE_HTTPS_PORT') ? `  https://${edgeHost}:${port('EDGE_HTTPS_PORT')}` : ''}`,
    ],
    [
      'mail (SMTP)',
      `${mailHost}:${port('MAIL_PORT')}  (email routing's MX: swaks --server ${mailHost}:${port('MAIL_PORT')} --to you@example.org)`,
    ],
  ];
  for (const { variable, label, host } of metricsListeners)
    if (ports.has(variable)) rows.push([label, `http://${host}:${port(variable)}/metrics  (/healthz, /readyz)`]);
  rows.push(
    ['data', dataDir],
    [
      'first key',
      `${process.env.DATA_DIR ? `DATA_DIR=${dataDir} ` : ''}npm run -s admin -- user create you@example.org && ${process.env.DATA_DIR ? `DATA_DIR=${dataDir} ` : ''}npm run -s admin -- key create you@example.org`,
    ],
  );
  const width = Math.max(...rows.map(([k]) => k.length));
  process.stderr.write(
    `\n[start] ready: every process is up\n${rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n')}\n  Ctrl-C stops everything.\n\n`,
  );
}

main().catch((err: unknown) => {
  if (err instanceof PortProblem) say(err.message);
  else say(err instanceof Error ? err.message : String(err));
  void shutdown(1);
});
