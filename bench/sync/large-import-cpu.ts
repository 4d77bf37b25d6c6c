// One zone import of N A records (default 100000) through the API of an in-process control plane (PGlite, or the
// Postgres server of TEST_DATABASE_URL): wall time, CPU seconds of this process across the request, RSS; PROF=file
// writes a V8 CPU profile of the import alone. Run: N=1000000 node --import tsx bench/sync/large-import-cpu.ts
// SESSION=1: the same file through an import session instead, the start and the commit measured apart (PROF: the
// commit alone).
import { performance } from 'node:perf_hooks';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { recordsFixture } from '../../test/e2e/records-helpers.js';

const N = Number(process.env.N ?? 100000);
const hooks: Array<() => Promise<void> | void> = [];
const t = { after: (fn: () => Promise<void> | void) => hooks.push(fn) };
const f = await recordsFixture(t, 'prof.example', {
  API_IMPORT_BODY_LIMIT_BYTES: String(64 * 1024 * 1024),
  DOMAIN_CONFIG_MAX_BYTES: '134217728',
});
await f.setOverride('max_records', N + 1000);
const ip = (i: number) => `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`;
const file = Array.from({ length: N }, (_, i) => `r${i} 300 IN A ${ip(i)}`).join('\n');
const session = new Session();
async function profiled(label: string, call: () => ReturnType<typeof f.cp.call>, prof: boolean) {
  if (prof) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 500 });
    await session.post('Profiler.start');
  }
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const res = await call();
  const t1 = performance.now();
  const cpu = process.cpuUsage(cpu0);
  if (prof) {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(process.env.PROF!, JSON.stringify(profile));
  }
  console.log(res.statusCode, res.body.slice(0, 200));
  console.log(
    `${label} ${N}: ${((t1 - t0) / 1000).toFixed(2)} s, CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s, rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`,
  );
  return res;
}
const text = { 'content-type': 'text/plain' };
if (process.env.SESSION) {
  const started = await profiled(
    'session start',
    () => f.cp.call(f.key, 'POST', f.url('import-sessions/'), file, text),
    false,
  );
  const id = (started.json() as { id: number }).id;
  const done = await profiled(
    'session commit',
    () => f.cp.call(f.key, 'POST', f.url(`import-sessions/${id}/commit`)),
    !!process.env.PROF,
  );
  const result = (done.json() as { result?: { created: number } }).result;
  if (done.statusCode !== 200 || result?.created !== N)
    throw new Error(`commit: ${done.statusCode}, created ${result?.created}`);
} else {
  await profiled('import', () => f.cp.call(f.key, 'POST', f.url('import'), file, text), !!process.env.PROF);
}
for (const h of hooks.reverse()) await h();
