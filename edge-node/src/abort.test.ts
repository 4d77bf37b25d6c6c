import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { proxiedRecord, send, snapshot, startStubOrigin, startTestEdge } from './testing/harness.js';

test('a client that aborts mid-response cancels the origin exchange and the edge keeps serving', async (t) => {
  let originClosed!: () => void;
  const closed = new Promise<void>((r) => {
    originClosed = r;
  });
  const origin = await startStubOrigin('stream', (req, res) => {
    if (req.url === '/ok') {
      res.end('fine');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * 1024, 1);
    const timer = setInterval(() => res.write(chunk), 5);
    res.on('close', () => {
      clearInterval(timer);
      originClosed();
    });
  });
  t.after(() => origin.close());
  const edge = await startTestEdge(t, [snapshot('abort.example.org', { records: [proxiedRecord('@', origin.port)] })]);
  const port = edge.node.server.httpPort;

  await new Promise<void>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/stream', headers: { host: 'abort.example.org' }, agent: false },
      (res) => {
        let got = 0;
        res.on('data', (c: Buffer) => {
          got += c.length;
          if (got > 256 * 1024) {
            req.destroy();
            resolve();
          }
        });
      },
    );
    req.on('error', (e) => {
      if ((e as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(e);
    });
    req.end();
  });
  await closed;
  const r = await send(port, 'abort.example.org', '/ok');
  assert.equal(r.status, 200);
  assert.equal(r.body, 'fine');
});

test('a client that aborts before the origin answers is handled', async (t) => {
  const origin = await startStubOrigin('late', (req, res) => {
    setTimeout(() => res.end('late'), 300);
  });
  t.after(() => origin.close());
  const edge = await startTestEdge(t, [snapshot('late.example.org', { records: [proxiedRecord('@', origin.port)] })]);
  const port = edge.node.server.httpPort;
  const req = request({ host: '127.0.0.1', port, path: '/', headers: { host: 'late.example.org' }, agent: false });
  req.on('error', () => undefined);
  req.end();
  await new Promise((r) => setTimeout(r, 50));
  req.destroy();
  await new Promise((r) => setTimeout(r, 400));
  const r = await send(port, 'late.example.org', '/again');
  assert.equal(r.status, 200);
  // Both requests are logged, the aborted one too (with 499 unless the origin had already answered).
  for (let i = 0; i < 100 && edge.node.logs.total < 2; i++) await new Promise((res) => setTimeout(res, 50));
  assert.equal(edge.node.logs.total, 2);
});
