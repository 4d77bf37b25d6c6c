// The lifecycle routes and the /internal API in-process (Temporal off, as under NODE_ENV=test): what needs no worker —
// 400/503 answers, node-token auth, hidden routes, config-log entries of state changes, record import rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desc, eq } from 'drizzle-orm';
import { decodeDomainSnapshot } from '@platform/shared/config';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane, type TestControlPlane } from '../../../../test/helpers/control-plane.js';
import { configLog, domains } from '../../db/schema.js';

async function lastSnapshot(cp: TestControlPlane, name: string) {
  const [row] = await cp.database.db
    .select()
    .from(configLog)
    .where(eq(configLog.domainName, name))
    .orderBy(desc(configLog.version))
    .limit(1);
  return decodeDomainSnapshot(row.payload);
}

test('lifecycle routes and the internal API without a worker', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const token = ensureNodeToken(cp.config.dataDir);
  const internal = (method: 'GET' | 'POST', url: string, body?: unknown, auth = `Bearer ${token}`) =>
    cp.app.inject({
      method,
      url,
      headers: { authorization: auth, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { payload: JSON.stringify(body) } : {}),
    });
  const d = await cp.domain(owner.key, 'life.example.org');

  await t.test('checks answer 503 when workflows are off; the check slot is given back', async () => {
    const r = await cp.call(owner.key, 'POST', `/domains/${d}/check-ns`);
    assert.deepEqual(
      [r.statusCode, r.json()],
      [503, { error: 'workflow service unavailable (TEMPORAL_ADDRESS is not set)' }],
    );
    assert.equal((await cp.call(owner.key, 'POST', `/domains/${d}/check-ns`)).statusCode, 503, 'not 429');
  });

  await t.test('internal routes: node token only, API keys refused, hidden from OpenAPI', async () => {
    assert.deepEqual((await internal('GET', `/internal/domains/${d}`, undefined, 'Bearer wrong')).json(), {
      error: 'invalid node token',
    });
    const wrong = await internal('GET', `/internal/domains/${d}`, undefined, 'Bearer wrong');
    assert.deepEqual([wrong.statusCode, wrong.headers['www-authenticate']], [401, 'Bearer realm="api"']);
    assert.equal((await internal('GET', `/internal/domains/${d}`, undefined, `Bearer ${owner.key}`)).statusCode, 403);
    assert.equal((await internal('GET', `/internal/domains/${d}`)).json().state, 'pending');
    assert.equal((await internal('GET', '/internal/domains/nope.example.org')).statusCode, 404);
    const doc = (await cp.call(null, 'GET', '/openapi.json')).json();
    assert.ok(Object.keys(doc.paths).every((p) => !p.startsWith('/internal')));
    assert.ok(doc.paths['/domains/{domain}/check-ns']);
  });

  await t.test('a delegation report activates the domain with one config-log entry carrying the state', async () => {
    const before = (await lastSnapshot(cp, d)).zone.serial;
    const bad = await internal('POST', `/internal/domains/${d}/delegation`, {
      observations: [{ resolver: 'r', values: ['ns1.platform.test', 'ns3.platform.test'] }],
      manual: false,
    });
    assert.equal(bad.json().ok, false);
    assert.equal(bad.json().state, 'pending');
    const good = await internal('POST', `/internal/domains/${d}/delegation`, {
      observations: [{ resolver: 'r', values: ['ns3.platform.test', 'ns4.platform.test'] }],
      manual: false,
    });
    assert.equal(good.json().state, 'active');
    assert.equal(good.json().matched_set, 1);
    const snap = await lastSnapshot(cp, d);
    assert.equal(snap.state, 'active');
    assert.deepEqual(snap.zone.nameservers, ['ns3.platform.test', 'ns4.platform.test']);
    assert.ok(snap.zone.serial > before);
  });

  await t.test('developer mode on/off reaches the config log', async () => {
    const on = await cp.call(owner.key, 'POST', `/domains/${d}/developer-mode`);
    assert.equal(on.json().enabled, true);
    assert.equal((await lastSnapshot(cp, d)).settings.developerMode, true);
    assert.equal((await lastSnapshot(cp, d)).settings.developerModeExpiresAtMs, Date.parse(on.json().expires_at));
    const early = await internal('POST', `/internal/domains/${d}/developer-mode/expire`, {
      expires_at_ms: Date.parse(on.json().expires_at) - 1000,
    });
    assert.equal(early.json().enabled, true, 'an older timer does not switch off a re-armed expiry');
    const off = await cp.call(owner.key, 'DELETE', `/domains/${d}/developer-mode`);
    assert.deepEqual(off.json(), { enabled: false, expires_at: null });
    assert.equal((await lastSnapshot(cp, d)).settings.developerMode, false);
  });

  await t.test(
    'record import follows the records rules: invalid, conflicting and duplicate records are skipped',
    async () => {
      const r = await internal('POST', `/internal/domains/${d}/records/import`, {
        records: [
          { name: '@', type: 'A', destination: '192.0.2.1', ttl: 300 },
          { name: '@', type: 'A', destination: '192.0.2.1', ttl: 300 },
          { name: 'www', type: 'CNAME', destination: 'life.example.org', ttl: 300 },
          { name: 'www', type: 'A', destination: '192.0.2.2', ttl: 300 },
          { name: 'bad', type: 'A', destination: 'not-an-ip', ttl: 300 },
          { name: '@', type: 'MX', destination: 'mx.example.net', ttl: 300, mx_priority: 10 },
        ],
      });
      assert.deepEqual(r.json(), { imported: 3, skipped: 3 });
      const records = (await cp.call(owner.key, 'GET', `/domains/${d}/records/`)).json();
      assert.deepEqual(records.map((x: { name: string; type: string }) => `${x.name} ${x.type}`).sort(), [
        '@ A',
        '@ MX',
        'www CNAME',
      ]);
    },
  );

  await t.test(
    'DomainDetail settings are every edge setting, as the config log gives them to nodes (issue 8)',
    async () => {
      const name = await cp.domain(owner.key, 'settings.example.org');
      const settingsOf = async () => {
        const s = (await lastSnapshot(cp, name)).settings;
        return {
          developer_mode: s.developerMode,
          developer_mode_expires_at: s.developerMode
            ? new Date(Number(s.developerModeExpiresAtMs)).toISOString()
            : null,
          cache_l2_ttl_days: s.cacheL2TtlDays,
          cache_cap_mb: s.cacheCapMb,
          origin_protocol: s.originProtocol,
          under_attack: s.underAttack,
        };
      };
      let detail = (await cp.call(owner.key, 'GET', `/domains/${name}`)).json();
      assert.deepEqual(detail.settings, {
        developer_mode: false,
        developer_mode_expires_at: null,
        cache_l2_ttl_days: 3,
        cache_cap_mb: 100,
        origin_protocol: 'auto',
        under_attack: false,
      });
      assert.deepEqual(detail.settings, await settingsOf());
      const put = await cp.call(owner.key, 'PUT', `/domains/${name}`, {
        origin_protocol: 'http1',
        cache_l2_ttl_days: 5,
      });
      assert.deepEqual(put.json().settings, { ...detail.settings, origin_protocol: 'http1', cache_l2_ttl_days: 5 });
      assert.deepEqual(put.json().settings, await settingsOf(), 'origin_protocol travels to the nodes');
      assert.equal((await cp.call(owner.key, 'POST', `/domains/${name}/developer-mode`)).statusCode, 200);
      detail = (await cp.call(owner.key, 'GET', `/domains/${name}`)).json();
      assert.equal(detail.settings.developer_mode, true);
      assert.equal(detail.settings.developer_mode_expires_at, detail.developer_mode_expires_at);
      assert.deepEqual(detail.settings, await settingsOf());
      const listed = (await cp.call(owner.key, 'GET', '/domains/'))
        .json()
        .find((d: { name: string }) => d.name === name);
      assert.deepEqual(listed.settings, detail.settings);
      const ua = await cp.call(owner.key, 'PUT', `/domains/${name}/under-attack`, { enabled: true });
      assert.deepEqual([ua.statusCode, ua.json()], [200, { enabled: true }]);
      detail = (await cp.call(owner.key, 'GET', `/domains/${name}`)).json();
      assert.equal(detail.settings.under_attack, true);
      assert.deepEqual(detail.settings, await settingsOf(), 'under_attack travels to the nodes');
    },
  );

  await t.test('a dns_mode PUT never revives a disabled or banned domain: 409, nothing changes (issue 8)', async () => {
    const name = await cp.domain(owner.key, 'stays-down.example.org');
    for (const state of ['disabled', 'banned'] as const) {
      assert.equal((await internal('POST', `/internal/domains/${name}/state`, { state })).statusCode, 200);
      const [before] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
      for (const body of [{ dns_mode: 'external' }, { dns_mode: 'external', cache_l2_ttl_days: 6 }]) {
        const r = await cp.call(owner.key, 'PUT', `/domains/${name}`, body);
        assert.deepEqual([r.statusCode, r.json()], [409, { error: `domain is ${state}` }]);
      }
      const [after] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
      assert.deepEqual(after, before, 'state, mode, verification and settings unchanged');
      const get = (await cp.call(owner.key, 'GET', `/domains/${name}`)).json();
      assert.deepEqual([get.state, get.dns_mode], [state, 'managed']);
      assert.equal((await lastSnapshot(cp, name)).state, state);
      // The mode it already has changes nothing, so it is no transition: 200, state kept.
      const same = await cp.call(owner.key, 'PUT', `/domains/${name}`, { dns_mode: 'managed' });
      assert.deepEqual([same.statusCode, same.json().state], [200, state]);
    }
  });

  await t.test('enable: 400 unless disabled; disabled managed → pending', async () => {
    assert.deepEqual((await cp.call(owner.key, 'POST', `/domains/${d}/enable`)).json(), {
      error: 'domain is not disabled',
    });
    assert.deepEqual((await internal('POST', `/internal/domains/${d}/state`, { state: 'disabled' })).json(), {
      state: 'disabled',
    });
    assert.equal((await lastSnapshot(cp, d)).state, 'disabled');
    const r = await cp.call(owner.key, 'POST', `/domains/${d}/enable`);
    assert.deepEqual([r.statusCode, r.json().state], [200, 'pending']);
    const [row] = await cp.database.db.select().from(domains).where(eq(domains.name, d));
    assert.equal(row.nsSetIndex, null);
  });
});
