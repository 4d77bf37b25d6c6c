import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePeerAddress } from '@platform/shared/match';
import { RequestContext } from '../context.js';
import { startStubOrigin } from '../testing/harness.js';
import { RequestLogBuffer } from './buffer.js';
import { startLogShipper } from './shipper.js';

test('request logs are shipped as msgpack batches with the node token, and kept while the control plane fails', async (t) => {
  let fail = true;
  const cp = await startStubOrigin('cp', (_req, res) => {
    res.statusCode = fail ? 503 : 200;
    res.end('{}');
  });
  t.after(() => cp.close());
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
  assert.equal(buffer.drain().length, 2, 'a failed shipment keeps its records');
  buffer.add(ctx);
  fail = false;
  await shipper.flush();
  const last = cp.seen.at(-1)!;
  assert.equal(last.url, '/internal/request-logs');
  assert.equal(last.headers.authorization, 'Bearer tok');
  assert.equal(last.headers['content-type'], 'application/x-msgpack');
  assert.equal(buffer.drain().length, 0);
  await shipper.stop();
});
