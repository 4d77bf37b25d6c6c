import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { createServer as createHttpsServer } from 'node:https';
import { selfSigned } from './testing/certs.js';
import { proxiedRecord, send, snapshot, startStubOrigin, startTestEdge } from './testing/harness.js';

function peerCN(port: number, servername: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, servername, rejectUnauthorized: false }, () => {
      const cn = s.getPeerCertificate().subject?.CN ?? '';
      s.end();
      resolve(String(cn));
    });
    s.on('error', reject);
  });
}

test('HTTPS: SNI picks the certificate from the snapshot; other names get the default certificate', async (t) => {
  const origin = await startStubOrigin('tls');
  t.after(() => origin.close());
  const cert = selfSigned(['secure.example.org', '*.secure.example.org']);
  const edge = await startTestEdge(t, [
    snapshot('secure.example.org', {
      records: [proxiedRecord('@', origin.port), proxiedRecord('*', origin.port)],
      certificates: [{ hostnames: ['secure.example.org', '*.secure.example.org'], ...cert, notAfterMs: 0 }],
    }),
    snapshot('plain.example.org', { records: [proxiedRecord('@', origin.port)] }),
  ]);
  const port = edge.node.server.httpsPort;
  assert.ok(port > 0);
  assert.equal(await peerCN(port, 'secure.example.org'), 'secure.example.org');
  assert.equal(await peerCN(port, 'a.secure.example.org'), 'secure.example.org');
  assert.equal(await peerCN(port, 'plain.example.org'), 'edge-default.invalid');

  const r = await send(port, 'secure.example.org', '/x', { https: true });
  assert.equal(r.status, 200);
  assert.equal(r.body, `origin tls /x`);
  assert.equal(origin.seen.at(-1)!.headers['x-forwarded-proto'], 'https');
  const w = await send(port, 'www.secure.example.org', '/w', { https: true });
  assert.equal(w.status, 200);

  // A certificate change in a new snapshot replaces the served one without a restart.
  const next = selfSigned(['secure.example.org']);
  edge.apply(
    snapshot('secure.example.org', {
      records: [proxiedRecord('@', origin.port)],
      certificates: [{ hostnames: ['secure.example.org'], ...next, notAfterMs: 0 }],
    }),
  );
  const s = connect({ host: '127.0.0.1', port, servername: 'secure.example.org', rejectUnauthorized: false });
  const fp = await new Promise<string>((resolve) =>
    s.once('secureConnect', () => {
      resolve(s.getPeerCertificate().fingerprint256);
      s.end();
    }),
  );
  const { X509Certificate } = await import('node:crypto');
  assert.equal(fp, new X509Certificate(next.certificatePem).fingerprint256);
});

test('scheme: Https uses TLS to the port and verifies the certificate; Auto tries HTTPS on 443 then plain HTTP on 80', async (t) => {
  // The origin's certificate covers the name the edge sends (the visitor's Host); an operator's CA file trusts it.
  const cert = selfSigned(['tls.schemes.example.org']);
  const caDir = mkdtempSync(join(tmpdir(), 'edge-origin-ca-'));
  t.after(() => rmSync(caDir, { recursive: true, force: true }));
  writeFileSync(join(caDir, 'ca.pem'), cert.certificatePem);
  const untrusted = selfSigned(['untrusted.schemes.example.org']);
  const untrustedOrigin = createHttpsServer(
    { key: untrusted.privateKeyPem, cert: untrusted.certificatePem },
    (_req, res) => res.end('untrusted origin'),
  );
  await new Promise<void>((r) => untrustedOrigin.listen(0, '127.0.0.1', r));
  t.after(
    () =>
      new Promise<void>((r) => {
        untrustedOrigin.closeAllConnections();
        untrustedOrigin.close(() => r());
      }),
  );
  const untrustedPort = (untrustedOrigin.address() as { port: number }).port;
  const tlsOrigin = createHttpsServer({ key: cert.privateKeyPem, cert: cert.certificatePem }, (req, res) =>
    res.end(`tls origin ${req.headers.host}`),
  );
  await new Promise<void>((r) => tlsOrigin.listen(0, '127.0.0.1', r));
  t.after(
    () =>
      new Promise<void>((r) => {
        tlsOrigin.closeAllConnections();
        tlsOrigin.close(() => r());
      }),
  );
  const tlsPort = (tlsOrigin.address() as { port: number }).port;
  // Auto needs ports 443/80: use a loopback address of our own so no other service is in the way.
  const addr = `127.${10 + (process.pid % 200)}.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
  const plain80 = await startStubOrigin('auto');
  const { createServer } = await import('node:http');
  const auto = createServer((req, res) => res.end(`plain on 80 ${req.url}`));
  const bound = await new Promise<boolean>((resolve) => {
    auto.once('error', () => resolve(false));
    auto.listen(80, addr, () => resolve(true));
  });
  t.after(
    () =>
      new Promise<void>((r) => {
        auto.closeAllConnections();
        auto.close(() => r());
      }),
  );
  t.after(() => plain80.close());
  // Auto on 443 with a certificate nobody trusts: Auto does not verify (the per-record opt-out).
  const addr443 = `127.${10 + (process.pid % 200)}.251.${1 + Math.floor(Math.random() * 250)}`;
  const selfSigned443 = createHttpsServer(
    { key: untrusted.privateKeyPem, cert: untrusted.certificatePem },
    (req, res) => res.end(`self-signed on 443 ${req.url}`),
  );
  const bound443 = await new Promise<boolean>((resolve) => {
    selfSigned443.once('error', () => resolve(false));
    selfSigned443.listen(443, addr443, () => resolve(true));
  });
  t.after(
    () =>
      new Promise<void>((r) => {
        selfSigned443.closeAllConnections();
        selfSigned443.close(() => r());
      }),
  );
  const edge = await startTestEdge(
    t,
    [
      snapshot('schemes.example.org', {
        records: [
          proxiedRecord('tls', tlsPort, { scheme: 'Https' }),
          proxiedRecord('wrong', tlsPort, { scheme: 'Https' }),
          proxiedRecord('untrusted', untrustedPort, { scheme: 'Https' }),
          proxiedRecord('auto', 0, { scheme: 'Auto', destination: addr }),
          proxiedRecord('auto443', 0, { scheme: 'Auto', destination: addr443 }),
        ],
      }),
      snapshot('other.example', { records: [proxiedRecord('www', plain80.port)] }),
    ],
    { EDGE_ORIGIN_CA_FILE: join(caDir, 'ca.pem') },
  );
  const r = await send(edge.node.server.httpPort, 'tls.schemes.example.org', '/');
  assert.equal(r.status, 200);
  assert.equal(r.body, 'tls origin tls.schemes.example.org');
  // Verified by default (Full strict): a certificate for another name, or from an untrusted issuer, is 526.
  for (const host of ['wrong.schemes.example.org', 'untrusted.schemes.example.org']) {
    const bad = await send(edge.node.server.httpPort, host, '/');
    assert.equal(bad.status, 526, host);
    assert.equal(bad.headers['x-edge-error'], 'EDGE_ERR_ORIGIN_CERTIFICATE');
    assert.match(bad.body, /origin certificate not accepted/);
  }
  assert.equal((await send(edge.node.server.httpPort, 'www.other.example', '/')).status, 200, 'another tenant');
  if (bound443) {
    const a = await send(edge.node.server.httpPort, 'auto443.schemes.example.org', '/s');
    assert.equal(a.status, 200);
    assert.equal(a.body, 'self-signed on 443 /s');
  } else t.diagnostic('could not bind port 443 on a loopback address; Auto over unverified TLS not exercised');
  if (bound) {
    const a = await send(edge.node.server.httpPort, 'auto.schemes.example.org', '/p');
    assert.equal(a.status, 200);
    assert.equal(a.body, 'plain on 80 /p');
  } else t.diagnostic('could not bind port 80 on a loopback address; Auto fallback not exercised');
});

test('HTTPS: a sealed key opens with the node token; an exact name wins over a wildcard; a bad seal is not installed', async (t) => {
  const { sealCertificateKey } = await import('@platform/shared/config');
  const origin = await startStubOrigin('sealed');
  t.after(() => origin.close());
  const token = 'edge-test-node-token';
  const wildcard = selfSigned(['*.sealed.example.org']);
  const exact = selfSigned(['www.sealed.example.org']);
  const sealed = (c: { certificatePem: string; privateKeyPem: string }, hostnames: string[], key = token) => ({
    hostnames,
    certificatePem: c.certificatePem,
    privateKeyPem: '',
    privateKeySealed: sealCertificateKey(key, 'sealed.example.org', c.certificatePem, c.privateKeyPem),
    notAfterMs: 0,
  });
  const edge = await startTestEdge(
    t,
    [
      snapshot('sealed.example.org', {
        records: [proxiedRecord('*', origin.port)],
        // The wildcard is listed first: SNI still prefers the exact name.
        certificates: [sealed(wildcard, ['*.sealed.example.org']), sealed(exact, ['www.sealed.example.org'])],
      }),
    ],
    { NODE_TOKEN: token },
  );
  const port = edge.node.server.httpsPort;
  assert.equal(await peerCN(port, 'www.sealed.example.org'), 'www.sealed.example.org');
  assert.equal(await peerCN(port, 'api.sealed.example.org'), '*.sealed.example.org');
  assert.equal((await send(port, 'api.sealed.example.org', '/s', { https: true })).body, 'origin sealed /s');
  // uWS loaded the files inside addServerName: no key of a tenant stays on disk.
  const { readdirSync } = await import('node:fs');
  assert.deepEqual(
    readdirSync(join(edge.dataDir, 'edge-node-tls')).filter((f) => f.endsWith('.key') && f !== 'default.key'),
    [],
  );

  // Sealed under another token: not installed (the default certificate answers), the other certificate stays.
  const other = selfSigned(['www.sealed.example.org']);
  edge.apply(
    snapshot('sealed.example.org', {
      records: [proxiedRecord('*', origin.port)],
      certificates: [sealed(wildcard, ['*.sealed.example.org']), sealed(other, ['www.sealed.example.org'], 'wrong')],
    }),
  );
  assert.equal(await peerCN(port, 'www.sealed.example.org'), '*.sealed.example.org');
});
