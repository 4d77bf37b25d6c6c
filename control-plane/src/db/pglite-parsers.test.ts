// The slimmed PGlite parser table (pglite-parsers.ts) parses every kind of value exactly as PGlite's own table does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PGlite } from '@electric-sql/pglite';
import { slimParserTable } from './pglite-parsers.js';

const QUERY = `SELECT ARRAY[7,8]::bigint[] AS ids, ARRAY['x','y z']::text[] AS names, '\\xff00'::bytea AS payload,
  ARRAY['\\x01'::bytea] AS payloads, '{"a":[1]}'::jsonb AS doc, ARRAY['2024-05-06T07:08:09.010Z'::timestamptz] AS times,
  12::int8 AS big, ARRAY[1.5]::float8[] AS floats, NULL::int4[] AS nothing, '{}'::int4[] AS empty`;

test('a slimmed PGlite parser table parses arrays, bytea, json and scalars as the whole table does', async () => {
  const bytea = { 17: (v: string) => Buffer.from(v.slice(2), 'hex') };
  const whole = await PGlite.create({ parsers: bytea });
  const slim = await PGlite.create({ parsers: bytea });
  try {
    assert.equal(await slimParserTable(slim), true);
    const table = (slim as unknown as { parsers: object }).parsers;
    assert.ok(Object.keys(table).length < 40, 'the instance keeps the scalar parsers only');
    for (const rowMode of ['object', 'array'] as const) {
      const expected = (await whole.query(QUERY, [], { rowMode })).rows;
      assert.deepEqual((await slim.query(QUERY, [], { rowMode })).rows, expected);
      assert.deepEqual(
        (await whole.query(QUERY, [], { rowMode })).rows,
        expected,
        'the unslimmed instance is unchanged',
      );
    }
  } finally {
    await whole.close();
    await slim.close();
  }
});
