// dnsperf against NSD and the dns-server (1 and 2 workers) serving the same seeded 10,000-record zone, plus a bare
// Node dgram server (the old ceiling), in one run. `ours*` rows answer UDP through the batched native module (the
// default); `ours*-dgram` rows through node:dgram (DNS_UDP_IO=dgram, the path before issue 17 item 5).
// Run: node --import tsx bench/dns-server/dnsperf.ts
// Env: SECONDS (dnsperf -l, default 10), RECORDS (default 10000), CLIENTS (dnsperf -c, default 4), ROUNDS (default 2;
// 0: only the paired rounds), SUBJECTS (comma-separated ids of the subjects below to run; default all), PAIRED (rounds
// of the paired 1-core runs at the end: NSD and the dns-server on the same CPU at the same time; default 0, none),
// PROFILE=1 (one more paired round with perf attached: user/kernel CPU, syscalls and batch size per query, the top of
// each profile), PAIRS (which pairs the paired rounds run: batch, dgram (NSD beside the dns-server, default both),
// before (BEFORE=DIR, a checkout of the code before a change, beside this one)).
// Response rate limiting is run three ways on both servers: off, on with a rate dnsperf never reaches (what the
// bookkeeping costs per answer), and at the defaults (200 answers/s per bucket, slip 2: dnsperf's NXDOMAIN tenth
// shares one bucket and gets limited, as a real flood from one source would).
// Our server's store is written directly through the node store API (openNodeStore(DATA_DIR/dns-node).apply),
// the same path the sync client uses; NSD reads the equivalent BIND zone file.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openNodeStore } from '@platform/shared/node-store';
import { Packet } from 'dns2';
import { APEX, generateZone } from './zone-gen.js';
import {
  cpuMs,
  cpuTimesMs,
  ensureTools,
  freePort,
  median,
  nsdConfig,
  perfWhile,
  runBench,
  runBeside,
  stop,
} from './tools.js';
import { udpQuery as udpAsk } from '../../test/e2e/dns-helpers.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SECONDS = Number(process.env.SECONDS ?? 10);
const RECORDS = Number(process.env.RECORDS ?? 10_000);
const CLIENTS = Number(process.env.CLIENTS ?? 4);
/** Rounds over all subjects, interleaved, so a burst of load from other processes does not hit one subject only. */
const ROUNDS = Number(process.env.ROUNDS ?? 2);
/** PROFILE=1: after the paired rounds, one more with perf attached to both servers (not counted in the ratios). */
const PROFILE = process.env.PROFILE === '1';
/** BEFORE=DIR: another checkout (built, with its node_modules) whose dns-server the `before` pair runs beside this one. */
const BEFORE = process.env.BEFORE;

function query(port: number, name: string, type: string): Promise<Buffer | null> {
  const q = new Packet();
  q.header.id = 1 + Math.floor(Math.random() * 65000);
  q.questions.push({ name, type: Packet.TYPE[type as keyof typeof Packet.TYPE], class: 1 } as never);
  return udpAsk(port, q.toBuffer(), 500);
}

async function waitReady(port: number, proc: ChildProcess, label: string): Promise<void> {
  const end = Date.now() + 60_000;
  while (Date.now() < end) {
    if (proc.exitCode !== null) throw new Error(`${label} exited with ${proc.exitCode}`);
    if (await query(port, `${APEX}`, 'SOA')) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${label} did not answer`);
}

/** Records of the answer section as sorted strings, for comparing two servers. */
function answerKey(buf: Buffer | null): string {
  if (!buf) return 'no answer';
  const p = Packet.parse(buf);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- dns2 records are untyped
  const fmt = (r: any) => JSON.stringify({ ...r, name: String(r.name).toLowerCase() });
  // Authority only for negative answers: NSD adds the apex NS to positive answers unless minimal, we never do.
  const authority = p.answers.length === 0 ? p.authorities.map(fmt).sort().join('|') : '';
  return `${p.header.rcode} ${p.header.aa} ${p.answers.map(fmt).sort().join('|')} ${authority}`;
}

interface Result {
  subject: string;
  cores: string;
  qps: number;
  avgLatencyMs: number;
  stddevMs: number;
  lostPct: number;
  completed: number;
  /** CPU time the server (its process and their children) used per answered query, in microseconds. */
  cpuUsPerQuery: number;
}

function dnsperfCommand(port: number, queryFile: string, pin: boolean): string[] {
  const args = [
    '-s',
    '127.0.0.1',
    '-p',
    String(port),
    '-d',
    queryFile,
    '-l',
    String(SECONDS),
    '-c',
    String(CLIENTS),
    '-T',
    '1',
    '-q',
    '1000',
    '-t',
    '1',
  ];
  return pin ? ['taskset', '-c', '1', 'dnsperf', ...args] : ['dnsperf', ...args];
}

function dnsperfResult(out: string): Omit<Result, 'subject' | 'cores' | 'cpuUsPerQuery'> {
  const num = (re: RegExp) => Number(re.exec(out)?.[1] ?? NaN);
  return {
    completed: num(/Queries completed:\s+(\d+)/),
    qps: num(/Queries per second:\s+([\d.]+)/),
    avgLatencyMs: num(/Average Latency \(s\):\s+([\d.]+)/) * 1000,
    stddevMs: num(/Latency StdDev \(s\):\s+([\d.]+)/) * 1000,
    lostPct: num(/Queries lost:\s+\d+ \(([\d.]+)%\)/),
  };
}

function dnsperf(port: number, queryFile: string, pin: boolean, server: number): Omit<Result, 'subject' | 'cores'> {
  const cmd = dnsperfCommand(port, queryFile, pin);
  const cpu0 = cpuMs(server);
  const r = dnsperfResult(spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8' }).stdout);
  return { ...r, cpuUsPerQuery: ((cpuMs(server) - cpu0) * 1000) / r.completed };
}

/** dnsperf in the background, for two servers loaded at the same time. */
function dnsperfAsync(port: number, queryFile: string, server: number): Promise<Omit<Result, 'subject' | 'cores'>> {
  return runBeside(dnsperfCommand(port, queryFile, true), server).then(({ out, serverCpuMs }) => {
    const r = dnsperfResult(out);
    return { ...r, cpuUsPerQuery: (serverCpuMs * 1000) / r.completed };
  });
}

runBench('dnsperf-bench-', async (dir, procs) => {
  ensureTools();
  {
    const zone = generateZone(RECORDS, 1);
    const queryFile = join(dir, 'queries.txt');
    writeFileSync(queryFile, zone.queries.join('\n') + '\n');
    writeFileSync(join(dir, `${APEX}.zone`), zone.zoneFile);
    const dataDir = join(dir, 'data');
    mkdirSync(dataDir);
    const store = openNodeStore(join(dataDir, 'dns-node'));
    store.apply({ version: 1, domain: APEX, deleted: false, snapshot: zone.snapshot });
    await store.close();

    /** rrl: responses per second per bucket, 0 = off (NSD's rrl-ratelimit). */
    const nsd = async (servers: number, port: number, pin: boolean, rrl = 0) => {
      const conf = join(dir, `nsd-${servers}-${rrl}.conf`);
      writeFileSync(conf, nsdConfig(dir, `${servers}-${rrl}`, port, APEX, servers, rrl));
      const cmd = pin ? ['taskset', '-c', '0', 'nsd', '-d', '-c', conf] : ['nsd', '-d', '-c', conf];
      return spawn(cmd[0], cmd.slice(1), { stdio: 'ignore' });
    };
    /**
     * rrl: DNS_RRL_RATE (0: off); udpIo: DNS_UDP_IO, batched through the native module (the default) or node:dgram
     * (before issue 17 item 5); perfMap: node --perf-basic-prof, for perf's names of JIT-compiled functions; root:
     * the checkout whose dns-server runs (BEFORE's for the before/after pairs).
     */
    const ours = (
      workers: number,
      port: number,
      pin: boolean,
      { rrl = 0, udpIo = 'batch', perfMap = false, root = ROOT } = {},
    ) => {
      const node = [process.execPath, ...(perfMap ? ['--perf-basic-prof'] : []), '--import', 'tsx'];
      const cmd = [...(pin ? ['taskset', '-c', '0'] : []), ...node, join(root, 'dns-server/src/main.ts')];
      return spawn(cmd[0], cmd.slice(1), {
        cwd: root,
        stdio: 'ignore',
        env: {
          ...process.env,
          DATA_DIR: dataDir,
          DNS_PORT: String(port),
          SYNC_URL: 'off',
          DNS_WORKERS: String(workers),
          DNS_RRL_RATE: String(rrl),
          DNS_UDP_IO: udpIo,
          LOG_LEVEL: 'warn',
        },
      });
    };
    const bare = (port: number, pin: boolean) => {
      const node = [process.execPath, '--import', 'tsx', join(ROOT, 'bench/dns-server/bare-dgram.ts'), String(port)];
      const cmd = pin ? ['taskset', '-c', '0', ...node] : node;
      return spawn(cmd[0], cmd.slice(1), { cwd: ROOT, stdio: 'ignore' });
    };

    // Correctness first: a sample of the query file answers the same from NSD and from the dns-server.
    {
      const [pn, po] = [await freePort(), await freePort()];
      const n = await nsd(1, pn, false);
      procs.push(n);
      const o = ours(1, po, false);
      procs.push(o);
      await waitReady(pn, n, 'nsd');
      await waitReady(po, o, 'dns-server');
      let differ = 0;
      for (const line of zone.queries.slice(0, 300)) {
        const [name, type] = line.split(' ');
        const [a, b] = [answerKey(await query(pn, name, type)), answerKey(await query(po, name, type))];
        if (a !== b) {
          differ++;
          if (differ <= 3) console.log(`differs: ${line}\n  nsd  ${a}\n  ours ${b}`);
        }
      }
      console.log(
        `correctness: ${300 - differ}/300 sampled queries answer identically (rcode, AA, answer section; authority when the answer is empty)`,
      );
      await stop(n);
      await stop(o);
    }

    /** A rate dnsperf never reaches in one bucket: every answer goes through the rate limiter, none is limited. */
    const UNREACHED = 1_000_000;
    const DEFAULT_RATE = 200;
    type Subject = {
      id: string;
      subject: string;
      cores: string;
      /** Rows compared with the NSD row of the same group. */
      group: string;
      pin: boolean;
      start: (port: number) => ChildProcess | Promise<ChildProcess>;
    };
    const modes: Array<[suffix: string, group: string, rate: number]> = [
      ['', 'RRL off', 0],
      ['-rrl-unreached', `RRL on, ${UNREACHED}/s (never reached)`, UNREACHED],
      ['-rrl', `RRL on, ${DEFAULT_RATE}/s slip 2 (defaults)`, DEFAULT_RATE],
    ];
    /** A 1-core row: the server pinned to CPU 0, dnsperf to CPU 1. */
    const one = (id: string, subject: string, group: string, start: Subject['start']): Subject => ({
      id,
      subject,
      cores: '1',
      group,
      pin: true,
      start,
    });
    const all: Subject[] = [
      ...modes.flatMap(([suffix, group, rate]) => [
        one(`nsd${suffix}`, 'NSD 4 (server-count 1)', group, (p) => nsd(1, p, true, rate)),
        one(`ours${suffix}`, 'dns-server (1 worker)', group, (p) => ours(1, p, true, { rrl: rate })),
      ]),
      one('ours-dgram', 'dns-server (1 worker, DNS_UDP_IO=dgram)', 'RRL off', (p) =>
        ours(1, p, true, { udpIo: 'dgram' }),
      ),
      one('bare', 'bare Node dgram (fixed answer)', 'RRL off', (p) => bare(p, true)),
      {
        id: 'nsd2',
        subject: 'NSD 4 (server-count 2)',
        cores: '2',
        group: 'RRL off',
        pin: false,
        start: (p) => nsd(2, p, false),
      },
      {
        id: 'ours2',
        subject: 'dns-server (2 workers, node:cluster)',
        cores: '2',
        group: 'RRL off',
        pin: false,
        start: (p) => ours(2, p, false),
      },
      {
        id: 'ours2-dgram',
        subject: 'dns-server (2 workers, node:cluster, DNS_UDP_IO=dgram)',
        cores: '2',
        group: 'RRL off',
        pin: false,
        start: (p) => ours(2, p, false, { udpIo: 'dgram' }),
      },
    ];
    const only = process.env.SUBJECTS?.split(',').map((x) => x.trim());
    const subjects = ROUNDS <= 0 ? [] : only ? all.filter((x) => only.includes(x.id)) : all;
    const runs = new Map<string, Result[]>();
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of subjects) {
        const port = await freePort();
        const proc = await s.start(port);
        procs.push(proc);
        await waitReady(port, proc, s.subject);
        await new Promise((r) => setTimeout(r, 500));
        const r = { subject: s.subject, cores: s.cores, ...dnsperf(port, queryFile, s.pin, proc.pid!) };
        console.log(
          `round ${round + 1}: ${r.subject}, ${s.group}: ${Math.round(r.qps)} qps, ${r.cpuUsPerQuery.toFixed(2)} µs CPU/query`,
        );
        runs.set(s.id, [...(runs.get(s.id) ?? []), r]);
        await stop(proc);
      }
    }
    // Best round per subject: on a shared machine the best round is the one least disturbed by other processes.
    const results = subjects.map((s) => ({
      ...s,
      ...runs.get(s.id)!.reduce((a, b) => (b.qps > a.qps ? b : a)),
    }));
    const nsdQps = (cores: string, group: string) =>
      results.find((r) => r.cores === cores && r.group === group && r.subject.startsWith('NSD'))?.qps ?? NaN;
    /** Median over the rounds of the server's CPU per answered query (the rounds differ less in it than in QPS). */
    const cpuOf = (id: string) => median(runs.get(id)!.map((x) => x.cpuUsPerQuery));
    const nsdCpu = (cores: string, group: string) => {
      const n = results.find((r) => r.cores === cores && r.group === group && r.subject.startsWith('NSD'));
      return n ? cpuOf(n.id) : NaN;
    };
    if (results.length > 0) {
      console.log(
        `\nmachine: ${cpus().length}× ${cpus()[0]?.model}, Node ${process.version}; dnsperf -l ${SECONDS} -c ${CLIENTS} -T 1 -q 1000 -t 1, ${zone.queries.length} queries (10% NXDOMAIN), ${RECORDS} records`,
      );
      console.log(
        '1-core runs: server pinned to CPU 0 and dnsperf to CPU 1 (taskset); 2-core runs: unpinned, sharing both cores with dnsperf\n',
      );
      console.log(
        `best of ${ROUNDS} interleaved rounds per subject (all rounds' QPS in the last column); server CPU per answered ` +
          'query: median of the rounds, user + system, the server process and its children (/proc); "NSD CPU / ours" ' +
          'above 1 means fewer CPU microseconds per query than NSD\n',
      );
      console.log(
        '| subject | cores | rate limiting | QPS | vs NSD (same RRL) | server CPU µs/query | NSD CPU / ours | avg latency ms | stddev ms | lost % | QPS per round |',
      );
      console.log('|---|---|---|---|---|---|---|---|---|---|---|');
      for (const r of results) {
        const rounds = runs
          .get(r.id)!
          .map((x) => Math.round(x.qps))
          .join(', ');
        console.log(
          `| ${r.subject} | ${r.cores} | ${r.group} | ${Math.round(r.qps)} | ${(r.qps / nsdQps(r.cores, r.group)).toFixed(2)}× | ${cpuOf(r.id).toFixed(2)} | ${(nsdCpu(r.cores, r.group) / cpuOf(r.id)).toFixed(2)}× | ${r.avgLatencyMs.toFixed(3)} | ${r.stddevMs.toFixed(3)} | ${r.lostPct} | ${rounds} |`,
        );
      }
    }

    // PAIRED=N: N rounds of NSD and each dns-server variant pinned to CPU 0 at the same time, one dnsperf each on
    // CPU 1. Both servers get the same share of a CPU that other processes also use, so their ratio is the ratio of
    // their cost per query, whatever the load of the moment (the rows above move with it).
    const paired = Number(process.env.PAIRED ?? 0);
    if (paired > 0) {
      console.log(`\npaired (both servers on CPU 0 at once, a dnsperf each on CPU 1), ${paired} rounds:\n`);
      console.log(
        '| subject (b) vs a | a QPS | b QPS | b / a per round | median | CPU µs/query a, b (medians) | a CPU / b |',
      );
      console.log('|---|---|---|---|---|---|---|');
      type Pair = {
        label: string;
        aLabel: string;
        a: (port: number) => Promise<ChildProcess>;
        b: (port: number) => ChildProcess;
      };
      const withNsd = (label: string, udpIo: string): Pair => ({
        label: `${label} vs NSD`,
        aLabel: 'nsd',
        a: (p) => nsd(1, p, true),
        b: (p) => ours(1, p, true, { udpIo }),
      });
      const all: Record<string, Pair> = {
        batch: withNsd('dns-server (1 worker)', 'batch'),
        dgram: withNsd('dns-server (1 worker, DNS_UDP_IO=dgram)', 'dgram'),
      };
      if (BEFORE)
        all.before = {
          label: `dns-server (1 worker) vs the same at ${BEFORE}`,
          aLabel: 'before',
          a: async (p) => ours(1, p, true, { root: BEFORE }),
          b: (p) => ours(1, p, true),
        };
      const pairs = (process.env.PAIRS ?? 'batch,dgram')
        .split(',')
        .map((x) => all[x.trim()])
        .filter((x) => x);
      for (const pair of pairs) {
        const label = pair.label;
        const rows: Array<[number, number]> = [];
        const cpu: Array<[number, number]> = [];
        for (let round = 0; round < paired; round++) {
          const [pn, po] = [await freePort(), await freePort()];
          const n = await pair.a(pn);
          const o = pair.b(po);
          procs.push(n, o);
          await waitReady(pn, n, pair.aLabel);
          await waitReady(po, o, label);
          await new Promise((r) => setTimeout(r, 500));
          const [a, b] = await Promise.all([dnsperfAsync(pn, queryFile, n.pid!), dnsperfAsync(po, queryFile, o.pid!)]);
          rows.push([a.qps, b.qps]);
          cpu.push([a.cpuUsPerQuery, b.cpuUsPerQuery]);
          await stop(n);
          await stop(o);
        }
        const [cn, co] = [median(cpu.map(([x]) => x)), median(cpu.map(([, y]) => y))];
        console.log(
          `| ${label} | ${rows.map(([a]) => Math.round(a)).join(', ')} | ${rows.map(([, b]) => Math.round(b)).join(', ')} | ${rows.map(([a, b]) => (b / a).toFixed(2)).join(', ')} | ${median(rows.map(([a, b]) => b / a)).toFixed(2)}× | ${cn.toFixed(2)}, ${co.toFixed(2)} | ${(cn / co).toFixed(2)}× |`,
        );
      }
    }

    // PROFILE=1: NSD and the dns-server (batched) on CPU 0 at once as in the paired rounds, with perf stat and perf
    // record attached to each for the whole dnsperf run: user and kernel CPU per query (/proc), syscalls, context
    // switches and datagrams per receive call, and the top of each profile by self time.
    if (PROFILE) {
      const [pn, po] = [await freePort(), await freePort()];
      const n = await nsd(1, pn, true);
      const o = ours(1, po, true, { perfMap: true });
      procs.push(n, o);
      await waitReady(pn, n, 'nsd');
      await waitReady(po, o, 'dns-server');
      await new Promise((r) => setTimeout(r, 500));
      const calls = ['recvmmsg', 'sendmmsg', 'recvfrom', 'sendto', 'recvmsg', 'sendmsg', 'epoll_wait', 'epoll_pwait'];
      const events = [
        'task-clock',
        'context-switches',
        'raw_syscalls:sys_enter',
        ...calls.map((c) => `syscalls:sys_enter_${c}`),
      ];
      const servers = [
        { label: 'NSD', pid: n.pid!, port: pn },
        { label: 'dns-server', pid: o.pid!, port: po },
      ];
      const before = servers.map((x) => cpuTimesMs(x.pid));
      const results = await Promise.all(
        servers.map((x) =>
          Promise.all([dnsperfAsync(x.port, queryFile, x.pid), perfWhile(x.pid, SECONDS + 0.5, events, dir)]),
        ),
      );
      const after = servers.map((x) => cpuTimesMs(x.pid));
      console.log(`\nprofile round (perf attached; QPS not comparable with the rounds above):\n`);
      console.log('| per answered query | ' + servers.map((x) => x.label).join(' | ') + ' |');
      console.log('|---|' + servers.map(() => '---|').join(''));
      const row = (name: string, f: (i: number) => string) =>
        console.log(`| ${name} | ${servers.map((_, i) => f(i)).join(' | ')} |`);
      const done = (i: number) => results[i][0].completed;
      const per = (i: number, event: string) => (results[i][1].counts.get(event) ?? NaN) / done(i);
      row('queries answered (QPS)', (i) => `${done(i)} (${Math.round(results[i][0].qps)})`);
      row('user CPU µs', (i) => (((after[i].user - before[i].user) * 1000) / done(i)).toFixed(2));
      row('kernel CPU µs', (i) => (((after[i].system - before[i].system) * 1000) / done(i)).toFixed(2));
      row('syscalls', (i) => per(i, 'raw_syscalls:sys_enter').toFixed(3));
      for (const c of calls) {
        if (servers.some((_, i) => (results[i][1].counts.get(`syscalls:sys_enter_${c}`) ?? 0) > 0))
          row(c, (i) => per(i, `syscalls:sys_enter_${c}`).toFixed(4));
      }
      row('context switches', (i) => per(i, 'context-switches').toFixed(4));
      row('datagrams per receive call', (i) =>
        (
          1 /
          (per(i, 'syscalls:sys_enter_recvmmsg') +
            per(i, 'syscalls:sys_enter_recvfrom') +
            per(i, 'syscalls:sys_enter_recvmsg'))
        ).toFixed(1),
      );
      for (const [i, x] of servers.entries()) {
        console.log(`\n${x.label}, perf report --no-children --sort dso,sym (self time, top 25):\n`);
        for (const l of results[i][1].top.slice(0, 25)) console.log(`    ${l}`);
        console.log(`\n${x.label}, by binary: ${results[i][1].byDso.slice(0, 6).join('; ')}`);
      }
      await stop(n);
      await stop(o);
    }
  }
});
