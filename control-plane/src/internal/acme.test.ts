// The /internal ACME routes in-process: the account key of a directory is made once and kept; dns-01 TXT records are
// published through the config log (one entry, the records in its delta) and withdrawn the same way; withdrawal never
// touches the user's own TXT with the same text; bad names, values and sizes are 400 and store nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPrivateKey } from 'node:crypto';
import { and, desc, eq, gt, sql } from 'drizzle-orm';
import { decodeDomainSnapshot } from '@platform/shared/config';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../test/helpers/control-plane.js';
import { configLog, dnsRecords, domains } from '../db/schema.js';
import { rowsOf } from '../db/migrate.js';
import { ACME_CHALLENGE_COMMENT, challengeOwner } from './acme.js';
import { CANARY_COMMENT, reconcileDelegationZone, ZONE_OWNER_EMAIL } from '../areas/ssl/delegation-zone.js';

const V1 = 'a'.repeat(43);
const V2 = 'B_-'.repeat(14) + 'x';

test('internal ACME routes', async (t) => {
  const cp = await startTestControlPlane(t);
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const internal = (method: 'GET' | 'POST', url: string, body?: unknown) =>
    cp.call(null, method, url, body, { authorization: `Bearer ${token}` });
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'acme-routes.example.org');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  /** The latest config-log entry of a domain (this test's, unless another id is given). */
  const head = async (domainId = dom.id) =>
    (
      await cp.database.db
        .select({ version: configLog.version, payload: configLog.payload, removed: configLog.removedRecordIds })
        .from(configLog)
        .where(eq(configLog.domainId, domainId))
        .orderBy(desc(configLog.version))
        .limit(1)
    )[0]!;
  const txts = async () =>
    (await cp.database.db.select().from(dnsRecords).where(eq(dnsRecords.domainId, dom.id)))
      .filter((r) => r.type === 'TXT')
      .map((r) => [r.name, r.destination, r.comment === ACME_CHALLENGE_COMMENT])
      .sort();

  await t.test('the account key of a directory is made on first use and the same afterwards', async () => {
    const a = await internal('POST', '/internal/acme/account', { directory_url: 'https://ca.test/dir' });
    assert.equal(a.statusCode, 200, a.body);
    const key = createPrivateKey(a.json().account_key_pem);
    assert.equal(key.asymmetricKeyType, 'ec');
    const again = await internal('POST', '/internal/acme/account', { directory_url: 'https://ca.test/dir' });
    assert.equal(again.json().account_key_pem, a.json().account_key_pem);
    const other = await internal('POST', '/internal/acme/account', { directory_url: 'https://other.test/dir' });
    assert.notEqual(other.json().account_key_pem, a.json().account_key_pem);
    // An API key is no node token.
    const byKey = await cp.call(owner.key, 'POST', '/internal/acme/account', { directory_url: 'https://ca.test/dir' });
    assert.equal(byKey.statusCode, 403);
  });

  await t.test('challenges are published in one config-log entry and withdrawn in another', async () => {
    const before = (await head()).version;
    const res = await internal('POST', `/internal/domains/${name}/acme/challenges`, {
      records: [
        { name: `_acme-challenge.${name}`, value: V1 },
        { name: `_acme-challenge.${name}.`, value: V2 },
        { name: `_acme-challenge.www.${name}`, value: V1 },
      ],
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().published, 3);
    // Where to wait: the names themselves, on our DNS nodes.
    assert.equal(res.json().via, 'nodes');
    assert.deepEqual(
      res.json().watch.map((w: { name: string }) => w.name),
      [`_acme-challenge.${name}`, `_acme-challenge.${name}`, `_acme-challenge.www.${name}`],
    );
    const entry = await head();
    assert.equal(entry.version, before + 1);
    const served = decodeDomainSnapshot(entry.payload)
      .zone.records.map((r) => [r.name, r.type, r.destination, r.ttl])
      .sort();
    assert.deepEqual(served, [
      ['_acme-challenge', 'TXT', V2, 60],
      ['_acme-challenge', 'TXT', V1, 60],
      ['_acme-challenge.www', 'TXT', V1, 60],
    ]);
    // Published again (a retried activity): nothing new, no entry.
    const again = await internal('POST', `/internal/domains/${name}/acme/challenges`, {
      records: [{ name: `_acme-challenge.${name}`, value: V1 }],
    });
    assert.equal(again.json().published, 0);
    assert.equal((await head()).version, before + 1);

    // The user's own TXT with the same text stays when the challenge is withdrawn.
    const mine = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, {
      name: '_acme-challenge.www',
      type: 'TXT',
      destination: V2,
    });
    assert.equal(mine.statusCode, 200, mine.body);
    const out = await internal('POST', `/internal/domains/${name}/acme/challenges/withdraw`, {
      records: [
        { name: `_acme-challenge.${name}`, value: V1 },
        { name: `_acme-challenge.${name}`, value: V2 },
        { name: `_acme-challenge.www.${name}`, value: V1 },
        { name: `_acme-challenge.www.${name}`, value: V2 },
      ],
    });
    assert.deepEqual(out.json(), { withdrawn: 3 });
    assert.deepEqual(await txts(), [['_acme-challenge.www', V2, false]]);
    assert.equal((await head()).removed.length, 3);
  });

  await t.test(
    'bad input is 400 and stores nothing; a CNAME at the name is a conflict; unknown domain 404',
    async () => {
      const before = (await head()).version;
      const bad = [
        { records: [] },
        { records: [{ name: `_acme-challenge.${name}`, value: 'short' }] },
        { records: [{ name: `_acme-challenge.${name}`, value: `${V1}"; DROP` }] },
        { records: [{ name: `www.${name}`, value: V1 }] },
        { records: [{ name: '_acme-challenge.other.example.net', value: V1 }] },
        { records: [{ name: `_acme-challenge.x${name}`, value: V1 }] },
        { records: Array.from({ length: 101 }, () => ({ name: `_acme-challenge.${name}`, value: V1 })) },
        { records: [{ name: `_acme-challenge.${'a'.repeat(300)}.${name}`, value: V1 }] },
      ];
      for (const body of bad) {
        const res = await internal('POST', `/internal/domains/${name}/acme/challenges`, body);
        assert.equal(res.statusCode, 400, `${JSON.stringify(body).slice(0, 80)}: ${res.body}`);
        assert.equal(typeof res.json().error, 'string');
      }
      assert.equal((await head()).version, before);
      assert.deepEqual(await txts(), [['_acme-challenge.www', V2, false]]);

      const cname = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, {
        name: '_acme-challenge.cn',
        type: 'CNAME',
        destination: 'elsewhere.example.net',
      });
      assert.equal(cname.statusCode, 200, cname.body);
      const conflict = await internal('POST', `/internal/domains/${name}/acme/challenges`, {
        records: [{ name: `_acme-challenge.cn.${name}`, value: V1 }],
      });
      assert.equal(conflict.statusCode, 400, conflict.body);
      assert.match(conflict.json().error, /CNAME at _acme-challenge\.cn\.acme-routes\.example\.org/);

      const gone = await internal('POST', '/internal/domains/nope.example.org/acme/challenges', {
        records: [{ name: '_acme-challenge.nope.example.org', value: V1 }],
      });
      assert.equal(gone.statusCode, 404);
    },
  );

  await t.test('challengeOwner maps names to owners relative to the zone', () => {
    assert.equal(challengeOwner('_acme-challenge.example.org', 'example.org'), '_acme-challenge');
    assert.equal(challengeOwner('_ACME-challenge.a.b.example.org.', 'example.org'), '_acme-challenge.a.b');
    assert.throws(() => challengeOwner('_acme-challenge.notexample.org', 'example.org'));
    assert.throws(() => challengeOwner('_acme-challenge', 'example.org'));
  });

  await t.test(
    'external domains: the delegation zone holds their canaries and their challenges, through the config log',
    async () => {
      const db = cp.database.db;
      const zone = cp.config.acmeDelegationZone;
      const ext = 'acme-ext.example.org';
      const created = await cp.call(owner.key, 'POST', '/domains/', { name: ext, dns_mode: 'external' });
      assert.equal(created.statusCode, 200, created.body);
      const [z] = await db.select().from(domains).where(eq(domains.name, zone));
      assert.ok(z, 'the delegation zone exists once an external domain needs it');
      assert.equal(z.state, 'active');
      assert.equal(z.dnsMode, 'managed');
      const [row] = await db.select().from(domains).where(eq(domains.name, ext));
      const block = row!.sslDelegation as { target: string; canary: string };
      const label = block.target.slice(0, -(zone.length + 1));
      const zoneEntry = () => head(z.id);
      const zoneTxts = async () =>
        (await db.select().from(dnsRecords).where(eq(dnsRecords.domainId, z.id)))
          .map((r) => [r.name, r.destination, r.comment === CANARY_COMMENT ? 'canary' : r.comment])
          .sort();
      assert.deepEqual(await zoneTxts(), [[label, block.canary, 'canary']]);
      assert.deepEqual(
        decodeDomainSnapshot((await zoneEntry()).payload).zone.records.map((r) => [r.name, r.type, r.destination]),
        [[label, 'TXT', block.canary]],
      );

      // Challenges of the apex and its wildcard go to the label; any other name is 400 and stores nothing.
      const wrong = await internal('POST', `/internal/domains/${ext}/acme/challenges`, {
        records: [{ name: `_acme-challenge.www.${ext}`, value: V1 }],
      });
      assert.equal(wrong.statusCode, 400, wrong.body);
      assert.match(wrong.json().error, /answered at _acme-challenge\.acme-ext\.example\.org only/);
      const before = (await zoneEntry()).version;
      const pub = await internal('POST', `/internal/domains/${ext}/acme/challenges`, {
        records: [
          { name: `_acme-challenge.${ext}`, value: V1 },
          { name: `_acme-challenge.${ext}.`, value: V2 },
        ],
      });
      assert.equal(pub.statusCode, 200, pub.body);
      assert.deepEqual(pub.json(), {
        published: 2,
        via: 'nodes',
        watch: [
          { name: block.target, value: V1 },
          { name: block.target, value: V2 },
        ],
      });
      const entry = await zoneEntry();
      const since = await db
        .select({ version: configLog.version })
        .from(configLog)
        .where(and(gt(configLog.version, before), eq(configLog.domainId, z.id)));
      assert.equal(since.length, 1, 'one config-log entry');
      assert.deepEqual(
        decodeDomainSnapshot(entry.payload)
          .zone.records.map((r) => [r.name, r.destination, r.ttl])
          .sort(),
        [
          [label, V2, 60],
          [label, V1, 60],
        ],
      );
      // Withdrawn: the canary stays.
      const out = await internal('POST', `/internal/domains/${ext}/acme/challenges/withdraw`, {
        records: [
          { name: `_acme-challenge.${ext}`, value: V1 },
          { name: `_acme-challenge.${ext}`, value: V2 },
          { name: `_acme-challenge.${ext}`, value: block.canary.padEnd(43, 'x') },
        ],
      });
      assert.deepEqual(out.json(), { withdrawn: 2 });
      assert.deepEqual(await zoneTxts(), [[label, block.canary, 'canary']]);
      assert.equal((await zoneEntry()).removed.length, 2);

      // No tenant reaches the zone: its owner holds no key, and a domain inside it is refused.
      const inside = await cp.call(owner.key, 'POST', '/domains/', { name: `x.${zone}` });
      assert.equal(inside.statusCode, 409, inside.body);
      const [ownerRow] = rowsOf<{ email: string; active: boolean }>(
        await db.execute(
          sql`SELECT u.email, u.active FROM users u JOIN domains d ON d.owner_id = u.id WHERE d.id = ${z.id}`,
        ),
      );
      assert.deepEqual(ownerRow, { email: ZONE_OWNER_EMAIL, active: false });

      // Back to managed DNS: the canary goes; external again: a new label with a new canary.
      assert.equal((await cp.call(owner.key, 'PUT', `/domains/${ext}`, { dns_mode: 'managed' })).statusCode, 200);
      assert.deepEqual(await zoneTxts(), []);
      assert.equal((await cp.call(owner.key, 'PUT', `/domains/${ext}`, { dns_mode: 'external' })).statusCode, 200);
      const [again] = await db.select().from(domains).where(eq(domains.name, ext));
      const next = again!.sslDelegation as { target: string; canary: string };
      assert.notEqual(next.target, block.target);
      const nextLabel = next.target.slice(0, -(zone.length + 1));
      assert.deepEqual(await zoneTxts(), [[nextLabel, next.canary, 'canary']]);

      // Reconciled at start: a lost canary comes back, a record at a label no domain holds goes.
      await db.delete(dnsRecords).where(eq(dnsRecords.domainId, z.id));
      await db.insert(dnsRecords).values({ domainId: z.id, name: 'orphan', type: 'TXT', destination: 'left over' });
      assert.deepEqual(await reconcileDelegationZone(cp.app, zone), { added: 1, removed: 1 });
      assert.deepEqual(await zoneTxts(), [[nextLabel, next.canary, 'canary']]);
      assert.deepEqual(await reconcileDelegationZone(cp.app, zone), { added: 0, removed: 0 });

      // Deleted: its canary goes with it.
      assert.equal((await cp.call(owner.key, 'DELETE', `/domains/${ext}`)).statusCode, 200);
      assert.deepEqual(await zoneTxts(), []);
    },
  );
});

test('a delegation zone name a tenant holds is never written to', async (t) => {
  const zone = 'tenant-zone.example.org';
  const cp = await startTestControlPlane(t, { ACME_DELEGATION_ZONE: zone });
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const owner = await cp.user();
  await cp.domain(owner.key, zone);
  const ext = await cp.domain(owner.key, 'victim.example.net', 'external');
  const [held] = await cp.database.db.select().from(domains).where(eq(domains.name, zone));
  const records = async () => cp.database.db.select().from(dnsRecords).where(eq(dnsRecords.domainId, held!.id));
  assert.deepEqual(await records(), [], 'no canary in the tenant zone');
  const res = await cp.call(
    null,
    'POST',
    `/internal/domains/${ext}/acme/challenges`,
    { records: [{ name: `_acme-challenge.${ext}`, value: V1 }] },
    { authorization: `Bearer ${token}` },
  );
  assert.equal(res.statusCode, 400, res.body);
  assert.match(res.json().error, /held by a tenant: nothing is published there/);
  assert.deepEqual(await reconcileDelegationZone(cp.app, zone), { added: 0, removed: 0 });
  assert.deepEqual(await records(), []);
});
