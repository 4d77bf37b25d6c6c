// The edge's sso requirement without a control plane: tokens checked against a JWKS served here (its fetches
// counted: cached, fetched again for an unknown key id only after the cooldown), every kind of bad token refused, a
// token used once, the clock tolerance on an expired token, and the session cookie's verdicts (listed, other account,
// stale for the rule, other host).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { loadConfig } from '../config.js';
import { acceptToken, configureSso, sessionValue, SSO_COOKIE, ssoVerdict } from './sso.js';

const HOST = 'app.sso.test';
const NONCE = 'this-browser-sign-in-state';

function rsaKey(kid: string) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}

function token(
  key: { kid: string; privateKey: KeyObject },
  o: { aud?: string; typ?: string; exp?: string | number; jti?: string | null; email?: string; nonce?: string } = {},
) {
  const t = new SignJWT({ email: o.email ?? 'a@sso.test', nonce: o.nonce ?? NONCE })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: o.typ ?? 'edge-sso+jwt' })
    .setAudience(o.aud ?? HOST)
    .setSubject('7')
    .setIssuedAt()
    .setExpirationTime(o.exp ?? '2m');
  if (o.jti !== null) t.setJti(o.jti ?? randomBytes(8).toString('hex'));
  return t.sign(key.privateKey);
}

test('edge sso: tokens against the control plane JWKS, and session cookies', async (t) => {
  const a = rsaKey('key-a');
  const b = rsaKey('key-b');
  let published = [a.jwk];
  let fetches = 0;
  const server = createServer((_req, res) => {
    fetches++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: published }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise<void>((r) => server.close(() => r())));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  configureSso({ controlPlaneUrl: url, browserUrl: undefined }, 'secret', '', 300);

  await t.test('a good token is taken once; the key set is fetched once', async () => {
    const good = await token(a);
    assert.deepEqual(await acceptToken(good, HOST, NONCE), { ok: true, email: 'a@sso.test' });
    assert.deepEqual(await acceptToken(good, HOST, NONCE), {
      ok: false,
      status: 403,
      reason: 'sign-in token already used',
    });
    assert.equal((await acceptToken(await token(a), HOST, NONCE)).ok, true);
    assert.equal(fetches, 1);
  });

  await t.test('a token of a sign-in another browser started: refused, not used up', async () => {
    const pushed = await token(a);
    for (const state of ['', 'another-browser-state-0000'])
      assert.deepEqual(await acceptToken(pushed, HOST, state), {
        ok: false,
        status: 403,
        reason: 'this sign-in was started in another browser',
        otherBrowser: true,
      });
    assert.equal((await acceptToken(await token(a, { nonce: '' }), HOST, '')).ok, false);
    assert.equal((await acceptToken(pushed, HOST, NONCE)).ok, true);
  });

  await t.test('wrong audience, type, algorithm, lifetime or claims: refused', async () => {
    const hs = await new SignJWT({ email: 'a@sso.test' })
      .setProtectedHeader({ alg: 'HS256', kid: 'key-a', typ: 'edge-sso+jwt' })
      .setAudience(HOST)
      .setIssuedAt()
      .setExpirationTime('2m')
      .setJti('hs')
      .sign(new TextEncoder().encode(JSON.stringify(a.jwk)));
    const bad = [
      await token(a, { aud: 'other.sso.test' }),
      await token(a, { typ: 'JWT' }),
      await token(a, { exp: Math.floor(Date.now() / 1000) - 60 }),
      await token(a, { jti: null }),
      await token(a, { email: 'x'.repeat(300) }),
      hs,
      'a.b.c',
    ];
    for (const tok of bad) assert.equal((await acceptToken(tok, HOST, NONCE)).ok, false, tok.slice(0, 60));
    assert.deepEqual(await acceptToken('x'.repeat(5000), HOST, NONCE), {
      ok: false,
      status: 400,
      reason: 'malformed token',
    });
    assert.equal(fetches, 1);
  });

  await t.test(
    'a token past its expiry: taken within the clock tolerance (15 s unless set), refused beyond',
    async () => {
      const now = Date.now();
      const expiredAgo = (s: number) => token(a, { exp: Math.floor(now / 1000) - s });
      assert.equal((await acceptToken(await expiredAgo(10), HOST, NONCE, now)).ok, true);
      assert.equal((await acceptToken(await expiredAgo(17), HOST, NONCE, now)).ok, false);
      // EDGE_SSO_CLOCK_TOLERANCE_SECONDS=2 (the node passes it as clockToleranceS).
      configureSso({ controlPlaneUrl: url, browserUrl: undefined, clockToleranceS: 2 }, 'secret', '', 300);
      assert.equal((await acceptToken(await expiredAgo(1), HOST, NONCE, now)).ok, true);
      assert.equal((await acceptToken(await expiredAgo(4), HOST, NONCE, now)).ok, false);
      configureSso({ controlPlaneUrl: url, browserUrl: undefined }, 'secret', '', 300);
      assert.equal((await acceptToken(await expiredAgo(10), HOST, NONCE, now)).ok, true, 'the default again');
      assert.equal(loadConfig({}).ssoClockToleranceS, 15);
      assert.equal(loadConfig({ EDGE_SSO_CLOCK_TOLERANCE_SECONDS: '0' }).ssoClockToleranceS, 0);
      for (const bad of ['-1', '301', '1.5'])
        assert.throws(() => loadConfig({ EDGE_SSO_CLOCK_TOLERANCE_SECONDS: bad }), /EDGE_SSO_CLOCK_TOLERANCE_SECONDS/);
    },
  );

  await t.test('an unknown key id: the key set again only after the cooldown (a rotation)', async () => {
    // A key set fetched now (a fresh cache, a cooldown of 3 s: long beside this test's work even on a loaded machine).
    configureSso({ controlPlaneUrl: url, browserUrl: undefined }, 'secret', '', 3000);
    fetches = 0;
    const tokensOfB = await Promise.all(Array.from({ length: 20 }, () => token(b)));
    assert.equal((await acceptToken(await token(a), HOST, NONCE)).ok, true);
    assert.equal(fetches, 1);
    published = [b.jwk, a.jwk];
    // Within the cooldown of the last fetch: refused without a fetch, however many come.
    for (const tok of tokensOfB) assert.equal((await acceptToken(tok, HOST, NONCE)).ok, false);
    assert.equal(fetches, 1);
    await new Promise((r) => setTimeout(r, 3100));
    assert.equal((await acceptToken(await token(b), HOST, NONCE)).ok, true);
    assert.equal((await acceptToken(await token(a), HOST, NONCE)).ok, true, 'the rotated-out key still verifies');
    assert.equal(fetches, 2);
  });

  await t.test('session cookies: the rule lists the email, within its ttl, on its host', () => {
    const req = { emails: new Set(['a@sso.test']), ttlS: 600 };
    const now = Date.now();
    const cookie = (email: string, host = HOST, at = now) => `x=1; ${SSO_COOKIE}=${sessionValue(email, host, at)}`;
    assert.equal(ssoVerdict(req, cookie('a@sso.test'), HOST, now), 'pass');
    assert.equal(ssoVerdict(req, cookie('a@sso.test'), HOST, now), 'pass', 'from the verified table');
    assert.equal(ssoVerdict(req, cookie('b@sso.test'), HOST, now), 'other');
    assert.equal(ssoVerdict(req, cookie('a@sso.test', HOST, now - 601_000), HOST, now), 'none');
    assert.equal(ssoVerdict({ ...req, ttlS: 3600 }, cookie('a@sso.test', HOST, now - 601_000), HOST, now), 'pass');
    assert.equal(ssoVerdict(req, cookie('a@sso.test', 'www.sso.test'), HOST, now), 'none');
    assert.equal(ssoVerdict(req, undefined, HOST, now), 'none');
    assert.equal(ssoVerdict(req, `${SSO_COOKIE}=1.2.3`, HOST, now), 'none');
    // A stale cookie first, then a live one: the live one counts.
    assert.equal(ssoVerdict(req, `${SSO_COOKIE}=bad; ${cookie('a@sso.test')}`, HOST, now), 'pass');
    // Another secret (another node without a shared EDGE_CHALLENGE_SECRET): no session.
    const made = cookie('a@sso.test');
    configureSso({ controlPlaneUrl: url, browserUrl: undefined }, 'another secret', '');
    assert.equal(ssoVerdict(req, made, HOST, now), 'none');
  });
});
