// Issue 11 item 5: the acme-dns account of a domain (GET, PUT, DELETE ssl/acme-dns, POST ssl/acme-dns/test) against
// a loopback stand-in for acme-dns's documented /update endpoint (POST, X-Api-User and X-Api-Key, JSON {subdomain,
// txt}; 200 {txt}, 401 {"error":"forbidden"}). The password is sealed at rest and never returned; the server URL is
// judged by the SSRF policy (ALLOWED_PRIVATE_NETWORKS) where the test connects; slow, endless and redirecting servers
// are bounded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eq, sql } from 'drizzle-orm';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { domains } from '../../control-plane/src/db/schema.js';
import { rowsOf } from '../../control-plane/src/db/migrate.js';

const USER = 'c36f50e8-4632-44f0-83fe-e070fef28a10';
const PASSWORD = 'htB9mR9DYgcu9bX_afHF62erXaH2TS7bg9KW3F7Z';
const SUBDOMAIN = '8e5700ea-a4bf-41c7-8a77-e990661dcc6a';

interface Seen {
  path: string;
  user: string | undefined;
  key: string | undefined;
  body: { subdomain?: string; txt?: string };
}

/** acme-dns /update as documented, under several path prefixes that behave differently. */
async function startAcmeDnsStub() {
  const seen: Seen[] = [];
  const hung: ServerResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      let body: Seen['body'] = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Seen['body'];
      } catch {
        // judged below
      }
      seen.push({
        path,
        user: req.headers['x-api-user'] as string | undefined,
        key: req.headers['x-api-key'] as string | undefined,
        body,
      });
      if (path === '/slow/update') return void hung.push(res);
      if (path === '/redirect/update') {
        res.writeHead(307, { location: '/ok/update' });
        return void res.end();
      }
      if (path === '/endless/update') {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        let sent = 0;
        const pump = () => {
          // Bounded on our side too: at most 64 MiB, then the stub gives up.
          while (sent < 1024 && res.write(chunk)) sent++;
          if (sent < 1024 && !res.destroyed) res.once('drain', pump);
        };
        res.on('close', () => undefined);
        return pump();
      }
      if (req.method !== 'POST' || !path.endsWith('/update')) {
        res.writeHead(404);
        return void res.end();
      }
      res.setHeader('content-type', 'application/json');
      if (req.headers['x-api-user'] !== USER || req.headers['x-api-key'] !== PASSWORD || body.subdomain !== SUBDOMAIN) {
        res.writeHead(401);
        return void res.end('{"error": "forbidden"}');
      }
      if (typeof body.txt !== 'string' || body.txt.length !== 43) {
        res.writeHead(400);
        return void res.end('{"error": "bad_txt"}');
      }
      res.writeHead(200);
      res.end(JSON.stringify({ txt: body.txt }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (prefix: string) => `http://127.0.0.1:${port}/${prefix}`,
    port,
    seen,
    close: () =>
      new Promise<void>((r) => {
        for (const res of hung) res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

test('acme-dns account: GET/PUT/DELETE, the password sealed and never returned, the credential test', async (t) => {
  const stub = await startAcmeDnsStub();
  t.after(() => stub.close());
  const cp = await startTestControlPlane(t, { ALLOWED_PRIVATE_NETWORKS: '127.0.0.1/32' });
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'acmedns.example.org', 'external');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const path = `/domains/${name}/ssl/acme-dns`;
  const account = {
    server_url: stub.url('ok'),
    username: USER,
    password: PASSWORD,
    subdomain: SUBDOMAIN,
    fulldomain: `${SUBDOMAIN}.auth.example.net`,
  };
  const resetPace = () =>
    cp.database.db.execute(sql`UPDATE acme_dns_accounts SET last_test_at = NULL WHERE domain_id = ${dom!.id}`);
  const expectError = (res: { statusCode: number; body: string }, status: number, pattern: RegExp) => {
    assert.equal(res.statusCode, status, res.body);
    assert.match((JSON.parse(res.body) as { error: string }).error, pattern);
  };

  await t.test('nothing configured: GET, DELETE and test are 404', async () => {
    expectError(await cp.call(owner.key, 'GET', path), 404, /no acme-dns account/);
    expectError(await cp.call(owner.key, 'DELETE', path), 404, /no acme-dns account/);
    expectError(await cp.call(owner.key, 'POST', `${path}/test`), 404, /no acme-dns account/);
  });

  await t.test('PUT stores it; neither PUT nor GET returns the password; it is sealed in the table', async () => {
    const put = await cp.call(owner.key, 'PUT', path, account);
    assert.equal(put.statusCode, 200, put.body);
    assert.ok(!put.body.includes(PASSWORD));
    const got = await cp.call(owner.key, 'GET', path);
    assert.equal(got.statusCode, 200, got.body);
    assert.ok(!got.body.includes(PASSWORD));
    const a = got.json();
    assert.deepEqual(
      {
        server_url: a.server_url,
        username: a.username,
        subdomain: a.subdomain,
        fulldomain: a.fulldomain,
        password_set: a.password_set,
        last_test_at: a.last_test_at,
      },
      {
        server_url: account.server_url,
        username: USER,
        subdomain: SUBDOMAIN,
        fulldomain: account.fulldomain,
        password_set: true,
        last_test_at: null,
      },
    );
    assert.equal(a.password, undefined);
    const [row] = rowsOf<{ password_sealed: string }>(
      await cp.database.db.execute(sql`SELECT * FROM acme_dns_accounts WHERE domain_id = ${dom!.id}`),
    );
    assert.match(row!.password_sealed, /^v1:/);
    assert.ok(!JSON.stringify(row).includes(PASSWORD));
    assert.ok(!JSON.stringify(row).includes(Buffer.from(PASSWORD).toString('base64')));
  });

  await t.test('test: one real /update with the credentials and a 43-character TXT; paced per domain', async () => {
    stub.seen.length = 0;
    const res = await cp.call(owner.key, 'POST', `${path}/test`);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { ok: true, message: 'acme-dns accepted the credentials' });
    assert.equal(stub.seen.length, 1);
    const s = stub.seen[0]!;
    assert.deepEqual([s.path, s.user, s.key, s.body.subdomain], ['/ok/update', USER, PASSWORD, SUBDOMAIN]);
    assert.match(s.body.txt ?? '', /^[A-Za-z0-9_-]{43}$/);
    const a = (await cp.call(owner.key, 'GET', path)).json();
    assert.equal(a.last_test_ok, true);
    assert.ok(a.last_test_at);
    const again = await cp.call(owner.key, 'POST', `${path}/test`);
    expectError(again, 429, /rate limit/);
    assert.ok(Number(again.headers['retry-after']) >= 1);
    assert.equal(stub.seen.length, 1);
  });

  await t.test('wrong credentials: 422 saying acme-dns refused them; PUT without password keeps it', async () => {
    const wrong = await cp.call(owner.key, 'PUT', path, { ...account, password: 'not-the-password' });
    assert.equal(wrong.statusCode, 200, wrong.body);
    await resetPace();
    const res = await cp.call(owner.key, 'POST', `${path}/test`);
    expectError(res, 422, /acme-dns refused the credentials \(HTTP 401: forbidden\)/);
    assert.equal(res.json().ok, false);
    const a = (await cp.call(owner.key, 'GET', path)).json();
    assert.equal(a.last_test_ok, false);
    assert.match(a.last_test_error, /refused the credentials/);
    // Back to the right password, then a PUT that omits it keeps it.
    assert.equal((await cp.call(owner.key, 'PUT', path, account)).statusCode, 200);
    const { password: _omitted, ...withoutPassword } = account;
    const kept = await cp.call(owner.key, 'PUT', path, { ...withoutPassword, fulldomain: null });
    assert.equal(kept.statusCode, 200, kept.body);
    assert.equal(kept.json().fulldomain, null);
    await resetPace();
    assert.equal((await cp.call(owner.key, 'POST', `${path}/test`)).statusCode, 200);
  });

  await t.test('PUT 400s: malformed and oversized fields, non-http URLs; nothing changes', async () => {
    const before = (await cp.call(owner.key, 'GET', path)).body;
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ ...account, server_url: 'ftp://auth.example.net' }, /server_url must be an http/],
      [{ ...account, server_url: 'auth.example.net' }, /server_url must be an absolute/],
      [{ ...account, server_url: 'https://u:p@auth.example.net' }, /must not carry a user name/],
      [{ ...account, server_url: `https://auth.example.net/${'a'.repeat(3000)}` }, /server_url/],
      [{ ...account, password: 'has space' }, /password/],
      [{ ...account, password: 'x'.repeat(129) }, /password/],
      [{ ...account, password: 'line\r\nX-Injected: 1' }, /password/],
      [{ ...account, username: 'bad\nuser' }, /username/],
      [{ ...account, username: 'u'.repeat(65) }, /username/],
      [{ ...account, subdomain: 'a.b' }, /subdomain/],
      [{ ...account, fulldomain: 'not a name' }, /fulldomain/],
      [{ ...account, extra: 1 }, /extra|additional/],
      [{ server_url: account.server_url }, /username|subdomain/],
    ];
    for (const [body, pattern] of bad) expectError(await cp.call(owner.key, 'PUT', path, body), 400, pattern);
    assert.equal((await cp.call(owner.key, 'GET', path)).body, before);
  });

  await t.test('roles: a viewer reads but cannot PUT, DELETE or test; a read-only key cannot write', async () => {
    const viewer = await cp.user();
    await cp.addMember(name, viewer.id, 'viewer');
    const got = await cp.call(viewer.key, 'GET', path);
    assert.equal(got.statusCode, 200, got.body);
    assert.ok(!got.body.includes(PASSWORD));
    assert.equal((await cp.call(viewer.key, 'PUT', path, account)).statusCode, 403);
    assert.equal((await cp.call(viewer.key, 'DELETE', path)).statusCode, 403);
    assert.equal((await cp.call(viewer.key, 'POST', `${path}/test`)).statusCode, 403);
    const ro = await cp.key(owner.id, { readOnly: true });
    expectError(await cp.call(ro.key, 'PUT', path, account), 403, /read-only API key/);
    const stranger = await cp.user();
    assert.equal((await cp.call(stranger.key, 'GET', path)).statusCode, 404);
  });

  await t.test('a disabled domain: PUT and test are 409', async () => {
    await cp.database.db.update(domains).set({ state: 'disabled' }).where(eq(domains.id, dom!.id));
    expectError(await cp.call(owner.key, 'PUT', path, account), 409, /domain is disabled/);
    await resetPace();
    expectError(await cp.call(owner.key, 'POST', `${path}/test`), 409, /domain is disabled/);
    await cp.database.db.update(domains).set({ state: 'active' }).where(eq(domains.id, dom!.id));
  });

  await t.test('abuse: a server that never answers is given up after 5 s', async () => {
    assert.equal((await cp.call(owner.key, 'PUT', path, { ...account, server_url: stub.url('slow') })).statusCode, 200);
    await resetPace();
    expectError(await cp.call(owner.key, 'POST', `${path}/test`), 422, /did not answer within 5 s/);
  });

  await t.test('abuse: an endless answer is read only up to its bound', async () => {
    assert.equal(
      (await cp.call(owner.key, 'PUT', path, { ...account, server_url: stub.url('endless') })).statusCode,
      200,
    );
    await resetPace();
    const res = await cp.call(owner.key, 'POST', `${path}/test`);
    assert.equal(res.statusCode, 200, res.body);
  });

  await t.test('abuse: a redirect is not followed', async () => {
    assert.equal(
      (await cp.call(owner.key, 'PUT', path, { ...account, server_url: stub.url('redirect') })).statusCode,
      200,
    );
    await resetPace();
    stub.seen.length = 0;
    expectError(await cp.call(owner.key, 'POST', `${path}/test`), 422, /acme-dns answered HTTP 307/);
    assert.deepEqual(
      stub.seen.map((s) => s.path),
      ['/redirect/update'],
    );
  });

  await t.test(
    'abuse: without ALLOWED_PRIVATE_NETWORKS internal addresses are refused (PUT 400, test 422)',
    async () => {
      const strict = await cp.withEnv({ ALLOWED_PRIVATE_NETWORKS: '' });
      const call = (method: 'PUT' | 'POST', url: string, body?: unknown) =>
        strict.inject({
          method,
          url,
          headers: { authorization: `Bearer ${owner.key}` },
          ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
        });
      for (const [server, pattern] of [
        [stub.url('ok'), /127\.0\.0\.1 is a loopback address/],
        [`http://localhost:${stub.port}/ok`, /loopback/],
        ['http://169.254.169.254/latest', /link-local/],
        ['http://10.1.2.3', /private/],
        ['http://[::1]:8080', /loopback/],
        ['http://[::ffff:127.0.0.1]/', /loopback/],
        ['http://[64:ff9b::a9fe:a9fe]/', /link-local/],
      ] as const)
        expectError(await call('PUT', path, { ...account, server_url: server }), 400, pattern);
      // Stored while the operator allowed loopback (the other app), tested where it is not: refused where it connects.
      assert.equal((await cp.call(owner.key, 'PUT', path, account)).statusCode, 200);
      await resetPace();
      stub.seen.length = 0;
      const res = await call('POST', `${path}/test`);
      expectError(res, 422, /127\.0\.0\.1 is a loopback address: acme-dns servers must be public addresses/);
      assert.equal(stub.seen.length, 0);
    },
  );

  await t.test('DELETE removes it (and the sealed password)', async () => {
    const res = await cp.call(owner.key, 'DELETE', path);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { message: 'acme-dns account deleted' });
    expectError(await cp.call(owner.key, 'GET', path), 404, /no acme-dns account/);
    assert.equal(
      rowsOf(await cp.database.db.execute(sql`SELECT 1 FROM acme_dns_accounts WHERE domain_id = ${dom!.id}`)).length,
      0,
    );
  });
});
