// DNSSEC cost: dnsperf against the dns-server serving the same seeded zone unsigned (queries without DO) and signed
// (queries with DO: RRSIGs, NSEC3 proofs for the NXDOMAIN tenth), and against Knot DNS signing the same zone online
// (ECDSA P-256, NSEC3 without salt or iterations), in one run, interleaved over ROUNDS.
// Run: node --import tsx bench/dns-server/dnssec-dnsperf.ts
// Env: SECONDS (dnsperf -l, default 10), RECORDS (default 10000), CLIENTS (dnsperf -c, default 4), ROUNDS (default 2),
// PAIRED (rounds of the paired runs, default 0).
// Each server runs pinned to CPU 0 (one core, one worker/thread), dnsperf to CPU 1; response rate limiting off.
// PAIRED=N: N rounds where two servers (ours signed beside ours unsigned, then ours signed beside Knot) are pinned to
// CPU 0 at the same time, a dnsperf each on CPU 1, so both get the same share of whatever CPU other processes leave:
// their ratio holds on a loaded machine, where the sequential rows move with the load of the moment.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openNodeStore } from '@platform/shared/node-store';
import { makeDnssec } from '../../dns-server/src/dnssec/testing.js';
import { udpQuery } from '../../test/e2e/dns-helpers.js';
import { buildQuery } from '../../dns-server/src/testing/fixtures.js';
import { APEX, generateZone } from './zone-gen.js';
import { ensureTools, freePort, median, runBench, runBeside, stop } from './tools.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SECONDS = Number(process.env.SECONDS ?? 10);
const RECORDS = Number(process.env.RECORDS ?? 10_000);
const CLIENTS = Number(process.env.CLIENTS ?? 4);
const ROUNDS = Number(process.env.ROUNDS ?? 2);

function knotConfig(dir: string, port: number): string {
  return `server:
    listen: 127.0.0.1@${port}
    rundir: "${dir}/knot-run"
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "${dir}/knot-db"
log:
  - target: stderr
    any: error
policy:
  - id: bench
    algorithm: ecdsap256sha256
    nsec3: on
    nsec3-iterations: 0
    nsec3-salt-length: 0
template:
  - id: default
    storage: "${dir}"
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
zone:
  - domain: ${APEX}
    file: "${APEX}.zone"
    dnssec-signing: on
    dnssec-policy: bench
`;
}

async function waitSigned(port: number, proc: ChildProcess, label: string, signed: boolean): Promise<void> {
  const end = Date.now() + 120_000;
  while (Date.now() < end) {
    if (proc.exitCode !== null) throw new Error(`${label} exited with ${proc.exitCode}`);
    const a = await udpQuery(port, buildQuery(APEX, 48, { edns: { do: true } }), 500);
    if (a && (!signed || a.readUInt16BE(6) > 0)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${label} did not answer${signed ? ' signed' : ''}`);
}

function dnsperfArgs(port: number, queryFile: string, dnssec: boolean): string[] {
  const args = ['-c', '1', 'dnsperf', '-s', '127.0.0.1', '-p', String(port), '-d', queryFile, '-l', String(SECONDS)];
  args.push('-c', String(CLIENTS), '-T', '1', '-q', '1000', '-t', '1');
  if (dnssec) args.push('-D');
  return args;
}

interface Run {
  qps: number;
  avgMs: number;
  lostPct: number;
  completed: number;
}

function parse(out: string): Run {
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? NaN);
  return {
    qps: num(/Queries per second:\s+([\d.]+)/),
    avgMs: num(/Average Latency \(s\):\s+([\d.]+)/) * 1000,
    lostPct: num(/Queries lost:\s+\d+ \(([\d.]+)%\)/),
    completed: num(/Queries completed:\s+(\d+)/),
  };
}

function dnsperf(port: number, queryFile: string, dnssec: boolean): Run {
  return parse(spawnSync('taskset', dnsperfArgs(port, queryFile, dnssec), { encoding: 'utf8' }).stdout);
}

/** dnsperf in the background (two servers loaded at once), with the server's CPU time per answered query. */
function dnsperfAsync(
  port: number,
  queryFile: string,
  dnssec: boolean,
  server: number,
): Promise<Run & { cpuUs: number }> {
  return runBeside(['taskset', ...dnsperfArgs(port, queryFile, dnssec)], server).then(({ out, serverCpuMs }) => {
    const r = parse(out);
    return { ...r, cpuUs: (serverCpuMs * 1000) / r.completed };
  });
}

runBench('dnssec-dnsperf-', async (dir, procs) => {
  ensureTools(['dnsperf', 'taskset', 'knotd']);
  const zone = generateZone(RECORDS, 1);
  const queryFile = join(dir, 'queries.txt');
  writeFileSync(queryFile, zone.queries.join('\n') + '\n');
  writeFileSync(join(dir, `${APEX}.zone`), zone.zoneFile);
  const dataDirs: Record<'off' | 'on', string> = { off: join(dir, 'data-off'), on: join(dir, 'data-on') };
  for (const [mode, dataDir] of Object.entries(dataDirs)) {
    mkdirSync(dataDir);
    const store = openNodeStore(join(dataDir, 'dns-node'));
    const snapshot = mode === 'on' ? { ...zone.snapshot, dnssec: makeDnssec() } : zone.snapshot;
    store.apply({ version: 1, domain: APEX, deleted: false, snapshot });
    await store.close();
  }
  mkdirSync(join(dir, 'knot-run'));
  mkdirSync(join(dir, 'knot-db'));
  const subjects = {
    'ours-unsigned': { dnssec: false, signed: false },
    'ours-signed-do': { dnssec: true, signed: true },
    'knot-signed-do': { dnssec: true, signed: true },
  } as const;
  const start = (id: keyof typeof subjects, port: number): ChildProcess => {
    if (id === 'knot-signed-do') {
      const conf = join(dir, 'knot.conf');
      writeFileSync(conf, knotConfig(dir, port));
      return spawn('taskset', ['-c', '0', 'knotd', '-c', conf], { stdio: 'ignore' });
    }
    const node = [process.execPath, '--import', 'tsx', join(ROOT, 'dns-server/src/main.ts')];
    return spawn('taskset', ['-c', '0', ...node], {
      cwd: ROOT,
      stdio: 'ignore',
      env: {
        ...process.env,
        DATA_DIR: id === 'ours-signed-do' ? dataDirs.on : dataDirs.off,
        DNS_PORT: String(port),
        SYNC_URL: 'off',
        DNS_WORKERS: '1',
        DNS_RRL_RATE: '0',
        LOG_LEVEL: 'warn',
      },
    });
  };
  const results: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const id of Object.keys(subjects) as Array<keyof typeof subjects>) {
      const port = await freePort();
      const proc = start(id, port);
      procs.push(proc);
      await waitSigned(port, proc, id, subjects[id].signed);
      dnsperf(port, queryFile, subjects[id].dnssec); // warm-up
      const r = dnsperf(port, queryFile, subjects[id].dnssec);
      (results[id] ??= []).push(r.qps);
      console.log(
        `round ${round + 1} ${id}: ${Math.round(r.qps)} qps, ${r.avgMs.toFixed(3)} ms avg, ${r.lostPct}% lost`,
      );
      await stop(proc);
    }
  }
  const best = (id: string) => Math.max(...results[id]);
  if (ROUNDS > 0) {
    console.log(
      `\nbest of ${ROUNDS}: ours unsigned ${Math.round(best('ours-unsigned'))}, ours signed (DO) ` +
        `${Math.round(best('ours-signed-do'))}, knot signed (DO) ${Math.round(best('knot-signed-do'))} qps`,
    );
    console.log(`signed/unsigned: ${(best('ours-signed-do') / best('ours-unsigned')).toFixed(2)}x`);
    console.log(`ours signed / knot signed: ${(best('ours-signed-do') / best('knot-signed-do')).toFixed(2)}x`);
  }

  const paired = Number(process.env.PAIRED ?? 0);
  if (paired === 0) return;
  const table = [
    `\npaired (both servers on CPU 0 at once, a dnsperf each on CPU 1), ${paired} rounds:\n`,
    '| pair (a / b) | a QPS | b QPS | b / a per round | median | CPU µs/query a, b (medians) | a CPU / b |',
    '|---|---|---|---|---|---|---|',
  ];
  const pairs: Array<[keyof typeof subjects, keyof typeof subjects]> = [
    ['ours-unsigned', 'ours-signed-do'],
    ['knot-signed-do', 'ours-signed-do'],
  ];
  for (const [a, b] of pairs) {
    const rows: Array<[number, number]> = [];
    const cpu: Array<[number, number]> = [];
    for (let round = 0; round < paired; round++) {
      const [pa, pb] = [await freePort(), await freePort()];
      const [x, y] = [start(a, pa), start(b, pb)];
      procs.push(x, y);
      await waitSigned(pa, x, a, subjects[a].signed);
      await waitSigned(pb, y, b, subjects[b].signed);
      await Promise.all([
        dnsperfAsync(pa, queryFile, subjects[a].dnssec, x.pid!),
        dnsperfAsync(pb, queryFile, subjects[b].dnssec, y.pid!),
      ]); // warm-up
      const [ra, rb] = await Promise.all([
        dnsperfAsync(pa, queryFile, subjects[a].dnssec, x.pid!),
        dnsperfAsync(pb, queryFile, subjects[b].dnssec, y.pid!),
      ]);
      rows.push([ra.qps, rb.qps]);
      cpu.push([ra.cpuUs, rb.cpuUs]);
      console.log(
        `round ${round + 1} ${a} / ${b}: ${Math.round(ra.qps)} / ${Math.round(rb.qps)} qps, lost ${ra.lostPct}% / ${rb.lostPct}%`,
      );
      await stop(x);
      await stop(y);
    }
    const [ca, cb] = [median(cpu.map(([v]) => v)), median(cpu.map(([, v]) => v))];
    table.push(
      `| ${a} / ${b} | ${rows.map(([v]) => Math.round(v)).join(', ')} | ${rows.map(([, v]) => Math.round(v)).join(', ')} | ${rows.map(([v, w]) => (w / v).toFixed(2)).join(', ')} | ${median(rows.map(([v, w]) => w / v)).toFixed(2)}× | ${ca.toFixed(2)}, ${cb.toFixed(2)} | ${(ca / cb).toFixed(2)}× |`,
    );
  }
  console.log(table.join('\n'));
});
