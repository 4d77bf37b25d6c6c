// Accounts' sign-in (control-plane/src/areas/login): passwords, browser sessions and their cookie, CSRF, throttling,
// the session on the API with its own rate limit, and API keys refused on /auth/** and /users/** (spec
// Authentication §6).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane, type TestControlPlane } from '../helpers/control-plane.js';
import { setPassword } from '../../control-plane/src/areas/login/store.js';
import { setUserActive } from '../../control-plane/src/admin/users.js';
import type { FastifyInstance } from 'fastify';

const PASSWORD = 'correct horse battery';

interface Browser {
  cookie: string;
  csrf: string;
}

async function signIn(app: FastifyInstance, email: string, password = PASSWORD, headers: Record<string, string> = {}) {
  return app.inject({
    method: 'POST',
    url: '/auth/login',
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify({ email, password }),
  });
}

async function browser(cp: TestControlPlane, email: string): Promise<Browser> {
  const res = await signIn(cp.app, email);
  assert.equal(res.statusCode, 200, res.body);
  const cookie = String(res.headers['set-cookie']).split(';')[0]!;
  return { cookie, csrf: res.json<{ csrf_token: string }>().csrf_token };
}

function asBrowser(
  app: FastifyInstance,
  b: Browser,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  body?: unknown,
) {
  return app.inject({
    method,
    url,
    headers: {
      cookie: b.cookie,
      'x-csrf-token': b.csrf,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
}

test('sign-in, browser sessions, CSRF and API keys on the browser surfaces', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user('owner@login.example');
  await setPassword(cp.database.db, owner.id, PASSWORD);

  await t.test('a wrong password, an unknown address and an account without a password are one 401', async () => {
    const noPassword = await cp.user('nopass@login.example');
    for (const [email, password] of [
      ['owner@login.example', 'wrong password!'],
      ['nobody@login.example', PASSWORD],
      [noPassword.email, PASSWORD],
      ['not an address', PASSWORD],
    ]) {
      const res = await signIn(cp.app, email!, password);
      assert.equal(res.statusCode, 401);
      assert.deepEqual(res.json(), { error: 'invalid email or password' });
      assert.equal(res.headers['set-cookie'], undefined);
    }
  });

  await t.test('sign-in sets an HttpOnly SameSite=Lax cookie (no Secure over plain HTTP)', async () => {
    const res = await signIn(cp.app, ' Owner@Login.example ');
    assert.equal(res.statusCode, 200, res.body);
    const cookie = String(res.headers['set-cookie']);
    assert.match(cookie, /^session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Expires=/);
    assert.doesNotMatch(cookie, /Secure/);
    const body = res.json<{ user: { email: string }; csrf_token: string }>();
    assert.equal(body.user.email, 'owner@login.example');
    assert.ok(body.csrf_token.length >= 40);
    assert.equal(res.headers['cache-control'], 'no-store');
  });

  await t.test('over TLS (PUBLIC_BASE_URL https) the cookie is __Host- prefixed and Secure', async () => {
    const tls = await cp.withEnv({ PUBLIC_BASE_URL: 'https://panel.example' });
    const res = await signIn(tls, owner.email);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(
      String(res.headers['set-cookie']),
      /^__Host-session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; .*; Secure$/,
    );
    // The plain cookie name is not read over TLS.
    const token = String(res.headers['set-cookie']).split(';')[0]!.split('=')[1];
    const plain = await tls.inject({ method: 'GET', url: '/auth/session', headers: { cookie: `session=${token}` } });
    assert.equal(plain.statusCode, 401);
    const secure = await tls.inject({
      method: 'GET',
      url: '/auth/session',
      headers: { cookie: `__Host-session=${token}` },
    });
    assert.equal(secure.statusCode, 200);
  });

  await t.test('GET /auth/session: the account and the CSRF token; 401 without a live session', async () => {
    const b = await browser(cp, owner.email);
    const res = await asBrowser(cp.app, b, 'GET', '/auth/session');
    assert.equal(res.statusCode, 200);
    assert.equal(res.json<{ csrf_token: string }>().csrf_token, b.csrf);
    const none = await cp.app.inject({ method: 'GET', url: '/auth/session' });
    assert.equal(none.statusCode, 401);
    assert.deepEqual(none.json(), { error: 'not signed in' });
    const forged = await cp.app.inject({
      method: 'GET',
      url: '/auth/session',
      headers: { cookie: `session=${'A'.repeat(43)}` },
    });
    assert.equal(forged.statusCode, 401);
  });

  await t.test('the panel calls the API with its session; writes need the CSRF token', async () => {
    const b = await browser(cp, owner.email);
    const list = await asBrowser(cp.app, b, 'GET', '/domains/');
    assert.equal(list.statusCode, 200, list.body);
    const noCsrf = await cp.app.inject({
      method: 'POST',
      url: '/domains/',
      headers: { cookie: b.cookie, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'csrf.login.example' }),
    });
    assert.equal(noCsrf.statusCode, 403);
    assert.deepEqual(noCsrf.json(), { error: 'missing or wrong X-CSRF-Token header; reload the page' });
    const wrongCsrf = await cp.app.inject({
      method: 'POST',
      url: '/domains/',
      headers: { cookie: b.cookie, 'content-type': 'application/json', 'x-csrf-token': 'x'.repeat(43) },
      payload: JSON.stringify({ name: 'csrf.login.example' }),
    });
    assert.equal(wrongCsrf.statusCode, 403);
    const created = await asBrowser(cp.app, b, 'POST', '/domains/', { name: 'session.login.example' });
    assert.equal(created.statusCode, 200, created.body);
    // A write through changeDomain checks the session on the locked row (domain-access.ts writeAs).
    const record = await asBrowser(cp.app, b, 'POST', '/domains/session.login.example/records/', {
      name: 'www',
      type: 'A',
      destination: '192.0.2.1',
    });
    assert.equal(record.statusCode, 200, record.body);
    // The key still sees what the session made: one account.
    const viaKey = await cp.call(owner.key, 'GET', '/domains/session.login.example/records/');
    assert.equal(viaKey.json<unknown[]>().length, 1);
    // /admin/** stays the operator's; whoami describes keys only.
    assert.equal((await asBrowser(cp.app, b, 'GET', '/admin/x')).statusCode, 403);
    assert.equal((await asBrowser(cp.app, b, 'GET', '/account/whoami')).statusCode, 404);
  });

  await t.test('every API key gets 403 on /auth/** and /users/**, even with a session cookie', async () => {
    const b = await browser(cp, owner.email);
    const readOnly = await cp.key(owner.id, { readOnly: true });
    for (const key of [owner.key, readOnly.key]) {
      for (const [method, url] of [
        ['POST', '/auth/login'],
        ['POST', '/auth/logout'],
        ['GET', '/auth/session'],
        ['PUT', '/users/me/password'],
      ] as const) {
        const res = await cp.call(key, method, url, method === 'GET' ? undefined : {}, { cookie: b.cookie });
        assert.equal(res.statusCode, 403, `${method} ${url}: ${res.body}`);
        if (key === owner.key) assert.deepEqual(res.json(), { error: 'this endpoint is not available to API keys' });
      }
    }
    // A key beside a cookie is the key: the session is not consulted.
    const revoked = await cp.key(owner.id);
    await cp.call(owner.key, 'GET', '/domains/');
    const { revokeApiKey } = await import('../../control-plane/src/auth/api-keys.js');
    await revokeApiKey(cp.database.db, revoked.keyId);
    const res = await cp.call(revoked.key, 'GET', '/domains/', undefined, { cookie: b.cookie });
    assert.equal(res.statusCode, 401);
  });

  await t.test('sign-out ends the session at once, on the API too', async () => {
    const b = await browser(cp, owner.email);
    const noCsrf = await cp.app.inject({ method: 'POST', url: '/auth/logout', headers: { cookie: b.cookie } });
    assert.equal(noCsrf.statusCode, 403);
    const out = await asBrowser(cp.app, b, 'POST', '/auth/logout');
    assert.equal(out.statusCode, 200);
    assert.match(String(out.headers['set-cookie']), /^session=; Path=\/; HttpOnly; SameSite=Lax; Max-Age=0/);
    assert.equal((await asBrowser(cp.app, b, 'GET', '/auth/session')).statusCode, 401);
    assert.equal((await asBrowser(cp.app, b, 'GET', '/domains/')).statusCode, 401);
  });

  await t.test('a deactivated account: sign-in and its sessions answer 403 account is inactive', async () => {
    const other = await cp.user('inactive@login.example');
    await setPassword(cp.database.db, other.id, PASSWORD);
    const b = await browser(cp, other.email);
    await setUserActive(cp.database.db, other.email, false);
    const api = await asBrowser(cp.app, b, 'GET', '/domains/');
    assert.equal(api.statusCode, 403);
    assert.deepEqual(api.json(), { error: 'account is inactive' });
    const again = await signIn(cp.app, other.email);
    assert.equal(again.statusCode, 403);
  });

  await t.test('sessions: the account lists its own, ends one, or all but the current one', async () => {
    const other = await cp.user('sessions@login.example');
    await setPassword(cp.database.db, other.id, PASSWORD);
    const here = await browser(cp, other.email);
    const laptop = await browser(cp, other.email);
    const phone = await browser(cp, other.email);
    // Another account's session is never listed nor ended from here.
    const stranger = await browser(cp, owner.email);
    type Listed = { id: number; current: boolean; user_agent: string; client_ip: string; last_seen_at: string };
    const list = async (b: Browser) =>
      (await asBrowser(cp.app, b, 'GET', '/users/me/sessions')).json<{ sessions: Listed[] }>().sessions;
    const mine = await list(here);
    assert.equal(mine.length, 3);
    assert.equal(mine.filter((s) => s.current).length, 1);
    assert.equal(mine.find((s) => s.current)!.client_ip, '127.0.0.1');
    const strangerId = (await list(stranger)).find((s) => s.current)!.id;
    const notMine = await asBrowser(cp.app, here, 'DELETE', `/users/me/sessions/${strangerId}`);
    assert.equal(notMine.statusCode, 404);
    assert.deepEqual(notMine.json(), { error: 'session not found' });
    assert.equal((await asBrowser(cp.app, stranger, 'GET', '/auth/session')).statusCode, 200);
    for (const bad of ['0', 'x', '99999999999'])
      assert.equal((await asBrowser(cp.app, here, 'DELETE', `/users/me/sessions/${bad}`)).statusCode, 400);

    // Ending one: the laptop's session.
    const laptopId = (await list(laptop)).find((s) => s.current)!.id;
    const noCsrf = await cp.app.inject({
      method: 'DELETE',
      url: `/users/me/sessions/${laptopId}`,
      headers: { cookie: here.cookie },
    });
    assert.equal(noCsrf.statusCode, 403);
    assert.equal((await asBrowser(cp.app, here, 'DELETE', `/users/me/sessions/${laptopId}`)).statusCode, 200);
    assert.equal((await asBrowser(cp.app, laptop, 'GET', '/domains/')).statusCode, 401);
    assert.equal((await list(here)).length, 2);

    // All but this one: the phone's ends, this one stays.
    const others = await asBrowser(cp.app, here, 'POST', '/users/me/sessions/sign-out-others');
    assert.deepEqual(others.json(), { message: '1 other session ended', ended: 1 });
    assert.equal((await asBrowser(cp.app, phone, 'GET', '/auth/session')).statusCode, 401);
    assert.equal((await asBrowser(cp.app, here, 'GET', '/auth/session')).statusCode, 200);
    assert.equal((await list(here)).length, 1);
    // Ending the current one signs this browser out (the cookie is cleared).
    const self = await asBrowser(cp.app, here, 'DELETE', `/users/me/sessions/${(await list(here))[0]!.id}`);
    assert.match(String(self.headers['set-cookie']), /Max-Age=0/);
    assert.equal((await asBrowser(cp.app, here, 'GET', '/auth/session')).statusCode, 401);
    // A key never reaches them.
    assert.equal((await cp.call(other.key, 'GET', '/users/me/sessions')).statusCode, 403);
  });

  await t.test('password change: the current password is checked, every session ends', async () => {
    const other = await cp.user('change@login.example');
    await setPassword(cp.database.db, other.id, PASSWORD);
    const b = await browser(cp, other.email);
    const second = await browser(cp, other.email);
    const short = await asBrowser(cp.app, b, 'PUT', '/users/me/password', {
      current_password: PASSWORD,
      new_password: 'short',
    });
    assert.equal(short.statusCode, 400);
    assert.deepEqual(short.json(), { error: 'password must be at least 10 characters' });
    const wrong = await asBrowser(cp.app, b, 'PUT', '/users/me/password', {
      current_password: 'not the password',
      new_password: 'a brand new password',
    });
    assert.equal(wrong.statusCode, 401);
    const ok = await asBrowser(cp.app, b, 'PUT', '/users/me/password', {
      current_password: PASSWORD,
      new_password: 'a brand new password',
    });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal((await asBrowser(cp.app, second, 'GET', '/auth/session')).statusCode, 401);
    assert.equal((await signIn(cp.app, other.email)).statusCode, 401);
    assert.equal((await signIn(cp.app, other.email, 'a brand new password')).statusCode, 200);
  });

  await t.test(
    'abuse: an oversized password is 400 before hashing; an oversized cookie header is no session',
    async () => {
      const long = await signIn(cp.app, owner.email, 'x'.repeat(100_000));
      assert.equal(long.statusCode, 400);
      const b = await browser(cp, owner.email);
      const huge = await cp.app.inject({
        method: 'GET',
        url: '/auth/session',
        headers: { cookie: `${'a=b; '.repeat(5000)}${b.cookie}` },
      });
      assert.equal(huge.statusCode, 401);
    },
  );

  await t.test(
    'guessing: the 11th failure in 15 minutes of an account is 429, even with the right password',
    async () => {
      const victim = await cp.user('victim@login.example');
      await setPassword(cp.database.db, victim.id, PASSWORD);
      for (let i = 0; i < 10; i++)
        assert.equal((await signIn(cp.app, victim.email, `guess number ${i}`)).statusCode, 401);
      const res = await signIn(cp.app, victim.email);
      assert.equal(res.statusCode, 429);
      assert.deepEqual(res.json(), { error: 'too many failed sign-ins; try again in 15 minutes' });
      assert.ok(Number(res.headers['retry-after']) > 800);
      // Another account from the same address is not locked out by it (the network allows 50).
      assert.equal((await signIn(cp.app, owner.email)).statusCode, 200);
    },
  );
});

test('browser traffic has its own rate limit and never consumes a key budget (spec Limits)', async (t) => {
  const cp = await startTestControlPlane(t, { RATE_LIMIT_PER_MINUTE: '3', PANEL_RATE_LIMIT_PER_MINUTE: '5' });
  const owner = await cp.user('limits@login.example');
  await setPassword(cp.database.db, owner.id, PASSWORD);
  const b = await browser(cp, owner.email);
  for (let i = 0; i < 5; i++) assert.equal((await asBrowser(cp.app, b, 'GET', '/domains/')).statusCode, 200);
  const over = await asBrowser(cp.app, b, 'GET', '/domains/');
  assert.equal(over.statusCode, 429);
  assert.equal(over.headers['ratelimit-limit'], '5');
  for (let i = 0; i < 3; i++) assert.equal((await cp.call(owner.key, 'GET', '/domains/')).statusCode, 200);
  assert.equal((await cp.call(owner.key, 'GET', '/domains/')).statusCode, 429);
});

test('admin CLI: user password prints a generated password once; it signs in', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user('cli@login.example');
  const { executeCommand } = await import('../../control-plane/src/admin/commands.js');
  const out: string[] = [];
  const code = await executeCommand(
    { db: cp.database.db, configLog: cp.app.configLog, out: (line) => out.push(line) },
    ['user', 'password', owner.email],
    (line) => out.push(line),
  );
  assert.equal(code, 0);
  assert.equal(out.length, 1);
  assert.match(out[0]!, /^[A-Za-z0-9_-]{20}$/);
  assert.equal((await signIn(cp.app, owner.email, out[0]!)).statusCode, 200);
});
