// The SSO provider without a signed-in user: discovery, signing keys and their rotation, clients through the admin
// command line (with their bounds), OAuth 2.1 refusals (no PKCE, inexact redirect URI, other response types), API
// keys refused, oversized inputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'drizzle-orm';
import { startTestControlPlane } from '../../../../test/helpers/control-plane.js';
import { COMMANDS } from '../../admin/commands.js';

interface Jwks {
  keys: { kid: string; kty: string; alg: string; use: string; d?: string }[];
}

test('SSO provider: discovery, keys, clients, OAuth 2.1 refusals, no API keys', async (t) => {
  const cp = await startTestControlPlane(t, { PUBLIC_BASE_URL: 'https://id.example.org' });
  const db = cp.database.db;
  const lines: string[] = [];
  const ctx = { db, configLog: cp.app.configLog, config: cp.config, out: (l: string) => lines.push(l) };
  const admin = async (...argv: string[]) => {
    lines.length = 0;
    await COMMANDS[`${argv[0]} ${argv[1]}`](ctx, argv.slice(2));
    return [...lines];
  };
  const get = (url: string, headers: Record<string, string> = {}) => cp.app.inject({ method: 'GET', url, headers });

  await t.test('discovery: code flow with S256 PKCE only, URLs from PUBLIC_BASE_URL', async () => {
    const res = await get('/sso/.well-known/openid-configuration', { host: 'evil.example.net' });
    assert.equal(res.statusCode, 200);
    const doc = res.json<Record<string, unknown>>();
    assert.equal(doc.issuer, 'https://id.example.org/sso');
    assert.equal(doc.authorization_endpoint, 'https://id.example.org/sso/auth');
    assert.equal(doc.token_endpoint, 'https://id.example.org/sso/token');
    assert.equal(doc.userinfo_endpoint, 'https://id.example.org/sso/me');
    assert.equal(doc.revocation_endpoint, 'https://id.example.org/sso/token/revocation');
    assert.equal(doc.jwks_uri, 'https://id.example.org/sso/jwks');
    assert.deepEqual(doc.response_types_supported, ['code']);
    assert.deepEqual(doc.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(doc.grant_types_supported, ['authorization_code', 'refresh_token']);
    assert.deepEqual(doc.id_token_signing_alg_values_supported, ['RS256']);
    assert.ok((doc.scopes_supported as string[]).includes('openid'));
    assert.equal(doc.pushed_authorization_request_endpoint, undefined);
  });

  let firstKid = '';
  await t.test('JWKS: one public RS256 key, no private part', async () => {
    const jwks = (await get('/sso/jwks')).json<Jwks>();
    assert.equal(jwks.keys.length, 1);
    assert.equal(jwks.keys[0].kty, 'RSA');
    assert.equal(jwks.keys[0].alg, 'RS256');
    assert.equal(jwks.keys[0].use, 'sig');
    assert.equal(jwks.keys[0].d, undefined);
    firstKid = jwks.keys[0].kid;
    const stored = await db.execute(sql`SELECT sealed_private FROM sso_signing_keys`);
    const sealed = ((stored as { rows?: { sealed_private: string }[] }).rows ?? [])[0]?.sealed_private ?? '';
    assert.ok(sealed.startsWith('v1:'), 'the private key is sealed at rest');
  });

  await t.test('key rotation: the new key signs, the previous stays published until its tokens expire', async () => {
    const out = await admin('sso', 'key', 'rotate');
    assert.match(out[0], /^signing key \S+ is active$/);
    assert.match(out[1], new RegExp(`^key ${firstKid} retired: published for \\d+ s more$`));
    cp.app.sso.invalidate();
    const jwks = (await get('/sso/jwks')).json<Jwks>();
    assert.equal(jwks.keys.length, 2);
    assert.notEqual(jwks.keys[0].kid, firstKid, 'the new key comes first (it signs)');
    assert.equal(jwks.keys[1].kid, firstKid);
    const listed = await admin('sso', 'key', 'list');
    assert.equal(listed.length, 3);
    assert.match(listed[2], new RegExp(`^${firstKid}\tretired\t`));
    // Past its tokens' lifetime the retired key is no longer published.
    await db.execute(
      sql`UPDATE sso_signing_keys SET publish_until = now() - interval '1 second' WHERE kid = ${firstKid}`,
    );
    cp.app.sso.invalidate();
    const after = (await get('/sso/jwks')).json<Jwks>();
    assert.deepEqual(
      after.keys.map((k) => k.kid),
      [jwks.keys[0].kid],
    );
  });

  let publicClient = '';
  let confidential = '';
  await t.test('clients through the admin command line, bounded', async () => {
    const created = await admin('sso', 'client', 'create', 'Wiki', '--redirect-uri', 'https://wiki.example.com/cb');
    confidential = /^client_id (\S+)$/.exec(created[0])![1];
    assert.match(created[1], /^client_secret ssosec_[A-Za-z0-9_-]{43}$/);
    const pub = await admin('sso', 'client', 'create', 'CLI', '--public', '--redirect-uri', 'http://127.0.0.1:8765/cb');
    publicClient = /^client_id (\S+)$/.exec(pub[0])![1];
    assert.match(pub[1], /no secret/);
    const listed = await admin('sso', 'client', 'list');
    assert.equal(listed.length, 3);
    assert.ok(listed.some((l) => l.startsWith(`${confidential}\tconfidential\t`)));
    const stored = await db.execute(sql`SELECT secret_hash FROM sso_clients WHERE client_id = ${confidential}`);
    const hash = ((stored as { rows?: { secret_hash: string }[] }).rows ?? [])[0]?.secret_hash;
    assert.match(hash ?? '', /^[0-9a-f]{64}$/, 'only the hash of the secret is stored');

    for (const [uri, why] of [
      ['http://wiki.example.com/cb', /must be https/],
      ['https://wiki.example.com/cb#x', /fragment/],
      ['javascript:alert(1)', /must be https/],
      ['not a url', /not an absolute URL/],
      ['https://user:pw@wiki.example.com/cb', /credentials/],
      [`https://wiki.example.com/${'a'.repeat(2000)}`, /1 to 2000 characters/],
    ] as const)
      await assert.rejects(admin('sso', 'client', 'create', 'X', '--redirect-uri', uri), why, uri);
    await assert.rejects(
      admin('sso', 'client', 'create', 'x'.repeat(101), '--redirect-uri', 'https://a.example/cb'),
      /1 to 100/,
    );
    const many = Array.from({ length: 11 }, (_, i) => ['--redirect-uri', `https://a.example/${i}`]).flat();
    await assert.rejects(admin('sso', 'client', 'create', 'Many', ...many), /1 to 10 --redirect-uri/);
    const rows = await db.execute(sql`SELECT count(*)::int AS n FROM sso_clients`);
    assert.equal(((rows as { rows?: { n: number }[] }).rows ?? [])[0]?.n, 2, 'nothing stored by a refused create');
  });

  const authorize = (params: Record<string, string>) => get(`/sso/auth?${new URLSearchParams(params)}`);
  const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

  await t.test('a public client without PKCE is refused (error at its redirect URI)', async () => {
    const res = await authorize({
      client_id: publicClient,
      redirect_uri: 'http://127.0.0.1:8765/cb',
      response_type: 'code',
      scope: 'openid',
      state: 's1',
    });
    assert.equal(res.statusCode, 303);
    const to = new URL(res.headers.location as string);
    assert.equal(`${to.origin}${to.pathname}`, 'http://127.0.0.1:8765/cb');
    assert.equal(to.searchParams.get('error'), 'invalid_request');
    assert.match(to.searchParams.get('error_description') ?? '', /PKCE/);
    assert.equal(to.searchParams.get('state'), 's1');
    assert.equal(to.searchParams.get('code'), null);
  });

  await t.test('a confidential client without PKCE is refused too (OAuth 2.1)', async () => {
    const res = await authorize({
      client_id: confidential,
      redirect_uri: 'https://wiki.example.com/cb',
      response_type: 'code',
      scope: 'openid',
    });
    assert.equal(res.statusCode, 303);
    assert.equal(new URL(res.headers.location as string).searchParams.get('error'), 'invalid_request');
  });

  await t.test('the plain PKCE method is refused', async () => {
    const res = await authorize({
      client_id: publicClient,
      redirect_uri: 'http://127.0.0.1:8765/cb',
      response_type: 'code',
      scope: 'openid',
      code_challenge: 'a'.repeat(43),
      code_challenge_method: 'plain',
    });
    assert.equal(new URL(res.headers.location as string).searchParams.get('error'), 'invalid_request');
  });

  await t.test('redirect URIs match exactly; other response types are refused', async () => {
    for (const redirect of [
      'https://wiki.example.com/cb/',
      'https://wiki.example.com/cb?x=1',
      'https://WIKI.example.com/cb',
      'https://wiki.example.com/other',
    ]) {
      const res = await authorize({
        client_id: confidential,
        redirect_uri: redirect,
        response_type: 'code',
        scope: 'openid',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      });
      assert.equal(res.statusCode, 400, redirect);
      assert.match(res.json<{ error: string }>().error, /redirect_uri/, redirect);
      assert.equal(res.headers.location, undefined, 'never redirected to an unregistered URI');
    }
    const missing = await authorize({ client_id: confidential, response_type: 'code', scope: 'openid' });
    assert.equal(missing.statusCode, 400, 'the redirect URI is required even when only one is registered');
    for (const responseType of ['token', 'id_token', 'code id_token', 'code token']) {
      const res = await authorize({
        client_id: confidential,
        redirect_uri: 'https://wiki.example.com/cb',
        response_type: responseType,
        scope: 'openid',
        nonce: 'n',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      });
      const error = res.headers.location
        ? new URL((res.headers.location as string).replace('#', '?')).searchParams.get('error')
        : res.json<{ error: string }>().error;
      assert.match(String(error), /unsupported_response_type/, responseType);
    }
    const unknown = await authorize({
      client_id: 'app_nope',
      redirect_uri: 'https://a.example/cb',
      response_type: 'code',
    });
    assert.equal(unknown.statusCode, 400);
    assert.match(unknown.json<{ error: string }>().error, /invalid_client/);
  });

  await t.test('the token endpoint refuses grants other than code and refresh, and unknown clients', async () => {
    const form = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      cp.app.inject({
        method: 'POST',
        url: '/sso/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams(body).toString(),
      });
    const password = await form({ grant_type: 'password', username: 'a', password: 'b', client_id: publicClient });
    assert.equal(password.statusCode, 400);
    assert.match(password.body, /unsupported_grant_type/);
    const credentials = await form({ grant_type: 'client_credentials', client_id: publicClient });
    assert.match(credentials.body, /unsupported_grant_type/);
    const wrongSecret = await form(
      {
        grant_type: 'authorization_code',
        code: 'x',
        redirect_uri: 'https://wiki.example.com/cb',
        code_verifier: 'v'.repeat(43),
      },
      { authorization: `Basic ${Buffer.from(`${confidential}:wrong`).toString('base64')}` },
    );
    assert.equal(wrongSecret.statusCode, 401);
    assert.match(wrongSecret.body, /invalid_client/);
  });

  await t.test('abuse: oversized bodies, ids and parameters are refused before any work', async () => {
    const big = await cp.app.inject({
      method: 'POST',
      url: '/sso/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `grant_type=authorization_code&code=${'a'.repeat(100_000)}`,
    });
    assert.equal(big.statusCode, 400);
    assert.match(big.body, /invalid_request/);
    const longId = await authorize({
      client_id: 'a'.repeat(5000),
      redirect_uri: 'https://a.example/cb',
      response_type: 'code',
    });
    assert.equal(longId.statusCode, 400);
    const longUid = await get(`/sso/auth/${'u'.repeat(2000)}`);
    assert.ok(longUid.statusCode >= 400 && longUid.statusCode < 500, String(longUid.statusCode));
    const revokeJunk = await cp.app.inject({
      method: 'POST',
      url: '/sso/token/revocation',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ token: 't'.repeat(50_000), client_id: publicClient }).toString(),
    });
    assert.ok(revokeJunk.statusCode < 500, revokeJunk.body);
    const userinfo = await get('/sso/me', { authorization: `Bearer ${'x'.repeat(10_000)}` });
    assert.equal(userinfo.statusCode, 401);
  });

  await t.test('API keys are refused on every SSO endpoint (403), SSO paths are not API paths', async () => {
    const user = await cp.user();
    for (const [method, url] of [
      ['GET', '/sso/.well-known/openid-configuration'],
      ['GET', '/sso/jwks'],
      ['GET', `/sso/auth?client_id=${publicClient}`],
      ['POST', '/sso/token'],
      ['POST', '/sso/token/revocation'],
      ['GET', '/sso/me'],
    ] as const) {
      const bearer = await cp.call(user.key, method, url);
      assert.deepEqual(
        [bearer.statusCode, bearer.json()],
        [403, { error: 'SSO endpoints do not accept API keys' }],
        url,
      );
      const header = await cp.app.inject({ method, url, headers: { 'x-api-key': user.key } });
      assert.equal(header.statusCode, 403, url);
    }
  });

  await t.test('deleting a client: its authorization requests fail', async () => {
    const out = await admin('sso', 'client', 'delete', publicClient);
    assert.match(out[0], /^deleted client/);
    const res = await authorize({
      client_id: publicClient,
      redirect_uri: 'http://127.0.0.1:8765/cb',
      response_type: 'code',
    });
    assert.equal(res.statusCode, 400);
    await assert.rejects(admin('sso', 'client', 'delete', publicClient), /no client/);
  });
});
