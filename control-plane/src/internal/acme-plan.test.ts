// What the certificate sweep starts and what the plan asks for, in-process: only active domains with proxied records
// and no certificate covering them; an order running or a retry waiting is left alone (a stale `pending` is
// not); the sweep goes through every domain batch by batch; the names ordered are the apex, its wildcard and deeper
// proxied names (an external domain's: the apex and wildcard, through its delegation or its acme-dns account; its
// proxied names by http-01 while no CNAME has been seen).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../test/helpers/control-plane.js';
import { domainChecks, domains } from '../db/schema.js';
import { recordIssuance } from '../areas/ssl/service.js';
import { putAcmeDnsAccount } from '../areas/ssl/acme-dns-store.js';
import { acmePlan, MAX_CERTIFICATE_NAMES, sweepCertificates, wantedHostnames, type SweepCursor } from './acme-plan.js';

test('wantedHostnames: apex and wildcard, deeper names added, at most the CA limit', () => {
  assert.deepEqual(wantedHostnames('example.org', ['example.org', 'www.example.org', 'api.example.org']), [
    'example.org',
    '*.example.org',
  ]);
  assert.deepEqual(wantedHostnames('example.org', ['a.b.example.org', '*.dev.example.org', 'x.dev.example.org']), [
    'example.org',
    '*.example.org',
    'a.b.example.org',
    '*.dev.example.org',
  ]);
  const many = Array.from({ length: 500 }, (_, i) => `n${i}.deep.example.org`);
  assert.equal(wantedHostnames('example.org', many).length, MAX_CERTIFICATE_NAMES);
});

test('the certificate sweep and the plan', async (t) => {
  const cp = await startTestControlPlane(t, {
    ACME_DIRECTORY_URL: 'https://ca.test/dir',
    ACME_EMAIL: 'ops@example.org',
    ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8',
  });
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const owner = await cp.user();
  const make = async (name: string, opts: { active: boolean; proxied: boolean; external?: boolean }) => {
    await cp.domain(owner.key, name, opts.external ? 'external' : 'managed');
    if (opts.active) {
      const res = await cp.call(
        null,
        'POST',
        `/internal/domains/${name}/state`,
        { state: 'active' },
        {
          authorization: `Bearer ${token}`,
        },
      );
      assert.equal(res.statusCode, 200, res.body);
    }
    if (opts.proxied) {
      const res = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, {
        name: 'www',
        type: 'A',
        destination: '127.0.0.1',
        proxied: true,
      });
      assert.equal(res.statusCode, 200, res.body);
    }
    const [row] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
    return row!;
  };
  const a = await make('a-sweep.example.org', { active: true, proxied: true });
  const running = await make('b-sweep.example.org', { active: true, proxied: true });
  const waiting = await make('c-sweep.example.org', { active: true, proxied: true });
  const d = await make('d-sweep.example.org', { active: true, proxied: true });
  const bare = await make('e-sweep.example.org', { active: true, proxied: false });
  const pending = await make('f-sweep.example.org', { active: false, proxied: true });
  await recordIssuance(cp.database.db, running.id, { status: 'pending', lastIssueAttemptAt: new Date() });
  await recordIssuance(cp.database.db, waiting.id, {
    status: 'failed',
    lastError: 'certificate issuer unavailable',
    hostnames: {
      'www.c-sweep.example.org': {
        attempts: 1,
        last_error: 'x',
        next_retry_at: new Date(Date.now() + 600_000).toISOString(),
      },
    },
  });

  const sweepAll = async (now = Date.now()) => {
    const cursor: SweepCursor = { afterId: 0, batch: 2 };
    const names: string[] = [];
    let rounds = 0;
    do {
      names.push(...(await sweepCertificates(cp.app, cursor, now)).map((s) => s.workflowId));
      rounds++;
    } while (cursor.afterId !== 0 && rounds < 10);
    assert.ok(rounds >= 2, 'the batches went on from the cursor');
    return names.sort();
  };
  assert.deepEqual(await sweepAll(), [`certificates:${a.name}`, `certificates:${d.name}`]);
  // An hour later the `pending` is taken as lost, and the retry time has passed.
  assert.deepEqual(await sweepAll(Date.now() + 2 * 3_600_000), [
    `certificates:${a.name}`,
    `certificates:${running.name}`,
    `certificates:${waiting.name}`,
    `certificates:${d.name}`,
  ]);
  const start = (await sweepCertificates(cp.app))[0]!;
  assert.equal(start.kind, 'signal-with-start');
  assert.equal(start.workflowType, 'manageCertificates');
  assert.equal(start.signal, 'issueCertificate');

  const plan = await acmePlan(cp.app, a);
  assert.deepEqual(plan, {
    directory_url: 'https://ca.test/dir',
    email: 'ops@example.org',
    manual: false,
    current: null,
    hostnames: [a.name, `*.${a.name}`],
  });
  assert.deepEqual((await acmePlan(cp.app, bare)).hostnames, []);
  assert.equal((await acmePlan(cp.app, bare)).reason, 'the domain has no proxied records');
  assert.equal((await acmePlan(cp.app, pending)).reason, 'the domain is pending, not active');
  // A manual order (pending) covers the apex and wildcard even without proxied records.
  await recordIssuance(cp.database.db, bare.id, { status: 'pending' });
  assert.deepEqual((await acmePlan(cp.app, bare)).hostnames, [bare.name, `*.${bare.name}`]);

  // External DNS: the apex and wildcard only (the names `_acme-challenge.<domain>` answers for), through the
  // delegation zone (the CNAME checked first), or through an acme-dns account when one is set; the sweep takes them.
  const ext = await make('g-sweep.example.org', { active: true, proxied: true, external: true });
  const deep = await cp.call(owner.key, 'POST', `/domains/${ext.name}/records/`, {
    name: 'a.b',
    type: 'A',
    destination: '127.0.0.1',
    proxied: true,
  });
  assert.equal(deep.statusCode, 200, deep.body);
  const block = ext.sslDelegation as { target: string; canary: string };
  // Before any delegation check passed (no CNAME seen): http-01 over the proxied names, not the apex or wildcard.
  const http01 = await acmePlan(cp.app, ext);
  assert.equal(http01.challenge, 'http-01');
  assert.deepEqual([...http01.hostnames].sort(), [`a.b.${ext.name}`, `www.${ext.name}`]);
  // The delegation check passed: dns-01 through the CNAME.
  const delegated = async (id: number) =>
    cp.database.db
      .insert(domainChecks)
      .values({ domainId: id, kind: 'delegation', lastAt: new Date(0), result: { ok: true } });
  await delegated(ext.id);
  assert.deepEqual(await acmePlan(cp.app, ext), {
    directory_url: 'https://ca.test/dir',
    email: 'ops@example.org',
    manual: false,
    current: null,
    challenge: 'delegation',
    delegation: { target: block.target, canary: block.canary, zone: cp.config.acmeDelegationZone },
    hostnames: [ext.name, `*.${ext.name}`],
  });
  assert.ok((await sweepAll(Date.now() + 2 * 3_600_000)).includes(`certificates:${ext.name}`));
  assert.deepEqual(wantedHostnames(ext.name, [`a.b.${ext.name}`], 'external'), [ext.name, `*.${ext.name}`]);

  await putAcmeDnsAccount(cp.database.db, {
    domainId: ext.id,
    serverUrl: 'https://acme-dns.example.net',
    username: 'u',
    passwordSealed: 'sealed',
    subdomain: 's',
    fulldomain: null,
  });
  const viaAccount = await acmePlan(cp.app, ext);
  assert.equal(viaAccount.challenge, 'acme-dns');
  assert.deepEqual(viaAccount.acme_dns, { fulldomain: null });
  assert.equal(viaAccount.delegation, undefined);
  assert.deepEqual(viaAccount.hostnames, [ext.name, `*.${ext.name}`]);

  const elsewhere = await make('h-sweep.example.org', { active: true, proxied: true, external: true });
  await delegated(elsewhere.id);
  await cp.database.db
    .update(domains)
    .set({ sslDelegation: { ...elsewhere.sslDelegation, target: 'x.old-zone.example.net' } })
    .where(eq(domains.id, elsewhere.id));
  const [moved] = await cp.database.db.select().from(domains).where(eq(domains.id, elsewhere.id));
  assert.match(
    (await acmePlan(cp.app, moved!)).reason ?? '',
    /ssl_delegation CNAME target is not inside the ACME delegation zone acme\.platform\.test/,
  );
});
