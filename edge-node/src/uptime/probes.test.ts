// The uptime probe scheduler's bounds (per scope, per node, the spread over the minute, the rotation when the budget
// is short), the probe path of a monitor, and probes sent through the edge's own origin pools to a stub origin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { UptimeMonitorScope } from '@platform/shared/config';
import { proxiedRecord, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';
import { compileDomain, DomainTable } from '../store/snapshot.js';
import { planMinute, probePath, PROBE_RULE, UptimeProber, watchScopes } from './probes.js';

const MINUTE = 60_000;
const T0 = 1_790_000_040_000; // a minute start
const keys = (n: number) => Array.from({ length: n }, (_, i) => `0 h${String(i).padStart(5, '0')}.example.org`);
const opts = { minuteStart: T0, perScope: 6, minPerScope: 3, budget: 1200, spreadMs: 50_000 };

function perKey(plan: { key: string }[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const p of plan) m.set(p.key, (m.get(p.key) ?? 0) + 1);
  return m;
}

test('planMinute: six probes a scope, spread over the first 50 s with jitter, sorted', () => {
  for (const r of [0, 0.5, 0.999]) {
    const plan = planMinute(keys(10), { ...opts, random: () => r });
    assert.equal(plan.length, 60);
    assert.deepEqual([...new Set(perKey(plan).values())], [6]);
    for (const p of plan) assert.ok(p.at >= T0 && p.at < T0 + 50_000, `${p.at - T0} ms into the minute`);
    for (let i = 1; i < plan.length; i++) assert.ok(plan[i]!.at >= plan[i - 1]!.at);
    // One scope's probes are ~8.3 s apart (the spread / 6).
    const one = plan.filter((p) => p.key === keys(10)[3]).map((p) => p.at);
    for (let i = 1; i < one.length; i++) assert.ok(Math.abs(one[i]! - one[i - 1]! - 50_000 / 6) <= 1);
  }
  assert.deepEqual(planMinute([], opts), []);
  assert.deepEqual(planMinute(keys(5), { ...opts, budget: 0 }), []);
});

test('planMinute: never above the node budget; fewer per scope, then whole scopes in turn', () => {
  // 300 scopes: 4 each fit in 1200.
  let plan = planMinute(keys(300), opts);
  assert.equal(plan.length, 1200);
  assert.deepEqual([...new Set(perKey(plan).values())], [4]);
  // 1000 scopes: 3 each (the fewest the control plane judges on) for 400 of them; the next minutes take the next
  // ones, so every scope is probed within three minutes.
  const all = keys(1000);
  const covered = new Set<string>();
  for (let m = 0; m < 3; m++) {
    plan = planMinute(all, { ...opts, minuteStart: T0 + m * MINUTE });
    assert.ok(plan.length <= 1200);
    const counts = perKey(plan);
    assert.equal(counts.size, 400);
    assert.deepEqual([...new Set(counts.values())], [3]);
    for (const k of counts.keys()) covered.add(k);
  }
  assert.equal(covered.size, 1000);
  // 100,000 tenants' scopes still cost one node 1200 probes a minute.
  assert.equal(planMinute(keys(100_000), opts).length, 1200);
  // A budget below minPerScope: what it allows, no more.
  assert.equal(planMinute(keys(10), { ...opts, budget: 2 }).length, 2);
});

test('probePath: a path inside the monitor scope, none for a regex scope', () => {
  const m = (pathIncludes: string[], pathExcludes: string[] = [], pathMatchType = 'wildcard') =>
    probePath({ pathMatchType, pathIncludes, pathExcludes } as Pick<
      UptimeMonitorScope,
      'pathMatchType' | 'pathIncludes' | 'pathExcludes'
    >);
  assert.equal(m(['/*']), '/');
  assert.equal(m([]), '/');
  assert.equal(m(['/health']), '/health');
  assert.equal(m(['/api/*']), '/api/');
  assert.equal(m(['/a/*/status']), '/a/x/status');
  assert.equal(m(['*.php']), '/x.php');
  assert.equal(m(['/api/internal/*', '/api/*'], ['/api/internal/*']), '/api/');
  assert.equal(m(['/with space']), undefined);
  assert.equal(m(['^/api/']), undefined, 'wildcard only: a regex scope names no path');
  assert.equal(m(['^/api/'], [], 'regex'), undefined);
});

test('watchScopes: at most 100 scopes a domain, none for a disabled one, none for `*` names', () => {
  const table = new DomainTable();
  const big = compileDomain(
    snapshot('big.example.org', {
      records: Array.from({ length: 150 }, (_, i) => proxiedRecord(`n${i}`, 8080, { monitor: true })),
    }),
  );
  table.set(big);
  const scopes = watchScopes(big, table);
  assert.equal(scopes.length, PROBE_RULE.scopesPerDomain);
  assert.equal(scopes[0]!.host, 'n0.big.example.org');
  const off = compileDomain(
    snapshot('off.example.org', { state: 'disabled', records: [proxiedRecord('www', 8080, { monitor: true })] }),
  );
  assert.deepEqual(watchScopes(off, table), []);
  const wild = compileDomain(
    snapshot('wild.example.org', {
      records: [proxiedRecord('*', 8080, { monitor: true }), proxiedRecord('*.dev', 8080, { monitor: true })],
    }),
  );
  assert.deepEqual(watchScopes(wild, table), []);
});

test('the prober: thin scopes probed through the origin pools, busy ones not, the node budget holds', async (t) => {
  let status = 503;
  const origin = await startStubOrigin('probed', (_req, res) => {
    res.statusCode = status;
    res.end('x');
  });
  t.after(() => origin.close());
  const name = 'probe.example.org';
  const monitor: UptimeMonitorScope = {
    id: 9,
    hostMatchType: '',
    hostIncludes: [],
    hostExcludes: [],
    pathMatchType: 'wildcard',
    pathIncludes: ['/api/*'],
    pathExcludes: [],
  };
  const records = [
    proxiedRecord('www', origin.port, { monitor: true }),
    proxiedRecord('quiet', origin.port),
    proxiedRecord('*', origin.port, { monitor: true }),
    ...Array.from({ length: 20 }, (_, i) => proxiedRecord(`m${i}`, origin.port, { monitor: true })),
  ];
  const edge = await startTestEdge(t, [
    snapshot(name, { records, settings: { uptime: { minRequestsPerMinute: 5, monitors: [monitor] } } }),
  ]);
  const d = edge.node.table.get(name)!;
  const scopes = watchScopes(d, edge.node.table);
  assert.equal(scopes.filter((s) => s.monitorId === 0).length, 21, 'every monitored name but `*`');
  assert.deepEqual(
    scopes.filter((s) => s.monitorId === 9).map((s) => [s.host, s.path]),
    [`m0.${name}`, `m1.${name}`, `m10.${name}`, `m11.${name}`, `m12.${name}`].map((h) => [h, '/api/']),
    'a monitor is probed on 5 hosts at most',
  );
  assert.equal(watchScopes(d, edge.node.table), scopes, 'computed once per compiled domain');

  let now = T0;
  const prober = new UptimeProber(edge.node.table, edge.node.pools, {
    now: () => now,
    random: () => 0.5,
    rule: { nodeBudgetPerMinute: 60 },
  });
  // www had traffic in the minute before; so had the monitor on m0 (records under /api/).
  prober.tick(T0 - 1000);
  prober.observe(
    [[T0 - MINUTE, `www.${name}`, 9, 0]],
    Array.from({ length: 5 }, (_, i) => ({
      t: T0 - MINUTE + i,
      host: `m0.${name}`,
      path: '/api/x',
      status: 200,
      upstreamMs: 3,
    })),
  );
  for (now = T0; now < T0 + MINUTE; now += 1000) prober.tick(now);
  await waitFor(() => prober.probing === 0);
  const probes = prober.drain();
  const total = probes.reduce((n, p) => n + p[3], 0);
  assert.ok(total <= 60, `${total} probes within the node budget of 60`);
  assert.equal(total, 60, 'the whole budget was used on 24 thin scopes');
  assert.ok(!probes.some((p) => p[1] === `www.${name}` && p[2] === 0), 'www had traffic: not probed');
  assert.ok(!probes.some((p) => p[1] === `m0.${name}` && p[2] === 9), 'the monitor on m0 had traffic: not probed');
  for (const [minute, , , n, errors] of probes) {
    assert.equal(minute, T0);
    assert.equal(errors, n, 'every probe met the 503');
  }
  assert.ok(origin.seen.length >= 60);
  assert.ok(origin.seen.every((r) => r.method === 'GET' && r.headers['user-agent'] === PROBE_RULE.userAgent));
  assert.ok(origin.seen.some((r) => r.url === '/api/' && r.headers.host === `m1.${name}`));
  assert.ok(origin.seen.some((r) => r.url === '/' && r.headers.host === `quiet.${name}`) === false);

  // A minute later, with the origin healthy: probes succeed; traffic arriving mid-minute stops the rest of them.
  status = 200;
  prober.tick(T0 + MINUTE);
  prober.observe([[T0 + MINUTE, `m5.${name}`, 5, 0]], []);
  for (now = T0 + MINUTE; now < T0 + 2 * MINUTE; now += 1000) prober.tick(now);
  await waitFor(() => prober.probing === 0);
  const next = prober.drain();
  assert.ok(next.every((p) => p[4] === 0));
  assert.ok(!next.some((p) => p[1] === `m5.${name}` && p[2] === 0), 'busy again this minute: skipped');
  assert.ok(prober.stats.skippedBusy > 0);
  // A failed shipment puts them back.
  prober.requeue(next);
  assert.deepEqual(prober.drain(), next);
});

async function waitFor(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(ok());
}
