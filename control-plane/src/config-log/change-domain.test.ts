// The one write path under concurrency: each write reads the domain (and the row it merges onto) under the domain
// lock. The races are made deterministic by holding each write's transaction until every request has read what it
// reads before its transaction (the route's loadDomain), then letting them run one after the other.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane } from '../../../test/helpers/control-plane.js';
import { holdTransactions } from '../../../test/helpers/hold-transactions.js';
import type { Db } from '../db/index.js';
import { configLog, dnsRecords, domains } from '../db/schema.js';

/**
 * Starts each request once the previous one holds its transaction (so they reach the write path in this order),
 * then runs the held transactions one after the other and returns the answers.
 */
async function oneAfterTheOther(
  db: Db,
  starts: (() => Promise<LightMyRequestResponse>)[],
  between?: () => Promise<void>,
): Promise<LightMyRequestResponse[]> {
  const hold = holdTransactions(db);
  try {
    const requests: Promise<LightMyRequestResponse>[] = [];
    for (const start of starts) {
      requests.push(start());
      await hold.waitFor(requests.length, requests);
    }
    hold.disarm();
    await between?.();
    await hold.releaseInOrder();
    return await Promise.all(requests);
  } finally {
    hold.restore();
  }
}

test('concurrent writes of one domain', async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const owner = await cp.user();

  await t.test('two concurrent PUTs of a rule changing different fields both survive', async () => {
    const name = await cp.domain(owner.key, 'rule-race.example.org');
    const [dom] = await db.select().from(domains).where(eq(domains.name, name));
    const [rec] = await db
      .insert(dnsRecords)
      .values({ domainId: dom!.id, name: 'www', type: 'A', destination: '192.0.2.10', proxied: true })
      .returning();
    const base = `/domains/${name}/rules/origin_route/`;
    const created = await cp.call(owner.key, 'POST', base, { address: '8.8.8.8', record_id: rec!.id });
    assert.equal(created.statusCode, 200, created.body);
    const url = `${base}${created.json<{ id: number }>().id}`;

    const answers = await oneAfterTheOther(db, [
      () => cp.call(owner.key, 'PUT', url, { priority: 7 }),
      () => cp.call(owner.key, 'PUT', url, { address: '8.8.4.4' }),
    ]);
    assert.deepEqual(
      answers.map((a) => a.statusCode),
      [200, 200],
    );
    const second = answers[1]!.json<{ priority: number; address: string }>();
    assert.deepEqual([second.priority, second.address], [7, '8.8.4.4'], 'the second answer shows both changes');
    const stored = (await cp.call(owner.key, 'GET', url)).json<{ priority: number; address: string }>();
    assert.deepEqual([stored.priority, stored.address], [7, '8.8.4.4']);
  });

  await t.test(
    'two concurrent domain PUTs both take effect: the second is judged on what the first wrote',
    async () => {
      const name = await cp.domain(owner.key, 'domain-race.example.org');
      const url = `/domains/${name}`;

      const [toExternal, backToManaged] = await oneAfterTheOther(db, [
        () => cp.call(owner.key, 'PUT', url, { dns_mode: 'external' }),
        () => cp.call(owner.key, 'PUT', url, { dns_mode: 'managed', cache_l2_ttl_days: 5 }),
      ]);

      type Detail = { dns_mode: string; state: string; cache_l2_ttl_days: number };
      assert.equal(toExternal!.json<Detail>().dns_mode, 'external', toExternal!.body);
      const second = backToManaged!.json<Detail>();
      assert.deepEqual([second.dns_mode, second.state, second.cache_l2_ttl_days], ['managed', 'pending', 5]);
      const stored = (await cp.call(owner.key, 'GET', url)).json<Detail>();
      assert.deepEqual([stored.dns_mode, stored.state, stored.cache_l2_ttl_days], ['managed', 'pending', 5]);
    },
  );

  await t.test('a record write racing a domain disable is refused and stores nothing', async () => {
    const name = await cp.domain(owner.key, 'disable-race.example.org');
    const [dom] = await db.select().from(domains).where(eq(domains.name, name));
    const token = ensureNodeToken(cp.config.dataDir);
    const latestEntry = async () =>
      (await db.select({ version: configLog.version }).from(configLog).where(eq(configLog.domainName, name)))
        .map((e) => Number(e.version))
        .reduce((a, b) => Math.max(a, b), 0);
    let afterDisable = 0;

    // The record write has read the domain (active) and waits to begin its transaction while the operator disables it.
    const [write] = await oneAfterTheOther(
      db,
      [
        () =>
          cp.call(owner.key, 'POST', `/domains/${name}/records/`, {
            name: 'www',
            type: 'A',
            destination: '192.0.2.20',
          }),
      ],
      async () => {
        const disabled = await cp.app.inject({
          method: 'POST',
          url: `/internal/domains/${name}/state`,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          payload: JSON.stringify({ state: 'disabled' }),
        });
        assert.equal(disabled.statusCode, 200, disabled.body);
        afterDisable = await latestEntry();
      },
    );

    assert.deepEqual([write!.statusCode, write!.json()], [409, { error: 'domain is disabled' }]);
    assert.deepEqual(await db.select().from(dnsRecords).where(eq(dnsRecords.domainId, dom!.id)), []);
    assert.equal(await latestEntry(), afterDisable, 'nothing appended after the disable');
  });
});
