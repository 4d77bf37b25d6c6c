// Issue 10 item 6: one ownership check for every host header sent to an origin (record, origin_route, origin_pool).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { startTestControlPlane } from '../../../test/helpers/control-plane.js';
import { domains } from '../db/schema.js';
import { setOverride } from '../plans/subscriptions.js';

test("host headers must be inside this domain or another of the owner's active domains", async (t) => {
  const cp = await startTestControlPlane(t);
  const attacker = await cp.user();
  const victim = await cp.user();
  const name = await cp.domain(attacker.key, 'hh-attacker.example');
  const second = await cp.domain(attacker.key, 'hh-second.example');
  const theirs = await cp.domain(victim.key, 'hh-victim.example');
  const db = cp.database.db;
  await db.update(domains).set({ state: 'active' }).where(eq(domains.name, theirs));
  const [row] = await db.select().from(domains).where(eq(domains.name, name));
  await setOverride(db, row!.id, 'host_header_edit_enabled', true);
  await setOverride(db, row!.id, 'disabled_rule_types', '[]');
  const records = `/domains/${name}/records/`;
  const refused =
    /host_header www\.hh-victim\.example is not inside this domain or another active domain of the same owner/;
  const post = (body: object) =>
    cp.call(attacker.key, 'POST', records, { type: 'A', destination: '192.0.2.1', proxied: true, ...body });

  await t.test('records: create, update, batch-update and import', async () => {
    const bad = await post({ name: 'a', host_header: 'www.hh-victim.example' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.json().error, refused);
    const own = await post({ name: 'b', host_header: 'API.hh-attacker.example' });
    assert.equal(own.statusCode, 200, own.body);
    assert.equal(own.json().host_header, 'api.hh-attacker.example');
    // The owner's other domain counts once it is active.
    assert.equal((await post({ name: 'c', host_header: `www.${second}` })).statusCode, 400);
    await db.update(domains).set({ state: 'active' }).where(eq(domains.name, second));
    assert.equal((await post({ name: 'c', host_header: `www.${second}` })).statusCode, 200);

    const put = await cp.call(attacker.key, 'PUT', `${records}${own.json().id}`, {
      host_header: 'www.hh-victim.example',
    });
    assert.equal(put.statusCode, 400);
    assert.match(put.json().error, refused);
    const batch = await cp.call(attacker.key, 'POST', `${records}batch-update`, {
      updates: [{ id: own.json().id, host_header: 'www.hh-victim.example' }],
    });
    assert.equal(batch.json().failed, 1);
    assert.match(batch.json().results[0].error, refused);
    const imported = await cp.call(attacker.key, 'POST', `${records}import`, {
      zone: 'imp IN A 192.0.2.9 ; platform: {"proxied":true,"host_header":"www.hh-victim.example"}',
    });
    assert.equal(imported.statusCode, 400);
    assert.match(JSON.stringify(imported.json().errors), /not inside this domain/);
    const list = (await cp.call(attacker.key, 'GET', records)).json() as { host_header?: string }[];
    assert.deepEqual(list.map((r) => r.host_header).sort(), ['api.hh-attacker.example', `www.${second}`]);
  });

  await t.test('origin_route and origin_pool: the same check', async () => {
    const route = await cp.call(attacker.key, 'POST', `/domains/${name}/rules/origin_route/`, {
      address: '192.0.2.1',
      host_header: 'www.hh-victim.example',
    });
    assert.equal(route.statusCode, 400);
    assert.match(route.json().error, /^host_header: www\.hh-victim\.example is not inside/);
    const pool = await cp.call(attacker.key, 'POST', `/domains/${name}/rules/origin_pool/`, {
      origins: [
        { address: '192.0.2.1', host_header: 'origin.hh-attacker.example' },
        { address: '192.0.2.2', host_header: 'WWW.hh-victim.example.' },
      ],
    });
    assert.equal(pool.statusCode, 400);
    assert.match(pool.json().error, /^origins\[1\]\.host_header: www\.hh-victim\.example is not inside/);
    const ok = await cp.call(attacker.key, 'POST', `/domains/${name}/rules/origin_pool/`, {
      origins: [{ address: '192.0.2.1', host_header: 'Origin.hh-attacker.example' }],
    });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().origins[0].host_header, 'origin.hh-attacker.example');
  });
});
