// Bounded memory (issue 10 item 5): what a client or a tenant can make the node keep stays under a node-wide cap.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { parsePeerAddress } from '@platform/shared/match';
import { loadConfig } from './config.js';
import { RequestContext } from './context.js';
import { RequestLogBuffer } from './log/buffer.js';
import { memoryOf, startEdgeOps } from './metrics.js';
import { startLogShipper } from './log/shipper.js';
import {
  proxiedRecord,
  rule,
  send,
  snapshot,
  startStubOrigin,
  startTestEdge,
  type TestEdge,
} from './testing/harness.js';

/** The edge's /metrics endpoint (as EDGE_METRICS_PORT serves it) for an edge started in the test. */
async function opsOf(t: TestContext, edge: TestEdge) {
  const ops = await startEdgeOps({
    host: '127.0.0.1',
    port: 0,
    requests: () => edge.node.requests,
    memory: () => memoryOf(edge.node),
    store: edge.node.store,
    sync: undefined,
  });
  t.after(() => ops.close());
  return ops;
}

test('origin pools: one per Host a `*` record is asked for, at most EDGE_ORIGIN_POOLS_MAX kept', async (t) => {
  // The origin answers a little later, so evicted pools still have requests in flight when they are closed.
  const origin = await startStubOrigin('o', (req, res) => {
    setTimeout(() => res.end(`origin ${req.headers.host} ${req.url}`), 20);
  });
  t.after(() => origin.close());
  const edge = await startTestEdge(
    t,
    [
      snapshot('pools.example.org', { records: [proxiedRecord('*', origin.port), proxiedRecord('@', origin.port)] }),
      snapshot('neighbour.example.org', { records: [proxiedRecord('www', origin.port)] }),
    ],
    { EDGE_ORIGIN_POOLS_MAX: '4' },
  );
  const port = edge.node.server.httpPort;

  // Each host name is a distinct Host sent to the origin, so a distinct pool: 40 of them, 10 at a time.
  const hosts = Array.from({ length: 40 }, (_, i) => `h${i}-${Math.random().toString(36).slice(2)}.pools.example.org`);
  for (let i = 0; i < hosts.length; i += 10) {
    const batch = hosts.slice(i, i + 10);
    const replies = await Promise.all(batch.map((h) => send(port, h, '/x')));
    for (const [j, r] of replies.entries()) {
      assert.equal(r.status, 200, `${batch[j]}: ${r.body}`);
      assert.equal(r.body, `origin ${batch[j]} /x`);
    }
    assert.ok(edge.node.pools.size <= 4, `${edge.node.pools.size} pools open`);
  }
  assert.equal(edge.node.pools.size, 4);
  assert.equal(edge.node.pools.evicted, 36);
  const ops = await opsOf(t, edge);
  const metrics = await (await fetch(`http://127.0.0.1:${ops.port}/metrics`)).text();
  assert.match(metrics, /^edge_origin_pools 4$/m);
  assert.match(metrics, /^edge_origin_pools_evicted_total 36$/m);

  // Another tenant is still served, so is the apex, and a host seen before gets a new pool.
  const other = await send(port, 'www.neighbour.example.org', '/n');
  assert.equal(other.status, 200);
  assert.equal(other.body, 'origin www.neighbour.example.org /n');
  assert.equal((await send(port, 'pools.example.org', '/')).status, 200);
  assert.equal((await send(port, hosts[0]!, '/again')).body, `origin ${hosts[0]} /again`);
  assert.equal(edge.node.pools.size, 4);
});

test(
  '20,000 distinct host names through a `*` record: pools and request logs stay within their caps, another tenant is answered throughout',
  // About 15 s of CPU; far longer on a machine shared by several test runs.
  { timeout: 600_000 },
  async (t) => {
    const origin = await startStubOrigin('o', (req, res) => res.end(`origin ${req.headers.host}`));
    t.after(() => origin.close());
    const POOLS_MAX = 8;
    const LOGS_MAX = 1000;
    const HOSTS = 20_000;
    const edge = await startTestEdge(
      t,
      [
        snapshot('flood.example.org', { records: [proxiedRecord('*', origin.port)] }),
        snapshot('neighbour.example.org', { records: [proxiedRecord('www', origin.port)] }),
      ],
      { EDGE_ORIGIN_POOLS_MAX: String(POOLS_MAX), EDGE_LOG_BUFFER_MAX: String(LOGS_MAX) },
    );
    const ops = await opsOf(t, edge);
    const gauge = async (name: string) => {
      const text = await (await fetch(`http://127.0.0.1:${ops.port}/metrics`)).text();
      const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
      assert.ok(m, `${name} in /metrics`);
      return Number(m[1]);
    };
    // Keep-alive connections to the edge, a few requests in parallel: the flood is one Host per request.
    const client = new Pool(`http://127.0.0.1:${edge.node.server.httpPort}`, { connections: 5, pipelining: 1 });
    t.after(() => client.close());
    const get = async (host: string, path: string) => {
      const r = await client.request({ method: 'GET', path, headers: { host } });
      return { status: r.statusCode, body: await r.body.text() };
    };

    let next = 0;
    let highest = 0;
    let neighbourAnswers = 0;
    const flood = async () => {
      for (let i = next++; i < HOSTS; i = next++) {
        const host = `h${i}.flood.example.org`;
        const r = await get(host, '/');
        assert.equal(r.status, 200, host);
        assert.equal(r.body, `origin ${host}`);
        highest = Math.max(highest, edge.node.pools.size);
        if (i % 1000 === 999) assert.ok((await gauge('edge_origin_pools')) <= POOLS_MAX, `pools gauge after ${i + 1}`);
      }
    };
    const floods = Promise.all([flood(), flood(), flood(), flood()]);
    let flooding = true;
    void floods.finally(() => (flooding = false)).catch(() => undefined);
    // The other tenant asks all along, on the fifth connection.
    while (flooding) {
      const r = await get('www.neighbour.example.org', `/n${neighbourAnswers}`);
      assert.equal(r.status, 200);
      assert.equal(r.body, 'origin www.neighbour.example.org');
      neighbourAnswers++;
    }
    await floods;

    assert.ok(highest <= POOLS_MAX, `at most ${POOLS_MAX} pools at any time, saw ${highest}`);
    assert.equal(await gauge('edge_origin_pools'), POOLS_MAX);
    assert.ok((await gauge('edge_origin_pools_evicted_total')) >= HOSTS - POOLS_MAX);
    assert.ok(neighbourAnswers > 0);
    // One log record per request, kept within EDGE_LOG_BUFFER_MAX (nothing ships them here): the rest dropped, counted.
    assert.equal(edge.node.logs.size, LOGS_MAX);
    assert.equal(edge.node.logs.dropped, edge.node.logs.total - LOGS_MAX);
    assert.equal(await gauge('edge_request_logs_dropped_total'), edge.node.logs.dropped);
    assert.equal((await get('www.neighbour.example.org', '/after')).status, 200);
  },
);

test('cache: EDGE_CACHE_MAX_BYTES bounds all domains together, evicting the least recently used of any domain', async (t) => {
  const origin = await startStubOrigin('c', (req, res) => res.end(Buffer.alloc(10_000, req.url!.length)));
  t.after(() => origin.close());
  const cached = (name: string) =>
    snapshot(name, {
      records: [proxiedRecord('www', origin.port)],
      rules: [rule('cache', { path_includes: ['/*'], edge_ttl: 600 })],
    });
  // Room for two 10 kB objects, not three; each domain's own cap (100 MB) is far away.
  const edge = await startTestEdge(t, [cached('a.example.org'), cached('b.example.org')], {
    EDGE_CACHE_MAX_BYTES: '25000',
  });
  const port = edge.node.server.httpPort;
  const get = async (host: string, path: string) => (await send(port, host, path)).headers['x-cache-status'];

  assert.equal(await get('www.a.example.org', '/1'), 'MISS');
  assert.equal(await get('www.a.example.org', '/2'), 'MISS');
  assert.equal(await get('www.a.example.org', '/1'), 'HIT', 'a/1 is now the most recently used');
  // Tenant b's objects push out tenant a's least recently used one (a/2), then a/1.
  assert.equal(await get('www.b.example.org', '/1'), 'MISS');
  assert.equal(edge.node.cache.stats('a.example.org').entries, 1, 'a/2 went first: a/1 was used more recently');
  assert.equal(await get('www.b.example.org', '/2'), 'MISS');
  assert.equal(edge.node.cache.stats('a.example.org').entries, 0);
  assert.equal(await get('www.b.example.org', '/1'), 'HIT');
  assert.equal(await get('www.b.example.org', '/2'), 'HIT');
  assert.ok(edge.node.cache.bytes <= 25_000, `${edge.node.cache.bytes} bytes cached`);
  assert.equal(edge.node.cache.evicted, 2);

  // A domain dropped (deleted) gives its bytes back to the node.
  edge.node.cache.drop('b.example.org');
  assert.equal(edge.node.cache.bytes, 0);
  assert.equal(await get('www.a.example.org', '/2'), 'MISS');
  assert.equal(await get('www.a.example.org', '/2'), 'HIT');
  assert.equal(edge.node.cache.stats('a.example.org').bytes, edge.node.cache.bytes);
});

test('request logs: a full buffer drops its oldest records and counts them while the control plane is down', async (t) => {
  const cp = await startStubOrigin('cp', (_req, res) => {
    res.statusCode = 503;
    res.end('down');
  });
  t.after(() => cp.close());
  const dataDir = mkdtempSync(join(tmpdir(), 'edge-logs-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const buffer = new RequestLogBuffer(3);
  const shipper = startLogShipper(buffer, {
    controlPlaneUrl: `http://127.0.0.1:${cp.port}`,
    logFlushMs: 60_000,
    dataDir,
    nodeToken: 'tok',
  });
  t.after(() => shipper.stop());
  const request = (path: string) =>
    new RequestContext({
      method: 'GET',
      host: 'www.example.org',
      path,
      query: '',
      headers: [],
      peer: parsePeerAddress('192.0.2.7'),
      scheme: 'https',
      startedAt: performance.now(),
    });

  for (const p of ['/1', '/2', '/3', '/4', '/5']) buffer.add(request(p));
  assert.equal(buffer.size, 3);
  assert.equal(buffer.dropped, 2);
  await shipper.flush();
  assert.equal(cp.seen.length, 1, 'the shipment was tried and failed');
  assert.deepEqual(
    [buffer.size, buffer.outbox.length, buffer.outbox[0].records],
    [0, 1, 3],
    'the records wait in a batch',
  );
  buffer.add(request('/6'));
  assert.deepEqual(
    buffer.drain().map((r) => r.path),
    ['/6'],
  );
  assert.equal(buffer.total, 6);
});

test('request logs: the outbox of unacknowledged batches is bounded in batches and bytes; drops are counted', async (t) => {
  const cp = await startStubOrigin('cp', (_req, res) => {
    res.statusCode = 503;
    res.end('down');
  });
  t.after(() => cp.close());
  const dataDir = mkdtempSync(join(tmpdir(), 'edge-outbox-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const buffer = new RequestLogBuffer(1000, { maxBatches: 4, maxBytes: 64 * 1024 });
  const shipper = startLogShipper(buffer, {
    controlPlaneUrl: `http://127.0.0.1:${cp.port}`,
    logFlushMs: 60_000,
    dataDir,
    nodeToken: 'tok',
  });
  t.after(() => shipper.stop());
  const request = (path: string) =>
    new RequestContext({
      method: 'GET',
      host: 'www.example.org',
      path,
      query: '',
      headers: [],
      peer: parsePeerAddress('192.0.2.7'),
      scheme: 'https',
      startedAt: performance.now(),
    });
  // Ten flushes of 10 small records: at most 4 batches kept, the oldest dropped and their records counted.
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 10; i++) buffer.add(request(`/${round}/${i}`));
    await shipper.flush();
    assert.ok(buffer.outbox.length <= 4, `round ${round}: ${buffer.outbox.length} batches`);
  }
  assert.equal(buffer.outbox.length, 4);
  assert.equal(buffer.dropped, 60, 'six batches of ten records dropped');
  assert.ok(buffer.outboxBytes <= 64 * 1024);
  // Large records: the byte bound holds before the batch bound.
  for (let round = 0; round < 4; round++) {
    for (let i = 0; i < 100; i++) buffer.add(request(`/${'x'.repeat(2000)}/${i}`));
    await shipper.flush();
    assert.ok(buffer.outboxBytes <= 64 * 1024, `round ${round}: ${buffer.outboxBytes} bytes`);
  }
  assert.ok(buffer.dropped >= 60 + 300, `${buffer.dropped} dropped`);
  assert.equal(buffer.dropped + buffer.outbox.reduce((n, b) => n + b.records, 0), buffer.total);
  // Exposed on the node's metrics endpoint as well (edge_request_logs_dropped_total, memoryOf).
  const node = { pools: { size: 0, evicted: 0 }, cache: { bytes: 0, evicted: 0 }, logs: buffer };
  const memory = memoryOf(node as unknown as Parameters<typeof memoryOf>[0]);
  assert.deepEqual(
    [memory.logsDropped, memory.logOutboxBatches, memory.logOutboxBytes],
    [buffer.dropped, buffer.outbox.length, buffer.outboxBytes],
  );
});

test('edge config: the memory bounds are read from the environment with their defaults', () => {
  const defaults = loadConfig({});
  assert.equal(defaults.originPoolsMax, 1024);
  assert.equal(defaults.cacheMaxBytes, 1024 * 1024 * 1024);
  assert.equal(defaults.logBufferMax, 100_000);
  assert.throws(() => loadConfig({ EDGE_ORIGIN_POOLS_MAX: '0' }), /EDGE_ORIGIN_POOLS_MAX/);
});
