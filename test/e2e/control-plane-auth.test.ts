// Walks the spec's Authentication and Limits sections line by line against a real control plane (app.inject).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { connect, type AddressInfo } from 'node:net';
import { eq } from 'drizzle-orm';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { apiKeys } from '../../control-plane/src/db/schema.js';
import { createApiKey, revokeApiKey, MAX_ACTIVE_KEYS } from '../../control-plane/src/auth/api-keys.js';
import { setUserActive } from '../../control-plane/src/admin/users.js';

const INVALID = { error: 'invalid API key' };

test('authentication, read-only keys, denied surfaces and roles (spec Authentication)', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user('owner@example.org');
  const domain = await cp.domain(owner.key, 'auth.example.org');

  await t.test('§1/§3 a missing key is 401 invalid API key', async () => {
    const res = await cp.call(null, 'GET', '/domains/');
    assert.equal(res.statusCode, 401);
    assert.deepEqual(res.json(), INVALID);
  });

  await t.test('§2 the key works in Authorization: Bearer and in X-Api-Key', async () => {
    assert.equal((await cp.call(owner.key, 'GET', '/domains/')).statusCode, 200);
    assert.equal(
      (await cp.call(null, 'GET', '/domains/', undefined, { authorization: `bearer ${owner.key}` })).statusCode,
      200,
    );
    const viaHeader = await cp.call(null, 'GET', '/domains/', undefined, { 'x-api-key': owner.key });
    assert.equal(viaHeader.statusCode, 200);
    assert.equal(viaHeader.json<unknown[]>().length, 1);
    const both = await cp.call(owner.key, 'GET', '/domains/', undefined, { 'x-api-key': owner.key });
    assert.equal(both.statusCode, 200);
  });

  await t.test('§3 malformed, unknown and contradictory keys are 401 invalid API key', async () => {
    const unknown = `svc_${'A'.repeat(65)}`;
    const cases: Array<[string, Record<string, string>]> = [
      ['bearer without token', { authorization: 'Bearer' }],
      ['basic scheme', { authorization: `Basic ${owner.key}` }],
      ['key without scheme', { authorization: owner.key }],
      ['too short', { authorization: 'Bearer svc_abc' }],
      ['too long', { authorization: `Bearer ${owner.key}x` }],
      ['wrong prefix', { authorization: `Bearer sk_${owner.key.slice(3)}` }],
      ['not base62', { authorization: `Bearer ${owner.key.slice(0, 68)}!` }],
      ['a JWT', { authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig' }],
      ['unknown well-formed key', { authorization: `Bearer ${unknown}` }],
      ['unknown key in X-Api-Key', { 'x-api-key': unknown }],
      ['empty X-Api-Key', { 'x-api-key': '' }],
      ['two different keys', { authorization: `Bearer ${owner.key}`, 'x-api-key': unknown }],
    ];
    for (const [name, headers] of cases) {
      const res = await cp.call(null, 'GET', '/domains/', undefined, headers);
      assert.equal(res.statusCode, 401, name);
      assert.deepEqual(res.json(), INVALID, name);
    }
  });

  await t.test('§3 a revoked key is refused at once', async () => {
    const k = await cp.key(owner.id);
    assert.equal((await cp.call(k.key, 'GET', '/domains/')).statusCode, 200);
    assert.equal(await revokeApiKey(cp.database.db, k.keyId), true);
    const res = await cp.call(k.key, 'GET', '/domains/');
    assert.equal(res.statusCode, 401);
    assert.deepEqual(res.json(), INVALID);
  });

  await t.test(
    '§3 revocation applies to in-flight requests: a write whose body is still arriving is refused',
    async () => {
      const k = await cp.key(owner.id);
      const body = new PassThrough();
      const pending = cp.app.inject({
        method: 'POST',
        url: '/domains/',
        payload: body,
        headers: { authorization: `Bearer ${k.key}`, 'content-type': 'application/json' },
      });
      body.write('{"name": "in-flight');
      // Wait until the request is past authentication (last_used_at is written there), then revoke mid-body.
      for (let i = 0; i < 200; i++) {
        const [row] = await cp.database.db.select().from(apiKeys).where(eq(apiKeys.id, k.keyId));
        if (row.lastUsedAt) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      await revokeApiKey(cp.database.db, k.keyId);
      body.end('.example.org"}');
      const res = await pending;
      assert.equal(res.statusCode, 401);
      assert.deepEqual(res.json(), INVALID);
      assert.equal(
        (await cp.call(owner.key, 'GET', '/domains/in-flight.example.org')).statusCode,
        404,
        'nothing was written',
      );
    },
  );

  await t.test(
    '§3 record writes check the key again on the locked domain row: revoked or deactivated mid-body is refused',
    async () => {
      // Record routes take their domain with writeAs: the key is checked in the write's lock statement.
      const inFlight = async (
        key: string,
        url: string,
        method: 'POST' | 'PUT' | 'DELETE',
        change: () => Promise<unknown>,
      ) => {
        const body = new PassThrough();
        const pending = cp.app.inject({
          method,
          url,
          payload: body,
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        });
        body.write('{"name": "in-flight", ');
        await new Promise((r) => setTimeout(r, 100)); // past authentication: the body is still arriving
        await change();
        body.end('"type": "A", "destination": "192.0.2.9"}');
        return pending;
      };
      const records = `/domains/${domain}/records/`;
      const names = async () =>
        (await cp.call(owner.key, 'GET', records)).json<Array<{ name: string; id: number }>>().map((r) => r.name);
      const k = await cp.key(owner.id);
      let res = await inFlight(k.key, records, 'POST', () => revokeApiKey(cp.database.db, k.keyId));
      assert.equal(res.statusCode, 401, res.body);
      assert.deepEqual(res.json(), INVALID);
      // The same on a domain that does not exist: the key is refused first, as by the authentication.
      const k2 = await cp.key(owner.id);
      res = await inFlight(k2.key, '/domains/nothing-here.example.org/records/', 'POST', () =>
        revokeApiKey(cp.database.db, k2.keyId),
      );
      assert.equal(res.statusCode, 401, res.body);
      const other = await cp.user();
      const mine = await cp.domain(other.key, 'inflight-owner.example.org');
      res = await inFlight(other.key, `/domains/${mine}/records/`, 'POST', () =>
        setUserActive(cp.database.db, other.email, false),
      );
      assert.equal(res.statusCode, 403, res.body);
      assert.deepEqual(res.json(), { error: 'account is inactive' });
      await setUserActive(cp.database.db, other.email, true);
      assert.deepEqual(
        (await cp.call(other.key, 'GET', `/domains/${mine}/records/`)).json(),
        [],
        'nothing was written',
      );
      assert.ok(!(await names()).includes('in-flight'), 'nothing was written');
      // A record update in flight is refused the same way.
      const created = await cp.call(owner.key, 'POST', records, { name: 'kept', type: 'A', destination: '192.0.2.1' });
      const k3 = await cp.key(owner.id);
      res = await inFlight(k3.key, `${records}${created.json<{ id: number }>().id}`, 'PUT', () =>
        revokeApiKey(cp.database.db, k3.keyId),
      );
      assert.equal(res.statusCode, 401, res.body);
      assert.ok((await names()).includes('kept') && !(await names()).includes('in-flight'), 'the update was not made');
      assert.equal(
        (await cp.call(owner.key, 'DELETE', `${records}${created.json<{ id: number }>().id}`)).statusCode,
        200,
      );
    },
  );

  await t.test('§3 an expired key is 401', async () => {
    const created = await createApiKey(cp.database.db, owner.id, {
      expires: '30',
      now: new Date(Date.now() - 31 * 86_400_000),
    });
    const res = await cp.call(created.key, 'GET', '/domains/');
    assert.equal(res.statusCode, 401);
    assert.deepEqual(res.json(), INVALID);
    const fresh = await createApiKey(cp.database.db, owner.id, { expires: '30' });
    assert.equal((await cp.call(fresh.key, 'GET', '/domains/')).statusCode, 200);
  });

  await t.test('§3 a valid key of a deactivated account is 403 account is inactive', async () => {
    const u = await cp.user('inactive@example.org');
    await setUserActive(cp.database.db, u.email, false);
    const res = await cp.call(u.key, 'GET', '/domains/');
    assert.equal(res.statusCode, 403);
    assert.deepEqual(res.json(), { error: 'account is inactive' });
    await setUserActive(cp.database.db, u.email, true);
    assert.equal((await cp.call(u.key, 'GET', '/domains/')).statusCode, 200);
  });

  await t.test(
    '§5 a read-only key may GET, HEAD and OPTIONS; every other method is 403 read-only API key',
    async () => {
      const ro = await cp.key(owner.id, { readOnly: true });
      assert.equal((await cp.call(ro.key, 'GET', '/domains/')).statusCode, 200);
      assert.equal((await cp.call(ro.key, 'GET', `/domains/${domain}`)).statusCode, 200);
      assert.equal((await cp.call(ro.key, 'HEAD', `/domains/${domain}`)).statusCode, 200);
      const writes: Array<[string, string, unknown]> = [
        ['POST', '/domains/', { name: 'ro.example.org' }],
        ['PUT', `/domains/${domain}`, { cache_l2_ttl_days: 2 }],
        ['DELETE', `/domains/${domain}`, undefined],
        ['PATCH', `/domains/${domain}`, {}],
        ['POST', `/domains/${domain}/records/`, { name: 'www', type: 'A', destination: '192.0.2.1' }],
        ['POST', '/notifications/read', {}],
        ['DELETE', '/no/such/route', undefined],
      ];
      for (const [method, url, body] of writes) {
        const res = await cp.call(ro.key, method as 'POST', url, body);
        assert.equal(res.statusCode, 403, `${method} ${url}`);
        assert.deepEqual(res.json(), { error: 'read-only API key' }, `${method} ${url}`);
      }
      assert.equal(
        (await cp.call(owner.key, 'GET', `/domains/${domain}`)).json<{ cache_l2_ttl_days: number }>().cache_l2_ttl_days,
        3,
      );
    },
  );

  await t.test('§5 the one exception: a read-only key may POST /analytics/query', async () => {
    const ro = await cp.key(owner.id, { readOnly: true });
    const res = await cp.call(ro.key, 'POST', '/analytics/query', { sql: 'SELECT 1' });
    assert.notEqual(res.json<{ error?: string }>().error, 'read-only API key');
    assert.notEqual(res.statusCode, 401);
  });

  await t.test('§6 denied surfaces answer 403 for every key, full access included', async () => {
    const surfaces: Array<[string, string]> = [
      ['GET', '/users/me'],
      ['POST', '/users/api-keys'],
      ['DELETE', '/users/api-keys/1'],
      ['GET', '/users'],
      ['POST', '/auth/login'],
      ['GET', '/auth/otp'],
      ['GET', '/billing/plans'],
      ['PUT', '/billing/settings'],
      ['GET', '/admin/users'],
      ['POST', '/wallet/topup'],
      ['POST', '/subscriptions/purchase'],
      ['POST', '/subscriptions/switch'],
      ['POST', '/subscriptions/auto-renew'],
      ['POST', `/domains/${domain}/subscriptions/purchase`],
      ['POST', `/domains/${domain}/subscriptions/switch`],
      ['POST', `/domains/${domain}/subscriptions/auto-renew`],
      ['GET', '/%75sers/me'],
    ];
    for (const [method, url] of surfaces) {
      const res = await cp.call(
        owner.key,
        method as 'GET',
        url,
        method === 'GET' || method === 'DELETE' ? undefined : {},
      );
      assert.equal(res.statusCode, 403, `${method} ${url}`);
      assert.deepEqual(res.json(), { error: 'this endpoint is not available to API keys' }, `${method} ${url}`);
    }
    // Reading wallet, subscription, feature, traffic-usage and invoice state is allowed.
    for (const url of [
      '/wallet',
      '/wallet/transactions',
      '/invoices',
      '/subscriptions',
      '/usage/traffic',
      `/domains/${domain}/subscriptions`,
      `/domains/${domain}/entitlements`,
      `/domains/${domain}/usage/traffic`,
      `/domains/${domain}/invoices`,
    ]) {
      assert.equal((await cp.call(owner.key, 'GET', url)).statusCode, 200, url);
    }
    const anonymous = await cp.call(null, 'GET', '/users/me');
    assert.equal(anonymous.statusCode, 401);
  });

  await t.test('§6 an absolute-form request target or a fragment does not skip the denied-surface check', async () => {
    // Sent over a real socket: the router routes `GET http://x/users/me` and `GET /users/me#x` as /users/me.
    await cp.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = cp.app.server.address() as AddressInfo;
    for (const target of ['http://x/users/me', `HTTP://127.0.0.1:${port}/billing/plans?a=1`, '/users/me#x']) {
      const res = await rawRequest(port, `GET ${target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${owner.key}\r\n`);
      assert.equal(res.status, 403, target);
      assert.deepEqual(JSON.parse(res.body), { error: 'this endpoint is not available to API keys' }, target);
    }
  });

  await t.test('internal routes refuse API keys', async () => {
    const res = await cp.call(owner.key, 'POST', '/internal/anything', {});
    assert.equal(res.statusCode, 403);
    assert.deepEqual(res.json(), { error: 'internal endpoints do not accept API keys' });
  });

  await t.test('§4/§7 roles: owner, admin, editor, viewer; invisible domains are 404, never 403', async () => {
    const viewer = await cp.user('viewer@example.org');
    const editor = await cp.user('editor@example.org');
    const admin = await cp.user('admin@example.org');
    const stranger = await cp.user('stranger@example.org');
    await cp.addMember(domain, viewer.id, 'viewer');
    await cp.addMember(domain, editor.id, 'editor');
    await cp.addMember(domain, admin.id, 'admin');

    const roleOf = async (key: string) =>
      (await cp.call(key, 'GET', `/domains/${domain}`)).json<{ role: string; permissions: string[] }>();
    assert.deepEqual(await roleOf(viewer.key), {
      ...(await roleOf(viewer.key)),
      role: 'viewer',
      permissions: ['domain.view'],
    });
    assert.equal((await roleOf(editor.key)).role, 'editor');
    assert.ok((await roleOf(editor.key)).permissions.includes('records.edit'));
    assert.ok(!(await roleOf(editor.key)).permissions.includes('domain.settings'));
    assert.ok((await roleOf(admin.key)).permissions.includes('domain.settings'));
    assert.ok(!(await roleOf(admin.key)).permissions.includes('domain.delete'));
    assert.ok((await roleOf(owner.key)).permissions.includes('domain.delete'));

    const list = (await cp.call(viewer.key, 'GET', '/domains/')).json<Array<{ name: string; role: string }>>();
    assert.deepEqual(
      list.map((d) => [d.name, d.role]),
      [[domain, 'viewer']],
    );
    assert.deepEqual((await cp.call(stranger.key, 'GET', '/domains/')).json(), []);

    for (const [method, body] of [
      ['GET', undefined],
      ['PUT', { cache_l2_ttl_days: 2 }],
      ['DELETE', undefined],
    ] as const) {
      const res = await cp.call(stranger.key, method, `/domains/${domain}`, body);
      assert.equal(res.statusCode, 404, `stranger ${method}`);
      assert.deepEqual(res.json(), { error: 'domain not found' });
    }
    const put = (key: string) => cp.call(key, 'PUT', `/domains/${domain}`, { cache_l2_ttl_days: 5 });
    for (const [who, key] of [
      ['viewer', viewer.key],
      ['editor', editor.key],
    ] as const) {
      const res = await put(key);
      assert.equal(res.statusCode, 403, who);
      assert.deepEqual(res.json(), { error: `your role (${who}) lacks the domain.settings permission on this domain` });
    }
    assert.equal((await put(admin.key)).statusCode, 200);
    for (const [who, key] of [
      ['viewer', viewer.key],
      ['editor', editor.key],
      ['admin', admin.key],
    ] as const) {
      const res = await cp.call(key, 'DELETE', `/domains/${domain}`);
      assert.equal(res.statusCode, 403, who);
      assert.deepEqual(res.json(), { error: `your role (${who}) lacks the domain.delete permission on this domain` });
    }
    // Record writes decide role on the locked row (writeAs): the same answers, before any field is looked at.
    const records = `/domains/${domain}/records/`;
    const good = { name: 'roles', type: 'A', destination: '192.0.2.7' };
    const bad = { name: 'roles', type: 'A', destination: 'not-an-address' };
    for (const body of [good, bad]) {
      const res = await cp.call(stranger.key, 'POST', records, body);
      assert.equal(res.statusCode, 404, 'stranger record create');
      assert.deepEqual(res.json(), { error: 'domain not found' });
      const viewerRes = await cp.call(viewer.key, 'POST', records, body);
      assert.equal(viewerRes.statusCode, 403, 'viewer record create');
      assert.deepEqual(viewerRes.json(), {
        error: 'your role (viewer) lacks the records.edit permission on this domain',
      });
    }
    assert.equal((await cp.call(editor.key, 'POST', records, bad)).statusCode, 400);
    const made = await cp.call(editor.key, 'POST', records, good);
    assert.equal(made.statusCode, 200, made.body);
    const id = made.json<{ id: number }>().id;
    assert.equal((await cp.call(stranger.key, 'PUT', `${records}${id}`, { ttl: 600 })).statusCode, 404);
    assert.equal((await cp.call(viewer.key, 'DELETE', `${records}${id}`)).statusCode, 403);
    assert.equal((await cp.call(stranger.key, 'DELETE', `${records}${id}`)).statusCode, 404);
    assert.equal((await cp.call(editor.key, 'PUT', `${records}${id}`, { ttl: 600 })).statusCode, 200);
    assert.equal((await cp.call(editor.key, 'DELETE', `${records}${id}`)).statusCode, 200);
  });

  await t.test(
    'keys: 69 characters, svc_ + 65 from the CSPRNG alphabet, only the sha256 stored, last use recorded',
    async () => {
      const k = await cp.key(owner.id, { name: 'format' });
      assert.equal(k.key.length, 69);
      assert.match(k.key, /^svc_[A-Za-z0-9]{65}$/);
      const [row] = await cp.database.db.select().from(apiKeys).where(eq(apiKeys.id, k.keyId));
      assert.equal(row.keyHash, createHash('sha256').update(k.key).digest('hex'));
      assert.ok(!JSON.stringify(row).includes(k.key.slice(4)), 'the key itself is not stored');
      assert.equal(row.lastUsedAt, null);
      await cp.call(k.key, 'GET', '/domains/');
      const [used] = await cp.database.db.select().from(apiKeys).where(eq(apiKeys.id, k.keyId));
      assert.ok(used.lastUsedAt instanceof Date);
    },
  );

  await t.test('limits: at most 10 active keys per account; revoked and expired keys do not count', async () => {
    const u = await cp.user('cap@example.org'); // holds one key already
    const ids = [u.keyId];
    for (let i = 1; i < MAX_ACTIVE_KEYS; i++) ids.push((await cp.key(u.id)).keyId);
    await assert.rejects(cp.key(u.id), { message: 'an account may have at most 10 active API keys; revoke one first' });
    await revokeApiKey(cp.database.db, ids[0]);
    const again = await cp.key(u.id);
    assert.equal((await cp.call(again.key, 'GET', '/domains/')).statusCode, 200);
    await assert.rejects(cp.key(u.id), /at most 10 active API keys/);
    await cp.database.db
      .update(apiKeys)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(apiKeys.id, ids[1]));
    await cp.key(u.id);
  });

  await t.test(
    'limits: rate limit per key, RateLimit headers, then 429 rate limit exceeded with Retry-After',
    async () => {
      const limitedApp = await cp.withEnv({ RATE_LIMIT_PER_MINUTE: '3' });
      const call = (
        key: string | null,
        method: 'GET',
        url: string,
        _body?: undefined,
        headers: Record<string, string> = {},
      ) =>
        limitedApp.inject({ method, url, headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers } });
      const a = await cp.user('a@example.org');
      const b = await cp.user('b@example.org');
      for (let i = 0; i < 3; i++) {
        const res = await call(a.key, 'GET', '/domains/');
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['ratelimit-limit'], '3');
        assert.equal(res.headers['ratelimit-remaining'], String(2 - i));
        assert.ok(Number(res.headers['ratelimit-reset']) > 0);
      }
      const limited = await call(a.key, 'GET', '/domains/');
      assert.equal(limited.statusCode, 429);
      assert.deepEqual(limited.json(), { error: 'rate limit exceeded' });
      assert.ok(Number(limited.headers['retry-after']) > 0 && Number(limited.headers['retry-after']) <= 60);
      assert.equal(limited.headers['ratelimit-remaining'], '0');
      // Unknown routes count too (no free URL probing) and answer 429 once the budget is spent.
      assert.equal((await call(a.key, 'GET', '/no/such/route')).statusCode, 429);
      // The same key through the other header is the same key.
      assert.equal((await call(null, 'GET', '/domains/', undefined, { 'x-api-key': a.key })).statusCode, 429);
      // Another key of another account has its own budget.
      assert.equal((await call(b.key, 'GET', '/domains/')).statusCode, 200);
      // A request its key is refused for counts once (on Postgres the key lookup counts it; nothing counts it again).
      const ro = await cp.key(b.id, { readOnly: true });
      const refused = await limitedApp.inject({
        method: 'POST',
        url: '/domains/',
        headers: { authorization: `Bearer ${ro.key}`, 'content-type': 'application/json' },
        payload: '{"name":"ro-count.example.org"}',
      });
      assert.equal(refused.statusCode, 403);
      assert.equal((await call(ro.key, 'GET', '/domains/')).headers['ratelimit-remaining'], '1');
      assert.equal((await call(ro.key, 'GET', '/domains/')).headers['ratelimit-remaining'], '0');
      assert.equal((await call(ro.key, 'GET', '/domains/')).statusCode, 429);
      // The OpenAPI document takes no key and counts against no key (but against the client address, below; a fresh
      // one here: the counters are shared by every app on the database, and earlier tests called without a key).
      const openapi = await limitedApp.inject({ method: 'GET', url: '/openapi.json', remoteAddress: '203.0.113.50' });
      assert.equal(openapi.statusCode, 200);
    },
  );

  await t.test(
    'limits: requests without a valid key are limited per client address (IPv6 per /64); a valid key is not',
    async () => {
      const limitedApp = await cp.withEnv({ RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '3' });
      const from = (remoteAddress: string, url: string, headers: Record<string, string> = {}) =>
        limitedApp.inject({ method: 'GET', url, headers, remoteAddress });
      const unknown = { authorization: `Bearer svc_${'B'.repeat(65)}` };
      const c = await cp.user('c@example.org');
      // Fresh addresses: counters are shared by every app on the database, and other tests call from 127.0.0.1.
      const guesser = '198.51.100.7';
      assert.equal((await from(guesser, '/domains/', unknown)).statusCode, 401);
      assert.equal((await from(guesser, '/domains/')).statusCode, 401);
      assert.equal((await from(guesser, '/openapi.json')).statusCode, 200);
      const limited = await from(guesser, '/domains/', unknown);
      assert.equal(limited.statusCode, 429);
      assert.deepEqual(limited.json(), { error: 'rate limit exceeded' });
      assert.ok(Number(limited.headers['retry-after']) > 0 && Number(limited.headers['retry-after']) <= 60);
      // Public routes and wrong node tokens draw on the same budget.
      assert.equal((await from(guesser, '/openapi.json')).statusCode, 429);
      assert.equal((await from(guesser, '/internal/domains/x.example.org', unknown)).statusCode, 429);
      // A valid key from that address has its own budget; another address has its own.
      assert.equal((await from(guesser, '/domains/', { authorization: `Bearer ${c.key}` })).statusCode, 200);
      assert.equal((await from('198.51.100.8', '/domains/', unknown)).statusCode, 401);

      // IPv6: one budget per /64, as an ISP hands a /64 to one line.
      for (const address of ['2001:db8:5:6::1', '2001:db8:5:6::2', '2001:db8:5:6:ffff:1:2:3']) {
        assert.equal((await from(address, '/domains/')).statusCode, 401);
      }
      assert.equal((await from('2001:db8:5:6:aaaa::9', '/domains/')).statusCode, 429);
      assert.equal((await from('2001:db8:5:7::1', '/domains/')).statusCode, 401);
      // IPv4-mapped IPv6 is the IPv4 address.
      assert.equal((await from('::ffff:198.51.100.7', '/domains/')).statusCode, 429);
      // X-Forwarded-For names no client unless the peer is a trusted proxy (TRUST_PROXY).
      const xff = (address: string) => ({ 'x-forwarded-for': address });
      assert.equal((await from(guesser, '/domains/', xff('198.51.100.99'))).statusCode, 429);
      const behindProxy = await cp.withEnv({
        RATE_LIMIT_PER_MINUTE: '3',
        RATE_LIMIT_ANONYMOUS_PER_MINUTE: '3',
        TRUST_PROXY: '10.0.0.0/8',
      });
      const viaProxy = (client: string) =>
        behindProxy.inject({ method: 'GET', url: '/domains/', headers: xff(client), remoteAddress: '10.1.2.3' });
      for (let i = 0; i < 3; i++) assert.equal((await viaProxy('198.51.100.20')).statusCode, 401);
      assert.equal((await viaProxy('198.51.100.20')).statusCode, 429);
      assert.equal((await viaProxy('198.51.100.21')).statusCode, 401, 'another client behind the same proxy');
    },
  );
});

/** One HTTP/1.1 request written byte for byte (inject and fetch would normalise the request target). */
function rawRequest(port: number, head: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(`${head}Connection: close\r\n\r\n`));
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const headEnd = data.indexOf('\r\n\r\n');
      resolve({ status: Number(data.split(' ', 2)[1]), body: data.slice(headEnd + 4) });
    });
  });
}
