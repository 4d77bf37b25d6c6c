// bot_route and fingerprint rules through the API: their own fields validated (400 naming each problem, nothing
// stored), a routing bot_route rule held to origin_route's checks (host_header ownership, an address the edge
// would connect to), and read back as stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { domains } from '../../db/schema.js';
import { setPlan } from '../../plans/subscriptions.js';

const FP = 'ge11nn05enus_1a2b3c4d5e6f_000000000000_000000000000';

test('bot_route and fingerprint rules API', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'bots-api.example.org');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  await setPlan(cp.database.db, dom.id, 'enterprise');
  const bots = `/domains/${name}/rules/bot_route/`;
  const fps = `/domains/${name}/rules/fingerprint/`;
  const count = async (base: string) => (await cp.call(owner.key, 'GET', base)).json().length as number;

  for (const [base, body, field] of [
    [bots, {}, /classes/],
    [bots, { classes: ['ai'] }, /classes/],
    [bots, { classes: ['ai_crawler'], action: 'route' }, /address/],
    [bots, { classes: ['ai_crawler'], action: 'block', address: '192.0.2.1' }, /address/],
    [
      bots,
      { classes: ['ai_crawler'], action: 'route', address: '192.0.2.1', host_header: 'evil.example.net' },
      /host_header/,
    ],
    [bots, { classes: ['ai_crawler'], action: 'route', address: '127.0.0.1' }, /address/],
    [bots, { classes: ['ai_crawler'], action: 'route', address: '10.1.2.3' }, /address/],
    [fps, {}, /fingerprints/],
    [fps, { fingerprints: ['t13d1516h2_8daaf6152771_02713d6af862'] }, /fingerprints/],
    [fps, { fingerprints: [FP], action: 'route' }, /action/],
    [fps, { fingerprints: Array.from({ length: 1001 }, () => FP) }, /fingerprints/],
  ] as const) {
    const res = await cp.call(owner.key, 'POST', base, body);
    assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`);
    assert.match(res.json().error, field);
  }
  assert.equal(await count(bots), 0, 'nothing stored');
  assert.equal(await count(fps), 0);

  const route = await cp.call(owner.key, 'POST', bots, {
    classes: ['ai_crawler', 'automation'],
    action: 'route',
    address: '192.0.2.30',
    port: 8080,
    host_header: 'bots.bots-api.example.org',
  });
  assert.equal(route.statusCode, 200, route.body);
  const r = route.json();
  assert.deepEqual(
    [r.classes, r.action, r.address, r.port, r.scheme],
    [['ai_crawler', 'automation'], 'route', '192.0.2.30', 8080, 'http'],
  );
  const fp = await cp.call(owner.key, 'POST', fps, { fingerprints: [FP.toUpperCase()], action: 'challenge' });
  assert.equal(fp.statusCode, 200, fp.body);
  assert.deepEqual(fp.json().fingerprints, [FP]);
  // Switching a routing rule to block leaves its origin behind; an origin sent with block is refused.
  const bad = await cp.call(owner.key, 'PUT', `${bots}${r.id}`, { action: 'block', address: '192.0.2.31' });
  assert.equal(bad.statusCode, 400, bad.body);
  assert.match(bad.json().error, /address: only with action route/);
  const blocked = await cp.call(owner.key, 'PUT', `${bots}${r.id}`, { action: 'block' });
  assert.equal(blocked.statusCode, 200, blocked.body);
  assert.equal(blocked.json().action, 'block');
  assert.equal(blocked.json().address, undefined);
  assert.deepEqual(blocked.json().classes, ['ai_crawler', 'automation']);
});
