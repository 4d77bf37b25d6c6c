// The sync hub in-process with a real database, real sockets and real node stores: catch-up, live entries, refusal.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { openNodeStore, startNodeSync, type NodeStore } from '@platform/shared/node-store';
import { createTestDatabase } from '../../../test/helpers/database.js';
import { openDatabase, type Db } from '../db/index.js';
import { eq } from 'drizzle-orm';
import { configLog as configLogTable, dnsRecords, domains, users } from '../db/schema.js';
import { ConfigLog } from '../config-log/index.js';
import { startSyncHub, type SyncHubOptions } from './index.js';

const TOKEN = 'test-node-token';

async function setup(t: TestContext, hubOpts: Partial<SyncHubOptions> = {}) {
  const tdb = await createTestDatabase('sync-hub');
  const database = await openDatabase(tdb);
  let dbOpen = true;
  const configLog = new ConfigLog([['ns1.platform.test', 'ns2.platform.test']]);
  const [user] = await database.db.insert(users).values({ email: 'owner@example.org' }).returning();
  const hub = await startSyncHub({
    host: '127.0.0.1',
    port: 0,
    token: TOKEN,
    db: database.db,
    configLog,
    pollMs: 60_000,
    ...hubOpts,
  });
  const dirs: string[] = [];
  t.after(async () => {
    await hub.close();
    if (dbOpen) await database.close();
    await tdb.drop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const newStore = (): NodeStore => {
    const dir = mkdtempSync(join(tmpdir(), 'sync-node-'));
    dirs.push(dir);
    const store = openNodeStore(join(dir, 'lmdb'));
    t.after(() => store.close());
    return store;
  };
  const closeDatabase = async () => {
    dbOpen = false;
    await database.close();
  };
  return {
    db: database.db,
    configLog,
    hub,
    userId: user!.id,
    newStore,
    closeDatabase,
    hubUrl: `ws://127.0.0.1:${hub.port}`,
  };
}

async function writeRecord(
  db: Db,
  log: ConfigLog,
  domainId: number,
  name: string,
  destination: string,
): Promise<number> {
  const v = await db.transaction(async (tx) => {
    await tx.insert(dnsRecords).values({ domainId, name, type: 'A', destination });
    return log.appendSnapshot(tx, domainId);
  });
  log.nudge(v);
  return v;
}

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('a node catches up with the log, then receives live entries, and a tombstone removes the domain', async (t) => {
  const { db, configLog, userId, newStore, hubUrl } = await setup(t);
  const [a] = await db.insert(domains).values({ name: 'a.example', ownerId: userId, state: 'active' }).returning();
  const [b] = await db.insert(domains).values({ name: 'b.example', ownerId: userId, state: 'active' }).returning();
  for (let i = 0; i < 5; i++) await writeRecord(db, configLog, a!.id, `h${i}`, `192.0.2.${i + 1}`);
  const vb = await writeRecord(db, configLog, b!.id, 'www', '198.51.100.1');

  const store = newStore();
  const applied: number[] = [];
  store.onApplied((e) => applied.push(e.version));
  const sync = startNodeSync(store, { hubUrl, token: TOKEN, nodeId: 'n1' });
  t.after(() => sync.stop());
  await sync.ready;
  assert.equal(store.version, vb);
  assert.equal(store.getSnapshot('a.example')!.zone.records.length, 5);
  assert.equal(applied.length, 2, 'catch-up sends only the latest snapshot of each domain');

  const live = await writeRecord(db, configLog, a!.id, 'h5', '192.0.2.6');
  await until(() => store.version === live, 'the live entry');
  assert.equal(store.getSnapshot('a.example')!.zone.records.length, 6);

  const del = await db.transaction((tx) => configLog.appendDeletion(tx, b!));
  configLog.nudge();
  await until(() => store.version === del, 'the tombstone');
  assert.deepEqual(store.domains(), ['a.example']);
});

test('a node that reconnects resumes from its version and misses nothing written while away', async (t) => {
  const { db, configLog, userId, newStore, hubUrl, hub } = await setup(t);
  const [a] = await db.insert(domains).values({ name: 'a.example', ownerId: userId, state: 'active' }).returning();
  await writeRecord(db, configLog, a!.id, 'one', '192.0.2.1');
  const store = newStore();
  const first = startNodeSync(store, { hubUrl, token: TOKEN });
  await first.ready;
  await first.stop();
  let last = 0;
  for (let i = 0; i < 10; i++) last = await writeRecord(db, configLog, a!.id, `away${i}`, `192.0.2.${i + 10}`);
  // The hub holds every entry written while the node was away (its tail runs after each nudge).
  await until(() => hub.head === last, 'the hub to publish the last entry');
  const seen: number[] = [];
  store.onApplied((e) => seen.push(e.version));
  const second = startNodeSync(store, { hubUrl, token: TOKEN });
  t.after(() => second.stop());
  await second.ready;
  assert.equal(store.version, last);
  assert.equal(store.getSnapshot('a.example')!.zone.records.length, 11);
  assert.deepEqual(seen, [last]);
});

test('without the node token, or with a wrong one, the hub answers 401 before upgrading', async (t) => {
  const { hubUrl } = await setup(t);
  const statusOf = (headers: Record<string, string>, query = '') =>
    new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${hubUrl}/sync?from=0${query}`, { headers });
      ws.on('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.on('open', () => {
        ws.close();
        resolve(101);
      });
      ws.on('error', (err) => {
        if (!/Unexpected server response/.test(err.message)) reject(err);
      });
    });
  assert.equal(await statusOf({}), 401);
  assert.equal(await statusOf({ authorization: 'Bearer nope' }), 401);
  assert.equal(await statusOf({}, '&token=nope'), 401);
  assert.equal(await statusOf({ authorization: `Bearer ${TOKEN}` }), 101);
  assert.equal(await statusOf({}, `&token=${TOKEN}`), 101);
});

test('a node ahead of the log (control plane database replaced) drops its store and rebuilds it from the hub', async (t) => {
  const { db, configLog, userId, newStore, hubUrl } = await setup(t);
  const [a] = await db.insert(domains).values({ name: 'a.example', ownerId: userId, state: 'active' }).returning();
  const v = await writeRecord(db, configLog, a!.id, 'www', '192.0.2.1');
  const store = newStore();
  const stale = { schemaMajor: 1, domainId: 99, name: 'stale.example', state: 'active', dnsMode: 'managed' } as const;
  store.apply({ version: 5000, domain: 'stale.example', deleted: false, snapshot: { ...stale } as never });
  const dropped: string[] = [];
  store.onApplied((e) => {
    if (e.deleted) dropped.push(e.domain);
  });
  const sync = startNodeSync(store, { hubUrl, token: TOKEN });
  t.after(() => sync.stop());
  await sync.ready;
  assert.deepEqual(dropped, ['stale.example']);
  assert.deepEqual(store.domains(), ['a.example']);
  assert.equal(store.version, v);
});

test('a node that stops reading is dropped once its queue passes the limit, and the others receive everything', async (t) => {
  const { db, configLog, hub, userId, newStore, hubUrl } = await setup(t, { maxBackpressure: 4 * 1024 * 1024 });
  const store = newStore();
  const fast = startNodeSync(store, { hubUrl, token: TOKEN });
  t.after(() => fast.stop());
  await fast.ready;
  const slow = new WebSocket(`${hubUrl}/sync?from=0`, { headers: { authorization: `Bearer ${TOKEN}` } });
  t.after(() => slow.terminate());
  await new Promise<void>((resolve) =>
    slow.on('message', (_d, isBinary) => {
      if (!isBinary) resolve();
    }),
  );
  (slow as unknown as { _socket: { pause(): void } })._socket.pause();

  // 24 entries of about 1 MB each: far more than the kernel's socket buffers plus the 4 MiB limit.
  const [d] = await db.insert(domains).values({ name: 'big.example', ownerId: userId, state: 'active' }).returning();
  await db.insert(dnsRecords).values({ domainId: d!.id, name: '@', type: 'TXT', destination: 'x'.repeat(1_000_000) });
  let last = 0;
  for (let i = 0; i < 24; i++) {
    last = await db.transaction((tx) => configLog.appendSnapshot(tx, d!.id));
    configLog.nudge();
  }
  await until(() => store.version === last, 'the fast node to receive every entry', 60_000);
  // The paused client cannot see the close (it reads nothing); the hub's count shows it was dropped.
  await until(() => hub.nodes === 1, 'the slow node to be dropped');
  assert.equal(store.getSnapshot('big.example')!.zone.serial, 25);
});

test('nodes that connect while a burst is being published each end with every domain at its last version', async (t) => {
  const { db, configLog, userId, newStore, hubUrl } = await setup(t);
  const ids: number[] = [];
  for (let i = 0; i < 4; i++) {
    const [d] = await db
      .insert(domains)
      .values({ name: `d${i}.example`, ownerId: userId, state: 'active' })
      .returning();
    // ~100 KB snapshots: large enough that the hub yields between frames.
    await db
      .insert(dnsRecords)
      .values({ domainId: d!.id, name: '@', type: 'TXT', destination: `${i}`.repeat(100_000) });
    ids.push(d!.id);
  }
  const stores = [newStore(), newStore(), newStore()];
  const syncs: Array<ReturnType<typeof startNodeSync>> = [];
  t.after(() => Promise.all(syncs.map((s) => s.stop())));
  let last = 0;
  for (let i = 0; i < 24; i++) {
    last = await db.transaction((tx) => configLog.appendSnapshot(tx, ids[i % 4]!));
    configLog.nudge();
    if (i % 8 === 3) syncs.push(startNodeSync(stores[syncs.length]!, { hubUrl, token: TOKEN }));
  }
  await Promise.all(syncs.map((s) => s.ready));
  await until(() => stores.every((s) => s.version === last), 'every node to reach the last version', 30_000);
  for (const store of stores) {
    assert.deepEqual(store.domains(), ['d0.example', 'd1.example', 'd2.example', 'd3.example']);
    for (let i = 0; i < 4; i++)
      assert.equal(store.getSnapshot(`d${i}.example`)!.zone.serial, 7, `d${i}.example has its last serial`);
  }
});

test("catch-up is served from the hub's memory: with the database closed, nodes at any version still catch up", async (t) => {
  const { db, configLog, hub, userId, newStore, hubUrl, closeDatabase } = await setup(t);
  const [a] = await db.insert(domains).values({ name: 'a.example', ownerId: userId, state: 'active' }).returning();
  const [b] = await db.insert(domains).values({ name: 'b.example', ownerId: userId, state: 'active' }).returning();
  await db.transaction((tx) => configLog.appendSnapshot(tx, a!.id));
  const mid = await writeRecord(db, configLog, b!.id, 'www', '192.0.2.1');
  let last = 0;
  for (let i = 0; i < 6; i++) last = await writeDelta(db, configLog, a!.id, `h${i}`, `192.0.2.${i + 10}`);
  await until(() => hub.head === last, 'the hub to hold every entry');
  await closeDatabase();
  const stores = Array.from({ length: 10 }, () => newStore());
  const early = stores[0]!;
  early.apply({ version: mid, domain: 'b.example', deleted: false, snapshot: snapshotWithRecords('b.example', 1) });
  const syncs = stores.map((store) => startNodeSync(store, { hubUrl, token: TOKEN }));
  t.after(() => Promise.all(syncs.map((s) => s.stop())));
  await Promise.all(syncs.map((s) => s.ready));
  for (const store of stores) {
    assert.equal(store.version, last);
    assert.equal(store.getSnapshot('a.example')!.zone.records.length, 6);
  }
  assert.equal(stores[1]!.getSnapshot('b.example')!.zone.records.length, 1);
});

test('a domain too large for a node is withheld while every other domain keeps flowing, and sent whole once it fits', async (t) => {
  const maxFrameBytes = 64 * 1024;
  const { db, configLog, hub, userId, newStore, hubUrl } = await setup(t, { maxFrameBytes });
  const [big] = await db.insert(domains).values({ name: 'big.example', ownerId: userId, state: 'active' }).returning();
  const [small] = await db
    .insert(domains)
    .values({ name: 'small.example', ownerId: userId, state: 'active' })
    .returning();
  const first = await writeRecord(db, configLog, big!.id, 'www', '192.0.2.1');
  const store = newStore();
  const sync = startNodeSync(store, { hubUrl, token: TOKEN, maxFrameBytes, minBackoffMs: 10 });
  t.after(() => sync.stop());
  await sync.ready;
  // Ready means caught up with what the hub had heard of; on Postgres the first write may reach it just after.
  await until(() => store.version >= first, 'the first write of the big domain');
  const bigServed = store.getSnapshot('big.example')!.zone.serial;

  // 100 KB of TXT: more than a node takes in one frame.
  const v = await db.transaction(async (tx) => {
    const [row] = await tx
      .insert(dnsRecords)
      .values({ domainId: big!.id, name: 'blob', type: 'TXT', destination: 'x'.repeat(100_000) })
      .returning();
    return configLog.appendChange(tx, big!.id, { upsertedRecords: [row!.id] });
  });
  configLog.nudge();
  let last = 0;
  for (let i = 0; i < 5; i++) last = await writeRecord(db, configLog, small!.id, `s${i}`, `198.51.100.${i + 1}`);
  await until(() => store.version === last, 'the other domain to keep flowing');
  assert.ok(last > v!);
  assert.equal(store.getSnapshot('small.example')!.zone.records.length, 5);
  assert.equal(
    store.getSnapshot('big.example')!.zone.serial,
    bigServed,
    'the node keeps what it had of the big domain',
  );
  assert.equal(hub.nodes, 1, 'the node was never dropped');
  // A node connecting now receives every other domain.
  const late = newStore();
  const lateSync = startNodeSync(late, { hubUrl, token: TOKEN, maxFrameBytes });
  t.after(() => lateSync.stop());
  await lateSync.ready;
  assert.deepEqual(late.domains(), ['small.example']);

  // Shrunk under the limit, the domain reaches every node whole.
  const shrunk = await db.transaction(async (tx) => {
    const gone = await tx.delete(dnsRecords).where(eq(dnsRecords.name, 'blob')).returning({ id: dnsRecords.id });
    return configLog.appendChange(tx, big!.id, { removedRecords: gone.map((r) => r.id) });
  });
  configLog.nudge();
  await until(() => store.version === shrunk && late.version === shrunk, 'the shrunk domain');
  for (const s of [store, late]) assert.deepEqual(recordNames(s, 'big.example'), ['www']);
});

test('deltas are squashed and the stored log compacted; a restarted hub serves the same state from the compacted log', async (t) => {
  const { db, configLog, hub, userId, newStore, hubUrl } = await setup(t, { compactAfterDeltas: 4 });
  const [a] = await db.insert(domains).values({ name: 'a.example', ownerId: userId, state: 'active' }).returning();
  await db.transaction((tx) => configLog.appendSnapshot(tx, a!.id));
  const store = newStore();
  const sync = startNodeSync(store, { hubUrl, token: TOKEN });
  t.after(() => sync.stop());
  await sync.ready;
  let last = 0;
  for (let i = 0; i < 21; i++) last = await writeDelta(db, configLog, a!.id, `h${i}`, `192.0.2.${i + 1}`);
  await until(() => store.version === last, 'the node to apply every delta');
  await hub.settled();
  // A squash takes the domain to its latest version when it runs, which may be past the delta that made it due (the
  // hub squashes once the entry is sent, and may have ingested more by then); deltas after the last squash are fewer
  // than compactAfterDeltas, so none is due. So the stored log ends as one snapshot and at most three deltas (22 rows
  // uncompacted).
  const compacted = async () => {
    const kinds = (await rowsOf(db, 'a.example')).map((r) => (r.delta ? 'delta' : 'snapshot'));
    return kinds[0] === 'snapshot' && kinds.slice(1).every((k) => k === 'delta') && kinds.length <= 4;
  };
  for (let i = 0; !(await compacted()); i++) {
    assert.ok(i < 1_500, `the stored log is compacted: ${JSON.stringify(await rowsOf(db, 'a.example'))}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.deepEqual(recordNames(store, 'a.example'), Array.from({ length: 21 }, (_, i) => `h${i}`).sort());

  const again = await startSyncHub({ host: '127.0.0.1', port: 0, token: TOKEN, db, configLog, pollMs: 60_000 });
  t.after(() => again.close());
  const fresh = newStore();
  const freshSync = startNodeSync(fresh, { hubUrl: `ws://127.0.0.1:${again.port}`, token: TOKEN });
  t.after(() => freshSync.stop());
  await freshSync.ready;
  assert.equal(fresh.version, last);
  assert.deepEqual(recordNames(fresh, 'a.example'), recordNames(store, 'a.example'));
});

test('a node older than the tombstone retention rebuilds its store, so a domain deleted meanwhile is gone', async (t) => {
  const { db, configLog, hub, userId, newStore, hubUrl } = await setup(t, { tombstoneRetentionMs: 0 });
  const [a] = await db.insert(domains).values({ name: 'a.example', ownerId: userId, state: 'active' }).returning();
  const [b] = await db.insert(domains).values({ name: 'b.example', ownerId: userId, state: 'active' }).returning();
  await writeRecord(db, configLog, a!.id, 'www', '192.0.2.1');
  await writeRecord(db, configLog, b!.id, 'www', '192.0.2.2');
  const store = newStore();
  const first = startNodeSync(store, { hubUrl, token: TOKEN });
  await first.ready;
  await first.stop();
  await db.transaction((tx) => configLog.appendDeletion(tx, b!));
  const last = await writeRecord(db, configLog, a!.id, 'mail', '192.0.2.3');
  await until(() => hub.head === last, 'the hub to see the tombstone');
  assert.equal(await hub.pruneTombstones(), last - 1);
  const second = startNodeSync(store, { hubUrl, token: TOKEN });
  t.after(() => second.stop());
  await second.ready;
  assert.deepEqual(store.domains(), ['a.example']);
  assert.equal(store.version, last);
});

async function writeDelta(db: Db, log: ConfigLog, domainId: number, name: string, destination: string) {
  const v = await db.transaction(async (tx) => {
    const [row] = await tx.insert(dnsRecords).values({ domainId, name, type: 'A', destination }).returning();
    return log.appendChange(tx, domainId, { upsertedRecords: [row!.id] });
  });
  log.nudge();
  return v!;
}

function recordNames(store: NodeStore, domain: string): string[] {
  return store
    .getSnapshot(domain)!
    .zone.records.map((r) => r.name)
    .sort();
}

/** The domain's stored config-log entries, oldest first: version and whether each is a delta. */
async function rowsOf(db: Db, domain: string): Promise<{ version: number; delta: boolean }[]> {
  return db
    .select({ version: configLogTable.version, delta: configLogTable.delta })
    .from(configLogTable)
    .where(eq(configLogTable.domainName, domain))
    .orderBy(configLogTable.version);
}

function snapshotWithRecords(name: string, count: number) {
  return {
    schemaMajor: 1,
    domainId: 1,
    name,
    state: 'active',
    dnsMode: 'managed',
    zone: { records: Array.from({ length: count }, (_, i) => ({ id: 1000 + i, name: `old${i}` })) },
  } as never;
}
