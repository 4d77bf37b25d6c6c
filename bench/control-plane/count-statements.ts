// Counts the SQL statements one request sends (node-postgres or PGlite): profile before cutting round trips.
// Run: node --import tsx bench/control-plane/count-statements.ts   (TEST_DATABASE_URL=postgres://… for Postgres)
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { startTestControlPlane } from '../../test/helpers/control-plane.js';

const seen: string[] = [];
let counting = false;
const note = (text: unknown) => {
  if (counting)
    seen.push(
      String(typeof text === 'object' && text && 'text' in text ? text.text : text)
        .replace(/\s+/g, ' ')
        .slice(0, 160),
    );
};
const pgQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  note(args[0]);
  return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pgQuery;
type Queryable = Record<'query' | 'exec', (...a: unknown[]) => unknown>;
const counted = (target: Queryable) => {
  for (const m of ['query', 'exec'] as const) {
    const orig = target[m];
    target[m] = function (this: unknown, ...args: unknown[]) {
      note(args[0]);
      return orig.apply(this, args);
    };
  }
};
counted(PGlite.prototype as unknown as Queryable);
// A PGlite transaction runs its statements on its own handle, and sends BEGIN and COMMIT itself.
const transaction = PGlite.prototype.transaction;
PGlite.prototype.transaction = function <T>(this: PGlite, callback: (tx: never) => Promise<T>) {
  note('BEGIN');
  return transaction
    .call(this, (tx) => {
      counted(tx as unknown as Queryable);
      return callback(tx as never);
    })
    .finally(() => note('COMMIT or ROLLBACK')) as Promise<T>;
} as typeof transaction;

const cp = await startTestControlPlane(null);
const owner = await cp.user();
const name = await cp.domain(owner.key, 'count.example.org');
for (let i = 0; i < 3; i++)
  await cp.call(owner.key, 'POST', `/domains/${name}/records/`, { name: `w${i}`, type: 'A', destination: '192.0.2.1' });
counting = true;
const res = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, {
  name: 'www',
  type: 'A',
  destination: '192.0.2.1',
});
counting = false;
console.log(res.statusCode, `${seen.length} statements:`);
for (const s of seen) console.log('  ', s);
await cp.close();
