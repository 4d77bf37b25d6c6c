// Issue 16 item 4 (gateways) through the API: the catalogue per domain, terms of use, switch on (records created
// through the records' checks, one config-log entry), rename, switch off (its records removed), the icon; the
// permission and plan cases and an abuse case for every input.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeDomainSnapshot } from '@platform/shared/config';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { admin, team } from './domain-ops-helpers.js';

interface GatewayBody {
  id: string;
  enabled: boolean;
  name: string | null;
  record_ids: number[];
  records: Array<{ name: string; type: string; destination: string }>;
}

test('gateways through the API', { timeout: 180_000 }, async (t) => {
  const cp = await startTestControlPlane(t);
  const { owner, viewer, editor, admin1, stranger, ro, domain, refused } = await team(cp, 'gw.example');
  const base = `/domains/${domain}/gateways/`;
  const records = async () =>
    (await cp.call(owner.key, 'GET', `/domains/${domain}/records/`)).json<
      Array<{ id: number; name: string; type: string; destination: string }>
    >();

  await t.test('list: the catalogue with each gateway off; visible to every role, 404 to others', async () => {
    const r = await cp.call(viewer.key, 'GET', base);
    assert.equal(r.statusCode, 200, r.body);
    const list = r.json<{ gateways: GatewayBody[] }>().gateways;
    assert.deepEqual(
      list.map((g) => g.id),
      ['google-workspace', 'microsoft-365', 'github-pages'],
    );
    assert.ok(list.every((g) => !g.enabled && g.name === null && g.record_ids.length === 0));
    const m365 = list.find((g) => g.id === 'microsoft-365')!;
    assert.equal(m365.records[0].destination, 'gw-example.mail.protection.outlook.com', 'the zone filled in');
    assert.equal((await cp.call(stranger.key, 'GET', base)).statusCode, 404);
    assert.equal((await cp.call(null, 'GET', base)).statusCode, 401);
  });

  await t.test('terms of use: per account; read-only keys cannot accept', async () => {
    const status = (await cp.call(owner.key, 'GET', '/gateways/terms')).json<{ accepted: boolean; version: string }>();
    assert.equal(status.accepted, false);
    assert.equal((await cp.call(ro.key, 'POST', '/gateways/terms/accept')).statusCode, 403);
    // The free plan has no gateways.
    const free = await cp.call(owner.key, 'POST', `${base}github-pages`);
    assert.equal(free.statusCode, 403);
    assert.equal(free.json<{ feature: string }>().feature, 'gateways_enabled');
    await admin(cp, 'plan', 'set', domain, 'pro');
    const on = await cp.call(owner.key, 'POST', `${base}github-pages`);
    assert.equal(on.statusCode, 403, 'not accepted yet');
    assert.match(on.json<{ error: string }>().error, /terms of use/);
    assert.equal(on.headers['x-error-code'], 'CP_ERR_TERMS_NOT_ACCEPTED');
    const accepted = await cp.call(owner.key, 'POST', '/gateways/terms/accept');
    assert.equal(accepted.statusCode, 200);
    assert.equal(accepted.json<{ accepted: boolean }>().accepted, true);
    assert.equal(accepted.json<{ accepted_version: string }>().accepted_version, status.version);
    const again = await cp.call(owner.key, 'POST', '/gateways/terms/accept');
    assert.equal(
      again.json<{ accepted_at: string }>().accepted_at,
      accepted.json<{ accepted_at: string }>().accepted_at,
    );
    assert.equal((await cp.call(admin1.key, 'GET', '/gateways/terms')).json<{ accepted: boolean }>().accepted, false);
  });

  await t.test('switch on: roles, records created in one config-log entry', async () => {
    const on = (key: string, id: string, body?: unknown) => cp.call(key, 'POST', `${base}${id}`, body);
    await refused((key) => on(key, 'github-pages'));
    assert.equal((await on(owner.key, 'no-such-gateway')).statusCode, 400, 'not a gateway of the catalogue');
    const from = (await cp.app.configLog.readAfter(cp.app.db, 0, 100_000)).at(-1)!.version;
    const r = await on(owner.key, 'github-pages', { name: 'Docs site' });
    assert.equal(r.statusCode, 200, r.body);
    const g = r.json<GatewayBody>();
    assert.equal(g.enabled, true);
    assert.equal(g.name, 'Docs site');
    assert.equal(g.record_ids.length, 8);
    const entries = await cp.app.configLog.readAfter(cp.app.db, from, 100_000);
    assert.equal(entries.length, 1, 'one config-log entry');
    const snap = decodeDomainSnapshot(entries[0].payload);
    assert.deepEqual(
      snap.zone.records.map((x) => x.id).sort((a, b) => a - b),
      [...g.record_ids].sort((a, b) => a - b),
    );
    const zone = await records();
    assert.equal(zone.filter((x) => x.type === 'A' && x.destination.startsWith('185.199.')).length, 4);
    assert.equal(zone.filter((x) => x.type === 'AAAA').length, 4);
    const twice = await on(owner.key, 'github-pages');
    assert.equal(twice.statusCode, 409);
    // The admin needs their own acceptance of the terms.
    assert.equal((await on(admin1.key, 'google-workspace')).statusCode, 403);
  });

  await t.test('switch on: a conflict stores nothing; an identical record is left alone', async () => {
    // Another SPF policy at the apex: refused, nothing created.
    const spf = await cp.call(owner.key, 'POST', `/domains/${domain}/records/`, {
      name: '@',
      type: 'TXT',
      destination: 'v=spf1 mx -all',
    });
    assert.equal(spf.statusCode, 200, spf.body);
    const before = await records();
    const refused = await cp.call(owner.key, 'POST', `${base}google-workspace`);
    assert.equal(refused.statusCode, 400, refused.body);
    assert.match(refused.json<{ error: string }>().error, /SPF policy/);
    assert.deepEqual(await records(), before);
    await cp.call(owner.key, 'DELETE', `/domains/${domain}/records/${spf.json<{ id: number }>().id}`);
    // A CNAME where the gateway's autodiscover CNAME would go: refused by the zone rules, nothing created.
    const cname = await cp.call(owner.key, 'POST', `/domains/${domain}/records/`, {
      name: 'autodiscover',
      type: 'A',
      destination: '192.0.2.1',
    });
    assert.equal(cname.statusCode, 200);
    const blocked = await cp.call(owner.key, 'POST', `${base}microsoft-365`);
    assert.equal(blocked.statusCode, 400, blocked.body);
    assert.match(blocked.json<{ error: string }>().error, /cannot be switched on: record 2/);
    assert.equal((await records()).filter((x) => x.type === 'MX').length, 0, 'nothing stored');
    // An identical MX already there: kept, not owned by the gateway.
    const mx = await cp.call(owner.key, 'POST', `/domains/${domain}/records/`, {
      name: '@',
      type: 'MX',
      destination: 'smtp.google.com',
      mx_priority: 1,
      ttl: 3600,
    });
    assert.equal(mx.statusCode, 200, mx.body);
    const gw = await cp.call(owner.key, 'POST', `${base}google-workspace`);
    assert.equal(gw.statusCode, 200, gw.body);
    assert.equal(gw.json<GatewayBody>().record_ids.length, 1, 'only the SPF TXT is the gateway’s');
    const off = await cp.call(owner.key, 'DELETE', `${base}google-workspace`);
    assert.equal(off.statusCode, 200);
    const left = await records();
    assert.ok(
      left.some((x) => x.id === mx.json<{ id: number }>().id),
      "the user's own MX stays",
    );
    assert.ok(!left.some((x) => x.type === 'TXT' && x.destination.includes('_spf.google.com')));
  });

  await t.test('rename and switch off; abuse of every input', async () => {
    const rename = (key: string, body: unknown, id = 'github-pages') => cp.call(key, 'PUT', `${base}${id}`, body);
    assert.equal((await rename(editor.key, { name: 'x' })).statusCode, 403);
    assert.equal((await rename(owner.key, { name: 'Site' }, 'google-workspace')).statusCode, 404, 'not on');
    for (const body of [
      {},
      { name: '' },
      { name: 'x'.repeat(65) },
      { name: 7 },
      { name: 'a', extra: 1 },
      { name: ' \u0007 ' },
    ])
      assert.equal((await rename(owner.key, body)).statusCode, 400, JSON.stringify(body));
    assert.equal((await rename(owner.key, { name: '   ' })).statusCode, 400);
    const renamed = await rename(admin1.key, { name: '  Handbook  ' });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.equal(renamed.json<GatewayBody>().name, 'Handbook');
    for (const body of [{ name: '' }, { name: 'y'.repeat(65) }, { other: 1 }, [], 'text'])
      assert.equal((await cp.call(owner.key, 'POST', `${base}microsoft-365`, body)).statusCode, 400);
    assert.equal((await cp.call(owner.key, 'POST', `${base}${'g'.repeat(65)}`)).statusCode, 400);
    assert.equal((await cp.call(owner.key, 'POST', `${base}..%2F..%2Fetc`)).statusCode, 400);

    const ids = (await cp.call(owner.key, 'GET', base))
      .json<{ gateways: GatewayBody[] }>()
      .gateways.find((g) => g.id === 'github-pages')!.record_ids;
    // A record the user deleted meanwhile is simply gone.
    await cp.call(owner.key, 'DELETE', `/domains/${domain}/records/${ids[0]}`);
    assert.equal((await cp.call(viewer.key, 'DELETE', `${base}github-pages`)).statusCode, 403);
    const off = await cp.call(owner.key, 'DELETE', `${base}github-pages`);
    assert.equal(off.statusCode, 200, off.body);
    assert.equal(off.json<GatewayBody>().enabled, false);
    const zone = await records();
    assert.ok(!zone.some((x) => ids.includes(x.id)), 'every record of the gateway removed');
    assert.equal((await cp.call(owner.key, 'DELETE', `${base}github-pages`)).statusCode, 404, 'already off');
  });

  await t.test('icon: SVG with a safe content type; unknown id 400', async () => {
    const r = await cp.call(viewer.key, 'GET', '/gateways/github-pages/icon');
    assert.equal(r.statusCode, 200);
    assert.equal(r.headers['content-type'], 'image/svg+xml');
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.match(String(r.headers['content-security-policy']), /sandbox/);
    assert.ok(r.body.startsWith('<svg') && r.body.length < 1024 && !/script|href/i.test(r.body));
    assert.equal((await cp.call(viewer.key, 'GET', '/gateways/nope/icon')).statusCode, 400);
    assert.equal((await cp.call(null, 'GET', '/gateways/github-pages/icon')).statusCode, 401);
  });
});
