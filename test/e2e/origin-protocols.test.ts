// GET /domains/{domain}/origin-protocols against stub origins on 127.0.0.1 (the control plane allows loopback with
// ALLOWED_PRIVATE_NETWORKS, as the uptime and origin tests do): one speaking HTTP/1.1 only, one HTTP/2 (and 1.1),
// one advertising h3 in Alt-Svc (HTTP/3 by the Alt-Svc path: no QUIC server or client runs in Node 20), a plain
// HTTP one and a dead port; the 20-second reuse; the address policy refusing loopback without the switch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureServer } from 'node:http2';
import { AddressPolicy } from '@platform/shared/address-policy';
import { startTestControlPlane } from '../helpers/control-plane.js';
import { selfSigned } from '../../edge-node/src/testing/certs.js';
import { listenForTest as listen } from '../../edge-node/src/testing/listen.js';
import { advertisesH3, probeOrigin } from '../../control-plane/src/areas/domain-ops/origin-probe.js';
import { closedPort, team } from './domain-ops-helpers.js';

interface Origin {
  host: string;
  port: number;
  scheme: string;
  hostnames: string[];
  http1: boolean;
  http2: boolean;
  http3: boolean;
  http3_via: string | null;
  status: number | null;
  error: string | null;
  checked_at: string;
  cached: boolean;
}

test('origin-protocols probes each distinct origin', { timeout: 180_000 }, async (t) => {
  const cert = selfSigned(['origin.example.net']);
  const tls = { key: cert.privateKeyPem, cert: cert.certificatePem };
  const h1Port = await listen(
    t,
    createHttpsServer(tls, (_q, s) => s.end('h1')),
  );
  const h2Port = await listen(
    t,
    createSecureServer({ ...tls, allowHTTP1: true }, (_q, s) => s.end('h2')),
  );
  const h3Port = await listen(
    t,
    createHttpsServer(tls, (_q, s) => {
      s.setHeader('alt-svc', 'h3=":443"; ma=86400, h3-29=":443"');
      s.end('h3');
    }),
  );
  const plainPort = await listen(
    t,
    createHttpServer((_q, s) => s.end('plain')),
  );
  const dead = await closedPort();

  const cp = await startTestControlPlane(t, { ALLOWED_PRIVATE_NETWORKS: '127.0.0.0/8' });
  const { owner, viewer, stranger, domain } = await team(cp, 'probe.example');
  const add = async (name: string, port: number, scheme: string, proxied = true) => {
    const r = await cp.call(owner.key, 'POST', `/domains/${domain}/records/`, {
      name,
      type: 'A',
      destination: '127.0.0.1',
      proxied,
      scheme,
      port,
    });
    assert.equal(r.statusCode, 200, r.body);
  };
  await add('one', h1Port, 'Https');
  await add('two', h2Port, 'Https');
  await add('two-again', h2Port, 'Https');
  await add('three', h3Port, 'Https');
  await add('plain', plainPort, 'Http');
  await add('dead', dead, 'Https');
  await add('dns-only', h2Port, 'Https', false);

  const read = async (key = viewer.key) => {
    const r = await cp.call(key, 'GET', `/domains/${domain}/origin-protocols`);
    assert.equal(r.statusCode, 200, r.body);
    return r.json<{ origin_protocol: string; origins: Origin[] }>();
  };
  const first = await read();
  assert.equal(first.origin_protocol, 'auto');
  const byPort = new Map(first.origins.map((o) => [o.port, o]));
  assert.equal(first.origins.length, 5, 'distinct origins of proxied records only');
  const pick = (port: number) => {
    const o = byPort.get(port)!;
    return { http1: o.http1, http2: o.http2, http3: o.http3, http3_via: o.http3_via };
  };
  assert.deepEqual(pick(h1Port), { http1: true, http2: false, http3: false, http3_via: null });
  assert.deepEqual(pick(h2Port), { http1: true, http2: true, http3: false, http3_via: null });
  assert.deepEqual(byPort.get(h2Port)!.hostnames.sort(), [`two-again.${domain}`, `two.${domain}`]);
  assert.deepEqual(pick(h3Port), { http1: true, http2: false, http3: true, http3_via: 'alt-svc' });
  assert.deepEqual(pick(plainPort), { http1: true, http2: false, http3: false, http3_via: null });
  assert.equal(byPort.get(plainPort)!.scheme, 'http');
  const down = byPort.get(dead)!;
  assert.deepEqual(pick(dead), { http1: false, http2: false, http3: false, http3_via: null });
  assert.match(down.error ?? '', /ECONNREFUSED/);
  assert.ok(first.origins.every((o) => !o.cached));
  assert.equal(byPort.get(h1Port)!.status, 200);

  // Within 20 seconds the answers are reused.
  const again = await read(owner.key);
  assert.ok(again.origins.every((o) => o.cached));
  assert.deepEqual(
    again.origins.map((o) => o.checked_at),
    first.origins.map((o) => o.checked_at),
  );

  assert.equal((await cp.call(stranger.key, 'GET', `/domains/${domain}/origin-protocols`)).statusCode, 404);
  assert.equal((await cp.call(null, 'GET', `/domains/${domain}/origin-protocols`)).statusCode, 401);
});

test('the probe keeps to the origin policy and reads Alt-Svc strictly', async () => {
  // Without ALLOWED_PRIVATE_NETWORKS loopback is refused before any connection.
  const r = await probeOrigin(new AddressPolicy([]), {
    scheme: 'https',
    host: '127.0.0.1',
    port: 443,
    serverName: 'x.example',
  });
  assert.equal(r.http1 || r.http2 || r.http3, false);
  assert.match(r.error ?? '', /loopback/);
  const meta = await probeOrigin(new AddressPolicy([]), {
    scheme: 'http',
    host: '169.254.169.254',
    port: 80,
    serverName: 'x.example',
  });
  assert.match(meta.error ?? '', /link-local|metadata/);
  assert.equal(advertisesH3('h3=":443"; ma=3600'), true);
  assert.equal(advertisesH3('h2=":443", h3-29=":8443"'), true);
  assert.equal(advertisesH3('h2=":443"'), false);
  assert.equal(advertisesH3('clear'), false);
  assert.equal(advertisesH3('xh3=":443"'), false);
  assert.equal(advertisesH3(`${'a'.repeat(100_000)},h3=":443"`), false, 'only a bounded prefix is read');
});
