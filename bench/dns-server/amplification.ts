// How much a forged query gets back over UDP: answer bytes / query bytes, per query, with the 1232-byte EDNS cap and
// the 512-byte plain cap; then a reflection flood from one address (127.0.0.2 stands for the forged victim) against
// the dns-server and NSD, each with response rate limiting off and at its defaults: bytes the victim receives per byte
// the attacker sends. Run: node --import tsx bench/dns-server/amplification.ts
// Env: QPS (flood rate, default 5000), FLOOD_SECONDS (default 3). Traffic stays on 127.0.0.0/8.
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openNodeStore } from '@platform/shared/node-store';
import { domainHeader, zoneRecord } from '@platform/shared/testing/config-entries';
import type { ZoneRecord } from '@platform/shared/config';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { ensureTools, freePort, nsdConfig, runBench, stop } from './tools.js';
import { udpQuery as udpAsk } from '../../test/e2e/dns-helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const QPS = Number(process.env.QPS ?? 5000);
const FLOOD_SECONDS = Number(process.env.FLOOD_SECONDS ?? 3);
const ZONE = 'amp.example';
const TXT = 16;

/** Names whose answers an attacker would pick: the biggest a free account can publish, and ordinary ones. */
const RECORDS: Array<[string, string, string]> = [
  ['@', 'A', '192.0.2.1'],
  ['www', 'A', '192.0.2.10'],
  ...['a', 'b', 'c', 'd'].map((c): [string, string, string] => ['big', 'TXT', c.repeat(250)]),
  ...['a', 'b', 'c', 'd', 'e', 'f'].map((c): [string, string, string] => ['huge', 'TXT', c.repeat(250)]),
  // Sized so the whole answer to an EDNS query for m.amp.example TXT is exactly 1232 bytes: the worst case.
  ...['a', 'b', 'c', 'd'].map((c): [string, string, string] => ['m', 'TXT', c.repeat(250)]),
  ['m', 'TXT', 'e'.repeat(125)],
  ...Array.from({ length: 8 }, (_, i): [string, string, string] => ['@', 'TXT', `v=spf1 include:x${i}.example -all`]),
];

const QUERIES: Array<{ label: string; name: string; type: number; edns: boolean }> = [
  { label: 'www A', name: `www.${ZONE}`, type: 1, edns: true },
  { label: 'apex TXT (8 records)', name: ZONE, type: TXT, edns: true },
  { label: 'big TXT (4 × 250 bytes), EDNS 1232', name: `big.${ZONE}`, type: TXT, edns: true },
  { label: 'big TXT, no EDNS (512 cap)', name: `big.${ZONE}`, type: TXT, edns: false },
  { label: 'm TXT (answer of exactly 1232 bytes), EDNS', name: `m.${ZONE}`, type: TXT, edns: true },
  { label: 'huge TXT (6 × 250 bytes, over 1232), EDNS', name: `huge.${ZONE}`, type: TXT, edns: true },
  { label: 'name that does not exist (NXDOMAIN)', name: `nothere.${ZONE}`, type: 1, edns: true },
];

function zoneFile(): string {
  const lines = [
    `$ORIGIN ${ZONE}.`,
    '$TTL 300',
    `@ 3600 IN SOA ns1.platform.test. hostmaster.${ZONE}. 1 10000 2400 604800 300`,
    '@ IN NS ns1.platform.test.',
    '@ IN NS ns2.platform.test.',
  ];
  for (const [name, type, value] of RECORDS) lines.push(`${name} IN ${type} ${type === 'TXT' ? `"${value}"` : value}`);
  return lines.join('\n') + '\n';
}

async function bound(address: string): Promise<Socket> {
  const sock = createSocket({ type: 'udp4', recvBufferSize: 1 << 22 });
  await new Promise<void>((resolve) => sock.bind(0, address, () => resolve()));
  return sock;
}

function ask(port: number, q: Buffer): Promise<Buffer | null> {
  return udpAsk(port, q, 1000);
}

async function waitReady(port: number, proc: ChildProcess, label: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (proc.exitCode !== null) throw new Error(`${label} exited with ${proc.exitCode}`);
    if (await ask(port, buildQuery(`www.${ZONE}`, 1))) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${label} did not answer`);
}

interface Flood {
  sent: number;
  bytesIn: number;
  answers: number;
  truncated: number;
  bytesOut: number;
}

/** QPS queries per second for FLOOD_SECONDS from 127.0.0.2 (the forged victim), paced every 10 ms. */
async function flood(port: number, q: Buffer): Promise<Flood> {
  const victim = await bound('127.0.0.2');
  const r: Flood = { sent: 0, bytesIn: 0, answers: 0, truncated: 0, bytesOut: 0 };
  victim.on('message', (m) => {
    r.answers++;
    r.bytesOut += m.length;
    if (m[2] & 0x02) r.truncated++;
  });
  const total = QPS * FLOOD_SECONDS;
  const start = performance.now();
  while (r.sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * QPS));
    const batch: Promise<void>[] = [];
    for (; r.sent < due; r.sent++) {
      r.bytesIn += q.length;
      batch.push(new Promise((resolve) => victim.send(q, port, '127.0.0.1', () => resolve())));
    }
    await Promise.all(batch);
    await new Promise((res) => setTimeout(res, 10));
  }
  for (let last = -1; r.answers !== last;) {
    last = r.answers;
    await new Promise((res) => setTimeout(res, 300));
  }
  victim.close();
  return r;
}

runBench('dns-amplification-', async (dir, procs) => {
  ensureTools(['nsd']);
  {
    writeFileSync(join(dir, `${ZONE}.zone`), zoneFile());
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    const store = openNodeStore(join(dataDir, 'dns-node'));
    const header = domainHeader(ZONE, 1);
    const records: ZoneRecord[] = RECORDS.map(([name, type, value], i) => ({
      ...zoneRecord(i + 1, name, value, type),
      mxPriority: 0,
    }));
    store.apply({
      version: 1,
      domain: ZONE,
      deleted: false,
      snapshot: { ...header, zone: { ...header.zone, records } },
    });
    await store.close();

    const ours = (port: number, rrl: number) =>
      spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'dns-server/src/main.ts')], {
        cwd: ROOT,
        stdio: 'ignore',
        env: { ...process.env, DATA_DIR: dataDir, DNS_PORT: String(port), SYNC_URL: 'off', DNS_RRL_RATE: String(rrl) },
      });
    const nsd = (port: number, rrl: number) => {
      const conf = join(dir, `nsd-${rrl}.conf`);
      writeFileSync(conf, nsdConfig(dir, `amp-${rrl}`, port, ZONE, 1, rrl));
      return spawn('nsd', ['-d', '-c', conf], { stdio: 'ignore' });
    };

    // 1. One query each: the amplification a single forged packet gets.
    const [port, nsdPort] = [await freePort(), await freePort()];
    const o = ours(port, 0);
    const n = nsd(nsdPort, 0);
    procs.push(o, n);
    await waitReady(port, o, 'dns-server');
    await waitReady(nsdPort, n, 'nsd');
    console.log(
      '| query | query bytes | answer bytes (TC) | answer / query | NSD answer bytes (TC) | NSD answer / query |',
    );
    console.log('|---|---|---|---|---|---|');
    let worst: { label: string; ratio: number; q: Buffer } = { label: '', ratio: 0, q: Buffer.alloc(0) };
    for (const x of QUERIES) {
      const q = buildQuery(x.name, x.type, x.edns ? { edns: { udpSize: 4096 } } : {});
      const [a, b] = [(await ask(port, q))!, (await ask(nsdPort, q))!];
      const ratio = a.length / q.length;
      if (ratio > worst.ratio) worst = { label: x.label, ratio, q };
      const tc = (m: Buffer) => (m[2] & 0x02 ? ' (TC)' : '');
      console.log(
        `| ${x.label} | ${q.length} | ${a.length}${tc(a)} | ${ratio.toFixed(1)}× | ${b.length}${tc(b)} | ${(b.length / q.length).toFixed(1)}× |`,
      );
    }
    await stop(o);
    await stop(n);
    console.log(
      `\nworst single query: ${worst.label}, ${worst.ratio.toFixed(1)}× (client asked for 4096, capped at 1232)`,
    );

    // 2. A reflection flood of the worst query from one address, RRL off and at the defaults, ours and NSD's.
    console.log(
      `\nflood: ${QPS} queries/s for ${FLOOD_SECONDS} s of "${worst.label}" (${worst.q.length} bytes) from 127.0.0.2\n`,
    );
    console.log(
      '| server | rate limiting | queries sent | answers | of them TC=1 | bytes to the victim | victim bytes / attacker bytes |',
    );
    console.log('|---|---|---|---|---|---|---|');
    const subjects: Array<[string, string, (p: number) => ChildProcess]> = [
      ['dns-server', 'off (DNS_RRL_RATE=0)', (p) => ours(p, 0)],
      ['dns-server', 'defaults (200/s, slip 2, /24)', (p) => ours(p, 200)],
      ['NSD 4', 'off (rrl-ratelimit: 0)', (p) => nsd(p, 0)],
      ['NSD 4', 'defaults (200/s, slip 2, /24)', (p) => nsd(p, 200)],
    ];
    for (const [server, mode, start] of subjects) {
      const p = await freePort();
      const proc = start(p);
      procs.push(proc);
      await waitReady(p, proc, server);
      const r = await flood(p, worst.q);
      await stop(proc);
      console.log(
        `| ${server} | ${mode} | ${r.sent} | ${r.answers} | ${r.truncated} | ${r.bytesOut} | ${(r.bytesOut / r.bytesIn).toFixed(2)}× |`,
      );
    }
  }
});
