import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import { unpack } from 'msgpackr';
import { parsePeerAddress } from '@platform/shared/match';
import { RequestContext } from '../context.js';
import { RequestLogBuffer } from './buffer.js';
import { startLogShipper } from './shipper.js';
import { OriginMinuteCounts, originOutcome } from './origin-minutes.js';

test('origin outcome: origin 5xx and the edge 502/504/526 are errors; answers without the origin are not counted', () => {
  assert.equal(originOutcome({ host: 'a', status: 200, upstreamMs: 3 }), 'ok');
  assert.equal(originOutcome({ host: 'a', status: 404, upstreamMs: 3 }), 'ok');
  assert.equal(originOutcome({ host: 'a', status: 503, upstreamMs: 3 }), 'error');
  assert.equal(originOutcome({ host: 'a', status: 502, upstreamMs: -1 }), 'error');
  assert.equal(originOutcome({ host: 'a', status: 504, upstreamMs: -1 }), 'error');
  assert.equal(originOutcome({ host: 'a', status: 526, upstreamMs: -1 }), 'error');
  assert.equal(originOutcome({ host: 'a', status: 200, upstreamMs: -1 }), undefined, 'cache hit');
  assert.equal(originOutcome({ host: 'a', status: 403, upstreamMs: -1 }), undefined, 'rule answer');
});

test('per-minute counts per hostname, bounded in hostnames, requeued after a failed shipment', () => {
  const c = new OriginMinuteCounts(2);
  const t0 = Date.UTC(2026, 10, 25, 13, 0, 10);
  c.add({ host: 'a.x', status: 200, upstreamMs: 1 }, t0);
  c.add({ host: 'a.x', status: 500, upstreamMs: 1 }, t0 + 1000);
  c.add({ host: 'b.x', status: 502, upstreamMs: -1 }, t0);
  c.add({ host: 'c.x', status: 200, upstreamMs: 1 }, t0); // a third host: over the cap
  c.add({ host: 'a.x', status: 200, upstreamMs: 1 }, t0 + 60_000); // the next minute, still over the cap (a.x is new there)
  assert.equal(c.dropped, 2);
  const minute = t0 - (t0 % 60_000);
  const drained = c.drain();
  assert.deepEqual(drained, [
    [minute, 'a.x', 2, 1],
    [minute, 'b.x', 1, 1],
  ]);
  c.add({ host: 'a.x', status: 503, upstreamMs: 1 }, t0);
  c.requeue(drained);
  assert.deepEqual(c.drain().sort(), [
    [minute, 'a.x', 3, 2],
    [minute, 'b.x', 1, 1],
  ]);
  assert.deepEqual(c.drain(), []);
});

test('the counts travel with the request-log batch, and stay when the shipment fails', async (t) => {
  let fail = true;
  const bodies: { records: unknown[]; minutes: unknown[] }[] = [];
  const cp = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(unpack(Buffer.concat(chunks)) as { records: unknown[]; minutes: unknown[] });
      res.writeHead(fail ? 503 : 200).end('{}');
    });
  });
  await new Promise<void>((r) => cp.listen(0, '127.0.0.1', r));
  t.after(() => cp.close());
  const dataDir = mkdtempSync(join(tmpdir(), 'edge-minutes-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const buffer = new RequestLogBuffer();
  const ctx = new RequestContext({
    method: 'GET',
    host: 'shop.example.org',
    path: '/',
    query: '',
    headers: [],
    peer: parsePeerAddress('192.0.2.7'),
    scheme: 'https',
    startedAt: performance.now(),
  });
  ctx.status = 502;
  buffer.add(ctx);
  ctx.status = 200;
  ctx.upstreamMs = 4;
  buffer.add(ctx);
  const shipper = startLogShipper(buffer, {
    controlPlaneUrl: `http://127.0.0.1:${(cp.address() as { port: number }).port}`,
    logFlushMs: 60_000,
    dataDir,
    nodeToken: 'tok',
  });
  await shipper.flush();
  fail = false;
  await shipper.flush();
  assert.equal(bodies.length, 2);
  assert.equal(bodies[1].records.length, 2);
  assert.equal(bodies[1].minutes.length, 1);
  const [[minute, host, total, errors]] = bodies[1].minutes as [number, string, number, number][];
  assert.deepEqual([minute % 60_000, host, total, errors], [0, 'shop.example.org', 2, 1]);
  await shipper.flush();
  assert.equal(bodies.length, 2, 'nothing left: nothing shipped');
  await shipper.stop();
});
