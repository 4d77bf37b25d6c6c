// Records API benchmark, in-process through app.inject (no socket): GET /domains/{d}/records/ on a 10,000-record
// domain and a 1000-item POST records/batch-update, each with p50/p99. Database: PGlite in a temp dir, or the
// Postgres server of TEST_DATABASE_URL. Run: node --import tsx bench/control-plane/records.bench.ts
// Options (env): BENCH_TIME_MS (per task, default 15000), BENCH_MIN_ITERATIONS (default 20).
import assert from 'node:assert/strict';
import { cpus, loadavg } from 'node:os';
import { Bench } from 'tinybench';
import { eq } from 'drizzle-orm';
import { startTestControlPlane } from '../../test/helpers/control-plane.js';
import { domains } from '../../control-plane/src/db/schema.js';
import { setOverride } from '../../control-plane/src/plans/subscriptions.js';

const RECORDS = 10_000;
const BATCH = 1000;
const time = Number(process.env.BENCH_TIME_MS ?? 15_000);
const iterations = Number(process.env.BENCH_MIN_ITERATIONS ?? 20);

const cp = await startTestControlPlane(null);
try {
  const user = await cp.user();
  const domain = await cp.domain(user.key, 'bench-records.example');
  const [row] = await cp.database.db.select().from(domains).where(eq(domains.name, domain));
  await setOverride(cp.database.db, row!.id, 'max_records', RECORDS * 2);
  // Seed through the API itself: one import of 10,000 A records (seeded, deterministic names and addresses).
  const zone = Array.from({ length: RECORDS }, (_, i) => `host${i} 300 IN A 198.51.${(i >> 8) & 255}.${i & 255}`).join(
    '\n',
  );
  const seeded = await cp.call(user.key, 'POST', `/domains/${domain}/records/import`, { zone });
  assert.equal(seeded.statusCode, 200, seeded.body.slice(0, 200));

  const listUrl = `/domains/${domain}/records/`;
  const first = await cp.call(user.key, 'GET', listUrl);
  const ids = (first.json() as { id: number }[]).map((r) => r.id);
  assert.equal(ids.length, RECORDS, 'GET answers every record');
  let ttl = 600;
  const batch = async () => {
    ttl = ttl === 600 ? 900 : 600; // every item really changes
    const res = await cp.call(user.key, 'POST', `/domains/${domain}/records/batch-update`, {
      updates: ids.slice(0, BATCH).map((id) => ({ id, ttl })),
    });
    if (res.statusCode !== 200 || res.json().succeeded !== BATCH)
      throw new Error(`batch-update failed: ${res.body.slice(0, 200)}`);
  };
  await batch(); // correctness before timing

  // CPU time of this process per call (user + system; PGlite runs in-process, so it includes the database):
  // on a shared, loaded machine it moves far less than wall-clock latency.
  const cpu = new Map<string, { us: number; n: number }>();
  const timed = (name: string, fn: () => Promise<void>) => async () => {
    const start = process.cpuUsage();
    await fn();
    const d = process.cpuUsage(start);
    const c = cpu.get(name) ?? { us: 0, n: 0 };
    cpu.set(name, { us: c.us + d.user + d.system, n: c.n + 1 });
  };
  const bench = new Bench({ time, iterations, warmupIterations: 3 });
  const getName = `GET records/ (${RECORDS} records)`;
  const batchName = `POST records/batch-update (${BATCH} items)`;
  bench.add(
    getName,
    timed(getName, async () => {
      const res = await cp.call(user.key, 'GET', listUrl);
      if (res.statusCode !== 200 || res.body.length < RECORDS * 100) throw new Error('bad list');
    }),
  );
  bench.add(batchName, timed(batchName, batch));
  await bench.run();
  console.table(bench.table());
  const driver = cp.database.driver;
  console.log(`\nNode ${process.version}, ${cpus().length} × ${cpus()[0]?.model}, database ${driver}`);
  console.log(
    `load average ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
  );
  console.log('| task | p50 ms | p99 ms | mean ms | CPU ms/op | samples |');
  console.log('|---|---|---|---|---|---|');
  for (const task of bench.tasks) {
    const l = task.result!.latency;
    const c = cpu.get(task.name)!;
    console.log(
      `| ${task.name} | ${l.p50!.toFixed(1)} | ${l.p99!.toFixed(1)} | ${l.mean.toFixed(1)} | ${(c.us / c.n / 1000).toFixed(1)} | ${l.samples.length} |`,
    );
  }
} finally {
  await cp.close();
}
