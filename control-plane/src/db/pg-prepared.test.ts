// A Postgres pool whose queries are named after their text answers exactly as without: values, errors, transactions,
// a table changed under a kept plan; a drizzle transaction on it sends BEGIN and COMMIT with its first and last
// statements (pg-pipelined.ts). Needs TEST_DATABASE_URL (the Postgres the CI runs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createTestDatabase } from '../../../test/helpers/database.js';
import { drizzle } from 'drizzle-orm/node-postgres';
import { sql } from 'drizzle-orm';
import { usePreparedStatementsPg } from './pg-prepared.js';
import { compiled } from './compiled.js';
import { rowsOf } from './migrate.js';
import type { Db } from './index.js';

const skip = process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL';

async function pools(t: { after(fn: () => Promise<void>): void }) {
  const tdb = await createTestDatabase('pg-prepared');
  const plain = new pg.Pool({ connectionString: tdb.databaseUrl, max: 2 });
  const named = new pg.Pool({ connectionString: tdb.databaseUrl, max: 2 });
  usePreparedStatementsPg(named, 3);
  t.after(async () => {
    await plain.end();
    await named.end();
    await tdb.drop();
  });
  await plain.query(
    "CREATE TABLE items (id serial PRIMARY KEY, name text UNIQUE); INSERT INTO items (name) VALUES ('a')",
  );
  return { plain, named };
}

test(
  'named queries answer as unnamed ones, through the pool and a checked-out client; errors keep their code',
  { skip },
  async (t) => {
    const { plain, named } = await pools(t);
    const queries: Array<[string, unknown[]]> = [
      ['SELECT $1::int + 1 AS n, $2::text AS t, $3::int[] AS ids', [1, "it's", [1, 2]]],
      ['SELECT id, name FROM items WHERE name = ANY($1::text[]) ORDER BY id', [['a', 'b']]],
      ["SELECT '2020-01-01T00:00:00Z'::timestamptz AS at, $1::bytea AS b", [Buffer.from([1, 2])]],
      ['SELECT count(*)::int AS n FROM items', []],
      ['SELECT 1 AS one', []],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [text, values] of queries) {
        const want = (await plain.query({ text, values, rowMode: 'array' })).rows;
        assert.deepEqual((await named.query({ text, values, rowMode: 'array' })).rows, want, text);
        const client = await named.connect();
        try {
          await client.query({ text: 'BEGIN' });
          assert.deepEqual(
            (await client.query({ text, values, rowMode: 'array' })).rows,
            want,
            `${text} (transaction)`,
          );
          await client.query({ text: 'COMMIT' });
        } finally {
          client.release();
        }
      }
    }
    const client = await named.connect();
    try {
      const kept = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements');
      assert.ok(kept.rows[0]!.n >= 1 && kept.rows[0]!.n <= 3, `${kept.rows[0]!.n} statements kept (bound: 3)`);
    } finally {
      client.release();
    }
    const insert = { text: 'INSERT INTO items (name) VALUES ($1)', values: ['a'] };
    await assert.rejects(named.query(insert), (e: Error & { code?: string }) => e.code === '23505');
    assert.equal((await named.query({ ...insert, values: ['b'] })).rowCount, 1);
  },
);

test('a table whose columns change under a kept plan is read anew', { skip }, async (t) => {
  const { plain, named } = await pools(t);
  const all = { text: 'SELECT * FROM items WHERE id = $1', values: [1] };
  assert.deepEqual((await named.query(all)).rows, [{ id: 1, name: 'a' }]);
  await plain.query("ALTER TABLE items ADD COLUMN note text DEFAULT 'n'");
  // Through the pool (outside a transaction) it runs again at once, parsed anew.
  assert.deepEqual((await named.query(all)).rows, [{ id: 1, name: 'a', note: 'n' }]);
  await plain.query('ALTER TABLE items DROP COLUMN note');
  // In a transaction the statement fails once (the transaction is aborted), then is parsed anew.
  for (let i = 0; i < 2; i++) {
    const client = await named.connect();
    try {
      const rows = await client.query(all).then(
        (r) => r.rows,
        (e: Error & { code?: string }) => e.code,
      );
      if (rows !== '0A000') assert.deepEqual(rows, [{ id: 1, name: 'a' }]);
    } finally {
      client.release();
    }
  }
  for (let i = 0; i < 2; i++) assert.deepEqual((await named.query(all)).rows, [{ id: 1, name: 'a' }]);
});

test('a query with a bulk parameter runs unnamed (planned for its values)', { skip }, async (t) => {
  const { named } = await pools(t);
  const ids = Array.from({ length: 2000 }, (_, i) => i + 1);
  const text = 'SELECT count(*)::int AS n FROM items WHERE id = ANY($1::int[]) /* bulk */';
  const client = await named.connect();
  try {
    for (let i = 0; i < 3; i++) assert.deepEqual((await client.query(text, [ids])).rows, [{ n: 1 }]);
    const kept = await client.query(
      "SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%/* bulk */%'",
    );
    assert.equal(kept.rows[0]!.n, 0);
  } finally {
    client.release();
  }
});

/** A drizzle database on the named pool, and the number of round trips (Syncs) its connections send. */
function drizzleOn(named: pg.Pool) {
  const counter = { syncs: 0 };
  named.on('acquire', (client) => {
    const connection = (client as unknown as { connection: { sync(): void; counted?: boolean } }).connection;
    if (connection.counted) return;
    connection.counted = true;
    const sync = connection.sync.bind(connection);
    connection.sync = () => {
      counter.syncs++;
      sync();
    };
  });
  return { db: drizzle(named) as unknown as Db, counter };
}

const insertItem = compiled<'name'>((p) => sql`INSERT INTO items (name) VALUES (${p('name')}) RETURNING id`);
const names = async (plain: pg.Pool) =>
  (await plain.query<{ name: string }>('SELECT name FROM items ORDER BY name')).rows.map((r) => r.name);
/** The database error's code (drizzle wraps the driver's error in its own, as `cause`). */
const code = (want: string) => (e: Error & { code?: string; cause?: { code?: string } }) =>
  (e.code ?? e.cause?.code) === want;

test(
  'a transaction sends its BEGIN with its first statement and its COMMIT with a thenCommit statement',
  { skip },
  async (t) => {
    const { plain, named } = await pools(t);
    const { db, counter } = drizzleOn(named);
    for (let round = 0; round < 3; round++) {
      counter.syncs = 0;
      const id = await db.transaction(async (tx) => {
        // Values bound as pg binds them (a Date, a Buffer), in the batch that carries the BEGIN.
        const [{ n, at, b }] = rowsOf<{ n: number; at: string; b: Buffer }>(
          await tx.execute(
            sql`SELECT count(*)::int AS n, ${new Date(0)}::timestamptz AS at, ${Buffer.from([7])}::bytea AS b FROM items`,
          ),
        );
        assert.deepEqual([new Date(at).getTime(), [...b]], [0, [7]]);
        // The transaction is open: a second connection does not see its insert before the commit.
        const [row] = await insertItem<{ id: number }>(tx, { name: `r${round}-${n}` });
        assert.equal((await plain.query('SELECT 1 FROM items WHERE id = $1', [row!.id])).rowCount, 0);
        await insertItem(tx, { name: `r${round}-last` }, { thenCommit: true });
        // Committed with that statement, before drizzle's commit.
        assert.equal((await plain.query('SELECT 1 FROM items WHERE name = $1', [`r${round}-last`])).rowCount, 1);
        return row!.id;
      });
      assert.equal((await plain.query('SELECT 1 FROM items WHERE id = $1', [id])).rowCount, 1);
      assert.equal(
        counter.syncs,
        3,
        'BEGIN with the count, the insert, the last insert with COMMIT: 3 round trips, not 5',
      );
    }
    // An empty transaction sends nothing.
    counter.syncs = 0;
    assert.equal(await db.transaction(async () => 'empty'), 'empty');
    await assert.rejects(
      db.transaction(async () => {
        throw new Error('refused before any statement');
      }),
      /refused before any statement/,
    );
    assert.equal(counter.syncs, 0);
  },
);

test('a failed statement of a pipelined transaction leaves nothing and the connection usable', { skip }, async (t) => {
  const { plain, named } = await pools(t);
  const { db } = drizzleOn(named);
  for (let round = 0; round < 3; round++) {
    // The first statement (sent with BEGIN) fails: nothing is stored.
    await assert.rejects(
      db.transaction(async (tx) => {
        await insertItem(tx, { name: 'a' }); // 'a' exists (unique)
      }),
      code('23505'),
    );
    // The thenCommit statement fails: the earlier insert is rolled back with it.
    await assert.rejects(
      db.transaction(async (tx) => {
        await insertItem(tx, { name: `kept-not-${round}` });
        await insertItem(tx, { name: 'a' }, { thenCommit: true });
      }),
      code('23505'),
    );
    // A statement that does not parse, first in its transaction (its BEGIN is in the same batch).
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.execute(sql`SELEC ${round}::int`);
      }),
      code('42601'),
    );
    // A bulk parameter (an unnamed statement) after a pipelined BEGIN.
    const ids = Array.from({ length: 2000 }, (_, i) => i + 1);
    const n = await db.transaction(async (tx) => {
      const rows = rowsOf<{ n: number }>(
        await tx.execute(sql`SELECT count(*)::int AS n FROM items WHERE id = ANY(${`{${ids.join(',')}}`}::int[])`),
      );
      await insertItem(tx, { name: `bulk-${round}` }, { thenCommit: true });
      return rows[0]!.n;
    });
    assert.equal(n, 1 + round);
  }
  assert.deepEqual(await names(plain), ['a', 'bulk-0', 'bulk-1', 'bulk-2']);
});

test('nothing runs in a transaction after the statement that committed it', { skip }, async (t) => {
  const { plain, named } = await pools(t);
  const { db } = drizzleOn(named);
  await assert.rejects(
    db.transaction(async (tx) => {
      await insertItem(tx, { name: 'committed' }, { thenCommit: true });
      await tx.execute(sql`SELECT 1`);
    }),
    (e: Error & { cause?: Error }) => /after the transaction was committed by its last statement/.test(String(e.cause)),
  );
  // What was committed stays; the connection serves the next transaction normally.
  assert.deepEqual(await names(plain), ['a', 'committed']);
  await db.transaction(async (tx) => {
    await insertItem(tx, { name: 'next' });
  });
  assert.deepEqual(await names(plain), ['a', 'committed', 'next']);
});
