// A Postgres pool whose queries are named after their text answers exactly as without: values, errors, transactions,
// a table changed under a kept plan. Needs TEST_DATABASE_URL (the Postgres the CI runs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { createTestDatabase } from '../../../test/helpers/database.js';
import { usePreparedStatementsPg } from './pg-prepared.js';

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
