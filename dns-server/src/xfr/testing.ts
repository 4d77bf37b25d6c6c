// Test helper: Debian's NSD as a real secondary, started on 127.0.0.1 with its own configuration in a directory of
// the test's, transferring one zone from a primary on 127.0.0.1 with a TSIG key.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';

export function need(...tools: string[]): void {
  for (const name of tools)
    if (spawnSync('sh', ['-c', `command -v ${name}`]).status !== 0)
      throw new Error(`${name} is not installed: apt-get install nsd bind9-dnsutils bind9-utils`);
}

/** A port free on 127.0.0.1 for both UDP and TCP: NSD binds both, and a UDP-only check collided under load. */
export async function freeDnsPort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const tcp = createServer();
    await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
    const port = (tcp.address() as AddressInfo).port;
    const udp = createSocket('udp4');
    const udpFree = await new Promise<boolean>((r) => {
      udp.once('error', () => r(false));
      udp.bind(port, '127.0.0.1', () => r(true));
    });
    if (udpFree) await new Promise<void>((r) => udp.close(() => r()));
    await new Promise<void>((r) => tcp.close(() => r()));
    if (udpFree) return port;
  }
  throw new Error('no port free for both UDP and TCP on 127.0.0.1 after 50 attempts');
}

export interface Nsd {
  port: number;
  /** NSD's log file and its output. */
  log(): string;
  stop(): Promise<void>;
}

export async function startNsd(o: {
  dir: string;
  /** Default: a free one. */
  port?: number;
  zone: string;
  /** A secondary: transfers the zone from 127.0.0.1:primaryPort with the TSIG key `key`. */
  primaryPort?: number;
  key?: { name: string; secret: Buffer };
  /** Or a primary: serves this master file itself. Either way it gives AXFR to 127.0.0.1 without TSIG. */
  zoneText?: string;
}): Promise<Nsd> {
  need('nsd');
  const port = o.port ?? (await freeDnsPort());
  const { dir } = o;
  const primary = o.primaryPort !== undefined && o.key ? { port: o.primaryPort, key: o.key } : undefined;
  if (o.zoneText !== undefined) writeFileSync(join(dir, `${o.zone}.zone`), o.zoneText);
  const secondary = primary
    ? `  request-xfr: 127.0.0.1@${primary.port} ${primary.key.name}
  allow-notify: 127.0.0.1 ${primary.key.name}
`
    : '';
  const key = primary
    ? `key:
  name: "${primary.key.name}"
  algorithm: hmac-sha256
  secret: "${primary.key.secret.toString('base64')}"
`
    : '';
  writeFileSync(
    join(dir, 'nsd.conf'),
    `server:
  ip-address: 127.0.0.1@${port}
  do-ip6: no
  username: ""
  chroot: ""
  zonesdir: "${dir}"
  pidfile: "${dir}/nsd.pid"
  zonelistfile: "${dir}/zone.list"
  xfrdfile: "${dir}/xfrd.state"
  xfrdir: "${dir}"
  database: ""
  logfile: "${dir}/nsd.log"
  server-count: 1
  verbosity: 2
remote-control:
  control-enable: no
${key}zone:
  name: "${o.zone}"
  zonefile: "${o.zone}.zone"
${secondary}  provide-xfr: 127.0.0.1 NOKEY
`,
  );
  const proc: ChildProcess = spawn('nsd', ['-d', '-c', join(dir, 'nsd.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  return {
    port,
    log: () => {
      try {
        return `${out}${readFileSync(join(dir, 'nsd.log'), 'utf8')}`;
      } catch {
        return out;
      }
    },
    stop: async () => {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
