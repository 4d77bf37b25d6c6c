// Large zones end to end (issue 17 item 1): for zones of ZONE_SIZES records, the import through the API (time to its
// 200, then to the first answer of the zone's last record from a DNS node), single record writes into the zone (API
// 200 → the node's new answer, p50/p99), and GET of the whole records list. The control plane and one dns-server run
// as separate processes (test/e2e/sync-harness.ts); PGlite unless TEST_DATABASE_URL is set (a Postgres server: each
// run creates its own database there and drops it at the end).
// Run: node --import tsx bench/sync/large-zones.ts
// Options (env): ZONE_SIZES (default 1000,100000), WRITES (per zone, default 200), GETS (default 5),
// NODE=0 (no DNS node: the import is timed to the API's 200 and its CPU time, nothing waits for a node's answer and
// no single write is timed; a node still storing a large delta would load the machine under the next figures),
// and the control plane's own settings (e.g. DOMAIN_CONFIG_MAX_BYTES) passed through CP_ENV as JSON; PG_PID (the
// Postgres server's postmaster pid, with TEST_DATABASE_URL) adds the whole cluster's CPU during the import (every
// other client of that server counts too).
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { cpus, loadavg } from 'node:os';
import {
  startControlPlane,
  startDnsNode,
  type ControlPlaneProcess,
  type DnsNodeProcess,
} from '../../test/e2e/sync-harness.js';
import { createDnsProbe, type DnsProbe } from './dns-probe.js';
import { summary, waitForAnswer } from './timing.js';
import { findChildPid, processCpuMs, processTreeCpuMs } from '../control-plane/process-cpu.js';

const SIZES = (process.env.ZONE_SIZES ?? '1000,100000').split(',').map(Number);
const WRITES = Number(process.env.WRITES ?? 200);
const GETS = Number(process.env.GETS ?? 5);
const CP_ENV = JSON.parse(process.env.CP_ENV ?? '{}') as Record<string, string>;
const WITH_NODE = process.env.NODE !== '0';

const ip = (i: number, net: number) => `10.${net}.${(i >> 8) & 255}.${i & 255}`;
const load = () => loadavg()[0]!.toFixed(1);

/** One API call over node:http (no client-side timeout: a 1,000,000-record import may take minutes under load). */
function call(cp: ControlPlaneProcess, method: string, path: string, body: string, type: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${cp.apiUrl}${path}`,
      { method, headers: { authorization: `Bearer ${cp.key}`, 'content-type': type } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 300)}`));
          else resolve(text);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface Row {
  case: string;
  figure: string;
  load: string;
}

async function main(): Promise<void> {
  let cp: ControlPlaneProcess | undefined;
  let node: DnsNodeProcess | undefined;
  let probe: DnsProbe | undefined;
  const rows: Row[] = [];
  // Each figure is printed as it is measured (a long run that fails later keeps what it had).
  const note = (r: Row) => {
    rows.push(r);
    console.log(`| ${r.case} | ${r.figure} | ${r.load} |`);
  };
  const tables: ReturnType<typeof summary>[] = [];
  try {
    cp = await startControlPlane('bench-large', CP_ENV);
    const zones = SIZES.map((n) => ({ n, name: `z${n}.example` }));
    for (const z of zones) await cp.api('POST', '/domains/', { name: z.name });
    // Each domain's plan allows its zone (the admin CLI owns the PGlite database while the control plane is down).
    await cp.restart(() => {
      for (const z of zones) cp!.cli('plan', 'override', z.name, 'max_records', String(z.n + 1000));
    });
    if (WITH_NODE) {
      node = await startDnsNode(cp, { DNS_RRL_RATE: '0' });
      probe = createDnsProbe('127.0.0.1', node.dnsPort);
    }

    for (const { n, name } of zones) {
      // Import: one text/plain zone file of n A records.
      const file = Array.from({ length: n }, (_, i) => `r${i} 300 IN A ${ip(i, 0)}`).join('\n');
      const cpPid = findChildPid(process.pid, 'control-plane/src/main.ts');
      const cpu0 = processCpuMs(cpPid);
      const nodePid = node ? findChildPid(process.pid, 'dns-server/src/main.ts') : 0;
      const nodeCpu0 = nodePid ? processCpuMs(nodePid) : 0;
      const pgPid = Number(process.env.PG_PID ?? 0);
      const pgCpu0 = pgPid ? processTreeCpuMs(pgPid) : 0;
      const t0 = performance.now();
      await call(cp, 'POST', `/domains/${name}/records/import`, file, 'text/plain');
      const t200 = performance.now();
      const cpu = (processCpuMs(cpPid) - cpu0) / 1000;
      const pgCpu = pgPid ? `; Postgres server CPU ${((processTreeCpuMs(pgPid) - pgCpu0) / 1000).toFixed(2)} s` : '';
      note({
        case: `import of ${n} records: POST → 200`,
        figure: `${((t200 - t0) / 1000).toFixed(2)} s (${(file.length / 1e6).toFixed(1)} MB; control plane CPU ${cpu.toFixed(2)} s${pgCpu})`,
        load: load(),
      });
      if (probe) {
        const tAnswer = await waitForAnswer(probe, `r${n - 1}.${name}`, ip(n - 1, 0), 600_000);
        note({
          case: `import of ${n} records: 200 → the node answers its last record`,
          figure: `${((tAnswer - t200) / 1000).toFixed(2)} s (POST → answer ${((tAnswer - t0) / 1000).toFixed(2)} s; DNS node CPU from the POST ${((processCpuMs(nodePid) - nodeCpu0) / 1000).toFixed(2)} s; control plane CPU after the 200 ${((processCpuMs(cpPid) - cpu0) / 1000 - cpu).toFixed(2)} s)`,
          load: load(),
        });
      }

      // GET of the whole list over HTTP (body read to the end).
      const gets: number[] = [];
      for (let g = 0; g < GETS; g++) {
        const s = performance.now();
        const res = await fetch(`${cp.apiUrl}/domains/${name}/records/`, {
          headers: { authorization: `Bearer ${cp.key}` },
        });
        const body = await res.arrayBuffer();
        if (res.status !== 200 || body.byteLength < n * 100) throw new Error(`GET ${name}: ${res.status}`);
        gets.push(performance.now() - s);
      }
      const sortedGets = [...gets].sort((a, b) => a - b);
      note({
        case: `GET records/ of ${n} records (${GETS} runs)`,
        figure: `p50 ${sortedGets[Math.floor(GETS / 2)]!.toFixed(0)} ms, min ${sortedGets[0]!.toFixed(0)} ms`,
        load: load(),
      });

      // Single writes: one record's destination changes; t0 when the API's 200 has arrived.
      if (!probe || WRITES === 0) continue;
      const first = await cp.api<Array<{ id: number; name: string }>>('GET', `/domains/${name}/records/?limit=1`);
      const id = first[0]!.id;
      const lat: number[] = [];
      for (let i = 0; i < WRITES; i++) {
        const target = ip(i, 1 + (i >> 16));
        await cp.api('PUT', `/domains/${name}/records/${id}`, { destination: target });
        const w0 = performance.now();
        lat.push((await waitForAnswer(probe, `r0.${name}`, target, 60_000)) - w0);
      }
      const s = summary(`single write → DNS answer (zone of ${n} records)`, lat);
      tables.push(s);
      note({ case: s.case, figure: `p50 ${s.p50_ms} ms, p99 ${s.p99_ms} ms (n=${s.n})`, load: load() });
    }

    console.log(
      `node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}; database: ${process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite'}`,
    );
    console.log('| case | figure | load average (1 min) |\n|---|---|---|');
    for (const r of rows) console.log(`| ${r.case} | ${r.figure} | ${r.load} |`);
    console.log('\n| case | n | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|');
    for (const r of tables)
      console.log(`| ${r.case} | ${r.n} | ${r.p50_ms} | ${r.p90_ms} | ${r.p99_ms} | ${r.max_ms} |`);
  } finally {
    probe?.close();
    await node?.stop();
    await cp?.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
