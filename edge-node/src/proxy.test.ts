import { test } from 'node:test';
import assert from 'node:assert/strict';
import { proxiedRecord, send, snapshot, startStubOrigin, startTestEdge } from './testing/harness.js';

test('proxying: host selection, records, forwarding headers, scheme, timeout', async (t) => {
  const origin = await startStubOrigin('a');
  const slow = await startStubOrigin('slow', (_req, res) => {
    setTimeout(() => {
      res.end('late');
    }, 3000).unref();
  });
  t.after(() => origin.close());
  t.after(() => slow.close());
  const edge = await startTestEdge(t, [
    snapshot('example.org', {
      records: [
        proxiedRecord('www', origin.port),
        proxiedRecord('*.dev', origin.port),
        { ...proxiedRecord('mail', origin.port), proxied: false },
        proxiedRecord('override', origin.port, { hostHeader: 'origin.example.net' }),
        proxiedRecord('slow', slow.port, { timeout: 1 }),
        proxiedRecord('closed', 1, { scheme: 'Http' }),
      ],
    }),
  ]);
  const port = edge.node.server.httpPort;

  await t.test('a proxied record is served from its origin with the visitor Host', async () => {
    const r = await send(port, 'www.example.org', '/hello?x=1');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'origin a /hello?x=1');
    assert.equal(origin.seen.at(-1)!.headers.host, 'www.example.org');
  });

  await t.test('wildcard records serve their subdomains', async () => {
    const r = await send(port, 'api.dev.example.org:8081', '/');
    assert.equal(r.status, 200);
  });

  await t.test('unknown hosts, unknown names and non-proxied records get 421', async () => {
    for (const host of ['example.net', 'nothing.example.org', 'mail.example.org', '']) {
      const r = await send(port, host, '/');
      assert.equal(r.status, 421, host);
      assert.match(r.body, /not served by this edge/);
      assert.equal(r.headers['x-edge-error'], 'EDGE_ERR_HOST_NOT_SERVED');
    }
  });

  await t.test('forwarding headers come from the TCP peer, never from the client', async () => {
    await send(port, 'www.example.org', '/', {
      headers: { 'x-forwarded-for': '203.0.113.9', 'x-real-ip': '203.0.113.9' },
      localAddress: '127.0.0.7',
    });
    const h = origin.seen.at(-1)!.headers;
    assert.equal(h['x-forwarded-for'], '127.0.0.7');
    assert.equal(h['x-real-ip'], '127.0.0.7');
    assert.equal(h['x-forwarded-proto'], 'http');
    assert.equal(h['x-forwarded-host'], 'www.example.org');
    // Clients taking turns at one origin (its head's last lines are kept while the peer and Host stay the same).
    for (const [peer, host] of [
      ['127.0.0.8', 'www.example.org'],
      ['127.0.0.8', 'www.example.org'],
      ['127.0.0.7', 'www.example.org'],
      ['127.0.0.7', 'a.dev.example.org'],
      ['127.0.0.9', 'a.dev.example.org'],
      ['127.0.0.7', 'www.example.org'],
    ]) {
      await send(port, host, '/', { localAddress: peer });
      const seen = origin.seen.at(-1)!.headers;
      assert.deepEqual(
        [seen['x-forwarded-for'], seen['x-real-ip'], seen['x-forwarded-host']],
        [peer, peer, host],
        `${peer} ${host}`,
      );
    }
  });

  await t.test('host_header overrides the Host sent to the origin', async () => {
    await send(port, 'override.example.org', '/');
    assert.equal(origin.seen.at(-1)!.headers.host, 'origin.example.net');
  });

  const bodies = process.env.EDGE_FRONT === 'native' ? 'the native front refuses request bodies (413)' : false;
  await t.test('request bodies are streamed to the origin', { skip: bodies }, async () => {
    const body = 'x'.repeat(200_000);
    const r = await send(port, 'www.example.org', '/upload', { method: 'POST', body });
    assert.equal(r.status, 200);
    assert.equal(origin.seen.at(-1)!.body.length, body.length);
  });

  await t.test('HEAD is proxied without a body', async () => {
    const r = await send(port, 'www.example.org', '/head', { method: 'HEAD' });
    assert.equal(r.status, 200);
    assert.equal(r.body, '');
    assert.equal(origin.seen.at(-1)!.method, 'HEAD');
  });

  await t.test('an origin slower than the record timeout gets 504', async () => {
    const r = await send(port, 'slow.example.org', '/');
    assert.equal(r.status, 504);
    assert.equal(r.headers['x-edge-error'], 'EDGE_ERR_UPSTREAM_TIMEOUT');
  });

  await t.test('an unreachable origin gets 502', async () => {
    const r = await send(port, 'closed.example.org', '/');
    assert.equal(r.status, 502);
    assert.equal(r.headers['x-edge-error'], 'EDGE_ERR_UPSTREAM_UNREACHABLE');
  });
});
