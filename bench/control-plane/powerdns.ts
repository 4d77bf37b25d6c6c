// PowerDNS Authoritative (Debian's pdns-server) with its SQLite backend, as the anchor of the records API benchmark:
// its own config dir and a fresh SQLite database made from the schema the Debian package ships, DNS and HTTP API on
// free ports on 127.0.0.1. Everything else is PowerDNS's default (WAL journal, default threads, API rectify on).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../test/e2e/sync-harness.js';
import { expectStatus, request } from './paired-runner.js';

/** Where Debian's pdns-backend-sqlite3 puts the schema (the first is the package's own; the doc copy varies). */
const SCHEMAS = [
  '/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql',
  '/usr/share/doc/pdns-backend-sqlite3/schema.sqlite3.sql',
];

export interface PowerDns {
  pid: number;
  version: string;
  /** http://127.0.0.1:PORT/api/v1/servers/localhost */
  baseUrl: string;
  /** The X-API-Key header. */
  headers: Record<string, string>;
  /** Calls /api/v1/servers/localhost{path}; throws unless the status is `expect`. Returns the parsed body, if any. */
  api<T = unknown>(method: string, path: string, body?: unknown, expect?: number): Promise<T>;
  stop(): Promise<void>;
}

export async function startPowerDns(): Promise<PowerDns> {
  const schema = SCHEMAS.find((p) => existsSync(p));
  if (!schema) throw new Error(`no PowerDNS SQLite schema at ${SCHEMAS.join(' or ')}`);
  const dir = mkdtempSync(join(tmpdir(), 'bench-pdns-'));
  const database = join(dir, 'pdns.sqlite3');
  const made = spawnSync('sqlite3', [database], { input: readFileSync(schema), encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`sqlite3 ${database} < ${schema} failed: ${made.stderr}`);
  const [dnsPort, apiPort] = [await freePort(), await freePort()];
  const key = randomBytes(16).toString('hex');
  writeFileSync(
    join(dir, 'pdns.conf'),
    [
      'launch=gsqlite3',
      `gsqlite3-database=${database}`,
      `local-address=127.0.0.1:${dnsPort}`,
      'api=yes',
      `api-key=${key}`,
      'webserver-address=127.0.0.1',
      `webserver-port=${apiPort}`,
      'webserver-allow-from=127.0.0.0/8',
      'webserver-loglevel=none',
      // Requests and answers (a 10,000-rrset zone) above the default 2 MB are refused otherwise.
      'webserver-max-bodysize=64',
      `socket-dir=${dir}`,
      'daemon=no',
      'guardian=no',
      'disable-syslog=yes',
      'loglevel=4',
      '',
    ].join('\n'),
  );
  const proc: ChildProcess = spawn('pdns_server', [`--config-dir=${dir}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const base = `http://127.0.0.1:${apiPort}/api/v1/servers/localhost`;
  const headers = { 'x-api-key': key };
  const api: PowerDns['api'] = async (method, path, body, expect = 200) => {
    const res = expectStatus(
      `PowerDNS ${method} ${path}`,
      await request(`${base}${path}`, method, headers, body),
      expect,
    );
    return (res.body ? JSON.parse(res.body) : undefined) as never;
  };
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const end = Date.now() + 30_000;
    let server: { version: string } | undefined;
    while (!server) {
      if (proc.exitCode !== null) throw new Error(`pdns_server exited with ${proc.exitCode}\n${out}`);
      if (Date.now() > end) throw new Error(`pdns_server did not answer on ${base}\n${out}`);
      server = await api<{ version: string }>('GET', '').catch(() => undefined);
      if (!server) await new Promise((r) => setTimeout(r, 100));
    }
    return { pid: proc.pid!, version: server.version, baseUrl: base, headers, api, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
