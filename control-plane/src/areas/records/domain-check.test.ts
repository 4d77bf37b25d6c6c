// dns_records.domain_id without a foreign key (migration 0039): the statement trigger refuses records of a domain that
// does not exist with the key's error, a deleted domain's records go with it, and (Postgres) a delete racing an insert
// leaves no record behind. PGlite, or the Postgres server of TEST_DATABASE_URL.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { eq, sql } from 'drizzle-orm';
import { createTestDatabase } from '../../../../test/helpers/database.js';
import { openDatabase, type Db } from '../../db/index.js';
import { rowsOf } from '../../db/migrate.js';
import { dnsRecords, domains, users } from '../../db/schema.js';
import { RECORD_DEFAULTS } from './normalize.js';
import { copyRecords } from './store.js';
import type { RecordFields } from './types.js';
import type { Client as PgClient } from 'pg';

async function setup(t: TestContext) {
  const tdb = await createTestDatabase('records-domain');
  const database = await openDatabase(tdb);
  t.after(async () => {
    await database.close();
    await tdb.drop();
  });
  const [user] = await database.db.insert(users).values({ email: 'owner@example.org' }).returning();
  const add = async (name: string) =>
    (await database.db.insert(domains).values({ name, ownerId: user!.id, state: 'active' }).returning())[0]!;
  return { db: database.db, databaseUrl: tdb.databaseUrl, add };
}

const record = (i: number): RecordFields => ({
  ...RECORD_DEFAULTS,
  name: `r${i}`,
  type: 'A',
  destination: `10.0.0.${i % 250}`,
  ttl: 300,
});

/** The foreign key's error (23503, its constraint name), wherever the driver wrapped it. */
function isMissingDomain(err: unknown): boolean {
  for (let e = err as { code?: unknown; constraint?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e)
    if (e.code === '23503') return e.constraint === undefined || e.constraint === 'dns_records_domain_id_fkey';
  return false;
}

const recordCount = async (db: Db) =>
  Number(rowsOf<{ n: string }>(await db.execute(sql`SELECT count(*) AS n FROM dns_records`))[0]!.n);
const configBytes = async (db: Db, id: number) =>
  (await db.select({ b: domains.configBytes }).from(domains).where(eq(domains.id, id)))[0]?.b;

test('records of a domain that does not exist are refused with the foreign key error, by INSERT, COPY and UPDATE', async (t) => {
  const { db, add } = await setup(t);
  const d = await add('kept.example');
  await assert.rejects(
    db.insert(dnsRecords).values({ domainId: d.id + 1000, name: 'a', type: 'A', destination: '192.0.2.1' }),
    isMissingDomain,
  );
  // One statement writing into an existing and a missing domain: nothing of it stays.
  await assert.rejects(
    db.insert(dnsRecords).values([
      { domainId: d.id, name: 'a', type: 'A', destination: '192.0.2.1' },
      { domainId: d.id + 1000, name: 'b', type: 'A', destination: '192.0.2.2' },
    ]),
    isMissingDomain,
  );
  await assert.rejects(
    db.transaction((tx) =>
      copyRecords(
        tx,
        d.id + 1000,
        Array.from({ length: 50 }, (_, i) => record(i)),
      ),
    ),
    isMissingDomain,
  );
  assert.equal(await recordCount(db), 0);
  assert.equal(await configBytes(db, d.id), 0);

  const ids = await db.transaction((tx) =>
    copyRecords(
      tx,
      d.id,
      Array.from({ length: 50 }, (_, i) => record(i)),
    ),
  );
  assert.equal(ids.length, 50);
  const bytes = await configBytes(db, d.id);
  assert.ok(bytes! > 0);
  await assert.rejects(
    db
      .update(dnsRecords)
      .set({ domainId: d.id + 1000 })
      .where(eq(dnsRecords.id, ids[0]!)),
    isMissingDomain,
  );
  assert.equal(await recordCount(db), 50);
  assert.equal(await configBytes(db, d.id), bytes);
});

test("deleting domains deletes their records and only theirs; the others' config_bytes stay", async (t) => {
  const { db, add } = await setup(t);
  const [a, b, c] = [await add('a.example'), await add('b.example'), await add('c.example')];
  for (const d of [a, b, c])
    await db.transaction((tx) =>
      copyRecords(
        tx,
        d.id,
        Array.from({ length: 20 }, (_, i) => record(i)),
      ),
    );
  const bytesC = await configBytes(db, c.id);
  await db.delete(domains).where(sql`${domains.id} IN (${a.id}, ${b.id})`);
  const left = rowsOf<{ domain_id: number; n: string }>(
    await db.execute(sql`SELECT domain_id, count(*) AS n FROM dns_records GROUP BY domain_id`),
  );
  assert.deepEqual(
    left.map((r) => [r.domain_id, Number(r.n)]),
    [[c.id, 20]],
  );
  assert.equal(await configBytes(db, c.id), bytesC);
});

test('a domain deleted while records are written into it leaves none of them (Postgres, two connections)', async (t) => {
  const { databaseUrl, db, add } = await setup(t);
  if (!databaseUrl) {
    t.skip('needs TEST_DATABASE_URL (PGlite has one connection)');
    return;
  }
  const { default: pg } = await import('pg');
  const writer = new pg.Client({ connectionString: databaseUrl });
  const deleter = new pg.Client({ connectionString: databaseUrl });
  await writer.connect();
  await deleter.connect();
  try {
    await race(db, add, writer, deleter);
  } finally {
    await writer.end();
    await deleter.end();
  }
});

async function race(
  db: Db,
  add: (name: string) => Promise<{ id: number }>,
  writer: PgClient,
  deleter: PgClient,
): Promise<void> {
  const insert = (domainId: number) =>
    writer.query(
      `INSERT INTO dns_records (domain_id, name, type, destination) SELECT $1, 'r' || i, 'A', '192.0.2.1' FROM generate_series(1, 100) i`,
      [domainId],
    );

  // The insert's statement locks the domain first: the delete waits for its commit, then takes its records too.
  const first = await add('first.example');
  await writer.query('BEGIN');
  await insert(first.id);
  const deleted = deleter.query('DELETE FROM domains WHERE id = $1', [first.id]);
  await new Promise((r) => setTimeout(r, 200));
  await writer.query('COMMIT');
  await deleted;

  // The delete first: the insert waits for it, then finds no domain and fails.
  const second = await add('second.example');
  await deleter.query('BEGIN');
  await deleter.query('DELETE FROM domains WHERE id = $1', [second.id]);
  // The refusal is awaited from the start: the writer's error can arrive before the COMMIT's reply does, and a
  // rejection with no handler yet fails the test as unhandled.
  const refused = assert.rejects(insert(second.id), isMissingDomain);
  await new Promise((r) => setTimeout(r, 200));
  await deleter.query('COMMIT');
  await refused;

  assert.equal(await recordCount(db), 0);
}
