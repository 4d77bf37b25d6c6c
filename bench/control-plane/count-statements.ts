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
// PGlite: counted at its protocol entry, which its own query()/exec() and the prepared statements of
// control-plane/src/db/pglite-prepared.ts both go through: a Bind runs a statement (named after its Parse), a simple
// Query runs its text (BEGIN, COMMIT).
const cstrings = (m: Uint8Array, from: number, n: number): string[] => {
  const out: string[] = [];
  let at = from;
  for (let i = 0; i < n; i++) {
    const end = m.indexOf(0, at);
    out.push(Buffer.from(m.subarray(at, end)).toString('utf8'));
    at = end + 1;
  }
  return out;
};
const parsed = new Map<string, string>();
const execProtocolStream = PGlite.prototype.execProtocolStream;
// One call may carry several messages (control-plane/src/db/pglite-prepared.ts sends a transaction's BEGIN in front of
// its first statement and its COMMIT behind the last): each is read, by its length.
let calls = 0;
PGlite.prototype.execProtocolStream = function (this: PGlite, message: Uint8Array, options) {
  if (counting) calls++;
  for (
    let at = 0;
    at < message.length;
    at += 1 + new DataView(message.buffer, message.byteOffset + at + 1, 4).getInt32(0)
  ) {
    const m = message.subarray(at);
    const kind = String.fromCharCode(m[0]!);
    if (kind === 'P') {
      const [name, text] = cstrings(m, 5, 2);
      parsed.set(name!, text!);
    } else if (kind === 'B') note(parsed.get(cstrings(m, 5, 2)[1]!));
    else if (kind === 'Q') note(cstrings(m, 5, 1)[0]);
  }
  return execProtocolStream.call(this, message, options);
} as typeof execProtocolStream;

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
console.log(res.statusCode, `${seen.length} statements` + (calls ? ` in ${calls} calls into PGlite:` : ':'));
for (const s of seen) console.log('  ', s);
await cp.close();
