// PGlite with every statement kept prepared answers exactly as PGlite's own query(): values, types, errors,
// transactions, a table changed under a kept plan, and the bound on statements kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PGlite } from '@electric-sql/pglite';
import { usePreparedStatements } from './pglite-prepared.js';

const QUERIES: Array<[string, unknown[]]> = [
  ['SELECT $1::int + 1 AS n, $2::text AS t, $3::bool AS b, $4::text AS missing', [41, "it's", true, null]],
  ["SELECT '\\x0102'::bytea AS bytes, $1::bytea AS echoed", [new Uint8Array([3, 4, 255])]],
  // Bytes are bound as they are (binary format): every byte value, a view into a larger buffer, an empty one.
  [
    'SELECT $1::bytea AS every, length($2::bytea) AS n, $2::bytea = $3::bytea AS same, $4::bytea AS empty',
    [
      Uint8Array.from({ length: 512 }, (_, i) => i & 255),
      new Uint8Array(new ArrayBuffer(300_000), 1000, 200_000).fill(0x5c),
      new Uint8Array(200_000).fill(0x5c),
      new Uint8Array(0),
    ],
  ],
  ['SELECT $1::json AS j, $2::jsonb AS jb', [JSON.stringify({ a: [1, 'x'] }), JSON.stringify({ b: null })]],
  ['SELECT ARRAY[1,2]::bigint[] AS a, \'{x,"y z"}\'::text[] AS t, $1::int[] AS ids', ['{5,6}']],
  ["SELECT '2020-01-01T00:00:00.123Z'::timestamptz AS at, 9007199254740993::int8 AS big", []],
  ['SELECT id, name FROM items WHERE id = ANY($1::int[]) ORDER BY id', ['{1,2,3}']],
  [
    'INSERT INTO items (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING id, name',
    ['c'],
  ],
  ['UPDATE items SET name = name || $1 WHERE id = 1', ['!']],
];

async function pair() {
  const plain = await PGlite.create();
  const prepared = await PGlite.create();
  for (const pg of [plain, prepared])
    await pg.exec(
      "CREATE TABLE items (id serial PRIMARY KEY, name text UNIQUE); INSERT INTO items (name) VALUES ('a'), ('b')",
    );
  usePreparedStatements(prepared, 4);
  return { plain, prepared };
}

const shape = (r: { rows: unknown[]; fields: unknown[]; affectedRows?: number }) => ({
  rows: r.rows,
  fields: r.fields,
  affectedRows: r.affectedRows,
});

test('every statement answers as PGlite answers it, first use and later ones, in and out of transactions', async (t) => {
  const { plain, prepared } = await pair();
  t.after(() => Promise.all([plain.close(), prepared.close()]));
  for (let round = 0; round < 3; round++) {
    for (const [text, params] of QUERIES) {
      for (const mode of ['array', 'object'] as const) {
        const want = await plain.query(text, params, { rowMode: mode });
        assert.deepEqual(shape(await prepared.query(text, params, { rowMode: mode })), shape(want), text);
      }
      const inTx = await prepared.transaction((tx) => tx.query(text, params));
      const wantTx = await plain.transaction((tx) => tx.query(text, params));
      assert.deepEqual(shape(inTx), shape(wantTx), `${text} (transaction)`);
    }
  }
  // Kept prepared: at most the bound (4 here), the least recently used closed.
  const kept = await prepared.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements');
  assert.ok(kept.rows[0]!.n <= 5, `${kept.rows[0]!.n} statements kept`);
});

test('errors carry PGlite’s code and query; the statement and the session stay usable; a rollback undoes', async (t) => {
  const { plain, prepared } = await pair();
  t.after(() => Promise.all([plain.close(), prepared.close()]));
  const insert = 'INSERT INTO items (name) VALUES ($1)';
  const err = await prepared.query(insert, ['a']).then(
    () => assert.fail('a duplicate was inserted'),
    (e: Error & { code?: string; query?: string; params?: unknown[] }) => e,
  );
  assert.equal(err.code, '23505');
  assert.equal(err.query, insert);
  assert.deepEqual(err.params, ['a']);
  await assert.rejects(prepared.query('SELEC 1'), (e: Error & { code?: string }) => e.code === '42601');
  assert.equal((await prepared.query(insert, ['c'])).affectedRows, 1);
  await assert.rejects(
    prepared.transaction(async (tx) => {
      await tx.query(insert, ['d']);
      await tx.query(insert, ['a']);
    }),
    (e: Error & { code?: string }) => e.code === '23505',
  );
  await assert.rejects(
    prepared.transaction(async (tx) => {
      await tx.query(insert, ['e']);
      throw new Error('changed my mind');
    }),
    /changed my mind/,
  );
  const names = await prepared.query<{ name: string }>('SELECT name FROM items ORDER BY id');
  assert.deepEqual(
    names.rows.map((r) => r.name),
    ['a', 'b', 'c'],
  );
  await prepared.transaction(async (tx) => {
    await tx.query(insert, ['f']);
    await tx.rollback();
    await assert.rejects(tx.query('SELECT 1'), /closed/);
  });
  assert.equal((await prepared.query<{ n: number }>('SELECT count(*)::int AS n FROM items')).rows[0]!.n, 3);
});

test('a table whose columns change under a kept plan is read anew', async (t) => {
  const { plain, prepared } = await pair();
  t.after(() => Promise.all([plain.close(), prepared.close()]));
  const all = 'SELECT * FROM items ORDER BY id';
  assert.deepEqual(Object.keys((await prepared.query<object>(all)).rows[0]!), ['id', 'name']);
  await prepared.exec("ALTER TABLE items ADD COLUMN note text DEFAULT 'n'");
  assert.deepEqual((await prepared.query<object>(all)).rows[0], { id: 1, name: 'a', note: 'n' });
  assert.deepEqual((await prepared.transaction((tx) => tx.query<object>(all))).rows[0], {
    id: 1,
    name: 'a',
    note: 'n',
  });
});

test('a statement with a bulk parameter runs unprepared (planned for its values), with the same answer', async (t) => {
  const { plain, prepared } = await pair();
  t.after(() => Promise.all([plain.close(), prepared.close()]));
  const ids = `{${Array.from({ length: 400 }, (_, i) => i + 1).join(',')}}`; // > 1024 characters
  const text = 'SELECT count(*)::int AS n FROM items WHERE id = ANY($1::int[]) /* bulk */';
  for (let i = 0; i < 7; i++) {
    assert.deepEqual((await prepared.query(text, [ids])).rows, (await plain.query(text, [ids])).rows);
    assert.deepEqual((await prepared.transaction((tx) => tx.query(text, [ids]))).rows, [{ n: 2 }]);
  }
  const kept = await prepared.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = $1',
    [text],
  );
  assert.equal(kept.rows[0]!.n, 0);
  assert.deepEqual((await prepared.query(text, ['{1}'])).rows, [{ n: 1 }]);
});

test('statements of a transaction queued together run in one call, each answering and failing on its own', async (t) => {
  const { plain, prepared } = await pair();
  t.after(() => Promise.all([plain.close(), prepared.close()]));
  let calls = 0;
  const execProtocolStream = prepared.execProtocolStream.bind(prepared);
  prepared.execProtocolStream = (message, options) => {
    calls++;
    return execProtocolStream(message, options);
  };
  const insert = 'INSERT INTO items (name) VALUES ($1) RETURNING id, name';
  const count = 'SELECT count(*)::int AS n FROM items';
  await prepared.transaction(async (tx) => {
    await tx.query(insert, ['warm']); // both statements parsed once
    await tx.query(count);
    await tx.rollback();
  });
  // Queued before any answer: BEGIN, both statements and the COMMIT behind the second, in one call.
  calls = 0;
  const [row, n] = await prepared.transaction((tx) =>
    Promise.all([
      tx.query<{ id: number; name: string }>(insert, ['c']),
      tx.query<{ n: number }>(count, [], { thenCommit: true } as never),
    ]),
  );
  assert.equal(calls, 1, 'one call into PGlite');
  assert.equal(row.rows[0]!.name, 'c');
  assert.equal(n.rows[0]!.n, 3, 'the second statement sees the first');
  assert.equal(prepared.isInTransaction(), false, 'committed');
  // The first fails (duplicate): the second is refused by the aborted transaction, nothing is stored.
  const [first, second] = await prepared
    .transaction((tx) => Promise.allSettled([tx.query(insert, ['a']), tx.query(insert, ['d'])]))
    .then((settled) => settled.map((s) => (s.status === 'rejected' ? (s.reason as { code?: string }).code : 'ok')));
  assert.deepEqual([first, second], ['23505', '25P02']);
  assert.equal(prepared.isInTransaction(), false, 'rolled back');
  // A COMMIT that fails (a deferred constraint) is the error of the statement that carried it.
  await prepared.exec(
    'CREATE TABLE pairs (id int PRIMARY KEY, other int REFERENCES pairs (id) DEFERRABLE INITIALLY DEFERRED)',
  );
  const pairInsert = 'INSERT INTO pairs (id, other) VALUES ($1, $2)';
  await prepared.transaction(async (tx) => {
    await tx.query(pairInsert, [1, 1]);
    await tx.query(count);
  });
  await assert.rejects(
    prepared.transaction((tx) =>
      Promise.all([tx.query(count), tx.query(pairInsert, [2, 99], { thenCommit: true } as never)]),
    ),
    (e: Error & { code?: string }) => e.code === '23503',
  );
  assert.equal(prepared.isInTransaction(), false);
  const stored = await prepared.query<{ name: string }>('SELECT name FROM items ORDER BY id');
  assert.deepEqual(
    stored.rows.map((r) => r.name),
    ['a', 'b', 'c'],
  );
  assert.equal((await prepared.query<{ n: number }>('SELECT count(*)::int AS n FROM pairs')).rows[0]!.n, 1);
});
