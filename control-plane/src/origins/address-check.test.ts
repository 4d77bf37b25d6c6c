// Issue 10 item 1 at write time: an origin address the edge would refuse is a 400 when the API can see it (a literal).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestControlPlane } from '../../../test/helpers/control-plane.js';

test('origin addresses: internal literals are 400 at write time unless ALLOWED_PRIVATE_NETWORKS lists them', async (t) => {
  const cp = await startTestControlPlane(t);
  const owner = await cp.user();
  const name = await cp.domain(owner.key, 'ssrf-write.example.org');
  const records = `/domains/${name}/records/`;

  await t.test('proxied A/AAAA/CNAME records', async () => {
    for (const [type, destination, shown] of [
      ['A', '127.0.0.1', /destination 127\.0\.0\.1 is a loopback address/],
      ['A', '169.254.169.254', /link-local/],
      ['A', '10.1.2.3', /private address/],
      ['A', '100.64.1.1', /CGNAT/],
      ['AAAA', '::ffff:127.0.0.1', /loopback/],
      ['AAAA', 'fd00::1', /unique local/],
      ['AAAA', 'fe80::1', /link-local/],
      ['CNAME', 'localhost', /loopback/],
    ] as const) {
      const res = await cp.call(owner.key, 'POST', records, { name: 'x', type, destination, proxied: true });
      assert.equal(res.statusCode, 400, `${type} ${destination}: ${res.body}`);
      assert.match(res.json().error, shown);
      assert.match(res.json().error, /ALLOWED_PRIVATE_NETWORKS/);
    }
    // DNS-only records may point anywhere; turning the proxy on is checked.
    const plain = await cp.call(owner.key, 'POST', records, { name: 'lan', type: 'A', destination: '10.0.0.5' });
    assert.equal(plain.statusCode, 200, plain.body);
    const on = await cp.call(owner.key, 'PUT', `${records}${plain.json().id}`, { proxied: true });
    assert.equal(on.statusCode, 400);
    const batch = await cp.call(owner.key, 'POST', `${records}batch-update`, {
      updates: [{ id: plain.json().id, proxied: true }],
    });
    assert.equal(batch.json().failed, 1);
    assert.match(batch.json().results[0].error, /private address/);
    const ok = await cp.call(owner.key, 'POST', records, {
      name: 'www',
      type: 'A',
      destination: '192.0.2.7',
      proxied: true,
    });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal((await cp.call(owner.key, 'GET', records)).json().length, 2, 'nothing refused was stored');
  });

  await t.test('origin_route and origin_pool addresses', async () => {
    const route = await cp.call(owner.key, 'POST', `/domains/${name}/rules/origin_route/`, { address: '127.0.0.1' });
    assert.equal(route.statusCode, 400);
    assert.match(route.json().error, /^address: 127\.0\.0\.1 is a loopback address/);
    const pool = await cp.call(owner.key, 'POST', `/domains/${name}/rules/origin_pool/`, {
      origins: [{ address: '192.0.2.1' }, { address: '169.254.169.254' }],
    });
    assert.equal(pool.statusCode, 400);
    assert.match(pool.json().error, /^origins\[1\]\.address: 169\.254\.169\.254 is a link-local address/);
  });

  await t.test('ALLOWED_PRIVATE_NETWORKS allows its ranges, never the control plane itself', async () => {
    const app = await cp.withEnv({ ALLOWED_PRIVATE_NETWORKS: '10.0.0.0/8', API_HOST: '10.9.9.9', API_PORT: '8080' });
    const call = (url: string, body: unknown) =>
      app.inject({
        method: 'POST',
        url,
        headers: { authorization: `Bearer ${owner.key}`, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      });
    const lan = await call(records, { name: 'lan2', type: 'A', destination: '10.0.0.5', proxied: true });
    assert.equal(lan.statusCode, 200, lan.body);
    const self = await call(records, {
      name: 'cp',
      type: 'A',
      destination: '10.9.9.9',
      proxied: true,
      scheme: 'Http',
      port: 8080,
    });
    assert.equal(self.statusCode, 400);
    assert.match(self.json().error, /an address of the platform itself \(port 8080\)/);
    const loop = await call(records, { name: 'lo', type: 'A', destination: '127.0.0.1', proxied: true });
    assert.equal(loop.statusCode, 400, 'loopback is outside the allowed range');
  });
});
