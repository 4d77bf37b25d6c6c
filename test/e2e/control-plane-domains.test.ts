// Domains: names (IDN, percent-encoding, invalid names), create/list/get/update/delete, limits, config-log entries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { asc, eq, sql } from 'drizzle-orm';
import { rowsOf } from '../../control-plane/src/db/migrate.js';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { configLog, dnsRecords, domains, subscriptions } from '../../control-plane/src/db/schema.js';
import { setOverride } from '../../control-plane/src/plans/subscriptions.js';

interface Detail {
  id: number;
  name: string;
  unicode_name: string;
  dns_mode: string;
  state: string;
  cache_l2_ttl_days: number;
  cache_cap_mb: number;
  origin_protocol: string;
  nameservers: string[];
  role: string;
  permissions: string[];
  verification: { type: string; name: string; value: string; expires_at: string } | null;
  ssl_delegation: { type: string; name: string; target: string } | null;
}

test('domains', async (t) => {
  const cp = await startTestControlPlane(t, {
    NS_SETS: 'ns1.example.net,ns2.example.net;ns3.example.net,ns4.example.net,ns5.example.net',
  });
  const a = await cp.user('alice@example.org');
  const b = await cp.user('bob@example.org');
  const db = cp.database.db;
  const logEntries = async (name: string) =>
    db.select().from(configLog).where(eq(configLog.domainName, name)).orderBy(asc(configLog.version));

  await t.test('GET /domains/ns-sets lists the configured sets, the recommended one first', async () => {
    const res = await cp.call(a.key, 'GET', '/domains/ns-sets');
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), {
      sets: [
        ['ns1.example.net', 'ns2.example.net'],
        ['ns3.example.net', 'ns4.example.net', 'ns5.example.net'],
      ],
    });
  });

  await t.test(
    'POST /domains/ managed: pending, verification block, no ssl_delegation, free subscription, one config-log entry',
    async () => {
      const res = await cp.call(a.key, 'POST', '/domains/', { name: 'managed.example.org' });
      assert.equal(res.statusCode, 200);
      const d = res.json<Detail>();
      assert.equal(d.name, 'managed.example.org');
      assert.equal(d.dns_mode, 'managed');
      assert.equal(d.state, 'pending');
      assert.equal(d.role, 'owner');
      assert.deepEqual(d.nameservers, ['ns1.example.net', 'ns2.example.net']);
      assert.equal(d.cache_l2_ttl_days, 3);
      assert.equal(d.cache_cap_mb, 100);
      assert.equal(d.verification?.type, 'TXT');
      assert.ok(d.verification?.value && Date.parse(d.verification.expires_at) > Date.now());
      assert.equal(d.ssl_delegation, null);
      const list = (await cp.call(a.key, 'GET', '/domains/')).json<
        Array<Detail & { ssl: { status: string }; subscription: { plan: string; status: string } }>
      >();
      const item = list.find((x) => x.name === 'managed.example.org');
      assert.deepEqual(item?.subscription && { plan: item.subscription.plan, status: item.subscription.status }, {
        plan: 'free',
        status: 'active',
      });
      assert.equal(item?.ssl.status, 'missing');
      assert.equal((await logEntries('managed.example.org')).length, 1);
    },
  );

  await t.test('POST /domains/ external: unverified with the ssl_delegation CNAME at _acme-challenge', async () => {
    const d = (
      await cp.call(a.key, 'POST', '/domains/', { name: 'external.example.org', dns_mode: 'external' })
    ).json<Detail>();
    assert.equal(d.state, 'unverified');
    assert.equal(d.ssl_delegation?.type, 'CNAME');
    assert.equal(d.ssl_delegation?.name, '_acme-challenge.external.example.org');
    assert.match(d.ssl_delegation?.target ?? '', /^[0-9a-f]{32}\.acme\.platform\.test$/);
    assert.equal(d.verification?.type, 'TXT');
  });

  await t.test(
    'names: IDN to punycode, lower case, trailing dot dropped; percent-encoded path segments accepted',
    async () => {
      const created = (await cp.call(a.key, 'POST', '/domains/', { name: 'Bücher.Example.ORG.' })).json<Detail>();
      assert.equal(created.name, 'xn--bcher-kva.example.org');
      assert.equal(created.unicode_name, 'bücher.example.org');
      for (const path of [
        'xn--bcher-kva.example.org',
        'b%C3%BCcher.example.org',
        'B%C3%9Ccher.EXAMPLE.org',
        'xn--bcher-kva.example.org.',
      ]) {
        const res = await cp.call(a.key, 'GET', `/domains/${path}`);
        assert.equal(res.statusCode, 200, path);
        assert.equal(res.json<Detail>().name, 'xn--bcher-kva.example.org');
      }
    },
  );

  await t.test('invalid names are 400 with a clear message', async () => {
    const cases: Array<[string, string]> = [
      ['localhost', 'a single label is not a domain name'],
      ['192.0.2.10', 'an IP address is not a domain name'],
      ['2001:db8::1', 'an IP address is not a domain name'],
      ['a..example.org', 'the name has an empty label'],
      ['-bad.example.org', 'label "-bad" may hold only letters, digits and inner hyphens'],
      ['under_score.example.org', 'label "under_score" may hold only letters, digits and inner hyphens'],
      ['exa mple.org', 'the name holds characters not allowed in a host name'],
      ['https://example.org/', 'the name holds characters not allowed in a host name'],
      ['example.123', 'the top-level label cannot be numeric'],
      [`${'a'.repeat(64)}.example.org`, `label "${'a'.repeat(20)}…" is longer than 63 characters`],
      [`${Array.from({ length: 5 }, () => 'b'.repeat(60)).join('.')}.org`, 'the name is longer than 253 characters'],
      ['.', 'the name is empty'],
    ];
    for (const [name, reason] of cases) {
      const res = await cp.call(a.key, 'POST', '/domains/', { name });
      assert.equal(res.statusCode, 400, name);
      assert.deepEqual(res.json(), { error: `invalid domain name "${name.slice(0, 300)}": ${reason}` }, name);
    }
    // Three domains of the tests, and the ACME delegation zone the external one needed.
    const names = (await db.select().from(domains)).map((d) => d.name);
    assert.deepEqual(names.filter((n) => n !== cp.config.acmeDelegationZone).length, 3, 'nothing stored');
  });

  await t.test('409 when the name exists on this or another account (any spelling)', async () => {
    for (const [key, name] of [
      [a.key, 'managed.example.org'],
      [b.key, 'MANAGED.example.org.'],
      [b.key, 'bücher.example.org'],
    ] as const) {
      const res = await cp.call(key, 'POST', '/domains/', { name });
      assert.equal(res.statusCode, 409, name);
      assert.match(res.json<{ error: string }>().error, /^domain .+ already exists$/);
    }
    // Bob still cannot see Alice's domain.
    assert.equal((await cp.call(b.key, 'GET', '/domains/managed.example.org')).statusCode, 404);
    assert.equal((await cp.call(a.key, 'GET', '/domains/not-there.example.org')).statusCode, 404);
    assert.equal((await cp.call(a.key, 'GET', '/domains/not..valid')).statusCode, 404);
  });

  await t.test('a zone inside or above a zone of another account is 409; one account may hold both', async () => {
    const create = (key: string, name: string) => cp.call(key, 'POST', '/domains/', { name });
    assert.equal((await create(a.key, 'parent-zone.example')).statusCode, 200);
    assert.equal((await create(b.key, 'leaf.child-zone.example')).statusCode, 200);
    const before = (await db.select().from(domains)).length;
    for (const [key, name, error] of [
      [b.key, 'sub.parent-zone.example', 'domain sub.parent-zone.example is inside parent-zone.example'],
      [b.key, 'a.b.PARENT-zone.example.', 'domain a.b.parent-zone.example is inside parent-zone.example'],
      [a.key, 'child-zone.example', 'domain child-zone.example contains leaf.child-zone.example'],
    ] as const) {
      const res = await create(key, name);
      assert.equal(res.statusCode, 409, name);
      assert.equal(res.json<{ error: string }>().error, `${error}, which belongs to another account`);
    }
    assert.equal((await db.select().from(domains)).length, before, 'nothing stored');
    // The same account may split its zone (as a Cloudflare subdomain zone); label boundaries are respected.
    assert.equal((await create(a.key, 'shop.parent-zone.example')).statusCode, 200);
    assert.equal((await create(b.key, 'x.leaf.child-zone.example')).statusCode, 200);
    assert.equal((await create(b.key, 'notparent-zone.example')).statusCode, 200);
  });

  await t.test(
    'PUT: partial update, limits, plan-bounded cache_cap_mb tiers, one config-log entry per change',
    async () => {
      const url = '/domains/managed.example.org';
      const before = (await logEntries('managed.example.org')).length;
      let res = await cp.call(a.key, 'PUT', url, { cache_l2_ttl_days: 7, origin_protocol: 'http2' });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json<Detail>().cache_l2_ttl_days, 7);
      assert.equal(res.json<Detail>().origin_protocol, 'http2');
      assert.equal(res.json<Detail>().cache_cap_mb, 100, 'omitted fields unchanged');
      assert.equal((await logEntries('managed.example.org')).length, before + 1);
      res = await cp.call(a.key, 'PUT', url, {});
      assert.equal(res.statusCode, 200);
      assert.equal((await logEntries('managed.example.org')).length, before + 1, 'no change, no entry');

      res = await cp.call(a.key, 'PUT', url, { cache_cap_mb: 300 });
      assert.equal(res.statusCode, 400);
      assert.deepEqual(res.json(), { error: 'cache_cap_mb must be one of: 100, 250, 500, 1000, 2000, 5000, 10000' });
      res = await cp.call(a.key, 'PUT', url, { cache_cap_mb: 1000 });
      assert.equal(res.statusCode, 403);
      assert.equal(
        res.json<{ error: string }>().error,
        "cache_cap_mb 1000 exceeds your plan's max_cache_cap_mb of 250",
      );
      assert.equal((await cp.call(a.key, 'PUT', url, { cache_cap_mb: 250 })).statusCode, 200);
      res = await cp.call(a.key, 'PUT', url, { dns_mode: 'hosted' });
      assert.equal(res.statusCode, 400);
      assert.deepEqual(res.json(), { error: 'dns_mode must be one of: managed, external' });

      const [d] = await db.select().from(domains).where(eq(domains.name, 'managed.example.org'));
      await setOverride(db, d.id, 'max_cache_cap_mb', 1000);
      res = await cp.call(a.key, 'PUT', url, { cache_cap_mb: 1000 });
      assert.equal(res.statusCode, 200);
      assert.equal(res.json<Detail>().cache_cap_mb, 1000);
    },
  );

  await t.test('GET /domains/{domain}/subscription: effective features; overrides shown only when set', async () => {
    let res = await cp.call(a.key, 'GET', '/domains/external.example.org/subscription');
    assert.equal(res.statusCode, 200);
    let sub = res.json<Record<string, unknown> & { effective_features: Record<string, unknown> }>();
    assert.equal((sub.plan as { slug: string }).slug, 'free');
    assert.equal(sub.status, 'active');
    assert.equal(sub.domain_name, 'external.example.org');
    assert.equal(sub.effective_features.max_cache_cap_mb, 250);
    assert.equal(sub.quota_reset_days, 30);
    assert.ok(Date.parse(sub.quota_period_end as string) > Date.now());
    assert.deepEqual(
      Object.keys(sub).filter((k) => k.startsWith('override_')),
      [],
    );
    res = await cp.call(a.key, 'GET', '/domains/managed.example.org/subscription');
    sub = res.json();
    assert.equal(sub.override_max_cache_cap_mb, 1000);
    assert.equal(sub.effective_features.max_cache_cap_mb, 1000);
    assert.deepEqual(
      Object.keys(sub).filter((k) => k.startsWith('override_')),
      ['override_max_cache_cap_mb'],
    );
    assert.equal((await cp.call(b.key, 'GET', '/domains/managed.example.org/subscription')).statusCode, 404);
  });

  await t.test('PUT dns_mode switches the proof of control', async () => {
    const res = await cp.call(a.key, 'PUT', '/domains/external.example.org', { dns_mode: 'managed' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json<Detail>().state, 'pending');
    assert.equal(res.json<Detail>().ssl_delegation, null);
    const back = (
      await cp.call(a.key, 'PUT', '/domains/external.example.org', { dns_mode: 'external' })
    ).json<Detail>();
    assert.equal(back.state, 'unverified');
    assert.equal(back.ssl_delegation?.name, '_acme-challenge.external.example.org');
  });

  await t.test(
    'DELETE: owner only; removes records, rules and zone, cancels the subscription (domain_deleted); tombstone; name free again',
    async () => {
      const [d] = await db.select().from(domains).where(eq(domains.name, 'managed.example.org'));
      await db.insert(dnsRecords).values({ domainId: d.id, name: 'www', type: 'A', destination: '192.0.2.1' });
      await db.execute(
        sql`INSERT INTO rules (domain_id, type, filters, fields) VALUES (${d.id}, 'cache', '{}'::jsonb, '{}'::jsonb)`,
      );
      await cp.addMember('managed.example.org', b.id, 'admin');
      const denied = await cp.call(b.key, 'DELETE', '/domains/managed.example.org');
      assert.equal(denied.statusCode, 403);

      const res = await cp.call(a.key, 'DELETE', '/domains/managed.example.org');
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), { message: 'domain managed.example.org deleted' });
      assert.equal((await cp.call(a.key, 'GET', '/domains/managed.example.org')).statusCode, 404);
      assert.equal((await cp.call(b.key, 'GET', '/domains/managed.example.org')).statusCode, 404);
      assert.equal((await db.select().from(dnsRecords).where(eq(dnsRecords.domainId, d.id))).length, 0);
      // The subscription is cancelled by the system, not deleted (spec Subscription states; issue 8).
      const [sub] = await db.select().from(subscriptions).where(eq(subscriptions.domainId, d.id));
      assert.deepEqual(
        [sub?.status, sub?.cancelReason, sub?.domainName],
        ['cancelled', 'domain_deleted', 'managed.example.org'],
      );
      assert.ok(sub.cancelledAt && sub.cancelledAt.getTime() >= sub.createdAt.getTime());
      assert.equal(rowsOf(await db.execute(sql`SELECT id FROM rules WHERE domain_id = ${d.id}`)).length, 0);
      const entries = await logEntries('managed.example.org');
      assert.equal(entries.at(-1)?.deleted, true);
      assert.equal((await cp.call(a.key, 'DELETE', '/domains/managed.example.org')).statusCode, 404);
      assert.equal((await cp.call(b.key, 'POST', '/domains/', { name: 'managed.example.org' })).statusCode, 200);
      const again = await cp.call(b.key, 'GET', '/domains/managed.example.org/subscription');
      assert.deepEqual([again.json().status, again.json().id === sub.id], ['active', false], 'a new subscription');
    },
  );

  await t.test('a name of 253 characters can be created, read, used and deleted by its path (issue 8)', async () => {
    // Labels of 63, 61, 61 and 61 characters, then "org", and four dots: 253.
    const name = [`ab${'c'.repeat(61)}`, ...Array.from({ length: 3 }, (_, i) => `${i}`.repeat(61)), 'org'].join('.');
    assert.equal(name.length, 253);
    assert.equal((await cp.call(a.key, 'POST', '/domains/', { name })).statusCode, 200);
    for (const path of [`/domains/${name}`, `/domains/${name.toUpperCase()}.`, `/domains/${name}/records/`]) {
      assert.equal((await cp.call(a.key, 'GET', path)).statusCode, 200, path);
    }
    const updated = await cp.call(a.key, 'PUT', `/domains/${name}`, { cache_l2_ttl_days: 2 });
    assert.equal(updated.json<Detail>().cache_l2_ttl_days, 2);
    const deleted = await cp.call(a.key, 'DELETE', `/domains/${name}`);
    assert.deepEqual(deleted.json(), { message: `domain ${name} deleted` });
    assert.equal((await cp.call(a.key, 'GET', `/domains/${name}`)).statusCode, 404);
    // A segment far beyond any name is the domain route's own 404, not an unknown route.
    const long = await cp.call(a.key, 'GET', `/domains/${'x'.repeat(1000)}.org`);
    assert.deepEqual(long.json(), { error: 'domain not found' });
  });
});
