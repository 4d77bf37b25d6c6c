// The control plane's side of uptime probes: probe counts shipped with a request-log batch (`probes`, as
// edge-node/src/uptime/probes.ts sends them) are added to the minute counts of watched scopes only, malformed or
// foreign ones are dropped, and a minute too thin on traffic is judged on them (at least 3), so probes alone open an
// incident.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { and, eq } from 'drizzle-orm';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { uptimeMinuteCounts } from '../../control-plane/src/db/schema.js';
import { judgedPct, MIN_PROBES_JUDGED } from '../../control-plane/src/areas/uptime/detector.js';

test('judgedPct: traffic when there is enough, probes (3 or more) when it is thin', () => {
  const c = (total: number, errors: number, probes: number, probeErrors: number) => ({
    total,
    errors,
    probes,
    probeErrors,
  });
  assert.equal(judgedPct(c(20, 10, 6, 0), 20), 50, 'enough traffic: probes are not looked at');
  assert.equal(judgedPct(c(2, 0, 2, 2), 20), undefined, 'two probes judge nothing');
  assert.equal(MIN_PROBES_JUDGED, 3);
  assert.equal(judgedPct(c(0, 0, 3, 3), 20), 100);
  assert.equal(judgedPct(c(2, 0, 6, 6), 20), 75, 'thin traffic and probes together');
});

test('probe counts: watched scopes only, bounded, and they open an incident with no traffic at all', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'probe-ingest.example.org');
  const other = await cp.domain(owner.key, 'probe-other.example.org');
  const q = `?domain=${name}`;
  for (const [domain, rec] of [
    [name, 'shop'],
    [name, 'api'],
    [name, 'plain'],
  ])
    assert.equal(
      (
        await cp.call(owner.key, 'POST', `/domains/${domain}/records/`, {
          name: rec,
          type: 'A',
          destination: '192.0.2.10',
          proxied: true,
          monitor: rec === 'shop',
        })
      ).statusCode,
      200,
    );
  const mon = await cp.call(owner.key, 'POST', `/uptime/monitors${q}`, {
    host_includes: [`api.${name}`],
    path_includes: ['/api/*'],
  });
  assert.equal(mon.statusCode, 200, mon.body);
  const foreign = await cp.call(owner.key, 'POST', `/uptime/monitors?domain=${other}`, { path_includes: ['/x/*'] });
  assert.equal(foreign.statusCode, 200, foreign.body);
  assert.equal(
    (
      await cp.call(owner.key, 'PUT', `/uptime/settings${q}`, {
        min_requests_per_minute: 20,
        open_after_minutes: 2,
        resolve_after_minutes: 1,
      })
    ).statusCode,
    200,
  );
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const ship = async (probes: unknown[]) => {
    const res = await cp.app.inject({
      method: 'POST',
      url: '/internal/request-logs',
      headers: { 'content-type': 'application/x-msgpack', authorization: `Bearer ${token}` },
      payload: pack({ node: 'edge-test', records: [], minutes: [], probes }),
    });
    assert.equal(res.statusCode, 200, res.body);
    return res.json() as { probe_minutes: number };
  };
  const now = Date.now();
  const m = (ago: number) => now - (now % 60_000) - ago * 60_000;
  const shop = `shop.${name}`;
  const api = `api.${name}`;
  const id = mon.json().id as number;
  const stored = await ship([
    [m(4), shop, 0, 6, 6], // kept
    [m(4), api, id, 6, 6], // kept: the monitor covers api
    [m(4), `plain.${name}`, 0, 6, 6], // no monitor on plain: dropped
    [m(4), `plain.${name}`, id, 6, 6], // outside the monitor's hosts: dropped
    [m(4), `www.${other}`, id, 6, 6], // this domain's monitor for another domain's host: dropped…
    [m(4), shop, foreign.json().id, 6, 6], // …and another domain's monitor for a host of this one
    [m(4), shop, 0, 61, 0], // more probes than a node sends in a minute
    [m(4), shop, 0, 3, 4], // more failures than probes
    [m(4), shop, 0, 0, 0],
    [m(4) + 1, shop, 0, 3, 3], // not a minute start
    [m(4), shop, 0, 3], // short
    [m(4), shop, '0', 3, 3],
    [m(4), 'x'.repeat(254), 0, 3, 3],
    [now + 120_000 - (now % 60_000), shop, 0, 3, 3], // the future
    [m(90), shop, 0, 3, 3], // older than the counts are kept
    'junk',
  ]);
  assert.equal(stored.probe_minutes, 2);
  const rows = await cp.database.db
    .select()
    .from(uptimeMinuteCounts)
    .where(and(eq(uptimeMinuteCounts.hostname, shop), eq(uptimeMinuteCounts.monitorId, 0)));
  assert.deepEqual(
    rows.map((r) => [r.minute.getTime(), r.total, r.errors, r.probes, r.probeErrors]),
    [[m(4), 0, 0, 6, 6]],
  );
  // Another node's probes of the same minute add up; then the next minute fails too: two failing minutes judged on
  // probes alone open the whole-host incident and the monitor's.
  await ship([
    [m(4), shop, 0, 2, 2],
    [m(3), shop, 0, 3, 3],
    [m(3), api, id, 3, 2],
  ]);
  const open = await eventuallyList(async () => {
    const list = (await cp.call(owner.key, 'GET', `/uptime/incidents/open${q}`)).json() as {
      hostname: string;
      monitor_id: number | null;
      peak_error_pct: number;
      started_at: string;
    }[];
    return list.length === 2 ? list : undefined;
  });
  assert.deepEqual(
    open.map((i) => [i.hostname, i.monitor_id, i.peak_error_pct, Date.parse(i.started_at)]).sort(),
    [
      [api, id, 100, m(4)],
      [shop, null, 100, m(4)],
    ].sort(),
  );
  // Healthy probes resolve the whole-host incident (resolve_after_minutes 1).
  await ship([[m(2), shop, 0, 6, 0]]);
  await eventuallyList(async () => {
    const list = (await cp.call(owner.key, 'GET', `/uptime/incidents/open${q}`)).json() as { hostname: string }[];
    return list.length === 1 && list[0]!.hostname === api ? list : undefined;
  });
});

async function eventuallyList<T>(fn: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + 30_000;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 500));
  }
}
