// sendBehind on the database the control plane opens (PGlite, or TEST_DATABASE_URL's Postgres in pipeline mode):
// the second statement is queued before the first has answered, runs after it (it sees what the first did and
// waits for the lock the first took), each answers or fails on its own, and nothing of a refused transaction stays.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'drizzle-orm';
import { createFastTestDatabase } from '../../../test/helpers/fast-database.js';
import { openDatabase, type Database } from './index.js';
import { rowsOf } from './migrate.js';
import { sendBehind, sendTogether } from './pipeline.js';
import { compiled } from './compiled.js';

async function open(t: { after(fn: () => Promise<void>): void }): Promise<Database> {
  const tdb = await createFastTestDatabase('pipeline');
  const database = await openDatabase({ dataDir: tdb.dataDir, databaseUrl: tdb.databaseUrl });
  t.after(async () => {
    await database.close();
    await tdb.drop();
  });
  await database.db.execute(sql`CREATE TABLE pipeline_items (id serial PRIMARY KEY, name text UNIQUE NOT NULL)`);
  return database;
}

const count = (rows: unknown) => Number(rowsOf<{ n: string | number }>(rows)[0]!.n);

test('the second statement is queued before the first answers and runs after it', async (t) => {
  const { db } = await open(t);
  for (let round = 0; round < 3; round++) {
    const events: string[] = [];
    const n = await db.transaction(async (tx) => {
      const [first, second] = sendBehind(
        tx,
        async () => {
          const r = await tx.execute(sql`INSERT INTO pipeline_items (name) VALUES (${`r${round}`}) RETURNING id`);
          events.push('first answered');
          return r;
        },
        () => {
          events.push('second queued');
          return tx.execute(sql`SELECT count(*) AS n FROM pipeline_items`);
        },
      );
      await first;
      return count(await second);
    });
    assert.equal(n, round + 1, 'the second sees the first row');
    assert.deepEqual(events, ['second queued', 'first answered']);
  }
});

test('each statement fails on its own; a refused transaction keeps nothing', async (t) => {
  const { db } = await open(t);
  await db.execute(sql`INSERT INTO pipeline_items (name) VALUES ('a')`);
  const both = (first: string, second: string) =>
    db.transaction(async (tx) => {
      const [a, b] = sendBehind(
        tx,
        () => tx.execute(sql`INSERT INTO pipeline_items (name) VALUES (${first})`),
        () => tx.execute(sql`INSERT INTO pipeline_items (name) VALUES (${second})`),
      );
      await a;
      await b;
    });
  // The first fails (duplicate): the second fails in the aborted transaction; nothing stays.
  await assert.rejects(both('a', 'b'));
  // The second fails: the caller sees its error after the first's answer.
  await assert.rejects(both('c', 'a'));
  // The first answers, the caller refuses without awaiting the second: all of it is rolled back.
  await assert.rejects(
    db.transaction(async (tx) => {
      const [first] = sendBehind(
        tx,
        () => tx.execute(sql`INSERT INTO pipeline_items (name) VALUES ('d')`),
        () => tx.execute(sql`INSERT INTO pipeline_items (name) VALUES ('e')`),
      );
      await first;
      throw new Error('refused');
    }),
    /refused/,
  );
  const names = rowsOf<{ name: string }>(await db.execute(sql`SELECT name FROM pipeline_items ORDER BY name`));
  assert.deepEqual(
    names.map((r) => r.name),
    ['a'],
  );
  // The connections serve the next transactions normally.
  const n = await db.transaction(async (tx) => {
    const [first, second] = sendBehind(
      tx,
      () => tx.execute(sql`INSERT INTO pipeline_items (name) VALUES ('f')`),
      () => tx.execute(sql`SELECT count(*) AS n FROM pipeline_items`),
    );
    await first;
    return count(await second);
  });
  assert.equal(n, 2);
});

test('behind a row lock, the second statement waits for a concurrent holder and reads after it', async (t) => {
  const { db, driver } = await open(t);
  if (driver === 'pglite') return; // one connection: nothing runs concurrently
  await db.execute(sql`INSERT INTO pipeline_items (name) VALUES ('locked')`);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const holding = new Promise<void>((r) => (locked = r));
  const holder = db.transaction(async (tx) => {
    await tx.execute(sql`SELECT 1 FROM pipeline_items WHERE name = 'locked' FOR UPDATE`);
    locked();
    await held;
    await tx.execute(sql`INSERT INTO pipeline_items (name) VALUES ('by-holder')`);
  });
  await holding;
  const counted = db.transaction(async (tx) => {
    const [first, second] = sendBehind(
      tx,
      () => tx.execute(sql`SELECT 1 FROM pipeline_items WHERE name = 'locked' FOR UPDATE`),
      () => tx.execute(sql`SELECT count(*) AS n FROM pipeline_items`),
    );
    await first;
    return count(await second);
  });
  setTimeout(release, 100);
  await holder;
  assert.equal(await counted, 2, "the second statement's snapshot is taken after the lock: it sees the holder's row");
});

test('on Postgres, the BEGIN, the first statement and the one behind it leave in one socket write', async (t) => {
  const { db, driver } = await open(t);
  if (driver === 'pglite') return; // no socket
  // Compiled statements queue their text synchronously, as the create's lock and insert do (records/service.ts).
  const insert = compiled<'name'>((p) => sql`INSERT INTO pipeline_items (name) VALUES (${p('name')}) RETURNING id`);
  const counted = compiled<'name'>((p) => sql`SELECT count(*) AS n FROM pipeline_items WHERE name <> ${p('name')}`);
  for (let round = 0; round < 3; round++) {
    const writes = await db.transaction(async (tx) => {
      const socket = (tx._.session as unknown as { client: { connection: { stream: SocketInternals } } }).client
        .connection.stream;
      let writes = 0;
      const { _write, _writev } = socket;
      socket._write = (...args) => (writes++, _write.apply(socket, args));
      socket._writev = (...args) => (writes++, _writev.apply(socket, args));
      try {
        const [first, second] = sendBehind(
          tx,
          () => insert(tx, { name: `w${round}` }),
          () => counted<{ n: string }>(tx, { name: '' }),
        );
        await first;
        assert.equal(Number((await second)[0]!.n), round + 1, 'the second sees the first row');
        return writes;
      } finally {
        socket._write = _write;
        socket._writev = _writev;
      }
    });
    assert.equal(writes, 1, `round ${round}: one write for BEGIN, the insert and the count`);
  }
});

interface SocketInternals {
  _write: (...args: unknown[]) => unknown;
  _writev: (...args: unknown[]) => unknown;
}

test('a statement sent before BEGIN runs outside the transaction; with the next ones, one socket write', async (t) => {
  const { db, driver } = await open(t);
  const insert = compiled<'name'>((p) => sql`INSERT INTO pipeline_items (name) VALUES (${p('name')}) RETURNING id`);
  const names = async () =>
    rowsOf<{ name: string }>(await db.execute(sql`SELECT name FROM pipeline_items ORDER BY name`)).map((r) => r.name);
  let writes = -1;
  await assert.rejects(
    db.transaction(async (tx) => {
      const socket = (tx._.session as unknown as { client: { connection?: { stream: SocketInternals } } }).client
        .connection?.stream;
      let counted = 0;
      const original = socket && { _write: socket._write, _writev: socket._writev };
      if (socket && original) {
        socket._write = (...args) => (counted++, original._write.apply(socket, args));
        socket._writev = (...args) => (counted++, original._writev.apply(socket, args));
      }
      try {
        // As a create does (auth/domain-access.ts writeAs inside records/service.ts createRecord's sendBehind): the
        // statement before BEGIN, then the first, then the one waiting behind the first.
        let before!: Promise<unknown>;
        const [inside, behind] = sendBehind(
          tx,
          () =>
            sendTogether(tx, () => {
              before = insert(tx, { name: 'before' }, { beforeBegin: true });
              return insert(tx, { name: 'inside' });
            }),
          () => insert(tx, { name: 'behind' }),
        );
        await Promise.all([before, inside, behind]);
        writes = counted;
      } finally {
        if (socket && original) Object.assign(socket, original);
      }
      throw new Error('refused');
    }),
    /refused/,
  );
  if (driver === 'pglite') {
    assert.deepEqual(await names(), [], 'PGlite: in the transaction, rolled back with it');
    return;
  }
  assert.equal(writes, 1, 'one write for the statement before BEGIN, BEGIN, the statement and the one behind it');
  assert.deepEqual(await names(), ['before'], 'only the statement before BEGIN stays');
  // Not the transaction's first statement: refused, nothing sent.
  await assert.rejects(
    db.transaction(async (tx) => {
      await insert(tx, { name: 'first' });
      await insert(tx, { name: 'late' }, { beforeBegin: true });
    }),
    /not the first statement/,
  );
  assert.deepEqual(await names(), ['before']);
});
