// ConfigLog against a real database: snapshots, serials, tombstones, ordering and the catch-up read.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { decodeDomainSnapshot } from '@platform/shared/config';
import { createTestDatabase } from '../../../test/helpers/database.js';
import { openDatabase, type Db } from '../db/index.js';
import { dnsRecords, domains, users } from '../db/schema.js';
import { ConfigLog } from './index.js';

const NS_SETS = [
  ['ns1.platform.test', 'ns2.platform.test'],
  ['ns3.platform.test', 'ns4.platform.test'],
];

async function setup(t: TestContext) {
  const tdb = await createTestDatabase('config-log');
  const database = await openDatabase(tdb);
  t.after(async () => {
    await database.close();
    await tdb.drop();
  });
  const [user] = await database.db.insert(users).values({ email: 'owner@example.org' }).returning();
  return { db: database.db, userId: user!.id, log: new ConfigLog(NS_SETS) };
}

async function addDomain(db: Db, ownerId: number, name: string, extra: Partial<typeof domains.$inferInsert> = {}) {
  const [d] = await db
    .insert(domains)
    .values({ name, ownerId, state: 'active', ...extra })
    .returning();
  return d!;
}

test('appendSnapshot writes the whole zone with SOA, NS set, settings and a serial that increases', async (t) => {
  const { db, userId, log } = await setup(t);
  const until = new Date(Date.now() + 3_600_000);
  const d = await addDomain(db, userId, 'example.org', { nsSetIndex: 1, developerModeUntil: until, cacheL2TtlDays: 5 });
  await db.insert(dnsRecords).values([
    { domainId: d.id, name: '@', type: 'MX', destination: 'mail.example.org', mxPriority: 10, ttl: 300 },
    { domainId: d.id, name: 'www', type: 'A', destination: '192.0.2.1', proxied: true },
  ]);
  const v1 = await db.transaction((tx) => log.appendSnapshot(tx, d.id));
  const v2 = await db.transaction((tx) => log.appendSnapshot(tx, d.id));
  assert.ok(v2 > v1);
  const entries = await log.readAfter(db, 0, 10);
  assert.deepEqual(
    entries.map((e) => e.version),
    [v1, v2],
  );
  const s1 = decodeDomainSnapshot(entries[0]!.payload);
  const s2 = decodeDomainSnapshot(entries[1]!.payload);
  assert.ok(s2.zone.serial > s1.zone.serial);
  assert.equal(s2.name, 'example.org');
  assert.deepEqual(s2.zone.nameservers, NS_SETS[1]);
  assert.equal(s2.zone.soaMname, 'ns3.platform.test');
  assert.equal(s2.zone.soaRname, 'hostmaster.example.org');
  assert.deepEqual(
    [s2.zone.soaRefresh, s2.zone.soaRetry, s2.zone.soaExpire, s2.zone.soaMinimum, s2.zone.soaTtl],
    [10000, 2400, 604800, 300, 3600],
  );
  assert.deepEqual(
    s2.zone.records.map((r) => [r.name, r.type, r.destination, r.mxPriority, r.ttl, r.proxied]),
    [
      ['@', 'MX', 'mail.example.org', 10, 300, false],
      ['www', 'A', '192.0.2.1', 0, 120, true],
    ],
  );
  const { developerMode, developerModeExpiresAtMs, cacheL2TtlDays, cacheCapMb } = s2.settings;
  assert.deepEqual(
    { developerMode, developerModeExpiresAtMs, cacheL2TtlDays, cacheCapMb },
    { developerMode: true, developerModeExpiresAtMs: until.getTime(), cacheL2TtlDays: 5, cacheCapMb: 100 },
  );
  assert.deepEqual(s2.ruleSet.rules, []);
});

test('a domain without a matched set serves the first set; a rolled-back change appends nothing', async (t) => {
  const { db, userId, log } = await setup(t);
  const d = await addDomain(db, userId, 'example.net');
  await db
    .transaction(async (tx) => {
      await tx.insert(dnsRecords).values({ domainId: d.id, name: 'a', type: 'A', destination: '192.0.2.9' });
      await log.appendSnapshot(tx, d.id);
      tx.rollback();
    })
    .catch(() => undefined);
  assert.equal(await log.head(db), 0);
  await db.transaction((tx) => log.appendSnapshot(tx, d.id));
  const [entry] = await log.readAfter(db, 0, 10);
  const s = decodeDomainSnapshot(entry!.payload);
  assert.deepEqual(s.zone.nameservers, NS_SETS[0]);
  assert.equal(s.zone.records.length, 0, 'the rolled-back record is not in the snapshot');
  assert.equal(s.settings.developerMode, false);
});

test('catch-up returns only the latest entry per domain, in version order, including tombstones', async (t) => {
  const { db, userId, log } = await setup(t);
  const a = await addDomain(db, userId, 'a.example');
  const b = await addDomain(db, userId, 'b.example');
  const va1 = await db.transaction((tx) => log.appendSnapshot(tx, a.id));
  const vb1 = await db.transaction((tx) => log.appendSnapshot(tx, b.id));
  const va2 = await db.transaction((tx) => log.appendSnapshot(tx, a.id));
  const vbDel = await db.transaction((tx) => log.appendDeletion(tx, b));
  const head = await log.head(db);
  assert.equal(head, vbDel);
  const latest = await log.readLatestAfter(db, 0, head, 100);
  assert.deepEqual(
    latest.map((e) => [e.version, e.domainName, e.deleted]),
    [
      [va2, 'a.example', false],
      [vbDel, 'b.example', true],
    ],
  );
  assert.equal(latest[1]!.payload.length, 0);
  // A node that applied up to va1 still receives both domains; one that applied va2 receives only the tombstone.
  assert.deepEqual(
    (await log.readLatestAfter(db, va1, head, 100)).map((e) => e.version),
    [va2, vbDel],
  );
  assert.deepEqual(
    (await log.readLatestAfter(db, va2, head, 100)).map((e) => e.version),
    [vbDel],
  );
  // The upper bound hides later entries and makes earlier ones the latest within it.
  assert.deepEqual(
    (await log.readLatestAfter(db, 0, vb1, 100)).map((e) => e.version),
    [va1, vb1],
  );
  // Paging by limit then resuming from the last version returned gives the same sequence.
  const first = await log.readLatestAfter(db, 0, head, 1);
  const rest = await log.readLatestAfter(db, first[0]!.version, head, 100);
  assert.deepEqual(
    [...first, ...rest].map((e) => e.version),
    [va2, vbDel],
  );
});

test('concurrent appends commit in version order and every one gets its own serial', async (t) => {
  const { db, userId, log } = await setup(t);
  const d = await addDomain(db, userId, 'busy.example');
  const versions = await Promise.all(
    Array.from({ length: 10 }, () => db.transaction((tx) => log.appendSnapshot(tx, d.id))),
  );
  assert.equal(new Set(versions).size, 10);
  const entries = await log.readAfter(db, 0, 100);
  const serials = entries.map((e) => decodeDomainSnapshot(e.payload).zone.serial);
  assert.deepEqual(
    serials,
    [...serials].sort((x, y) => x - y),
  );
  assert.equal(new Set(serials).size, 10);
  let nudged = 0;
  const off = log.onNudge(() => nudged++);
  log.nudge();
  off();
  log.nudge();
  assert.equal(nudged, 1);
});

test('with a hub listening, reads serve the payloads kept in memory, identical to the stored ones, never a rolled-back one', async (t) => {
  const { db, userId, log } = await setup(t);
  log.onNudge(() => undefined);
  const d = await addDomain(db, userId, 'cached.example');
  await db
    .transaction(async (tx) => {
      await tx.insert(dnsRecords).values({ domainId: d.id, name: 'gone', type: 'A', destination: '192.0.2.66' });
      await log.appendSnapshot(tx, d.id);
      tx.rollback();
    })
    .catch(() => undefined);
  const v1 = await db.transaction((tx) => log.appendSnapshot(tx, d.id));
  const v2 = await db.transaction((tx) => log.appendDeletion(tx, d));
  const fromMemory = await log.readAfter(db, 0, 10);
  const fromDatabase = await new ConfigLog(NS_SETS).readAfter(db, 0, 10);
  assert.deepEqual(
    fromMemory.map((e) => e.version),
    [v1, v2],
  );
  assert.deepEqual(
    fromMemory.map((e) => [e.version, e.deleted, Buffer.from(e.payload).toString('hex')]),
    fromDatabase.map((e) => [e.version, e.deleted, Buffer.from(e.payload).toString('hex')]),
  );
  assert.equal(decodeDomainSnapshot(fromMemory[0]!.payload).zone.records.length, 0);
  // A second read (after the memory copies were dropped) still returns the same entries.
  assert.deepEqual(
    (await log.readAfter(db, 0, 10)).map((e) => Buffer.from(e.payload).toString('hex')),
    fromDatabase.map((e) => Buffer.from(e.payload).toString('hex')),
  );
});
