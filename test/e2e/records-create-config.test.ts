// A single record create reads the domain's config in its own insert statement (records/store.ts createWithContext)
// instead of the config log reading it again: its entry must be exactly what the log's own read gives, and the
// per-domain size limit must count the new record although the insert's trigger adds it only after that statement.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { desc, eq } from 'drizzle-orm';
import { decodeDomainSnapshot, encodeDomainSnapshot } from '@platform/shared/config';
import { configLog, domains } from '../../control-plane/src/db/schema.js';
import { readDomainConfig } from '../../control-plane/src/config-log/snapshot.js';
import { recordsFixture } from './records-helpers.js';

test('a create appends the same entry the config log would read itself', async (t) => {
  const f = await recordsFixture(t, 'create-config.example');
  const { cp, key, url } = f;
  const db = cp.database.db;
  const latest = async () =>
    (
      await db
        .select()
        .from(configLog)
        .where(eq(configLog.domainId, f.domainId))
        .orderBy(desc(configLog.version))
        .limit(1)
    )[0]!;
  const serial = async () =>
    (await db.select({ s: domains.zoneSerial }).from(domains).where(eq(domains.id, f.domainId)))[0]!.s;
  assert.equal(
    (await cp.call(key, 'POST', url(), { name: 'other', type: 'A', destination: '192.0.2.9' })).statusCode,
    200,
  );
  const before = await serial();

  for (const body of [
    { name: 'www', type: 'A', destination: '192.0.2.1', ttl: 300, proxied: false },
    { name: '@', type: 'MX', destination: 'mail.example.net', mx_priority: 10 },
    { name: 'txt', type: 'TXT', destination: 'v=spf1 -all', comment: 'é' },
  ]) {
    const res = await cp.call(key, 'POST', url(), body);
    assert.equal(res.statusCode, 200, res.body);
    const id = res.json().id as number;
    const entry = await latest();
    assert.equal(entry.delta, true);
    assert.deepEqual(entry.removedRecordIds.map(Number), []);
    const own = await db.transaction(async (tx) => {
      const config = await readDomainConfig(tx, f.domainId, cp.config.nsSets, [id], [], {
        bumpSerial: false,
        vault: cp.app.configLog.vault,
      });
      return config!.snapshot;
    });
    const appended = decodeDomainSnapshot(entry.payload);
    assert.deepEqual(appended, decodeDomainSnapshot(encodeDomainSnapshot(own)));
    assert.equal(appended.zone!.records.length, 1);
    assert.equal(Number(appended.zone!.records[0]!.id), id);
  }
  assert.equal(await serial(), before + 3, 'each create bumps the serial once');
});

test('a create past the per-domain config limit answers 400 and stores nothing', async (t) => {
  const f = await recordsFixture(t, 'create-limit.example', { DOMAIN_CONFIG_MAX_BYTES: '2048' });
  const { cp, key, url } = f;
  const db = cp.database.db;
  const state = async () =>
    (
      await db.select({ s: domains.zoneSerial, b: domains.configBytes }).from(domains).where(eq(domains.id, f.domainId))
    )[0]!;
  const fits = await cp.call(key, 'POST', url(), { name: 'a', type: 'TXT', destination: 'x'.repeat(900) });
  assert.equal(fits.statusCode, 200, fits.body);
  const before = { ...(await state()), entries: await f.logCount() };
  // The stored size is under the limit; only with the new record counted is it above.
  assert.ok(Number(before.b) < 2048 && Number(before.b) + 900 > 2048, `config_bytes ${before.b}`);
  const res = await cp.call(key, 'POST', url(), { name: 'b', type: 'TXT', destination: 'y'.repeat(900) });
  assert.equal(res.statusCode, 400, res.body);
  assert.match(
    res.json().error,
    /^the domain's configuration would be \d+ bytes, above the limit of 2048 bytes per domain/,
  );
  assert.deepEqual({ ...(await state()), entries: await f.logCount() }, before, 'serial, size and log unchanged');
  assert.equal((await cp.call(key, 'GET', url())).json().length, 1, 'nothing stored');
});
