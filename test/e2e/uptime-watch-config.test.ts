// What the edge watches travels in the config nodes receive (issue 14, probes): records carry `monitor`, the
// domain's settings carry the uptime watch (min_requests_per_minute and the enabled monitors' scopes), and every
// monitor or threshold write appends a config-log entry, so the edge learns it as it learns a record change.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { decodeDomainSnapshot, type DomainSnapshot } from '@platform/shared/config';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { domains } from '../../control-plane/src/db/schema.js';

test('records with monitor, enabled monitors and min_requests_per_minute reach the config log', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'watch-config.example.org');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const q = `?domain=${name}`;
  let seen = await cp.app.configLog.head(cp.database.db);
  /** The domain's entries appended since the last call, decoded. */
  const appended = async (): Promise<DomainSnapshot[]> => {
    const entries = await cp.app.configLog.readAfter(cp.database.db, seen, 100);
    if (entries.length > 0) seen = entries[entries.length - 1]!.version;
    return entries.filter((e) => e.domainName === name && !e.deleted).map((e) => decodeDomainSnapshot(e.payload));
  };
  await appended();

  const rec = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, {
    name: 'shop',
    type: 'A',
    destination: '192.0.2.10',
    proxied: true,
    monitor: true,
  });
  assert.equal(rec.statusCode, 200, rec.body);
  let [snap] = await appended();
  assert.equal(snap!.zone.records.find((r) => r.name === 'shop')?.monitor, true);
  assert.deepEqual(snap!.settings.uptime, { minRequestsPerMinute: 20, monitors: [] }, 'defaults before any save');

  const mon = await cp.call(owner.key, 'POST', `/uptime/monitors${q}`, {
    name: 'API',
    host_includes: [`api.${name}`],
    path_includes: ['/api/*'],
    path_excludes: ['/api/internal/*'],
  });
  assert.equal(mon.statusCode, 200, mon.body);
  const id = mon.json().id as number;
  [snap] = await appended();
  assert.deepEqual(snap!.settings.uptime, {
    minRequestsPerMinute: 20,
    monitors: [
      {
        id,
        hostMatchType: 'wildcard',
        hostIncludes: [`api.${name}`],
        hostExcludes: [],
        pathMatchType: 'wildcard',
        pathIncludes: ['/api/*'],
        pathExcludes: ['/api/internal/*'],
      },
    ],
  });

  assert.equal(
    (await cp.call(owner.key, 'PUT', `/uptime/settings${q}`, { min_requests_per_minute: 7 })).statusCode,
    200,
  );
  [snap] = await appended();
  assert.equal(snap!.settings.uptime?.minRequestsPerMinute, 7);
  // A settings write the edge does not read appends nothing.
  assert.equal((await cp.call(owner.key, 'PUT', `/uptime/settings${q}`, { open_after_minutes: 3 })).statusCode, 200);
  assert.deepEqual(await appended(), []);

  const off = await cp.call(owner.key, 'PATCH', `/uptime/monitors/${id}/enabled${q}`, { enabled: false });
  assert.equal(off.statusCode, 200, off.body);
  [snap] = await appended();
  assert.deepEqual(snap!.settings.uptime?.monitors, [], 'a disabled monitor is not watched');
  assert.equal(
    (await cp.call(owner.key, 'PATCH', `/uptime/monitors/${id}/enabled${q}`, { enabled: true })).statusCode,
    200,
  );
  [snap] = await appended();
  assert.equal(snap!.settings.uptime?.monitors.length, 1);
  const put = await cp.call(owner.key, 'PUT', `/uptime/monitors/${id}${q}`, { path_includes: ['/health'] });
  assert.equal(put.statusCode, 200, put.body);
  [snap] = await appended();
  assert.deepEqual(snap!.settings.uptime?.monitors[0]?.pathIncludes, ['/health']);
  assert.equal((await cp.call(owner.key, 'DELETE', `/uptime/monitors/${id}${q}`)).statusCode, 200);
  [snap] = await appended();
  assert.deepEqual(snap!.settings.uptime?.monitors, []);
  // A refused write appends nothing.
  assert.equal((await cp.call(owner.key, 'DELETE', `/uptime/monitors/${id}${q}`)).statusCode, 404);
  assert.deepEqual(await appended(), []);
  assert.ok(dom);
});
