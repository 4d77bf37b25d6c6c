import { test } from 'node:test';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePeerAddress } from '@platform/shared/match';
import { RequestContext } from '../context.js';
import { RequestLogBuffer } from './buffer.js';
import { startLogShipper } from './shipper.js';
import { unpack } from 'msgpackr';

test('request logs are shipped as msgpack batches with a batch id and the node token, kept until acknowledged', async (t) => {
  let fail = true;
  const seen: { url: string; headers: IncomingHttpHeaders; body: Buffer }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.statusCode = fail ? 503 : 200;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => new Promise((r) => server.close(r)));
  const cp = { port: (server.address() as { port: number }).port, seen };
  const dataDir = mkdtempSync(join(tmpdir(), 'edge-ship-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const buffer = new RequestLogBuffer();
  const ctx = new RequestContext({
    method: 'GET',
    host: 'www.example.org',
    path: '/a',
    query: '',
    headers: [],
    peer: parsePeerAddress('192.0.2.7'),
    scheme: 'https',
    startedAt: performance.now(),
  });
  ctx.status = 200;
  ctx.bytes = 10;
  ctx.cacheStatus = 'HIT';
  ctx.hit(5, 'cache', false);
  buffer.add(ctx);
  buffer.add(ctx);
  const shipper = startLogShipper(buffer, {
    controlPlaneUrl: `http://127.0.0.1:${cp.port}`,
    logFlushMs: 60_000,
    dataDir,
    nodeToken: 'tok',
  });
  await shipper.flush();
  assert.equal(cp.seen.length, 1);
  assert.equal(buffer.size, 0, 'the records were cut into a batch');
  assert.deepEqual(
    buffer.outbox.map((b) => b.records),
    [2],
    'a failed shipment keeps its batch until it is acknowledged',
  );
  buffer.add(ctx);
  await shipper.flush();
  assert.equal(cp.seen.length, 2, 'the oldest batch first, and nothing after it while it fails');
  assert.deepEqual(cp.seen[1].body, cp.seen[0].body, 'sent again as it was: the same batch id and records');
  assert.deepEqual(
    buffer.outbox.map((b) => b.records),
    [2, 1],
  );
  fail = false;
  await shipper.flush();
  assert.equal(cp.seen.length, 4);
  const last = cp.seen.at(-1)!;
  assert.equal(last.url, '/internal/request-logs');
  assert.equal(last.headers.authorization, 'Bearer tok');
  assert.equal(last.headers['content-type'], 'application/x-msgpack');
  const ids = cp.seen.map((r) => (unpack(r.body) as { batch: string }).batch);
  assert.match(ids[0], /^[0-9a-f]{16}-1$/);
  assert.deepEqual(ids.slice(1), [ids[0], ids[0], ids[0].replace(/-1$/, '-2')]);
  assert.deepEqual([buffer.outbox.length, buffer.outboxBytes, buffer.dropped], [0, 0, 0]);
  await shipper.stop();
});
