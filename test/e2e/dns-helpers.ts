// Helpers for the dns-server end-to-end tests: a node store filled through its API, the server started as a user
// starts it (node --import tsx dns-server/src/main.ts), and raw UDP/TCP queries.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openNodeStore } from '@platform/shared/node-store';
import { domainHeader, zoneRecord } from '@platform/shared/testing/config-entries';
import type { DomainSnapshot, ZoneRecord } from '@platform/shared/config';
import { stopProcess } from '../helpers/child-process.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

let nextId = 1;
export function record(name: string, type: string, destination: string, extra: Partial<ZoneRecord> = {}): ZoneRecord {
  return { ...zoneRecord(nextId++, name, destination, type), mxPriority: 10, ...extra };
}

export function snapshot(
  name: string,
  records: ZoneRecord[],
  o: { state?: string; serial?: number } = {},
): DomainSnapshot {
  const header = domainHeader(name, o.serial ?? 1, o.state ?? 'active');
  return { ...header, domainId: nextId++, zone: { ...header.zone, records } };
}

/** A new DATA_DIR whose node store (DATA_DIR/dns-node) holds the snapshots, applied as ConfigEntry objects. */
export async function dataDirWith(snapshots: DomainSnapshot[]): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'dns-e2e-'));
  const store = openNodeStore(join(dataDir, 'dns-node'));
  for (const s of snapshots) store.apply({ version: store.version + 1, domain: s.name, deleted: false, snapshot: s });
  await store.close();
  return dataDir;
}

export interface DnsProcess {
  port: number;
  proc: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** Starts the dns-server on a free port (DNS_PORT=0) and waits for its "listening" log line. */
export async function startDnsProcess(env: Record<string, string>): Promise<DnsProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'dns-server/src/main.ts')], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', DNS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stderr!.on('data', (d) => {
    out += d;
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`dns-server did not start:\n${out}`)), 60_000);
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /"port":(\d+)[^\n]*"msg":"dns-server listening"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`dns-server exited with ${code}:\n${out}`));
    });
  });
  return {
    port,
    proc,
    output: () => out,
    stop: () => stopProcess(proc, 'SIGTERM'),
  };
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

/** Sends one UDP packet and returns the first answer, or null after `timeoutMs`. */
export function udpQuery(port: number, msg: Buffer, timeoutMs = 3000): Promise<Buffer | null> {
  return new Promise((resolve) => {
    const sock = createSocket('udp4');
    const timer = setTimeout(() => {
      sock.close();
      resolve(null);
    }, timeoutMs);
    sock.once('message', (m) => {
      clearTimeout(timer);
      sock.close();
      resolve(m);
    });
    sock.send(msg, port, '127.0.0.1');
  });
}

/** Writes every message on one TCP connection (length-prefixed, all at once) and reads as many answers. */
export function tcpQueries(port: number, msgs: Buffer[], timeoutMs = 5000): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    const answers: Buffer[] = [];
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`TCP: ${answers.length} of ${msgs.length} answers`));
    }, timeoutMs);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        answers.push(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        buf = buf.subarray(2 + buf.readUInt16BE(0));
      }
      if (answers.length === msgs.length) {
        clearTimeout(timer);
        sock.end();
        resolve(answers);
      }
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    sock.write(Buffer.concat(msgs.flatMap((m) => [Buffer.from([m.length >> 8, m.length & 0xff]), m])));
  });
}

/** kdig's text answer (a second, independent decoder), or null when kdig is not installed. */
export function kdig(port: number, ...args: string[]): string | null {
  const r = spawnSync('kdig', [`@127.0.0.1`, '-p', String(port), '+norec', '+timeout=3', '+retry=1', ...args], {
    encoding: 'utf8',
  });
  if (r.error) return null;
  return r.stdout;
}
