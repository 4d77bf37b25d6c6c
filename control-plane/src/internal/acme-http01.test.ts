// The /internal ACME http-01 routes in-process: key authorizations are published into the domain's snapshot through
// the config log (one entry each way) and withdrawn; a retried publish or withdraw appends nothing; every bad hostname,
// token, key authorization or size is 400 and stores nothing. The plan of an external domain without the
// ssl_delegation CNAME asks for http-01 over its proxied names (no wildcard); with the delegation in place it does not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desc, eq } from 'drizzle-orm';
import { decodeDomainSnapshot } from '@platform/shared/config';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../test/helpers/control-plane.js';
import { configLog, domainChecks, domains } from '../db/schema.js';
import { acmePlan, sweepCertificates } from './acme-plan.js';
import { http01Hostnames } from './acme-http01-store.js';

const TOKEN = 'evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA';
const THUMB = 'nP1qzpXGymHBrUEepNY9HCsQk7K8KhOypzEt62jcerQ';
const ch = (hostname: string, token = TOKEN, key_authorization = `${token}.${THUMB}`) => ({
  hostname,
  token,
  key_authorization,
});

test('internal ACME http-01 routes and plan', async (t) => {
  const cp = await startTestControlPlane(t, { ACME_DIRECTORY_URL: 'https://ca.test/dir' });
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const internal = (url: string, body?: unknown) =>
    cp.call(null, 'POST', url, body, { authorization: `Bearer ${token}` });
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'http01.example.org', 'external');
  const [dom] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const head = async () =>
    (
      await cp.database.db
        .select({ version: configLog.version, payload: configLog.payload })
        .from(configLog)
        .where(eq(configLog.domainId, dom.id))
        .orderBy(desc(configLog.version))
        .limit(1)
    )[0]!;
  const publish = (list: unknown[]) => internal(`/internal/domains/${name}/acme/http-challenges`, { challenges: list });
  const withdraw = (list: unknown[]) =>
    internal(`/internal/domains/${name}/acme/http-challenges/withdraw`, { challenges: list });

  await t.test('published in one config-log entry, withdrawn in another', async () => {
    const before = (await head()).version;
    const res = await publish([ch(`www.${name}`), ch(`${name}.`, 'x'.repeat(43))]);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { published: 2 });
    const entry = await head();
    assert.equal(entry.version, before + 1);
    const carried = decodeDomainSnapshot(entry.payload).acmeHttpChallenges!.map((c) => [c.hostname, c.token]);
    assert.deepEqual(carried.sort(), [
      [name, 'x'.repeat(43)],
      [`www.${name}`, TOKEN],
    ]);
    // Again (a retried activity): nothing new, no entry.
    assert.deepEqual((await publish([ch(`www.${name}`)])).json(), { published: 0 });
    assert.equal((await head()).version, before + 1);

    const out = await withdraw([ch(`www.${name}`), ch(`${name}`, 'x'.repeat(43)), ch(`api.${name}`)]);
    assert.deepEqual(out.json(), { withdrawn: 2 });
    const after = await head();
    assert.equal(after.version, before + 2);
    assert.deepEqual(decodeDomainSnapshot(after.payload).acmeHttpChallenges, []);
    assert.deepEqual((await withdraw([ch(`www.${name}`)])).json(), { withdrawn: 0 });
    assert.equal((await head()).version, before + 2);
  });

  await t.test('bad hostnames, tokens, key authorizations and sizes are 400 and store nothing', async () => {
    const before = (await head()).version;
    const bad: Array<[string, unknown[]]> = [
      ['outside the domain', [ch('www.other.example.net')]],
      ['suffix trick', [ch(`evil${name}`)]],
      ['wildcard', [ch(`*.${name}`)]],
      ['traversal token', [ch(`www.${name}`, '../../../../etc/passwd')]],
      ['slash in token', [ch(`www.${name}`, `${TOKEN.slice(0, 20)}/${TOKEN.slice(21)}`)]],
      ['dot in token', [ch(`www.${name}`, `${TOKEN.slice(0, 20)}.${TOKEN.slice(21)}`)]],
      ['percent in token', [ch(`www.${name}`, `${TOKEN.slice(0, 20)}%2f${TOKEN.slice(23)}`)]],
      ['short token', [ch(`www.${name}`, 'abc')]],
      ['long token', [ch(`www.${name}`, 'a'.repeat(129))]],
      ['other token in key authorization', [ch(`www.${name}`, TOKEN, `${'y'.repeat(43)}.${THUMB}`)]],
      ['short thumbprint', [ch(`www.${name}`, TOKEN, `${TOKEN}.${THUMB.slice(1)}`)]],
      ['html in key authorization', [ch(`www.${name}`, TOKEN, `${TOKEN}.<script>alert(1)</script>aaaaaaaaaaaaaaaa`)]],
      ['empty list', []],
      ['over 100', Array.from({ length: 101 }, (_, i) => ch(`n${i}.${name}`))],
    ];
    for (const [why, list] of bad) {
      const res = await publish(list);
      assert.equal(res.statusCode, 400, `${why}: ${res.body}`);
      assert.equal(typeof res.json().error, 'string');
    }
    // A hostname of 10 kB is refused by the schema before any work.
    assert.equal((await publish([ch(`${'a'.repeat(10_000)}.${name}`)])).statusCode, 400);
    assert.equal((await head()).version, before);
    // At most 100 held per domain at a time (across calls).
    const first = await publish(Array.from({ length: 100 }, (_, i) => ch(`n${i}.${name}`)));
    assert.equal(first.statusCode, 200, first.body);
    const more = await publish([ch(`extra.${name}`)]);
    assert.equal(more.statusCode, 400);
    assert.match(more.json().error, /at most 100/);
    await withdraw(Array.from({ length: 100 }, (_, i) => ch(`n${i}.${name}`)));
    assert.deepEqual(decodeDomainSnapshot((await head()).payload).acmeHttpChallenges, []);
    // Another domain's node-token caller still names the domain: a domain that does not exist is 404.
    assert.equal(
      (
        await internal('/internal/domains/nope.example.org/acme/http-challenges', {
          challenges: [ch('nope.example.org')],
        })
      ).statusCode,
      404,
    );
  });

  await t.test('the plan: http-01 for an external domain without delegation, over its proxied names', async () => {
    await cp.database.db.update(domains).set({ state: 'active' }).where(eq(domains.id, dom.id));
    for (const [rname, proxied] of [
      ['www', true],
      ['@', true],
      ['*.dev', true],
      ['mail', false],
    ] as const) {
      const res = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, {
        name: rname,
        type: 'A',
        destination: '192.0.2.10',
        proxied,
      });
      assert.equal(res.statusCode, 200, res.body);
    }
    const [row] = await cp.database.db.select().from(domains).where(eq(domains.id, dom.id));
    const plan = await acmePlan(cp.app, row!);
    assert.equal(plan.challenge, 'http-01');
    assert.deepEqual([...plan.hostnames].sort(), [name, `www.${name}`]);
    assert.deepEqual(
      (await sweepCertificates(cp.app)).map((w) => w.workflowId),
      [`certificates:${name}`],
    );
    // Verified by the TXT token: that says nothing of the CNAME, still http-01.
    await cp.database.db
      .insert(domainChecks)
      .values({ domainId: dom.id, kind: 'delegation', lastAt: new Date(0), result: { ok: true, method: 'txt' } });
    assert.equal((await acmePlan(cp.app, row!)).challenge, 'http-01');
    // A passed delegation check: the ssl_delegation CNAME is in place, dns-01 through it (apex and wildcard).
    await cp.database.db
      .update(domainChecks)
      .set({ result: { ok: true } })
      .where(eq(domainChecks.domainId, dom.id));
    const delegated = await acmePlan(cp.app, row!);
    assert.equal(delegated.challenge, 'delegation');
    assert.deepEqual([...delegated.hostnames].sort(), [`*.${name}`, name]);
  });
});

test('http01Hostnames: no wildcards, no repeats, at most 100', () => {
  assert.deepEqual(http01Hostnames(['a.example.org', '*.example.org', 'a.example.org', '*.dev.example.org']), [
    'a.example.org',
  ]);
  assert.equal(http01Hostnames(Array.from({ length: 150 }, (_, i) => `n${i}.example.org`)).length, 100);
});
