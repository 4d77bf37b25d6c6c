// Two control planes on one Postgres server, started as a user starts them (control-plane/src/main.ts), each with
// its own DATA_DIR, API port and sync hub: the per-key and per-address rate limits hold across both, writes through
// either are visible through both (API and DNS nodes synced from either hub), config-log versions become visible
// in order while both append, and their workflow dispatchers never take the same outbox entry. Needs a Postgres
// server (TEST_DATABASE_URL; .ci/run starts one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { eq, sql } from 'drizzle-orm';
import { openDatabase, type Db } from '../../control-plane/src/db/index.js';
import { claimDueEntries, enqueueWorkflows } from '../../control-plane/src/workflow-outbox/outbox.js';
import { rowsOf } from '../../control-plane/src/db/migrate.js';
import { domains } from '../../control-plane/src/db/schema.js';
import { ConfigLog } from '../../control-plane/src/config-log/index.js';
import { createUser } from '../../control-plane/src/admin/users.js';
import { createApiKey } from '../../control-plane/src/auth/api-keys.js';
import { createTestDatabase } from '../helpers/database.js';
import { ScriptProcess } from '../helpers/child-process.js';
import { eventually } from '../helpers/workflows-harness.js';
import { freePort, startDnsNode, waitConverged, type ControlPlaneProcess } from './sync-harness.js';

const PER_KEY = 40;
const PER_ADDRESS = 6;

interface Plane {
  apiUrl: string;
  syncUrl: string;
  process: ScriptProcess;
}

async function call(plane: Plane, key: string | null, method: string, path: string, body?: unknown) {
  const res = await fetch(`${plane.apiUrl}${path}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

test(
  'two control planes on one Postgres: shared rate limits, writes visible through both, ordered config log',
  { skip: process.env.TEST_DATABASE_URL ? false : 'needs a Postgres server: set TEST_DATABASE_URL (.ci/run does)' },
  async (t) => {
    // Cleanups run last-registered first (processes and connections before the database they use).
    const cleanups: Array<() => Promise<unknown> | void> = [];
    t.after(async () => {
      for (const c of cleanups.reverse()) await c();
    });
    const tdb = await createTestDatabase('multi');
    cleanups.push(() => tdb.drop());
    const database = await openDatabase({ dataDir: tdb.dataDir, databaseUrl: tdb.databaseUrl });
    const owner = await createUser(database.db, 'multi@example.org');
    // One key per purpose: each has its own per-key budget.
    const [limitKey, writeKey, readKey] = await Promise.all(
      [0, 1, 2].map(async () => (await createApiKey(database.db, owner.id)).key),
    );
    await database.close();

    const nodeToken = randomBytes(24).toString('hex');
    const start = async (): Promise<Plane> => {
      const [apiPort, syncPort] = [await freePort(), await freePort()];
      const dataDir = mkdtempSync(join(tmpdir(), 'platform-multi-cp-'));
      cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
      const proc = new ScriptProcess('control-plane/src/main.ts', () => ({
        DATA_DIR: dataDir,
        DATABASE_URL: tdb.databaseUrl!,
        NODE_TOKEN: nodeToken,
        API_PORT: String(apiPort),
        SYNC_PORT: String(syncPort),
        RATE_LIMIT_PER_MINUTE: String(PER_KEY),
        RATE_LIMIT_ANONYMOUS_PER_MINUTE: String(PER_ADDRESS),
      }));
      cleanups.push(() => proc.stop());
      proc.start();
      return { apiUrl: `http://127.0.0.1:${apiPort}`, syncUrl: `ws://127.0.0.1:${syncPort}`, process: proc };
    };
    const planes = [await start(), await start()];
    const [a, b] = planes as [Plane, Plane];
    // Readiness through the OpenAPI document (no key: the per-key budgets stay whole; it counts per address, so
    // the address budget is checked below only after this).
    for (const p of planes) {
      await eventually(
        'the control plane',
        async () => {
          if (!p.process.running) throw new Error(`control plane exited:\n${p.process.out}`);
          return (await fetch(`${p.apiUrl}/openapi.json`)).status === 200 ? true : undefined;
        },
        90_000,
      );
    }

    await t.test('the per-key limit counts requests through both processes against one budget', async () => {
      for (let i = 1; i <= PER_KEY; i++) {
        const res = await call(planes[i % 2]!, limitKey, 'GET', '/domains/');
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('ratelimit-remaining'), String(PER_KEY - i));
      }
      for (const p of planes) {
        const res = await call(p, limitKey, 'GET', '/domains/');
        assert.equal(res.status, 429);
        assert.deepEqual(res.body, { error: 'rate limit exceeded' });
      }
    });

    await t.test('requests without a valid key count per client address across both processes', async () => {
      // Spent by the readiness probes: at most one per plane reached 200 (earlier attempts were refused connections).
      const spent = 2;
      for (let i = spent; i < PER_ADDRESS; i++) {
        assert.equal((await call(planes[i % 2]!, null, 'GET', '/domains/')).status, 401);
      }
      for (const p of planes) assert.equal((await call(p, null, 'GET', '/domains/')).status, 429);
      // A valid key from the same address is not affected.
      assert.equal((await call(b, readKey, 'GET', '/domains/')).status, 200);
    });

    await t.test('writes through either are visible through both; config-log versions appear in order', async () => {
      const tail = new pg.Client({ connectionString: tdb.databaseUrl });
      await tail.connect();
      cleanups.push(() => tail.end());
      // A reader polling as the sync hub's tail does: it must never find a version below one it has already seen.
      let seen: number[] = [];
      let writing = true;
      const read = async () => {
        const last = seen.at(-1) ?? 0;
        const r = await tail.query<{ version: string }>(
          'SELECT version FROM config_log WHERE version > $1 ORDER BY version',
          [last],
        );
        seen = seen.concat(r.rows.map((row) => Number(row.version)));
      };
      const tailing = (async () => {
        while (writing) await read();
      })();

      assert.equal((await call(a, writeKey, 'POST', '/domains/', { name: 'one.example.org' })).status, 200);
      assert.equal((await call(b, writeKey, 'POST', '/domains/', { name: 'two.example.org' })).status, 200);
      assert.equal((await call(b, readKey, 'GET', '/domains/one.example.org')).body.name, 'one.example.org');
      assert.equal((await call(a, readKey, 'GET', '/domains/two.example.org')).body.name, 'two.example.org');
      // Concurrent record writes through both processes into both domains.
      const writes = Array.from({ length: 24 }, (_, i) =>
        call(planes[i % 2]!, writeKey, 'POST', `/domains/${i % 3 === 0 ? 'one' : 'two'}.example.org/records/`, {
          name: `w${i}`,
          type: 'A',
          destination: `192.0.2.${i + 1}`,
          ttl: 300,
          proxied: false,
        }),
      );
      for (const res of await Promise.all(writes)) assert.equal(res.status, 200, JSON.stringify(res.body));
      writing = false;
      await tailing;
      await read();

      // Never a lower version after a higher one; every stored entry was seen (the hubs' compaction deletes
      // superseded ones, so the log may now hold fewer than were seen).
      assert.ok(
        seen.every((v, i) => i === 0 || v > seen[i - 1]!),
        `versions seen in order: ${seen.join(',')}`,
      );
      const all = await tail.query<{ version: string }>('SELECT version FROM config_log ORDER BY version');
      const seenSet = new Set(seen);
      assert.deepEqual(
        all.rows.map((r) => Number(r.version)).filter((v) => !seenSet.has(v)),
        [],
      );
      for (const name of ['one', 'two']) {
        const viaA = await call(a, readKey, 'GET', `/domains/${name}.example.org/records/`);
        const viaB = await call(b, readKey, 'GET', `/domains/${name}.example.org/records/`);
        assert.deepEqual(viaA.body, viaB.body);
        assert.equal(viaA.body.length, name === 'one' ? 8 : 16);
      }
    });

    await t.test('an append waits for the one another process has not committed yet', async () => {
      // Two pools as two processes have. T1 appends and holds its transaction open; T2 appends meanwhile. Were T2
      // to commit first with a higher version, a tail that saw it would skip T1's lower version for ever.
      const [one, two] = [
        await openDatabase({ dataDir: tdb.dataDir, databaseUrl: tdb.databaseUrl }),
        await openDatabase({ dataDir: tdb.dataDir, databaseUrl: tdb.databaseUrl }),
      ];
      cleanups.push(
        () => one.close(),
        () => two.close(),
      );
      const log = new ConfigLog([['ns1.platform.test', 'ns2.platform.test']]);
      const idOf = async (name: string) =>
        (await one.db.select({ id: domains.id }).from(domains).where(eq(domains.name, name)))[0]!.id;
      const [idOne, idTwo] = [await idOf('one.example.org'), await idOf('two.example.org')];
      const from = await log.head(one.db);
      const seen: number[] = [];
      const read = async () => {
        for (const e of await log.readAfter(one.db, seen.at(-1) ?? from, 1000)) seen.push(e.version);
      };

      let commitFirst!: () => void;
      let firstAppended!: () => void;
      const appended = new Promise<void>((r) => (firstAppended = r));
      const first = one.db.transaction(async (tx) => {
        await log.appendChange(tx, idOne, { domain: true });
        firstAppended();
        await new Promise<void>((r) => (commitFirst = r));
      });
      await appended;
      let secondDone = false;
      const second = two.db
        .transaction((tx) => log.appendChange(tx, idTwo, { domain: true }))
        .finally(() => (secondDone = true));
      await eventually('the second append to commit or wait for the first', async () => {
        if (secondDone) return true;
        const r = await one.db.execute(sql`SELECT 1 FROM pg_stat_activity WHERE wait_event = 'advisory'`);
        return rowsOf(r).length > 0 ? true : undefined;
      });
      await read();
      commitFirst();
      await first;
      await second;
      await read();
      const all = await log.readAfter(one.db, from, 1000);
      assert.equal(all.length, 2);
      assert.deepEqual(
        seen,
        all.map((e) => e.version),
      );
    });

    await t.test('dispatchers of two processes never claim the same workflow outbox entry', async () => {
      const pools = [
        await openDatabase({ dataDir: tdb.dataDir, databaseUrl: tdb.databaseUrl }),
        await openDatabase({ dataDir: tdb.dataDir, databaseUrl: tdb.databaseUrl }),
      ];
      cleanups.push(...pools.map((p) => () => p.close()));
      const ids = Array.from({ length: 60 }, (_, i) => `multi-claim:${i}`);
      await enqueueWorkflows(
        pools[0]!.db,
        ids.map((workflowId) => ({ kind: 'start' as const, workflowType: 'watchDelegation', workflowId, args: [] })),
      );
      const claim = async (db: Db) => {
        const got: string[] = [];
        for (let batch; (batch = await claimDueEntries(db, 4, 60_000)).length > 0;) {
          got.push(...batch.map((e) => e.workflowId));
        }
        return got;
      };
      const [x, y] = await Promise.all(pools.map((p) => claim(p.db)));
      // (The domains created above queued their watches too: only this test's entries are compared.)
      const mine = [...x!, ...y!].filter((id) => id.startsWith('multi-claim:'));
      assert.deepEqual(mine.sort(), [...ids].sort());
    });

    await t.test('a DNS node on either hub receives the writes made through the other process', async () => {
      const asProcess = (p: Plane, key: string) =>
        ({
          syncUrl: p.syncUrl,
          nodeToken,
          api: async (method: string, path: string) => (await call(p, key, method, path)).body,
        }) as unknown as ControlPlaneProcess;
      const nodes = [await startDnsNode(asProcess(a, readKey)), await startDnsNode(asProcess(b, readKey))];
      cleanups.push(() => Promise.all(nodes.map((n) => n.stop())));
      await waitConverged(asProcess(a, readKey), nodes);
      // Through B only: the node on A's hub learns it from A's poll of the shared log.
      const res = await call(b, writeKey, 'POST', '/domains/one.example.org/records/', {
        name: 'late',
        type: 'A',
        destination: '192.0.2.200',
        ttl: 300,
        proxied: false,
      });
      assert.equal(res.status, 200);
      const state = await waitConverged(asProcess(b, readKey), nodes);
      assert.ok(state['one.example.org']!.some((r) => r[3] === '192.0.2.200'));
    });
  },
);
