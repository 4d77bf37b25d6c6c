// External-DNS domains through the API with a real Temporal dev server and a running worker: POST verify (CNAME or
// TXT, 422 with what was seen, 429 shared with the delegation check, 409 on an expired token), the token-expiry
// timer (awaiting → failed), POST verify/retry, and POST ssl/delegation/check (every 400/422 case of the spec).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, startLifecycle, type Lifecycle } from '../helpers/workflows-harness.js';

let L: Lifecycle;
const both = (fn: (s: Lifecycle['dns']) => void) => {
  fn(L.dns);
  fn(L.dns2);
};
const EXPIRING = 'expiring.example.org';
let expiringToken = '';

async function external(name: string) {
  const r = await L.api('POST', '/domains/', { name, dns_mode: 'external' });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}
const lifecycle = async (name: string) => (await L.internal('GET', `/internal/domains/${name}`)).body;

before(async () => {
  // Tokens live 20 s here, so the expiry timer fires during this file; background checks are left to the timer.
  L = await startLifecycle('wf-external', {
    VERIFICATION_TOKEN_SECONDS: '20',
    VERIFICATION_WATCH_FIRST_SECONDS: '3600',
  });
  const d = await external(EXPIRING);
  expiringToken = d.verification.value;
});
after(async () => {
  await L?.close();
});

test('a new external domain is unverified and awaits verification with a TXT block and an ssl_delegation CNAME', async () => {
  const d = await external('fresh.example.org');
  assert.equal(d.state, 'unverified');
  assert.equal(d.verification_state, 'awaiting');
  assert.equal(d.verification.type, 'TXT');
  assert.equal(d.verification.name, '_platform-verification.fresh.example.org');
  assert.deepEqual(Object.keys(d.ssl_delegation).sort(), ['name', 'target', 'type']);
  assert.equal(d.ssl_delegation.name, '_acme-challenge.fresh.example.org');
});

test('POST verify: 422 with what was seen and verified false; a second call within the minute is 429', async () => {
  const d = await external('missing.example.org');
  const r = await L.api('POST', '/domains/missing.example.org/verify');
  assert.equal(r.status, 422);
  assert.deepEqual(r.body, {
    error:
      'no CNAME at _acme-challenge.missing.example.org; no TXT record at _platform-verification.missing.example.org',
    verified: false,
  });
  const again = await L.api('POST', '/domains/missing.example.org/verify');
  assert.deepEqual([again.status, again.body.error], [429, 'rate limit exceeded']);
  // The limit is shared with the delegation check.
  assert.equal((await L.api('POST', '/domains/missing.example.org/ssl/delegation/check')).status, 429);
  assert.equal((await lifecycle(d.name)).state, 'unverified');

  both((s) => s.set('_platform-verification.wrong.example.org', 'TXT', ['platform-verification=not-the-token']));
  await external('wrong.example.org');
  const wrong = await L.api('POST', '/domains/wrong.example.org/verify');
  assert.equal(wrong.status, 422);
  assert.match(
    wrong.body.error,
    /TXT at _platform-verification\.wrong\.example\.org holds "platform-verification=not-the-token", not the verification token/,
  );
});

test('POST verify: the TXT token → active; then 400 (not awaiting verification); managed domains 400', async () => {
  const d = await external('bytxt.example.org');
  both((s) => s.set(d.verification.name, 'TXT', [d.verification.value]));
  const r = await L.api('POST', '/domains/bytxt.example.org/verify');
  assert.deepEqual([r.status, r.body], [200, { verified: true, method: 'txt', state: 'active' }]);
  const detail = (await L.api('GET', '/domains/bytxt.example.org')).body;
  assert.deepEqual([detail.state, detail.verification_state], ['active', 'verified']);
  const again = await L.api('POST', '/domains/bytxt.example.org/verify');
  assert.deepEqual([again.status, again.body], [400, { error: 'domain is not awaiting verification (state active)' }]);

  await L.api('POST', '/domains/', { name: 'managed-verify.example.org' });
  const m = await L.api('POST', '/domains/managed-verify.example.org/verify');
  assert.deepEqual([m.status, m.body], [400, { error: 'domain does not use external DNS' }]);
  const retry = await L.api('POST', '/domains/managed-verify.example.org/verify/retry');
  assert.deepEqual([retry.status, retry.body], [400, { error: 'domain does not use external DNS' }]);
});

test('POST verify: the ssl_delegation CNAME → active (the CNAME stays as the connection)', async () => {
  const d = await external('bycname.example.org');
  both((s) => s.set(d.ssl_delegation.name, 'CNAME', [d.ssl_delegation.target]));
  const r = await L.api('POST', '/domains/bycname.example.org/verify');
  assert.deepEqual([r.status, r.body], [200, { verified: true, method: 'cname', state: 'active' }]);
});

test('POST ssl/delegation/check: 422 missing, pointing at another domain, not propagated; 200 ok → active; 400 cases', async () => {
  const m = await L.api('POST', '/domains/', { name: 'managed-ssl.example.org' });
  assert.equal(m.status, 200);
  const managed = await L.api('POST', '/domains/managed-ssl.example.org/ssl/delegation/check');
  assert.deepEqual([managed.status, managed.body], [400, { error: 'domain does not use external DNS' }]);

  const a = await external('ssl-missing.example.org');
  const missing = await L.api('POST', '/domains/ssl-missing.example.org/ssl/delegation/check');
  assert.deepEqual(
    [missing.status, missing.body],
    [
      422,
      {
        ok: false,
        error: `no record at _acme-challenge.ssl-missing.example.org: add a CNAME to ${a.ssl_delegation.target}`,
      },
    ],
  );

  // Another domain's delegation (with its own canary) is what the CNAME points at.
  const other = await lifecycle((await external('ssl-other.example.org')).name);
  both((s) => s.set(other.ssl_delegation.target, 'TXT', [other.ssl_delegation.canary]));
  const b = await external('ssl-foreign.example.org');
  both((s) => s.set(b.ssl_delegation.name, 'CNAME', [other.ssl_delegation.target]));
  const foreign = await L.api('POST', '/domains/ssl-foreign.example.org/ssl/delegation/check');
  assert.equal(foreign.status, 422);
  assert.equal(foreign.body.ok, false);
  assert.equal(
    foreign.body.error,
    `_acme-challenge.ssl-foreign.example.org points at ${other.ssl_delegation.target}, the delegation of another domain; expected ${b.ssl_delegation.target}`,
  );

  // One resolver sees the delegation, the other not yet.
  const c = await lifecycle((await external('ssl-half.example.org')).name);
  L.dns.set(c.ssl_delegation.name, 'CNAME', [c.ssl_delegation.target]);
  L.dns.set(c.ssl_delegation.target, 'TXT', [c.ssl_delegation.canary]);
  const half = await L.api('POST', '/domains/ssl-half.example.org/ssl/delegation/check');
  assert.deepEqual(
    [half.status, half.body],
    [
      422,
      {
        ok: false,
        error: 'not propagated yet: 1 of 2 resolvers see the delegation of _acme-challenge.ssl-half.example.org',
      },
    ],
  );

  const e = await lifecycle((await external('ssl-ok.example.org')).name);
  both((s) => {
    s.set(e.ssl_delegation.name, 'CNAME', [e.ssl_delegation.target]);
    s.set(e.ssl_delegation.target, 'TXT', [e.ssl_delegation.canary]);
  });
  const ok = await L.api('POST', '/domains/ssl-ok.example.org/ssl/delegation/check');
  assert.deepEqual([ok.status, ok.body], [200, { ok: true }]);
  assert.equal(
    (await L.api('GET', '/domains/ssl-ok.example.org')).body.state,
    'active',
    'awaiting verification → active',
  );

  await external('ssl-disabled.example.org');
  await L.internal('POST', '/internal/domains/ssl-disabled.example.org/state', { state: 'disabled' });
  const disabled = await L.api('POST', '/domains/ssl-disabled.example.org/ssl/delegation/check');
  assert.deepEqual([disabled.status, disabled.body], [400, { error: 'domain is disabled' }]);
});

test('token expiry: the timer marks verification failed; verify 409; verify/retry mints a new token; then TXT → active', async () => {
  const failed = await eventually(
    'verification to fail at token expiry',
    async () => {
      const d = (await L.api('GET', `/domains/${EXPIRING}`)).body;
      return d.verification_state === 'failed' ? d : undefined;
    },
    60_000,
  );
  assert.equal(failed.state, 'unverified');
  const v = await L.api('POST', `/domains/${EXPIRING}/verify`);
  assert.deepEqual(
    [v.status, v.body],
    [409, { error: `verification token expired; request a new one with POST /domains/${EXPIRING}/verify/retry` }],
  );

  const retry = await L.api('POST', `/domains/${EXPIRING}/verify/retry`);
  assert.equal(retry.status, 200);
  assert.equal(retry.body.name, EXPIRING);
  assert.equal(retry.body.verification_state, 'awaiting');
  assert.notEqual(retry.body.verification.value, expiringToken);
  assert.ok(Date.parse(retry.body.verification.expires_at) > Date.now());
  const twice = await L.api('POST', `/domains/${EXPIRING}/verify/retry`);
  assert.deepEqual(
    [twice.status, twice.body],
    [400, { error: 'domain is not in failed verification; nothing to retry' }],
  );

  both((s) => s.set(retry.body.verification.name, 'TXT', [retry.body.verification.value]));
  const ok = await L.api('POST', `/domains/${EXPIRING}/verify`);
  assert.deepEqual([ok.status, ok.body], [200, { verified: true, method: 'txt', state: 'active' }]);
});
