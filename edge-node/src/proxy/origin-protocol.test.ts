// The domain's origin_protocol at the edge: http1 speaks HTTP/1.1 to origins; http2 (and auto, http3) offer h2 in
// TLS ALPN and use what the origin picks; plain-HTTP origins are always HTTP/1.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createSecureServer } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import { selfSigned } from '../testing/certs.js';
import { listenForTest as listen } from '../testing/listen.js';
import { proxiedRecord, send, snapshot, startStubOrigin, startTestEdge } from '../testing/harness.js';

test('origin_protocol decides the HTTP version the edge speaks to origins', async (t) => {
  const cert = selfSigned(['origin.example.net']);
  const tls = { key: cert.privateKeyPem, cert: cert.certificatePem };
  // Speaks h2 and HTTP/1.1 (ALPN), and says which one each request came over.
  const h2Origin = createSecureServer({ ...tls, allowHTTP1: true }, (req, res) => {
    res.end(`HTTP/${req.httpVersion} ${req.headers[':authority'] ?? req.headers.host}`);
  });
  const h2Port = await listen(t, h2Origin);
  // Speaks HTTP/1.1 only (no ALPN).
  const h1Origin = createHttpsServer(tls, (req, res) => res.end(`HTTP/${req.httpVersion}`));
  const h1Port = await listen(t, h1Origin);
  const plain = await startStubOrigin('plain', (req, res) => res.end(`HTTP/${req.httpVersion}`));
  t.after(() => plain.close());

  const domain = (name: string, originProtocol: string) =>
    snapshot(name, {
      records: [
        proxiedRecord('h2', h2Port, { scheme: 'Https' }),
        proxiedRecord('h1', h1Port, { scheme: 'Https' }),
        proxiedRecord('plain', plain.port, { scheme: 'Http' }),
      ],
      settings: { originProtocol },
    });
  const edge = await startTestEdge(
    t,
    [
      domain('one.example.org', 'http1'),
      domain('two.example.org', 'http2'),
      domain('auto.example.org', 'auto'),
      domain('three.example.org', 'http3'),
      domain('old.example.org', ''), // a snapshot from before the setting travelled: auto
    ],
    // Self-signed origins for names they do not cover: certificate verification is tested in tls.test.ts.
    { EDGE_ORIGIN_TLS_VERIFY: 'false' },
  );
  const port = edge.node.server.httpPort;
  const version = async (host: string) => {
    const r = await send(port, host, '/');
    assert.equal(r.status, 200, `${host}: ${r.body}`);
    return r.body;
  };

  await t.test('http1: HTTP/1.1 even to an origin that offers h2', async () => {
    assert.equal(await version('h2.one.example.org'), 'HTTP/1.1 h2.one.example.org');
  });

  await t.test(
    'http2, auto, http3 and an old snapshot: h2 when the origin offers it, with the Host as :authority',
    async () => {
      for (const d of ['two', 'auto', 'three', 'old']) {
        assert.equal(await version(`h2.${d}.example.org`), `HTTP/2.0 h2.${d}.example.org`, d);
      }
    },
  );

  await t.test('an origin without h2, or plain HTTP, is spoken to in HTTP/1.1 whatever the setting', async () => {
    for (const d of ['one', 'two', 'auto']) {
      assert.equal(await version(`h1.${d}.example.org`), 'HTTP/1.1', d);
      assert.equal(await version(`plain.${d}.example.org`), 'HTTP/1.1', d);
    }
  });

  await t.test('a change of the setting applies to the next request', async () => {
    edge.apply(domain('one.example.org', 'http2'));
    assert.equal(await version('h2.one.example.org'), 'HTTP/2.0 h2.one.example.org');
  });
});
