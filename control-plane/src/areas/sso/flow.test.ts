// The SSO provider end to end against a listening control plane, driven by a certified relying-party library
// (openid-client): authorization code with PKCE through sign-in and consent, ID token checks, userinfo, refresh with
// rotation and reuse detection, revocation, signing-key rotation, connected apps (domain access, disconnect), and the
// credentials kept apart (API keys refused on SSO endpoints, SSO tokens refused on API endpoints). The browser is
// played with fetch and a cookie jar.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import { createServer } from 'node:net';
import { sql } from 'drizzle-orm';
import * as client from 'openid-client';
import { startTestControlPlane, type TestControlPlane } from '../../../../test/helpers/control-plane.js';
import { COMMANDS } from '../../admin/commands.js';
import { setPassword } from '../login/store.js';
import { setUserActive } from '../../admin/users.js';

const REDIRECT = 'http://127.0.0.1:8765/cb';
const PASSWORD = 'correct horse battery staple';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A browser: cookies by name (the test's hosts and paths never collide), redirects followed by hand. */
class Browser {
  readonly cookies = new Map<string, string>();
  constructor(readonly base: string) {}
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const res = await fetch(new URL(url, this.base), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: this.header() },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }
}

interface Jwt {
  header: { kid: string; alg: string };
  payload: Record<string, unknown>;
}
function decode(jwt: string): Jwt {
  const [h, p] = jwt.split('.');
  return {
    header: JSON.parse(Buffer.from(h, 'base64url').toString()),
    payload: JSON.parse(Buffer.from(p, 'base64url').toString()),
  };
}
/** Whether the JWKS published now verifies the token's RS256 signature. */
async function verifiesWithPublishedKeys(base: string, jwt: string): Promise<boolean> {
  const { keys } = (await (await fetch(`${base}/sso/jwks`)).json()) as { keys: (JsonWebKey & { kid: string })[] };
  const key = keys.find((k) => k.kid === decode(jwt).header.kid);
  if (!key) return false;
  const [h, p, s] = jwt.split('.');
  return verify(
    'sha256',
    Buffer.from(`${h}.${p}`),
    createPublicKey({ key, format: 'jwk' }),
    Buffer.from(s, 'base64url'),
  );
}

async function setup(t: { after(fn: () => Promise<void> | void): void }) {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const cp = await startTestControlPlane(t, { PUBLIC_BASE_URL: base, SSO_KEY_CHECK_MS: '0' });
  await cp.app.listen({ port, host: '127.0.0.1' });
  const lines: string[] = [];
  const admin = async (...argv: string[]) => {
    lines.length = 0;
    const ctx = {
      db: cp.database.db,
      configLog: cp.app.configLog,
      config: cp.config,
      out: (l: string) => lines.push(l),
    };
    await COMMANDS[`${argv[0]} ${argv[1]}`](ctx, argv.slice(2));
    return [...lines];
  };
  return { cp, base, admin };
}

/** A user with a password, signed in in a new browser; returns the browser and the session's CSRF token. */
async function signedIn(cp: TestControlPlane, base: string) {
  const user = await cp.user();
  await setPassword(cp.database.db, user.id, PASSWORD);
  const browser = new Browser(base);
  const res = await browser.fetch('/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: user.email, password: PASSWORD }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const { csrf_token: csrf } = (await res.json()) as { csrf_token: string };
  return { user, browser, csrf };
}

/** Follows the authorization request through the interaction; returns the client's callback URL. */
async function authorize(
  browser: Browser,
  url: URL,
  csrf: string,
  approve: Record<string, unknown> | 'deny' = {},
): Promise<URL> {
  const start = await browser.fetch(url.href);
  assert.equal(start.status, 303, await start.text());
  const interaction = start.headers.get('location')!;
  assert.match(interaction, /\/sso\/interaction\/[A-Za-z0-9_-]+$/);
  const details = await browser.fetch(interaction, { headers: { accept: 'application/json' } });
  assert.equal(details.status, 200, await details.clone().text());
  const body = (await details.json()) as { signed_in: boolean; client: { name: string } };
  assert.equal(body.signed_in, true);
  const decided = await browser.fetch(`${interaction}/${approve === 'deny' ? 'deny' : 'approve'}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-csrf-token': csrf, accept: 'application/json' },
    body: JSON.stringify(approve === 'deny' ? {} : approve),
  });
  assert.equal(decided.status, 200, await decided.clone().text());
  const { redirect_to: resume } = (await decided.json()) as { redirect_to: string };
  const back = await browser.fetch(resume);
  assert.equal(back.status, 303, await back.text());
  const callback = new URL(back.headers.get('location')!);
  assert.equal(`${callback.origin}${callback.pathname}`, REDIRECT);
  return callback;
}

test('SSO end to end with openid-client: code + PKCE, userinfo, refresh, revocation, keys, apps', async (t) => {
  const { cp, base, admin } = await setup(t);
  const created = await admin('sso', 'client', 'create', 'Wiki', '--redirect-uri', REDIRECT);
  const clientId = /^client_id (\S+)$/.exec(created[0])![1];
  const secret = /^client_secret (\S+)$/.exec(created[1])![1];
  const config = await client.discovery(new URL(`${base}/sso`), clientId, secret, client.ClientSecretBasic(secret), {
    execute: [client.allowInsecureRequests],
  });
  const { user, browser, csrf } = await signedIn(cp, base);
  const domain = await cp.domain(user.key, 'wiki-owner.example.org');

  const start = async (scope = 'openid email profile domains offline_access') => {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      prompt: 'consent',
    });
    return { url, verifier, state, nonce };
  };

  let tokens!: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers;
  await t.test('authorization code with PKCE through sign-in and consent; the ID token checks out', async () => {
    const req = await start();
    const callback = await authorize(browser, req.url, csrf, { domains: [domain] });
    assert.equal(callback.searchParams.get('iss'), `${base}/sso`, 'RFC 9207 issuer in the response');
    tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: req.verifier,
      expectedState: req.state,
      expectedNonce: req.nonce,
    });
    const claims = tokens.claims()!;
    assert.equal(claims.sub, String(user.id));
    assert.equal(claims.iss, `${base}/sso`);
    assert.equal(claims.aud, clientId);
    assert.equal(claims.nonce, req.nonce);
    assert.ok(typeof tokens.refresh_token === 'string', 'offline_access with prompt=consent gives a refresh token');
    assert.equal(tokens.token_type.toLowerCase(), 'bearer');
    assert.equal(decode(tokens.id_token!).header.alg, 'RS256');
    // The code is single-use: a second exchange is refused (and revokes the grant's tokens).
  });

  await t.test('userinfo: the claims of the scopes, with the domains the user chose', async () => {
    const info = await client.fetchUserInfo(config, tokens.access_token, String(user.id));
    assert.equal(info.email, user.email);
    assert.equal(info.email_verified, false);
    assert.deepEqual(info.domains, [domain]);
  });

  await t.test('credentials kept apart: SSO access token on the API is 401, API key on SSO is 403', async () => {
    const api = await fetch(`${base}/domains/`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(api.status, 401);
    assert.deepEqual(await api.json(), { error: 'invalid API key' });
    const me = await fetch(`${base}/sso/me`, { headers: { authorization: `Bearer ${user.key}` } });
    assert.equal(me.status, 403);
    const apps = await fetch(`${base}/sso/apps`, { headers: { 'x-api-key': user.key } });
    assert.equal(apps.status, 403);
    const approve = await fetch(`${base}/sso/interaction/abc/approve`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}` },
    });
    assert.equal(approve.status, 403);
    const login = await fetch(`${base}/auth/login`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: user.email, password: PASSWORD }),
    });
    assert.equal(login.status, 403, '/auth/** stays 403 for API keys');
  });

  await t.test('key rotation: a token signed with the previous key verifies until it expires', async () => {
    const oldToken = tokens.id_token!;
    const oldKid = decode(oldToken).header.kid;
    assert.ok(await verifiesWithPublishedKeys(base, oldToken));
    await admin('sso', 'key', 'rotate');
    assert.ok(await verifiesWithPublishedKeys(base, oldToken), 'still published after the rotation');
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    const newKid = decode(refreshed.id_token!).header.kid;
    assert.notEqual(newKid, oldKid, 'new tokens are signed with the new key');
    assert.ok(await verifiesWithPublishedKeys(base, refreshed.id_token!));
    // The retired key stays at least until the old token's expiry.
    const [row] = (
      (await cp.database.db.execute(
        sql`SELECT extract(epoch FROM publish_until)::float8 AS until FROM sso_signing_keys WHERE kid = ${oldKid}`,
      )) as unknown as { rows: { until: number }[] }
    ).rows;
    assert.ok(row.until >= Number(decode(oldToken).payload.exp), 'published until the old token has expired');
    // Past that, it is gone from the JWKS (moved into the past instead of waiting).
    await cp.database.db.execute(sql`UPDATE sso_signing_keys SET publish_until = now() WHERE kid = ${oldKid}`);
    assert.equal(await verifiesWithPublishedKeys(base, oldToken), false);
    tokens = refreshed;
  });

  await t.test('refresh tokens rotate; a reused one revokes the grant', async () => {
    const first = tokens.refresh_token!;
    const second = await client.refreshTokenGrant(config, first);
    assert.notEqual(second.refresh_token, first, 'rotated');
    await assert.rejects(
      client.refreshTokenGrant(config, first),
      (e: { error?: string }) => e.error === 'invalid_grant',
    );
    // The reuse revoked the whole grant: the newest refresh token and its access token are dead too.
    await assert.rejects(
      client.refreshTokenGrant(config, second.refresh_token!),
      (e: { error?: string }) => e.error === 'invalid_grant',
    );
    await assert.rejects(client.fetchUserInfo(config, second.access_token, String(user.id)));
  });

  await t.test('revocation: a revoked refresh token refreshes nothing, its access tokens die with it', async () => {
    const req = await start();
    const callback = await authorize(browser, req.url, csrf);
    const fresh = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: req.verifier,
      expectedState: req.state,
      expectedNonce: req.nonce,
    });
    await client.tokenRevocation(config, fresh.refresh_token!);
    await assert.rejects(
      client.refreshTokenGrant(config, fresh.refresh_token!),
      (e: { error?: string }) => e.error === 'invalid_grant',
    );
    await assert.rejects(client.fetchUserInfo(config, fresh.access_token, String(user.id)));
  });

  await t.test('the wrong PKCE verifier, a reused code and a wrong secret are refused', async () => {
    const req = await start();
    const callback = await authorize(browser, req.url, csrf);
    await assert.rejects(
      client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: client.randomPKCECodeVerifier(),
        expectedState: req.state,
        expectedNonce: req.nonce,
      }),
      (e: { error?: string }) => e.error === 'invalid_grant',
    );
    const wrong = await client.discovery(new URL(`${base}/sso`), clientId, 'nope', client.ClientSecretBasic('nope'), {
      execute: [client.allowInsecureRequests],
    });
    const again = await start();
    const cb2 = await authorize(browser, again.url, csrf);
    await assert.rejects(
      client.authorizationCodeGrant(wrong, cb2, {
        pkceCodeVerifier: again.verifier,
        expectedState: again.state,
        expectedNonce: again.nonce,
      }),
      (e: { status?: number }) => e.status === 401,
      'a wrong client secret is 401 (invalid_client)',
    );
    const ok = await client.authorizationCodeGrant(config, cb2, {
      pkceCodeVerifier: again.verifier,
      expectedState: again.state,
      expectedNonce: again.nonce,
    });
    assert.ok(ok.access_token);
    await assert.rejects(
      client.authorizationCodeGrant(config, cb2, {
        pkceCodeVerifier: again.verifier,
        expectedState: again.state,
        expectedNonce: again.nonce,
      }),
      (e: { error?: string }) => e.error === 'invalid_grant',
      'a code is used once',
    );
    await assert.rejects(
      client.fetchUserInfo(config, ok.access_token, String(user.id)),
      'code reuse revoked its tokens',
    );
  });

  await t.test(
    'basic-profile details: prompt=none, unknown parameters, other scope order, userinfo by POST',
    async () => {
      // Logged in at the provider with a live consent (earlier steps revoked theirs): prompt=none answers with a
      // code, no interaction.
      await authorize(browser, (await start('openid email')).url, csrf);
      const req = await start('openid email');
      const silent = client.buildAuthorizationUrl(config, {
        ...Object.fromEntries(req.url.searchParams),
        prompt: 'none',
        scope: 'email openid',
        unknown_parameter: 'ignored',
      });
      const res = await browser.fetch(silent.href);
      assert.equal(res.status, 303);
      const callback = new URL(res.headers.get('location')!);
      assert.ok(callback.searchParams.get('code'), callback.href);
      const silentTokens = await client.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: req.verifier,
        expectedState: req.state,
        expectedNonce: req.nonce,
      });
      const posted = await fetch(`${base}/sso/me`, {
        method: 'POST',
        headers: { authorization: `Bearer ${silentTokens.access_token}` },
      });
      assert.equal(posted.status, 200);
      assert.equal(((await posted.json()) as { sub: string }).sub, String(user.id));
      // A browser with no session at the provider: prompt=none is login_required at the redirect URI.
      const fresh = await start();
      const stranger = new Browser(base);
      const none = await stranger.fetch(
        client.buildAuthorizationUrl(config, { ...Object.fromEntries(fresh.url.searchParams), prompt: 'none' }).href,
      );
      assert.equal(new URL(none.headers.get('location')!).searchParams.get('error'), 'login_required');
      // No response_type: refused.
      const params = Object.fromEntries(fresh.url.searchParams);
      delete params.response_type;
      const missing = await browser.fetch(`${base}/sso/auth?${new URLSearchParams(params)}`);
      const missingError = missing.headers.get('location')
        ? new URL(missing.headers.get('location')!).searchParams.get('error')
        : ((await missing.json()) as { error: string }).error;
      assert.match(String(missingError), /invalid_request/);
    },
  );

  await t.test('deny: the app receives access_denied', async () => {
    const req = await start();
    const callback = await authorize(browser, req.url, csrf, 'deny');
    assert.equal(callback.searchParams.get('error'), 'access_denied');
    assert.equal(callback.searchParams.get('code'), null);
  });

  await t.test('connected apps: list, change domain access (a claim), disconnect (revokes)', async () => {
    const req = await start();
    const live = await client.authorizationCodeGrant(config, await authorize(browser, req.url, csrf), {
      pkceCodeVerifier: req.verifier,
      expectedState: req.state,
      expectedNonce: req.nonce,
    });
    const call = (method: string, path: string, body?: unknown) =>
      browser.fetch(path, {
        method,
        headers: { 'x-csrf-token': csrf, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const list = await call('GET', '/sso/apps');
    assert.equal(list.status, 200);
    const apps = (await list.json()) as { client_id: string; name: string; scopes: string[]; domains: string[] }[];
    assert.deepEqual(
      apps.map((a) => [a.client_id, a.name, a.domains]),
      [[clientId, 'Wiki', [domain]]],
    );
    assert.ok(apps[0].scopes.includes('domains'));
    const lookup = await call('GET', `/sso/clients/${clientId}`);
    assert.deepEqual(await lookup.json(), {
      client_id: clientId,
      name: 'Wiki',
      type: 'confidential',
      redirect_uris: [REDIRECT],
    });

    const second = await cp.domain(user.key, 'second.example.org');
    const put = await call('PUT', `/sso/apps/${clientId}/domains`, { domains: [second, 'SECOND.example.org.'] });
    assert.equal(put.status, 200, await put.clone().text());
    assert.deepEqual(((await put.json()) as { domains: string[] }).domains, [second]);
    const info = await client.fetchUserInfo(config, live.access_token, String(user.id));
    assert.deepEqual(info.domains, [second], 'the claim follows the change');

    // Bounds and visibility: nothing stored by a refused change.
    const other = await cp.user();
    const hidden = await cp.domain(other.key, 'not-yours.example.org');
    const refused = await call('PUT', `/sso/apps/${clientId}/domains`, { domains: [second, hidden] });
    assert.deepEqual([refused.status, await refused.json()], [404, { error: 'domain not found' }]);
    const tooMany = await call('PUT', `/sso/apps/${clientId}/domains`, {
      domains: Array.from({ length: 1001 }, (_, i) => `d${i}.example.org`),
    });
    assert.equal(tooMany.status, 400);
    const bad = await call('PUT', `/sso/apps/${clientId}/domains`, { domains: ['not a domain'] });
    assert.equal(bad.status, 400);
    const long = await call('PUT', `/sso/apps/${clientId}/domains`, { domains: ['a'.repeat(2000)] });
    assert.equal(long.status, 400);
    assert.deepEqual((await client.fetchUserInfo(config, live.access_token, String(user.id))).domains, [second]);
    const noCsrf = await browser.fetch(`/sso/apps/${clientId}/domains`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ domains: [] }),
    });
    assert.equal(noCsrf.status, 403, 'a change needs the CSRF token');
    const notConnected = await call('PUT', '/sso/apps/app_unknown/domains', { domains: [] });
    assert.equal(notConnected.status, 404);

    const gone = await call('DELETE', `/sso/apps/${clientId}`);
    assert.equal(gone.status, 200);
    await assert.rejects(client.fetchUserInfo(config, live.access_token, String(user.id)), 'access token revoked');
    await assert.rejects(
      client.refreshTokenGrant(config, live.refresh_token!),
      (e: { error?: string }) => e.error === 'invalid_grant',
    );
    assert.deepEqual(await (await call('GET', '/sso/apps')).json(), []);
    assert.equal((await call('DELETE', `/sso/apps/${clientId}`)).status, 404);
  });

  await t.test('the interaction needs its cookie, the session and the CSRF token; bounded input', async () => {
    const req = await start();
    const started = await browser.fetch(req.url.href);
    const interaction = started.headers.get('location')!;
    const stranger = new Browser(base);
    const noCookie = await stranger.fetch(interaction, { headers: { accept: 'application/json' } });
    assert.equal(noCookie.status, 400);
    // Same browser, no CSRF token: refused, nothing decided.
    const forged = await browser.fetch(`${interaction}/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(forged.status, 403);
    // Signed out (the SSO cookies alone): 401.
    const ssoOnly = new Browser(base);
    for (const [k, v] of browser.cookies) if (k.startsWith('sso_')) ssoOnly.cookies.set(k, v);
    const anonymous = await ssoOnly.fetch(`${interaction}/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: '{}',
    });
    assert.equal(anonymous.status, 401);
    const tooMany = await browser.fetch(`${interaction}/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify({ domains: Array.from({ length: 1001 }, (_, i) => `d${i}.example.org`) }),
    });
    assert.equal(tooMany.status, 400);
    const invisible = await browser.fetch(`${interaction}/approve`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify({ domains: ['nobody.example.org'] }),
    });
    assert.equal(invisible.status, 404);
    const longUid = await browser.fetch(`/sso/interaction/${'u'.repeat(100)}`);
    assert.equal(longUid.status, 400);
    // The HTML consent page: escaped, never framed.
    const page = await browser.fetch(interaction);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    assert.match(await page.text(), /<strong>Wiki<\/strong>/);
  });
});

test('SSO: a public client with PKCE signs in through openid-client; without PKCE it is refused', async (t) => {
  const { cp, base, admin } = await setup(t);
  const created = await admin('sso', 'client', 'create', 'Desktop <app>', '--public', '--redirect-uri', REDIRECT);
  const clientId = /^client_id (\S+)$/.exec(created[0])![1];
  const config = await client.discovery(new URL(`${base}/sso`), clientId, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
  const { user, browser, csrf } = await signedIn(cp, base);

  const noPkce = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', state: 'st' });
  const refused = await browser.fetch(noPkce.href);
  assert.equal(refused.status, 303);
  const to = new URL(refused.headers.get('location')!);
  assert.equal(`${to.origin}${to.pathname}`, REDIRECT);
  assert.equal(to.searchParams.get('error'), 'invalid_request');
  assert.equal(to.searchParams.get('code'), null);

  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid offline_access',
    prompt: 'consent',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const callback = await authorize(browser, url, csrf);
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier });
  assert.equal(tokens.claims()!.sub, String(user.id));
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  assert.notEqual(refreshed.refresh_token, tokens.refresh_token, 'a public client’s refresh token rotates');
  // A deactivated account's tokens stop working: no refresh, no claims.
  await setUserActive(cp.database.db, user.email, false);
  await assert.rejects(
    client.refreshTokenGrant(config, refreshed.refresh_token!),
    (e: { error?: string }) => e.error === 'invalid_grant',
  );
  await assert.rejects(client.fetchUserInfo(config, refreshed.access_token, String(user.id)));
  await setUserActive(cp.database.db, user.email, true);
  // The consent page escapes the app's name.
  const again = await browser.fetch(
    client.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid',
      prompt: 'consent',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).href,
  );
  const page = await browser.fetch(again.headers.get('location')!);
  const html = await page.text();
  assert.ok(html.includes('Desktop &lt;app&gt;') && !html.includes('<app>'), html);
});

test('SSO: two control-plane processes on one database agree on codes, tokens, grants and keys', async (t) => {
  const { cp, base, admin } = await setup(t);
  const other = await cp.withEnv({ SSO_KEY_CHECK_MS: '0' });
  const otherPort = await freePort();
  await other.listen({ port: otherPort, host: '127.0.0.1' });
  const otherBase = `http://127.0.0.1:${otherPort}`;
  const created = await admin('sso', 'client', 'create', 'Shared', '--redirect-uri', REDIRECT);
  const clientId = /^client_id (\S+)$/.exec(created[0])![1];
  const secret = /^client_secret (\S+)$/.exec(created[1])![1];
  const basic = `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`;
  const config = await client.discovery(new URL(`${base}/sso`), clientId, secret, client.ClientSecretBasic(secret), {
    execute: [client.allowInsecureRequests],
  });
  const { user, browser, csrf } = await signedIn(cp, base);
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope: 'openid offline_access',
    prompt: 'consent',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  // The authorization starts at the first process; the code is exchanged at the second.
  const callback = await authorize(browser, url, csrf);
  const token = (body: Record<string, string>, at: string) =>
    fetch(`${at}/sso/token`, {
      method: 'POST',
      headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(body),
    });
  const exchanged = await token(
    {
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    },
    otherBase,
  );
  assert.equal(exchanged.status, 200, await exchanged.clone().text());
  const tokens = (await exchanged.json()) as { access_token: string; refresh_token: string; id_token: string };
  const me = await fetch(`${base}/sso/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  assert.equal(
    ((await me.json()) as { sub: string }).sub,
    String(user.id),
    'a token of one process works at the other',
  );
  const refreshed = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, base);
  assert.equal(refreshed.status, 200);
  const reuse = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, otherBase);
  assert.equal(reuse.status, 400, 'the rotation done by one process is seen by the other');
  // A key rotated through one process is published by the other at once (SSO_KEY_CHECK_MS=0).
  const before = (await (await fetch(`${otherBase}/sso/jwks`)).json()) as { keys: { kid: string }[] };
  await admin('sso', 'key', 'rotate');
  const after = (await (await fetch(`${otherBase}/sso/jwks`)).json()) as { keys: { kid: string }[] };
  assert.equal(after.keys.length, before.keys.length + 1);
  assert.equal(after.keys[1].kid, before.keys[0].kid);
  assert.ok(await verifiesWithPublishedKeys(otherBase, tokens.id_token));
});
