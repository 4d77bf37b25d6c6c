// PGlite copies its instance's whole parser table ({ ...parsers }) for every query result. After start-up the table
// holds 316 entries (23 scalar types and one per array type, added by PGlite at init), and the copy costs about
// 90 µs, two thirds of a `SELECT 1` (bench/RESULTS.md, records API). A type missing from the instance's table falls
// back to PGlite's global table (`types.parsers`), so the array parsers move there and the instance keeps the scalar
// ones, which the array parsers read their elements with: the same parsers, a copy of 23 entries per query.
import { types, type PGlite } from '@electric-sql/pglite';

/** One value of each kind the control plane reads, to check that parsing is unchanged. */
const PROBE = `SELECT ARRAY[1,2]::bigint[] AS a, '{a,"b c"}'::text[] AS b, '\\x0102'::bytea AS c, 5::int4 AS d,
  '{"x":1}'::json AS e, '2020-01-01T00:00:00.123Z'::timestamptz AS f, true AS g, 1.5::float8 AS h,
  ARRAY[true,false] AS i, ARRAY['{"a":1}'::jsonb] AS j, 9007199254740993::int8 AS k, ARRAY[1]::int4[] AS l,
  ARRAY['\\x03'::bytea] AS m, NULL::text[] AS n`;

type ParserTable = Record<string, (value: string, typeId: number) => unknown>;

/**
 * Moves the array parsers of `client` to PGlite's global fallback table; returns false (and changes nothing) when a
 * probe of every kind of value the control plane reads does not parse exactly as before.
 */
export async function slimParserTable(client: PGlite): Promise<boolean> {
  const instance = client as unknown as { parsers: ParserTable };
  const full = instance.parsers;
  const global = types.parsers as unknown as ParserTable;
  const before = JSON.stringify((await client.query(PROBE)).rows, replacer);
  const slim: ParserTable = {};
  const moved: ParserTable = {};
  for (const [key, parser] of Object.entries(full)) {
    if (/^\d+$/.test(key) && !(key in global)) moved[key] = parser;
    else slim[key] = parser;
  }
  const previous = Object.fromEntries(Object.keys(moved).map((k) => [k, global[k]]));
  Object.assign(global, moved);
  instance.parsers = slim;
  if (JSON.stringify((await client.query(PROBE)).rows, replacer) === before) return true;
  instance.parsers = full;
  for (const [k, parser] of Object.entries(previous)) {
    if (parser === undefined) delete global[k];
    else global[k] = parser;
  }
  return false;
}

/** JSON of a probe row with its types visible (Buffer, Date and bigint would look alike otherwise). */
function replacer(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  if (typeof raw === 'bigint') return `bigint:${raw}`;
  if (raw instanceof Date) return `date:${raw.toISOString()}`;
  if (raw instanceof Uint8Array) return `bytes:${Buffer.from(raw).toString('hex')}`;
  return value;
}
