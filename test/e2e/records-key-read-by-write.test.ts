// Record create, update and delete read their key in the write's own first round trip (auth/authenticate.ts
// KEY_READ_BY_WRITE), not before the body: every answer must stay what the authentication hook gave before — the
// key's refusals first (even for a bad body or a name that is no domain), read-only and inactive accounts refused,
// nothing stored on a refusal, every request counted against the key's budget (refused ones included), the same
// RateLimit headers, 429 past the budget. On PGlite and on Postgres (TEST_DATABASE_URL).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { revokeApiKey } from '../../control-plane/src/auth/api-keys.js';
import { setUserActive } from '../../control-plane/src/admin/users.js';
import { apiKeys, dnsRecords } from '../../control-plane/src/db/schema.js';

const INVALID = { error: 'invalid API key' };

test('record writes that read their key in the write answer as the authentication did', async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const owner = await cp.user();
  const domain = await cp.domain(owner.key, 'key-by-write.example.org');
  const records = `/domains/${domain}/records/`;
  const A = { name: 'www', type: 'A', destination: '192.0.2.1' };
  const stored = async () => (await db.select({ name: dnsRecords.name }).from(dnsRecords)).map((r) => r.name);
  const raw = (
    key: string,
    method: 'POST' | 'PUT' | 'DELETE',
    url: string,
    payload: string,
    type = 'application/json',
  ) => cp.app.inject({ method, url, payload, headers: { authorization: `Bearer ${key}`, 'content-type': type } });
  const unknownKey = `svc_${'Q'.repeat(65)}`;

  await t.test('an unknown key is 401 before anything about the body or the domain', async () => {
    const answers: LightMyRequestResponse[] = [
      await cp.call(unknownKey, 'POST', records, A),
      await raw(unknownKey, 'POST', records, '{"name": '), // malformed JSON
      await raw(unknownKey, 'POST', records, '{"name": "x"}'), // schema: type and destination missing
      await raw(unknownKey, 'POST', records, 'name=x', 'text/plain'), // unsupported content type
      await cp.call(unknownKey, 'POST', '/domains/not..a..domain/records/', A), // no domain name
      await cp.call(unknownKey, 'POST', '/domains/nothing-here.example.org/records/', A),
      await cp.call(unknownKey, 'PUT', `${records}1`, { ttl: 'x' }),
      await cp.call(unknownKey, 'DELETE', `${records}999999`),
    ];
    for (const res of answers) {
      assert.equal(res.statusCode, 401, res.body);
      assert.deepEqual(res.json(), INVALID);
      assert.equal(res.headers['www-authenticate'], 'Bearer realm="api"');
    }
    assert.deepEqual(await stored(), []);
  });

  await t.test('a valid key with a bad body gets the body error', async () => {
    const res = await raw(owner.key, 'POST', records, '{"name": "x"}');
    assert.equal(res.statusCode, 400, res.body);
    assert.equal((await raw(owner.key, 'POST', records, '{"name": ')).statusCode, 400);
    assert.equal((await cp.call(owner.key, 'POST', '/domains/not..a..domain/records/', A)).statusCode, 404);
  });

  await t.test('revoked, read-only and inactive keys are refused and store nothing', async () => {
    const created = await cp.call(owner.key, 'POST', records, A);
    assert.equal(created.statusCode, 200, created.body);
    const id = created.json<{ id: number }>().id;
    const revoked = await cp.key(owner.id);
    await revokeApiKey(db, revoked.keyId);
    const readOnly = await cp.key(owner.id, { readOnly: true });
    const writes = (key: string) => [
      cp.call(key, 'POST', records, { ...A, name: 'refused' }),
      cp.call(key, 'PUT', `${records}${id}`, { destination: '192.0.2.99' }),
      cp.call(key, 'DELETE', `${records}${id}`),
    ];
    for (const res of await Promise.all(writes(revoked.key))) {
      assert.equal(res.statusCode, 401, res.body);
      assert.deepEqual(res.json(), INVALID);
    }
    for (const res of await Promise.all(writes(readOnly.key))) {
      assert.equal(res.statusCode, 403, res.body);
      assert.deepEqual(res.json(), { error: 'read-only API key' });
    }
    const member = await cp.user();
    await cp.addMember(domain, member.id, 'editor');
    await setUserActive(db, member.email, false);
    for (const res of await Promise.all(writes(member.key))) {
      assert.equal(res.statusCode, 403, res.body);
      assert.deepEqual(res.json(), { error: 'account is inactive' });
    }
    await setUserActive(db, member.email, true);
    // A viewer's valid key: the role's refusal, after the key's checks.
    const viewer = await cp.user();
    await cp.addMember(domain, viewer.id, 'viewer');
    assert.equal((await cp.call(viewer.key, 'POST', records, { ...A, name: 'refused' })).statusCode, 403);
    const [row] = await db.select().from(dnsRecords).where(eq(dnsRecords.id, id));
    assert.equal(row?.destination, '192.0.2.1', 'the record was neither changed nor deleted');
    assert.deepEqual(await stored(), ['www']);
    // The editor's key works once active again; the key's last use is recorded.
    const ok = await cp.call(member.key, 'PUT', `${records}${id}`, { ttl: 600 });
    assert.equal(ok.statusCode, 200, ok.body);
    // Written after the answer (not in the write's transaction, which a refusal rolls back).
    for (let i = 0; ; i++) {
      const [key] = await db.select().from(apiKeys).where(eq(apiKeys.id, member.keyId));
      if (key?.lastUsedAt) break;
      assert.ok(i < 100, 'last_used_at is written');
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  await t.test('each write counts against the key, refused ones too; RateLimit headers; then 429', async () => {
    const limited = await cp.withEnv({ RATE_LIMIT_PER_MINUTE: '4' });
    const u = await cp.user();
    const mine = await cp.domain(u.key, 'key-by-write-limit.example.org');
    // A key of its own: on Postgres the counters are shared by every app on the database.
    const limitedKey = (await cp.key(u.id)).key;
    const call = (method: 'POST' | 'GET', url: string, body?: unknown) =>
      limited.inject({
        method,
        url,
        headers: { authorization: `Bearer ${limitedKey}` },
        ...(body === undefined ? {} : { payload: body as object }),
      });
    const base = `/domains/${mine}/records/`;
    const answers = [
      await call('POST', base, A), // 200
      await call('POST', base, A), // 409: the same record again, refused in the write (rolled back), still counted
      await call('POST', base, { name: 'x' }), // 400 from the schema, before the write
      await call('GET', base), // a route the authentication hook counts
    ];
    assert.deepEqual(
      answers.map((r) => r.statusCode),
      [200, 409, 400, 200],
      answers.map((r) => r.body).join('\n'),
    );
    answers.forEach((res, i) => {
      assert.equal(res.headers['ratelimit-limit'], '4', `answer ${i}`);
      assert.equal(res.headers['ratelimit-remaining'], String(3 - i), `answer ${i}`);
      assert.ok(Number(res.headers['ratelimit-reset']) > 0, `answer ${i}`);
    });
    for (const res of [await call('POST', base, { ...A, name: 'over' }), await call('POST', base, { name: 'x' })]) {
      assert.equal(res.statusCode, 429, res.body);
      assert.deepEqual(res.json(), { error: 'rate limit exceeded' });
      assert.equal(res.headers['ratelimit-remaining'], '0');
      assert.ok(Number(res.headers['retry-after']) > 0 && Number(res.headers['retry-after']) <= 60);
    }
    assert.equal((await call('GET', base)).statusCode, 429);
    const names = (await cp.call(u.key, 'GET', base)).json<{ name: string }[]>().map((r) => r.name);
    assert.deepEqual(names, ['www'], 'nothing past the budget was stored');
  });
});
