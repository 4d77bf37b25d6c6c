// ConfigLog against a real database: snapshots, deltas, serials, the size limit, compaction, tombstones, ordering.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { eq, sql } from 'drizzle-orm';
import { applyDeltas, decodeDomainSnapshot } from '@platform/shared/config';
import { prng } from '@platform/shared/testing/prng';
import { createTestDatabase } from '../../../test/helpers/database.js';
import { openDatabase, type Db } from '../db/index.js';
import { rowsOf } from '../db/migrate.js';
import { dnsRecords, domains, rules, users } from '../db/schema.js';
import { isApiError } from '../errors.js';
import { ConfigLog } from './index.js';
import { WHOLE_DELTA } from './compacted.js';

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

test('a delta carries the domain-level fields and only what the change wrote; squashing the log gives the whole snapshot', async (t) => {
  const { db, userId, log } = await setup(t);
  const d = await addDomain(db, userId, 'delta.example', { nsSetIndex: 1 });
  await db.transaction((tx) => log.appendChange(tx, d.id, { whole: true }));
  const random = prng(8);
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
  const recordIds: number[] = [];
  const ruleIds: number[] = [];
  for (let i = 0; i < 60; i++) {
    await db.transaction(async (tx) => {
      const op = random();
      if (op < 0.4 || recordIds.length === 0) {
        const rows = await tx
          .insert(dnsRecords)
          .values([
            { domainId: d.id, name: `h${i}`, type: 'A', destination: `192.0.2.${i % 250}` },
            { domainId: d.id, name: `t${i}`, type: 'TXT', destination: `v=${i}` },
          ])
          .returning({ id: dnsRecords.id });
        recordIds.push(...rows.map((r) => r.id));
        await log.appendChange(tx, d.id, { upsertedRecords: rows.map((r) => r.id) });
      } else if (op < 0.6) {
        const id = pick(recordIds);
        await tx
          .update(dnsRecords)
          .set({ ttl: 60 + i })
          .where(eq(dnsRecords.id, id));
        await log.appendChange(tx, d.id, { upsertedRecords: [id] });
      } else if (op < 0.7) {
        const id = recordIds.splice(Math.floor(random() * recordIds.length), 1)[0]!;
        await tx.delete(dnsRecords).where(eq(dnsRecords.id, id));
        await log.appendChange(tx, d.id, { removedRecords: [id] });
      } else if (op < 0.85 || ruleIds.length === 0) {
        const [r] = await tx
          .insert(rules)
          .values({
            domainId: d.id,
            type: 'drop',
            priority: i % 3,
            filters: { hosts: [`h${i}.delta.example`] },
            fields: {},
          })
          .returning({ id: rules.id });
        ruleIds.push(r!.id);
        await log.appendChange(tx, d.id, { upsertedRules: [r!.id] });
      } else if (op < 0.93) {
        const id = ruleIds.splice(Math.floor(random() * ruleIds.length), 1)[0]!;
        await tx.delete(rules).where(eq(rules.id, id));
        await log.appendChange(tx, d.id, { removedRules: [id] });
      } else {
        await tx
          .update(domains)
          .set({ state: pick(['active', 'disabled']), cacheL2TtlDays: 1 + (i % 7) })
          .where(eq(domains.id, d.id));
        await log.appendChange(tx, d.id, { domain: true });
      }
    });
  }
  // A record written and deleted in the same change is announced as removed; an empty change appends nothing.
  const head = await log.head(db);
  assert.equal(await db.transaction((tx) => log.appendChange(tx, d.id, {})), null);
  await db.transaction(async (tx) => {
    const [row] = await tx
      .insert(dnsRecords)
      .values({ domainId: d.id, name: 'brief', type: 'A', destination: '192.0.2.7' })
      .returning({ id: dnsRecords.id });
    await tx.delete(dnsRecords).where(eq(dnsRecords.id, row!.id));
    await log.appendChange(tx, d.id, { upsertedRecords: [row!.id] });
  });
  const entries = await log.readAfter(db, 0, 1000);
  assert.equal(entries.length, 62);
  assert.ok(entries.at(-1)!.removedRecordIds.length === 1 && entries.at(-1)!.version > head);
  const [base, ...deltas] = entries;
  assert.equal(base!.delta, false);
  assert.ok(deltas.every((e) => e.delta));
  const decoded = deltas.map((e) => ({
    version: e.version,
    domain: e.domainName,
    deleted: false,
    delta: true,
    snapshot: decodeDomainSnapshot(e.payload),
    removedRecordIds: e.removedRecordIds,
    removedRuleIds: e.removedRuleIds,
  }));
  assert.ok(
    decoded.every((e) => e.snapshot.zone.records.length <= 2),
    'a delta holds only the written records',
  );
  assert.deepEqual(
    decoded.map((e) => e.snapshot.zone.serial),
    decoded.map((_, i) => decoded[0]!.snapshot.zone.serial + i),
  );
  const squashed = applyDeltas(decodeDomainSnapshot(base!.payload), decoded);
  await db.transaction((tx) => log.appendSnapshot(tx, d.id));
  const [fresh] = await log.readAfter(db, entries.at(-1)!.version, 10);
  const whole = decodeDomainSnapshot(fresh!.payload);
  // The fresh snapshot bumped the serial once more; everything else is identical.
  assert.equal(whole.zone.serial, squashed.zone.serial + 1);
  assert.deepEqual(
    { ...squashed, zone: { ...squashed.zone, serial: 0 }, ruleSet: { ...squashed.ruleSet, version: 0 } },
    { ...whole, zone: { ...whole.zone, serial: 0 }, ruleSet: { ...whole.ruleSet, version: 0 } },
  );
  assert.equal(whole.zone.records.length, recordIds.length);
  assert.equal(whole.ruleSet.rules.length, ruleIds.length);
});

test('a write past the per-domain config limit answers 400 and stores nothing; removals are always accepted', async (t) => {
  const { db, userId } = await setup(t);
  const log = new ConfigLog(NS_SETS, { maxDomainConfigBytes: 20_000 });
  const d = await addDomain(db, userId, 'limit.example');
  const txt = (name: string, size: number) => ({ domainId: d.id, name, type: 'TXT', destination: 'x'.repeat(size) });
  const write = (values: Array<ReturnType<typeof txt>>) =>
    db.transaction(async (tx) => {
      const rows = await tx.insert(dnsRecords).values(values).returning({ id: dnsRecords.id });
      return log.appendChange(tx, d.id, { upsertedRecords: rows.map((r) => r.id) });
    });
  await write([txt('a', 9_000)]);
  const head = await log.head(db);
  await assert.rejects(write([txt('b', 9_000), txt('c', 9_000)]), (err: unknown) => {
    assert.ok(isApiError(err));
    assert.equal(err.statusCode, 400);
    assert.match(
      err.message,
      /^the domain's configuration would be \d+ bytes, above the limit of 20000 bytes per domain/,
    );
    return true;
  });
  assert.equal(await log.head(db), head, 'nothing appended');
  assert.equal((await db.select().from(dnsRecords)).length, 1, 'nothing stored');
  // The triggers' count matches a recount of every record and rule.
  const [{ bytes }] = rowsOf<{ bytes: string }>(
    await db.execute(
      sql`SELECT sum(dns_record_config_bytes(name, type, destination, scheme, host_header_mode, host_header)) AS bytes FROM dns_records`,
    ),
  ) as [{ bytes: string }];
  const [row] = await db.select({ configBytes: domains.configBytes }).from(domains).where(eq(domains.id, d.id));
  assert.equal(row!.configBytes, Number(bytes));
  // A lower limit leaves the domain above it: it can still shrink.
  const strict = new ConfigLog(NS_SETS, { maxDomainConfigBytes: 1_000 });
  const [rec] = await db.select({ id: dnsRecords.id }).from(dnsRecords);
  await db
    .transaction(async (tx) => {
      await tx
        .update(dnsRecords)
        .set({ destination: 'y'.repeat(8_000) })
        .where(eq(dnsRecords.id, rec!.id));
      await assert.rejects(strict.appendChange(tx, d.id, { upsertedRecords: [rec!.id] }), /above the limit of 1000/);
      tx.rollback();
    })
    .catch(() => undefined);
  await db.transaction(async (tx) => {
    await tx.delete(dnsRecords).where(eq(dnsRecords.id, rec!.id));
    await strict.appendChange(tx, d.id, { removedRecords: [rec!.id] });
  });
  const [after] = await db.select({ configBytes: domains.configBytes }).from(domains).where(eq(domains.id, d.id));
  assert.equal(after!.configBytes, 0);
});

test('compaction keeps one snapshot per domain at the version given; pruned tombstones raise the horizon', async (t) => {
  const { db, userId, log } = await setup(t);
  const a = await addDomain(db, userId, 'a.example');
  const b = await addDomain(db, userId, 'b.example');
  const va1 = await db.transaction((tx) => log.appendSnapshot(tx, a.id));
  const vb1 = await db.transaction((tx) => log.appendSnapshot(tx, b.id));
  const va2 = await db.transaction((tx) => log.appendChange(tx, a.id, { domain: true }));
  const vbDel = await db.transaction((tx) => log.appendDeletion(tx, b));
  const squashed = new Uint8Array([1, 2, 3]);
  assert.equal(await log.compact(db, 'a.example', va2!, squashed), true);
  assert.equal(await log.compact(db, 'b.example', vbDel), true);
  const rows = await log.readAfter(db, 0, 100);
  assert.deepEqual(
    rows.map((e) => [e.version, e.domainName, e.deleted, e.delta, [...e.payload]]),
    [
      [va2, 'a.example', false, false, [1, 2, 3]],
      [vbDel, 'b.example', true, false, []],
    ],
  );
  assert.ok(va1 < vb1);
  // Compacting to a version another process already compacted past does nothing.
  assert.equal(await log.compact(db, 'a.example', va1, squashed), false);
  assert.equal(await log.horizon(db), 0);
  assert.equal(await log.pruneTombstones(db, 60_000), 0, 'a young tombstone is kept');
  assert.equal(await log.pruneTombstones(db, 60_000, Date.now() + 120_000), vbDel);
  assert.deepEqual(
    (await log.readAfter(db, 0, 100)).map((e) => e.version),
    [va2],
  );
  assert.equal(await log.horizon(db), vbDel);

  // A delta that is already the whole state becomes a snapshot as it is, its payload untouched.
  const c = await addDomain(db, userId, 'c.example');
  await db.transaction((tx) => log.appendSnapshot(tx, c.id));
  const vc2 = await db.transaction((tx) => log.appendChange(tx, c.id, { domain: true }));
  const delta = (await log.readAfter(db, va2!, 100)).find((e) => e.version === vc2)!;
  assert.equal(delta.delta, true);
  assert.equal(await log.compact(db, 'c.example', vc2!, WHOLE_DELTA), true);
  const kept = (await log.readAfter(db, va2!, 100)).filter((e) => e.domainName === 'c.example');
  assert.deepEqual(
    kept.map((e) => [e.version, e.delta, Buffer.from(e.payload).equals(delta.payload)]),
    [[vc2, false, true]],
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

test('a committed entry passed to nudge is handed from memory without a query; after a gap (another process appended) the database is read', async (t) => {
  const { db, userId, log } = await setup(t);
  log.onNudge(() => undefined);
  const other = new ConfigLog(NS_SETS); // a second control-plane process on the same database
  const d = await addDomain(db, userId, 'memory.example');
  const v1 = (await db.transaction((tx) => log.appendChange(tx, d.id, { domain: true })))!;
  log.nudge(v1);
  // No database at all: the entry can only come from memory, and equals the stored one.
  const noDatabase = new Proxy({} as Db, {
    get() {
      throw new Error('readAfter queried the database');
    },
  });
  const [fromMemory] = await log.readAfter(noDatabase, 0, 10);
  const [stored] = await other.readAfter(db, 0, 10);
  assert.deepEqual(
    { ...fromMemory!, payload: Buffer.from(fromMemory!.payload).toString('hex') },
    { ...stored!, payload: Buffer.from(stored!.payload).toString('hex') },
  );
  const v2 = (await db.transaction((tx) => other.appendChange(tx, d.id, { domain: true })))!;
  other.nudge(v2);
  const v3 = (await db.transaction((tx) => log.appendDeletion(tx, d)))!;
  log.nudge(v3);
  assert.deepEqual(
    (await log.readAfter(db, v1, 10)).map((e) => [e.version, e.deleted]),
    [
      [v2, false],
      [v3, true],
    ],
  );
  // Read once, an entry is no longer kept: a later read goes to the database.
  await assert.rejects(log.readAfter(noDatabase, v1, 10), /queried the database/);
});
