// Idempotent request-log batches (issue 15 item 1): a batch sent twice is counted once in request_logs, the analytics
// store, the uptime minute counts and the attack minutes; rows the analytics store holds already (the first delivery
// reached DuckDB) are not appended again; a malformed or huge batch id or node id is refused with 400, nothing stored.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eq, sql } from 'drizzle-orm';
import { pack } from 'msgpackr';
import { ensureNodeToken } from '@platform/shared/node-token';
import { startTestControlPlane, type TestControlPlane } from '../../../test/helpers/control-plane.js';
import { attackMinutes, domains, requestLogBatches, requestLogs, uptimeMinuteCounts } from '../db/schema.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setUp(t: Parameters<typeof startTestControlPlane>[0], name: string) {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  await cp.domain(owner.key, name);
  const rec = await cp.call(owner.key, 'POST', `/domains/${name}/records/`, {
    name: 'www',
    type: 'A',
    destination: '192.0.2.10',
    proxied: true,
    monitor: true,
  });
  assert.equal(rec.statusCode, 200, rec.body);
  const [d] = await cp.database.db.select().from(domains).where(eq(domains.name, name));
  const token = ensureNodeToken(cp.config.dataDir, (cp.config as { nodeToken?: string }).nodeToken);
  const post = (body: unknown) =>
    cp.app.inject({
      method: 'POST',
      url: '/internal/request-logs',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-msgpack' },
      payload: typeof body === 'object' && body instanceof Buffer ? body : pack(body),
    });
  return { cp, domainId: d.id, post };
}

function shipment(host: string, n: number, batch: string) {
  const now = Date.now();
  const minute = now - (now % 60_000);
  const records = Array.from({ length: n }, (_, i) => ({
    t: now,
    host,
    path: `/r/${i}`,
    method: 'GET',
    status: i === 0 ? 503 : 200,
    bytes: 10,
    cache: '',
    rules: [],
    ms: 1,
    upstreamMs: 1,
    peer: '192.0.2.7',
  }));
  return { node: 'edge-1', batch, records, minutes: [[minute, host, n, 1]], probes: [] };
}

async function counts(cp: TestControlPlane, domainId: number, host: string) {
  const db = cp.database.db;
  const [logs] = await db
    .select({ n: sql<number>`count(*)::int` })
    .from(requestLogs)
    .where(eq(requestLogs.host, host));
  const [uptime] = await db
    .select({ n: sql<number>`coalesce(sum(${uptimeMinuteCounts.total}), 0)::int` })
    .from(uptimeMinuteCounts)
    .where(eq(uptimeMinuteCounts.domainId, domainId));
  const [attacks] = await db
    .select({ n: sql<number>`coalesce(sum(${attackMinutes.requests}), 0)::int` })
    .from(attackMinutes)
    .where(eq(attackMinutes.domainId, domainId));
  return {
    requestLogs: logs.n,
    uptime: uptime.n,
    attacks: attacks.n,
    analytics: await cp.app.analytics.store.countRows(domainId),
  };
}

test('a batch sent twice is counted once everywhere, and acknowledged both times', async (t) => {
  const { cp, domainId, post } = await setUp(t, 'dup-batches.example.org');
  const host = 'www.dup-batches.example.org';
  const body = pack(shipment(host, 7, '0123456789abcdef-1'));
  const first = await post(body);
  assert.equal(first.statusCode, 200, first.body);
  assert.deepEqual([first.json().stored, first.json().duplicate], [7, false]);
  const again = await post(body);
  assert.equal(again.statusCode, 200, again.body);
  assert.deepEqual([again.json().stored, again.json().duplicate], [0, true]);
  assert.deepEqual(await counts(cp, domainId, host), { requestLogs: 7, uptime: 7, attacks: 7, analytics: 7 });

  // Another batch id of the same node, and the same id from another node: both new.
  assert.equal((await post(shipment(host, 2, '0123456789abcdef-2'))).json().duplicate, false);
  assert.equal((await post({ ...shipment(host, 3, '0123456789abcdef-1'), node: 'edge-2' })).json().duplicate, false);
  assert.deepEqual(await counts(cp, domainId, host), { requestLogs: 12, uptime: 12, attacks: 12, analytics: 12 });

  // The same batch sent twice at once: one of them counts it.
  const twice = pack(shipment(host, 4, 'fedcba9876543210-9'));
  const both = await Promise.all([post(twice), post(twice)]);
  assert.deepEqual(both.map((r) => r.statusCode).sort(), [200, 200]);
  assert.deepEqual(both.map((r) => r.json().duplicate as boolean).sort(), [false, true]);
  assert.deepEqual(await counts(cp, domainId, host), { requestLogs: 16, uptime: 16, attacks: 16, analytics: 16 });
  const ids = await cp.database.db.select().from(requestLogBatches).orderBy(requestLogBatches.batch);
  assert.equal(ids.length, 4);
});

test('rows the analytics store holds already (the crash came after DuckDB) are not appended again', async (t) => {
  const { cp, domainId, post } = await setUp(t, 'dup-duck.example.org');
  const host = 'www.dup-duck.example.org';
  const s = shipment(host, 5, 'aaaaaaaaaaaaaaaa-1');
  // The analytics store took the batch, then the process died before Postgres committed it.
  const row = {
    time: new Date(),
    domainId,
    ownerId: 1,
    node: s.node,
    host,
    path: '/',
    method: 'GET',
    status: 200,
    bytes: 1,
    cacheStatus: '',
    ruleHits: [],
    wafEvents: [],
    durationMs: 1,
    upstreamMs: 1,
    clientIp: '192.0.2.7',
    fingerprint: '',
    botScore: 0,
    botClass: '',
  };
  assert.equal(await cp.app.analytics.store.append([row, row, row, row, row], { node: s.node, id: s.batch }), true);
  assert.equal(await cp.app.analytics.store.append([row], { node: s.node, id: s.batch }), false, 'held already');
  const res = await post(s);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.json().duplicate, false, 'new to Postgres');
  assert.deepEqual(await counts(cp, domainId, host), { requestLogs: 5, uptime: 5, attacks: 5, analytics: 5 });
});

test('abuse: a forged or huge batch id or node id is refused with 400 and nothing is stored', async (t) => {
  const { cp, domainId, post } = await setUp(t, 'bad-batches.example.org');
  const host = 'www.bad-batches.example.org';
  const bad: [string, Record<string, unknown>][] = [
    ['not hex', { batch: 'zzzzzzzzzzzzzzzz-1' }],
    ['no sequence', { batch: '0123456789abcdef' }],
    ['short incarnation', { batch: '0123-1' }],
    ['sequence of 16 digits', { batch: `0123456789abcdef-${'9'.repeat(16)}` }],
    ['huge', { batch: `0123456789abcdef-${'1'.repeat(100_000)}` }],
    ['a number', { batch: 17 }],
    ['an object', { batch: { id: 1 } }],
    ['null', { batch: null }],
    ['node missing', { batch: '0123456789abcdef-1', node: undefined }],
    ['node huge', { batch: '0123456789abcdef-1', node: 'n'.repeat(129) }],
    ['node with a slash', { batch: '0123456789abcdef-1', node: 'edge/1' }],
  ];
  for (const [label, patch] of bad) {
    const res = await post({ ...shipment(host, 2, 'x'), ...patch });
    assert.equal(res.statusCode, 400, `${label}: ${res.body}`);
    assert.equal(typeof res.json().error, 'string', label);
  }
  await sleep(10);
  assert.deepEqual(await counts(cp, domainId, host), { requestLogs: 0, uptime: 0, attacks: 0, analytics: 0 });
  assert.equal((await cp.database.db.select().from(requestLogBatches)).length, 0);
});
