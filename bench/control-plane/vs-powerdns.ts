// Our records API side by side with PowerDNS's HTTP API (Debian's pdns-server, SQLite backend) doing the same work
// in the same run, once with our control plane on PGlite and once on a throwaway Postgres cluster (issue 8, "Must
// show"). Both servers run as child processes on 127.0.0.1; requests alternate between them one by one.
// Run: npm run bench -- records-pdns   (or node --import tsx bench/control-plane/vs-powerdns.ts)
// Env: DATABASES (default pglite,postgres), ROWS (default all: create-empty,create-10k,batch,import,get),
// CREATES (default 200), BATCHES (default 20), GETS (default 30), WARMUP (default 3), SETTLE_MS (default 20).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { prng } from '@platform/shared/testing/prng';
import { startControlPlane, type ControlPlaneProcess } from '../../test/e2e/sync-harness.js';
import { ensureDebianPackages } from './debian-packages.js';
import { percentile, runPairedRow, type RowOptions, type Side, type SideResult } from './paired-runner.js';
import { startPostgresCluster, type PostgresCluster } from './postgres-cluster.js';
import { startPowerDns, type PowerDns } from './powerdns.js';
import { findChildPid, processCpuMs, processTreeCpuMs } from './process-cpu.js';
import { ourRecordsApi, powerDnsRecordsApi, type ARecord, type RecordsSubject } from './records-subjects.js';

const ZONE_SIZE = 10_000;
const BATCH = 1000;
const EMPTY = 'empty.bench.example';
const BIG = 'big.bench.example';
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const CREATES = env('CREATES', 200);
const BATCHES = env('BATCHES', 20);
const GETS = env('GETS', 30);
const WARMUP = env('WARMUP', 3);
const SETTLE_MS = env('SETTLE_MS', 20);
const DATABASES = (process.env.DATABASES ?? 'pglite,postgres').split(',');
const ALL_ROWS = ['create-empty', 'create-10k', 'batch', 'import', 'get'];
const ROWS = process.env.ROWS ? process.env.ROWS.split(',') : ALL_ROWS;

const random = prng(8);
const address = () =>
  `10.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}.${1 + Math.floor(random() * 254)}`;
const records = (prefix: string, n: number): ARecord[] =>
  Array.from({ length: n }, (_, i) => ({ name: `${prefix}${i}`, address: address() }));
const zoneRecords = records('host', ZONE_SIZE);

interface Row {
  id: string;
  label: string;
  count: number;
  side(s: RecordsSubject): Side;
}

/** Checks that `s` serves exactly `want` (plus, for ttl checks, the given ttl on `ttlOf` records). */
async function assertZone(s: RecordsSubject, zone: string, want: ARecord[], ttl?: { of: ARecord[]; is: number }) {
  const answer = await s.list(zone);
  assert.equal(answer.status, 200, `${s.name} list ${zone}`);
  const got = s.aRecords(answer);
  assert.equal(got.size, want.length, `${s.name}: ${zone} holds ${want.length} A records`);
  for (const r of want) assert.equal(got.get(r.name)?.address, r.address, `${s.name}: ${r.name}.${zone}`);
  for (const r of ttl?.of ?? []) assert.equal(got.get(r.name)?.ttl, ttl!.is, `${s.name}: ttl of ${r.name}.${zone}`);
}

function rows(): Row[] {
  const creates = records('new', WARMUP + CREATES);
  const createRow = (id: string, label: string, zone: string, base: ARecord[]): Row => ({
    id,
    label,
    count: CREATES,
    side: (s) => ({
      op: (i) => s.createOne(zone, creates[i]!),
      async after(i, answer) {
        assert.ok(answer.status === 200 || answer.status === 204, `${s.name} create: ${answer.status} ${answer.body}`);
        if (i === 0) await assertZone(s, zone, [...base, creates[0]!]); // the record really exists, before timing
        await s.remove(zone, [creates[i]!], answer); // every create starts from the same zone
      },
    }),
  });
  const batch = zoneRecords.slice(0, BATCH);
  const imports = Array.from({ length: WARMUP + BATCHES }, (_, i) => records(`imp${i}-`, BATCH));
  const ttlOf = (i: number) => (i % 2 === 0 ? 900 : 600); // every item really changes
  const all: Row[] = [
    createRow('create-empty', 'create 1 record, empty zone', EMPTY, []),
    createRow('create-10k', `create 1 record, ${ZONE_SIZE}-record zone`, BIG, zoneRecords),
    {
      id: 'batch',
      label: `${BATCH}-record batch (ours: batch-update; PowerDNS: PATCH of ${BATCH} rrsets), ttl change`,
      count: BATCHES,
      side: (s) => ({
        op: (i) => s.setTtl(BIG, batch, ttlOf(i)),
        async after(i, answer) {
          assert.ok(answer.status === 200 || answer.status === 204, `${s.name} batch: ${answer.status}`);
          if (answer.status === 200) assert.equal(JSON.parse(answer.body).succeeded, BATCH, answer.body.slice(0, 300));
          if (i === 0) await assertZone(s, BIG, zoneRecords, { of: [batch[0]!, batch.at(-1)!], is: ttlOf(0) });
        },
      }),
    },
    {
      id: 'import',
      label: `${BATCH} new records (ours: records/import; PowerDNS: PATCH of ${BATCH} rrsets)`,
      count: BATCHES,
      side: (s) => ({
        op: (i) => s.addMany(BIG, imports[i]!),
        async after(i, answer) {
          assert.ok(answer.status === 200 || answer.status === 204, `${s.name} import: ${answer.status}`);
          if (i === 0) await assertZone(s, BIG, [...zoneRecords, ...imports[0]!]);
          await s.remove(BIG, imports[i]!, answer);
        },
      }),
    },
    {
      id: 'get',
      label: `GET a ${ZONE_SIZE}-record zone`,
      count: GETS,
      side: (s) => ({
        op: () => s.list(BIG),
        async after(i, answer) {
          assert.equal(answer.status, 200);
          if (i === 0) assert.equal(s.aRecords(answer).size, ZONE_SIZE, `${s.name}: the GET answers every record`);
        },
      }),
    },
  ];
  return all.filter((r) => ROWS.includes(r.id));
}

const fmt = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const ratio = (ours: number, theirs: number) => `**${(ours / theirs).toFixed(1)}×**`;

function tableLine(database: string, row: Row, a: SideResult, b: SideResult): string {
  const [p50a, p50b] = [percentile(a.ms, 50), percentile(b.ms, 50)];
  const ourCpu = fmt(a.cpuMsPerOp) + (a.databaseCpuMsPerOp === undefined ? '' : ` (db ${fmt(a.databaseCpuMsPerOp)})`);
  const cells = [
    database === 'postgres' ? 'Postgres' : 'PGlite',
    row.label,
    fmt(p50a),
    fmt(percentile(a.ms, 99)),
    fmt(p50b),
    fmt(percentile(b.ms, 99)),
    ratio(p50a, p50b),
    ourCpu,
    fmt(b.cpuMsPerOp),
    ratio(a.cpuMsPerOp, b.cpuMsPerOp),
    String(row.count),
  ];
  return `| ${cells.join(' | ')} |`;
}

/** Stops what the current measurement started; also run on SIGINT/SIGTERM, as pg_ctl's server outlives us. */
let stopCurrent: (() => Promise<void>) | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void (stopCurrent?.() ?? Promise.resolve()).finally(() => process.exit(130)));

async function measure(database: string): Promise<string[]> {
  let cluster: PostgresCluster | undefined;
  let cp: ControlPlaneProcess | undefined;
  let pdns: PowerDns | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await pdns?.stop();
      await cp?.stop();
      await cluster?.stop();
    })());
  stopCurrent = stop;
  try {
    if (database === 'postgres') {
      cluster = await startPostgresCluster();
      process.env.TEST_DATABASE_URL = cluster.url;
    } else delete process.env.TEST_DATABASE_URL;
    cp = await startControlPlane('bench-pdns');
    const cpPid = findChildPid(process.pid, 'control-plane/src/main.ts');
    const pg = cluster;
    // With Postgres the database is a separate server: its CPU counts too, as PowerDNS's SQLite is in-process.
    const ours = ourRecordsApi(cp.apiUrl, cp.key, {
      cpuMs: () => processCpuMs(cpPid) + (pg ? processTreeCpuMs(pg.pid) : 0),
      ...(pg ? { databaseCpuMs: () => processTreeCpuMs(pg.pid) } : {}),
    });
    pdns = await startPowerDns();
    const pdnsPid = pdns.pid;
    const theirs = powerDnsRecordsApi(pdns, () => processCpuMs(pdnsPid));

    for (const s of [ours, theirs]) for (const zone of [EMPTY, BIG]) await s.addZone(zone);
    cp.cli('plan', 'override', BIG, 'max_records', String(ZONE_SIZE + 2 * BATCH));
    for (const s of [ours, theirs]) {
      const seeded = await s.addMany(BIG, zoneRecords);
      assert.ok(seeded.status === 200 || seeded.status === 204, `${s.name} seed: ${seeded.status}`);
      await assertZone(s, BIG, zoneRecords);
      await assertZone(s, EMPTY, []);
    }

    const load = loadavg()[0]!.toFixed(1);
    const lines = [
      '| database | row | ours p50 ms | ours p99 ms | PowerDNS p50 ms | PowerDNS p99 ms | time ours/PowerDNS (p50) ' +
        '| ours CPU ms/op | PowerDNS CPU ms/op | CPU ours/PowerDNS | n |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
    ];
    for (const row of rows()) {
      const opts: RowOptions = { count: row.count, warmup: WARMUP, settleMs: SETTLE_MS };
      const [a, b] = await runPairedRow([ours, theirs], [row.side(ours), row.side(theirs)], opts);
      const line = tableLine(database, row, a, b);
      console.log(line);
      lines.push(line);
    }
    lines.push(
      '',
      `${database}: ${cluster?.version ?? 'PGlite (in the control plane process)'}; ${pdns.version} (gsqlite3); ` +
        `load average ${load} at the start, ${loadavg()[0]!.toFixed(1)} at the end`,
    );
    return lines;
  } finally {
    await stop();
    stopCurrent = undefined;
  }
}

async function main(): Promise<void> {
  ensureDebianPackages([
    'pdns-server',
    'pdns-backend-sqlite3',
    'sqlite3',
    ...(DATABASES.includes('postgres') ? ['postgresql'] : []),
  ]);
  const commit = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const out: string[] = [];
  for (const database of DATABASES) out.push(...(await measure(database)), '');
  console.log(`\ncommit ${commit}; Node ${process.version}; ${cpus().length} × ${cpus()[0]?.model}`);
  console.log(out.join('\n'));
}

await main();
