// writeAs's lock statement is written by hand (compiled once): the row it returns must be the row drizzle reads,
// column for column, on PGlite and on Postgres (TEST_DATABASE_URL).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq, sql } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import { startTestControlPlane } from '../../../test/helpers/control-plane.js';
import { domains } from '../db/schema.js';
import { hashKey } from './api-keys.js';
import { writeAs } from './domain-access.js';

test("writeAs's lock reads the domain row as drizzle does", async (t) => {
  const cp = await startTestControlPlane(t);
  const db = cp.database.db;
  const owner = await cp.user();
  const request = (key: string, userId: number) =>
    ({ principal: { userId, keyId: 0, readOnly: false, keyHash: hashKey(key) } }) as unknown as FastifyRequest;

  const name = await cp.domain(owner.key, 'lock-row.example.org');
  // Every kind of column set to a value of its own: JSON, timestamps with microseconds, a large bigint.
  await db
    .update(domains)
    .set({
      verification: { token: 'abc', nested: { n: 1, list: [1, 'two'] } },
      sslDelegation: { mode: 'cname', at: '2026-01-01' },
      settings: { always_https: true, min_tls: '1.2' },
      developerModeUntil: sql`'2031-02-03 04:05:06.789123+00'`,
      nsSetIndex: 2,
      verificationState: 'pending',
      underAttack: true,
    })
    .where(eq(domains.name, name));
  await db.execute(sql`UPDATE domains SET config_bytes = 4294967297 WHERE name = ${name}`);

  const [expected] = await db.select().from(domains).where(eq(domains.name, name));
  const locked = await db.transaction((tx) => writeAs(request(owner.key, owner.id), name, 'records.edit').lock(tx));
  assert.deepEqual(locked, expected);

  // Columns left at their defaults and nulls.
  const plain = await cp.domain(owner.key, 'lock-plain.example.org');
  const [plainRow] = await db.select().from(domains).where(eq(domains.name, plain));
  assert.deepEqual(
    await db.transaction((tx) => writeAs(request(owner.key, owner.id), plain, 'records.edit').lock(tx)),
    plainRow,
  );

  // Refusals: another user's domain is invisible (404), an unknown key is 401 even for a name that is no domain.
  const other = await cp.user();
  await assert.rejects(
    db.transaction((tx) => writeAs(request(other.key, other.id), name, 'records.edit').lock(tx)),
    (err: { statusCode?: number }) => err.statusCode === 404,
  );
  await assert.rejects(
    db.transaction((tx) => writeAs(request('cp_unknown', owner.id), 'nothing-here.example', 'records.edit').lock(tx)),
    (err: { statusCode?: number }) => err.statusCode === 401,
  );
});
