// Settings → API keys through its routes (control-plane/src/areas/api-keys): a browser session only, the key shown
// once, the 10-key cap, revoke, another account's key invisible, and the per-day request accounting.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { setPassword } from '../../control-plane/src/areas/login/store.js';

test('API keys in the panel: create once, cap, revoke, usage per day; never for an API key', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user('keys@panel.example');
  const other = await cp.user('other@panel.example');
  await setPassword(cp.database.db, owner.id, 'keys password 1');
  const login = await cp.app.inject({
    method: 'POST',
    url: '/auth/login',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email: owner.email, password: 'keys password 1' }),
  });
  const cookie = String(login.headers['set-cookie']).split(';')[0]!;
  const csrf = login.json<{ csrf_token: string }>().csrf_token;
  const session = (method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
    cp.call(null, method, url, body, { cookie, 'x-csrf-token': csrf });

  // Every API key is refused, the account's own full-access key included.
  for (const [method, url] of [
    ['GET', '/users/me/keys'],
    ['POST', '/users/me/keys'],
    ['DELETE', `/users/me/keys/${owner.keyId}`],
    ['GET', `/users/me/keys/${owner.keyId}/usage`],
  ] as const) {
    const res = await cp.call(owner.key, method, url, method === 'POST' ? {} : undefined);
    assert.equal(res.statusCode, 403, `${method} ${url}`);
  }

  const bad = await session('POST', '/users/me/keys', { name: 'x'.repeat(101), expires: 'never', mode: 'full' });
  assert.equal(bad.statusCode, 400);
  const badExpiry = await session('POST', '/users/me/keys', { name: 'a', expires: '7', mode: 'full' });
  assert.equal(badExpiry.statusCode, 400);

  const created = await session('POST', '/users/me/keys', { name: 'grafana', expires: '30', mode: 'read_only' });
  assert.equal(created.statusCode, 200, created.body);
  const k = created.json<{ id: number; key: string; expires_at: string }>();
  assert.match(k.key, /^svc_[A-Za-z0-9]{65}$/);
  assert.equal(created.headers['cache-control'], 'no-store');
  const readOnly = await cp.call(k.key, 'POST', '/domains/', { name: 'ro.panel.example' });
  assert.equal(readOnly.statusCode, 403);
  for (let i = 0; i < 3; i++) assert.equal((await cp.call(k.key, 'GET', '/domains/')).statusCode, 200);
  // A write whose key is read by the write itself (KEY_READ_BY_WRITE) is counted as well.
  const domain = await cp.domain(owner.key, 'usage.panel.example');
  const record = await cp.call(owner.key, 'POST', `/domains/${domain}/records/`, {
    name: 'www',
    type: 'A',
    destination: '192.0.2.1',
  });
  assert.equal(record.statusCode, 200, record.body);
  const ownerUsage = await session('GET', `/users/me/keys/${owner.keyId}/usage`);
  assert.equal(ownerUsage.json<{ days: { requests: number }[] }>().days[29]!.requests, 2);

  const list = await session('GET', '/users/me/keys');
  const body = list.json<{
    keys: { id: number; mode: string; status: string }[];
    active: number;
    max_active: number;
  }>();
  assert.ok(!list.body.includes(k.key), 'the list never holds a key');
  assert.equal(body.active, 2);
  assert.equal(body.max_active, 10);
  assert.deepEqual(
    body.keys.find((x) => x.id === k.id),
    { ...body.keys.find((x) => x.id === k.id), mode: 'read_only', status: 'active' },
  );

  // Usage: 30 days, today holding the key's requests (the refused write is not counted).
  const usage = await session('GET', `/users/me/keys/${k.id}/usage`);
  const days = usage.json<{ days: { day: string; requests: number }[] }>().days;
  assert.equal(days.length, 30);
  assert.equal(days[29]!.day, new Date().toISOString().slice(0, 10));
  assert.equal(days[29]!.requests, 3);
  assert.equal(
    days.slice(0, 29).reduce((s, d) => s + d.requests, 0),
    0,
  );

  // Another account's key is not visible.
  assert.equal((await session('GET', `/users/me/keys/${other.keyId}/usage`)).statusCode, 404);
  assert.equal((await session('DELETE', `/users/me/keys/${other.keyId}`)).statusCode, 404);
  assert.equal((await cp.call(other.key, 'GET', '/domains/')).statusCode, 200);

  // The cap: 10 active; the 11th is refused with the reason.
  for (let i = 0; i < 8; i++)
    assert.equal(
      (await session('POST', '/users/me/keys', { name: `k${i}`, expires: 'never', mode: 'full' })).statusCode,
      200,
    );
  const eleventh = await session('POST', '/users/me/keys', { name: 'one more', expires: 'never', mode: 'full' });
  assert.equal(eleventh.statusCode, 400);
  assert.deepEqual(eleventh.json(), { error: 'an account may have at most 10 active API keys; revoke one first' });

  // Revoke: the key is refused at once.
  const revoked = await session('DELETE', `/users/me/keys/${k.id}`);
  assert.equal(revoked.statusCode, 200);
  assert.equal((await cp.call(k.key, 'GET', '/domains/')).statusCode, 401);
  // A revoke without the CSRF token is refused.
  const noCsrf = await cp.call(null, 'DELETE', `/users/me/keys/${owner.keyId}`, undefined, { cookie });
  assert.equal(noCsrf.statusCode, 403);
});
