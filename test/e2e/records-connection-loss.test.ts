// The server ends the pool's connections under the API (a Postgres restart, an administrator's kill): a write on
// a broken connection answers (500 or 200 on a fresh one), it never ends the process nor hangs, and the next writes
// work. Postgres only (TEST_DATABASE_URL). Before db/index.ts gave checked-out clients an error listener, the
// connection's 'error' event of a client in a transaction ended the process (uncaught), in about one run in four.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestControlPlane } from '../helpers/control-plane.js';

test('records writes when the server ends the connections', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const domain = await cp.domain(owner.key, 'connection-loss.example.org');
  const records = `/domains/${domain}/records/`;
  const A = { name: 'www', type: 'A', destination: '192.0.2.1' };

  await t.test(
    "Postgres: the server ends the pool's connections; a write on one fails cleanly, the next ones work",
    { skip: cp.testDb.databaseUrl === undefined, timeout: 120_000 },
    async () => {
      const admin = new pg.Client({ connectionString: cp.testDb.databaseUrl });
      await admin.connect();
      try {
        for (let round = 0; round < 10; round++) {
          // Connections of the app, idle in its pool (the create's own connection, as it was just used).
          await admin.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
          );
          const res = await cp.call(owner.key, 'POST', records, { ...A, name: `after-end-${round}` });
          assert.ok(res.statusCode === 200 || res.statusCode === 500, `${res.statusCode} ${res.body}`);
          const next = await cp.call(owner.key, 'POST', records, { ...A, name: `next-${round}` });
          assert.equal(next.statusCode, 200, next.body);
        }
      } finally {
        await admin.end();
      }
    },
  );
});
