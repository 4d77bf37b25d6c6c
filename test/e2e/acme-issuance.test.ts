// ACME issuance end to end, against Pebble resolving challenges through our own DNS node: a new proxied record ends
// with a certificate Pebble issued (apex and wildcard), stored by the control plane and served by the edge over
// HTTPS for that hostname, verified against Pebble's root; the dns-01 TXTs are withdrawn after.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startAcmeStack, type AcmeStack } from './acme-harness.js';
import { eventually } from '../helpers/workflows-harness.js';

let S: AcmeStack;
before(async () => {
  S = await startAcmeStack('acme-issue');
});
after(async () => {
  if (process.env.ACME_DEBUG) console.log(S?.outputs());
  await S?.close();
});

test('a new proxied record ends with a Pebble-issued certificate served by the edge', async () => {
  const d = 'shop.example.org';
  await S.activeDomain(d);
  await S.proxied(d, 'www');
  const cert = await S.served(`www.${d}`);
  assert.match(String(cert.issuer.CN), /Pebble Intermediate/);
  assert.deepEqual(cert.subjectaltname?.split(', ').sort(), [`DNS:*.${d}`, `DNS:${d}`]);
  // The apex and any other name one label deep are served by the same certificate.
  assert.equal((await S.handshake(d)).fingerprint256, cert.fingerprint256);
  assert.equal((await S.handshake(`api.${d}`)).fingerprint256, cert.fingerprint256);
  // Another hostname's SNI is not this domain's certificate.
  await assert.rejects(S.handshake('www.other.example.net'));
  // The challenge TXTs were withdrawn: no record of the platform's is left in the zone.
  const records = await eventually('the challenge records to be withdrawn', async () => {
    const list = (await S.L.api('GET', `/domains/${d}/records/`)).body as Array<{ name: string; type: string }>;
    return list.some((r) => r.type === 'TXT') ? undefined : list;
  });
  assert.deepEqual(
    records.map((r) => [r.name, r.type]),
    [['www', 'A']],
  );
});

/** GET ssl/ of a domain. */
const ssl = async (d: string) => (await S.L.api('GET', `/domains/${d}/ssl/`)).body;
const issue = (d: string) => S.L.api('POST', `/domains/${d}/ssl/issue`);

test('POST ssl/issue: 404, 400 external DNS, 400 not active, 200 pending, 409 running, 400 once SSL is active', async () => {
  assert.equal((await issue('nope.example.org')).status, 404);

  const external = await S.L.api('POST', '/domains/', { name: 'ext-issue.example.org', dns_mode: 'external' });
  assert.equal(external.status, 200);
  const ext = await issue('ext-issue.example.org');
  assert.equal(ext.status, 400);
  assert.match(ext.body.error, /external-DNS/);

  // Managed, delegation not moved yet: pending.
  assert.equal((await S.L.api('POST', '/domains/', { name: 'waiting-issue.example.org' })).status, 200);
  const waiting = await issue('waiting-issue.example.org');
  assert.equal(waiting.status, 400);
  assert.match(waiting.body.error, /the domain is pending/);

  // Active, no proxied record: nothing issued by itself, SSL missing; a manual order covers the apex and wildcard.
  const d = 'manual.example.org';
  await S.activeDomain(d);
  const before = await ssl(d);
  assert.equal(before.status, 'missing');
  assert.equal(before.can_manual_issue, true);
  const started = await issue(d);
  assert.equal(started.status, 200, JSON.stringify(started.body));
  assert.equal(started.body.status, 'pending');
  assert.equal(typeof started.body.message, 'string');
  assert.ok(Math.abs(Date.parse(started.body.last_issue_attempt_at) - Date.now()) < 60_000);
  const running = await issue(d);
  assert.equal(running.status, 409, JSON.stringify(running.body));
  assert.equal(running.body.error, 'certificate issuance is already in progress');
  assert.equal(running.headers.get('x-error-code'), 'CP_ERR_ISSUANCE_RUNNING');

  const done = await eventually(
    `${d} to have its certificate`,
    async () => {
      const s = await ssl(d);
      return s.status === 'active' ? s : undefined;
    },
    120_000,
  );
  assert.equal(done.source, 'issued');
  assert.deepEqual([...done.sans].sort(), [`*.${d}`, d]);
  // The order's own start is the last attempt now.
  assert.ok(Date.parse(done.last_issue_attempt_at) >= Date.parse(started.body.last_issue_attempt_at));
  assert.equal(done.can_manual_issue, false);
  const active = await issue(d);
  assert.equal(active.status, 400);
  assert.match(active.body.error, /SSL is active/);
});

test('a failed manual order is recorded with its reason; another POST within the cooldown is 429 with next_manual_issue_at', async () => {
  // A CNAME at _acme-challenge takes the name the challenge TXT needs: the order cannot be validated.
  const d = 'blocked.example.org';
  await S.activeDomain(d);
  const cname = await S.L.api('POST', `/domains/${d}/records/`, {
    name: '_acme-challenge',
    type: 'CNAME',
    destination: 'elsewhere.example.net',
  });
  assert.equal(cname.status, 200, JSON.stringify(cname.body));
  const first = await issue(d);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  const failed = await eventually(`${d}'s order to fail`, async () => {
    const s = await ssl(d);
    return s.status === 'failed' ? s : undefined;
  });
  assert.match(failed.last_error, /CNAME at _acme-challenge\.blocked\.example\.org/);
  assert.equal(failed.can_manual_issue, false);
  const cooling = await issue(d);
  assert.equal(cooling.status, 429, JSON.stringify(cooling.body));
  assert.equal(cooling.body.next_manual_issue_at, failed.next_manual_issue_at);
  assert.ok(Date.parse(cooling.body.next_manual_issue_at) > Date.now());
  assert.ok(Number(cooling.headers.get('retry-after')) >= 1);
});

test('Pebble stopped: ssl/issue is 503 and the automatic order retries until Pebble is back', async () => {
  const d = 'down.example.org';
  await S.activeDomain(d);
  await S.pebble.stop();
  try {
    const res = await issue(d);
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.match(res.body.error, /certificate issuer temporarily unavailable/);
    // Nothing was recorded: the domain may ask again at once.
    assert.equal((await ssl(d)).next_manual_issue_at, null);

    await S.proxied(d, 'www');
    const retrying = await eventually(`${d}'s automatic order to fail and wait for a retry`, async () => {
      const s = await ssl(d);
      const www = s.coverage.find((c: { hostname: string }) => c.hostname === `www.${d}`);
      return s.status === 'failed' && www?.state === 'retrying' ? s : undefined;
    }).catch(async (err) => {
      console.log(JSON.stringify(await ssl(d)), (await S.history(d).catch((e) => [String(e)])).join('\n'));
      throw err;
    });
    assert.match(retrying.last_error, /certificate issuer unavailable/);
    const www = retrying.coverage.find((c: { hostname: string }) => c.hostname === `www.${d}`);
    assert.ok(www.attempts >= 1);
    assert.ok(www.next_retry_at);
  } finally {
    await S.pebble.start();
  }
  // Pebble is back: the next retry issues, and the edge serves it (verified against Pebble's new root).
  const cert = await S.served(`www.${d}`);
  assert.deepEqual(cert.subjectaltname?.split(', ').sort(), [`DNS:*.${d}`, `DNS:${d}`]);
  const after = await ssl(d);
  assert.equal(after.status, 'active');
  assert.deepEqual(after.coverage, []);
});

test('the worker killed in the middle of an order: the order completes after it restarts', async () => {
  const d = 'durable-acme.example.org';
  await S.activeDomain(d);
  // Our DNS node is down, so the order waits for its challenges to be served, after creating the order and
  // publishing them.
  await S.dns.kill('SIGKILL');
  await S.proxied(d, 'www');
  const handle = S.L.temporal.client.workflow.getHandle(`certificates:${d}`);
  await eventually(
    'the order to wait for the challenge TXTs',
    async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      const done = (type: string) =>
        events.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === type);
      return done('publishAcmeChallenges') && done('acmeChallengesServed') ? true : undefined;
    },
    90_000,
  );
  await S.L.stopWorker('SIGKILL');
  await S.dns.restart();
  await S.L.startWorker();
  const cert = await S.served(`www.${d}`);
  assert.deepEqual(cert.subjectaltname?.split(', ').sort(), [`DNS:*.${d}`, `DNS:${d}`]);
  // One order: the history holds one new order, resumed where it stopped.
  const events = (await handle.fetchHistory()).events ?? [];
  const orders = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'acmeNewOrder');
  assert.equal(orders.length, 1);
});

test('renewal: a short-lived certificate is renewed at two thirds of its lifetime and the edge serves the new one', async () => {
  // Pebble restarted to issue certificates valid for 45 s: renewal falls due 30 s after issuance.
  await S.pebble.stop();
  await S.pebble.start(45);
  const d = 'renew.example.org';
  await S.activeDomain(d);
  await S.proxied(d, 'www');
  const first = await S.served(`www.${d}`);
  const lifetime = Date.parse(first.valid_to) - Date.parse(first.valid_from);
  assert.ok(lifetime <= 60_000, `a short-lived certificate (${first.valid_from} – ${first.valid_to})`);
  const renewed = await eventually(
    'the certificate to be renewed',
    async () => {
      const c = await S.handshake(`www.${d}`);
      return c.fingerprint256 !== first.fingerprint256 ? c : undefined;
    },
    90_000,
  );
  assert.ok(Date.parse(renewed.valid_from) >= Date.parse(first.valid_from));
  assert.ok(Date.parse(renewed.valid_to) > Date.parse(first.valid_to));
  // Renewed before the first one expired.
  assert.ok(Date.now() < Date.parse(first.valid_to) + 5000);
  const info = (await S.L.api('GET', `/domains/${d}/ssl/`)).body;
  assert.equal(info.status, 'active');
  assert.equal(info.not_after, new Date(Date.parse(renewed.valid_to)).toISOString());
});
